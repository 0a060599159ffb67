/**
 * The logging room: the Logger every room writes to, the audit log of engine changes, and the
 * access-log sink of the HTTP API. The service builds them once with createLogging(logSettings(config)).
 */

export type { OutputFormat, Writable } from "./logger.ts";
export { createLogging, type Logging, type LoggingOptions, resolveFormat } from "./logging.ts";
export { createRedactor, describeError, REDACTED, type Redactor, redactAuthorization, redactValue } from "./redact.ts";
export type { AccessFields, AccessLog, AuditEntry, AuditLog, Fields, LevelName, Logger } from "./types.ts";
export { silentAccess, silentAudit, silentLogger } from "./types.ts";
