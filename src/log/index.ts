/**
 * TEMPORARY STUB: the logging contract. The log room replaces the implementation and keeps
 * these exports. Every line has a `target` (e.g. "svc::updater"), a message and structured
 * fields. Secrets never go into fields.
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

/** One entry of the audit log: every change svc makes to the engine (CONTRACT.md). */
export interface AuditEntry {
  action: "pull" | "stop" | "rename" | "create" | "start" | "remove" | "image_remove" | "rollback" | "connect" | "recover";
  container?: string;
  container_id?: string;
  image?: string;
  trigger: string;
  session_id?: string;
  error?: string;
}

export interface AuditLog {
  record(entry: AuditEntry): void;
}

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
