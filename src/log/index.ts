/**
 * The logging room: the Logger every room writes to, the audit log of engine changes, and the
 * access-log sink of the HTTP API. The service builds them once with createLogging(logSettings(config)).
 */
export type { AccessFields, AccessLog, AuditEntry, AuditLog, Fields, LevelName, Logger } from "./types.ts";
export { silentAccess, silentAudit, silentLogger } from "./types.ts";
export { createLogging, resolveFormat, type Logging, type LoggingOptions } from "./logging.ts";
export type { OutputFormat, Writable } from "./logger.ts";
export { REDACTED, createRedactor, describeError, redactAuthorization, redactValue, type Redactor } from "./redact.ts";
