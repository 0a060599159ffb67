/**
 * The logging contract every room codes against. Every line has a `target` (e.g. "svc::updater"),
 * a message and structured fields. Secrets never go into fields (and are redacted if they do).
 */
export type Fields = Record<string, unknown>;

export interface Logger {
  trace(message: string, fields?: Fields): void;
  debug(message: string, fields?: Fields): void;
  info(message: string, fields?: Fields): void;
  warn(message: string, fields?: Fields): void;
  error(message: string, fields?: Fields): void;
  /** A logger for a sub-target, e.g. root.child("updater") -> target "svc::updater". */
  child(name: string): Logger;
}

/** One entry of the audit log: every change svc makes to the engine (docs/api.md). */
export interface AuditEntry {
  action:
    | "pull"
    // a built service's image made by the compose CLI, and its tag pointed back when the replacement failed (docs/compose.md)
    | "build"
    | "image_tag"
    | "stop"
    | "rename"
    | "create"
    | "start"
    | "remove"
    | "image_remove"
    | "rollback"
    | "connect"
    | "recover"
    | "pre_check"
    | "pre_update"
    | "post_update"
    | "post_check"
    | "service_update"
    | "service_rollback"
    | "request"
    | "compose_write"
    | "compose_revert"
    | "data_copy"
    | "data_restore"
    // a container systemd runs, updated through its unit (docs/podman.md); a tag move written into its unit's file, and put back
    | "unit_restart"
    | "unit_write"
    | "unit_revert"
    // an admin accepted a repository's new signer (docs/verification.md), with the change of pin
    | "signer_accept";
  container?: string;
  container_id?: string;
  image?: string;
  trigger: string;
  session_id?: string;
  error?: string;
  /** an action asked of the API ("request"): who asked (docs/api.md), and what ("POST /v1/update") */
  actor?: string;
  request?: string;
  /** compose_write, compose_revert, unit_write, unit_revert: the files and the change ("compose.yaml line 12: 2.3.1 -> 2.4.0"; docs/compose.md, docs/podman.md); signer_accept: the pin's ("A -> B") */
  file?: string;
  change?: string;
}

export interface AuditLog {
  record(entry: AuditEntry): void;
}

/** The `fields` object of an access-log entry, exactly as docs/api.md lists them. */
export interface AccessFields {
  /** client address and port, e.g. "127.0.0.1:51234" */
  remote_addr: string;
  /** Host header value, with port */
  host: string;
  /** full request URI including the query string */
  uri: string;
  path: string;
  method: string;
  /** e.g. "HTTP/1.1" */
  protocol: string;
  /** "http" or "https" */
  scheme: string;
  user_agent: string;
  /** "" without a header, else "<Type> [redacted]": use redactAuthorization() */
  authorization: string;
  status: number;
  duration_ms: number;
}

export interface AccessLog {
  /** False when no access log file and no stdout copy are configured: callers may skip the work. */
  readonly enabled: boolean;
  /** Queues one entry; never blocks (the file is written asynchronously). */
  write(fields: AccessFields): void;
}

export type LevelName = "trace" | "debug" | "info" | "warn" | "error";

export const silentLogger: Logger = {
  trace() {},
  debug() {},
  info() {},
  warn() {},
  error() {},
  child() {
    return silentLogger;
  },
};

export const silentAudit: AuditLog = { record() {} };

export const silentAccess: AccessLog = { enabled: false, write() {} };
