/**
 * Errors are values with a kind. The kind alone decides the process exit code and the
 * HTTP status: those two mappings live here and nowhere else. Never branch on class names
 * (`bun build --minify` renames classes); branch on `kind`.
 */
export type ErrorKind =
  | "config" // bad configuration: nothing was touched
  | "usage" // bad command line
  | "startup" // could not start (port in use, template broken...)
  | "engine" // the Docker engine refused or is unreachable
  | "registry" // a registry refused or is unreachable
  | "reference" // a malformed image reference
  | "notify" // a notification channel failed
  | "peer" // another svc instance (peers) did not answer
  | "bad_request"
  | "unauthorized"
  | "forbidden" // a read-only caller asked for an action
  | "not_found"
  | "method_not_allowed"
  | "unsupported_media_type"
  | "payload_too_large"
  | "busy" // another cycle is running
  | "internal";

export class SvcError extends Error {
  readonly kind: ErrorKind;
  /** Extra lines shown under the message, e.g. every problem of a configuration. */
  readonly details: readonly string[];

  constructor(kind: ErrorKind, message: string, options: { details?: readonly string[]; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "SvcError";
    this.kind = kind;
    this.details = options.details ?? [];
  }
}

export function isSvcError(value: unknown): value is SvcError {
  return (
    value instanceof Error && typeof (value as SvcError).kind === "string" && Array.isArray((value as SvcError).details)
  );
}

/** Wraps anything thrown into an SvcError, keeping the original as the cause. */
export function toSvcError(value: unknown, fallback: ErrorKind = "internal"): SvcError {
  if (isSvcError(value)) return value;
  const message = value instanceof Error ? value.message : String(value);
  return new SvcError(fallback, message, { cause: value });
}

const EXIT_CODES: Record<ErrorKind, number> = {
  config: 2,
  usage: 2,
  startup: 2,
  engine: 1,
  registry: 1,
  reference: 1,
  notify: 1,
  peer: 1,
  bad_request: 1,
  unauthorized: 1,
  forbidden: 1,
  not_found: 1,
  method_not_allowed: 1,
  unsupported_media_type: 1,
  payload_too_large: 1,
  busy: 1,
  internal: 1,
};

export function exitCodeOf(error: unknown): number {
  return EXIT_CODES[toSvcError(error).kind];
}

const HTTP_STATUSES: Record<ErrorKind, number> = {
  config: 500,
  usage: 400,
  startup: 500,
  engine: 500,
  registry: 500,
  reference: 400,
  notify: 500,
  peer: 502,
  bad_request: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  unsupported_media_type: 415,
  payload_too_large: 413,
  busy: 409,
  internal: 500,
};

export function httpStatusOf(error: unknown): number {
  return HTTP_STATUSES[toSvcError(error).kind];
}

/**
 * What an HTTP client is told. A 5xx carries our own message only for the failures an operator
 * must act on (the engine or a registry unreachable: messages written by us, never holding a
 * credential); anything else at 500 is "internal error" (its message may name internals).
 */
const OPERATIONAL_KINDS: ReadonlySet<ErrorKind> = new Set(["engine", "registry", "peer"]);

export function publicMessageOf(error: unknown): string {
  const svcError = toSvcError(error);
  return HTTP_STATUSES[svcError.kind] >= 500 && !OPERATIONAL_KINDS.has(svcError.kind)
    ? "internal error"
    : svcError.message;
}
