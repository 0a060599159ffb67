/**
 * The audit log: one NDJSON entry per change svc makes to the engine, with who asked for it.
 * Its shape (docs/api.md, "Logs the API writes"): {timestamp, level, target: "svc::audit", fields: {action, container,
 * container_id, image, trigger, session_id, error?}}, with `file` and `change` for a compose or
 * unit file change, `actor` and `request` for an API request.
 */
import type { LogRecord } from "./format.ts";
import type { Redactor } from "./redact.ts";
import type { AuditEntry, AuditLog, Fields } from "./types.ts";

export const AUDIT_TARGET = "svc::audit";

/** Every key always present (null when unknown) so consumers can rely on the shape; `error` only on failure. */
export function auditFields(entry: AuditEntry, redact: Redactor): Fields {
  const text = (value: string | undefined): string | null => (value === undefined ? null : redact(value));
  const fields: Fields = {
    action: entry.action,
    container: text(entry.container),
    container_id: text(entry.container_id),
    image: text(entry.image),
    trigger: redact(entry.trigger),
    session_id: text(entry.session_id),
  };
  if (entry.actor !== undefined) fields.actor = redact(entry.actor);
  if (entry.request !== undefined) fields.request = redact(entry.request);
  // a compose or unit file change says which files and what changed (docs/api.md)
  if (entry.file !== undefined) fields.file = redact(entry.file);
  if (entry.change !== undefined) fields.change = redact(entry.change);
  if (entry.error !== undefined) fields.error = redact(entry.error);
  return fields;
}

/** The line written to the audit file. */
export function auditLine(entry: AuditEntry, redact: Redactor, now: Date): string {
  return JSON.stringify({
    timestamp: now.toISOString(),
    level: entry.error === undefined ? "info" : "error",
    target: AUDIT_TARGET,
    fields: auditFields(entry, redact),
  });
}

/** The same event as a log record, for the copy on stdout (which, in JSON, also needs a message). */
export function auditRecord(entry: AuditEntry, redact: Redactor, now: Date): LogRecord {
  const subject = entry.container ?? entry.image ?? entry.container_id ?? "";
  const message = `${entry.action}${subject ? ` ${subject}` : ""}${entry.error === undefined ? "" : " failed"}`;
  return {
    timestamp: now,
    level: entry.error === undefined ? "info" : "error",
    target: AUDIT_TARGET,
    message: redact(message),
    fields: auditFields(entry, redact),
  };
}

export interface AuditOutputs {
  file?: { write(line: string): void };
  stdout?: { write(record: LogRecord): void };
  redact: Redactor;
  now?: () => Date;
}

export function createAuditLog(outputs: AuditOutputs): AuditLog {
  const { file, stdout, redact } = outputs;
  const now = outputs.now ?? (() => new Date());
  if (!file && !stdout) return { record() {} };
  return {
    record(entry) {
      const at = now();
      file?.write(auditLine(entry, redact, at));
      stdout?.write(auditRecord(entry, redact, at));
    },
  };
}
