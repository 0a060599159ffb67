/**
 * The access-log sink of SPEC.md 2.6: {timestamp, level, target: "svc::access", fields} with
 * exactly the listed request fields. The API builds the fields; this writes them without ever
 * making the response wait.
 */
import type { LogRecord } from "./format.ts";
import type { Redactor } from "./redact.ts";
import type { AccessFields, AccessLog } from "./types.ts";

export const ACCESS_TARGET = "svc::access";

/** The fields in SPEC order, strings redacted, numbers as integers. */
export function accessFields(fields: AccessFields, redact: Redactor): AccessFields {
  const text = (value: string): string => redact(String(value ?? ""));
  const integer = (value: number): number => (Number.isFinite(value) ? Math.max(0, Math.round(value)) : 0);
  return {
    remote_addr: text(fields.remote_addr),
    host: text(fields.host),
    uri: text(fields.uri),
    path: text(fields.path),
    method: text(fields.method),
    protocol: text(fields.protocol),
    scheme: text(fields.scheme),
    user_agent: text(fields.user_agent),
    authorization: text(fields.authorization),
    status: integer(fields.status),
    duration_ms: integer(fields.duration_ms),
  };
}

export function accessLine(fields: AccessFields, redact: Redactor, now: Date): string {
  return JSON.stringify({ timestamp: now.toISOString(), level: "info", target: ACCESS_TARGET, fields: accessFields(fields, redact) });
}

export function accessRecord(fields: AccessFields, redact: Redactor, now: Date): LogRecord {
  const clean = accessFields(fields, redact);
  return {
    timestamp: now,
    level: "info",
    target: ACCESS_TARGET,
    message: `${clean.method} ${clean.uri} ${clean.status}`,
    fields: { ...clean },
  };
}

export interface AccessOutputs {
  file?: { write(line: string): void };
  stdout?: { write(record: LogRecord): void };
  redact: Redactor;
  now?: () => Date;
}

export function createAccessLog(outputs: AccessOutputs): AccessLog {
  const { file, stdout, redact } = outputs;
  const now = outputs.now ?? (() => new Date());
  if (!file && !stdout) return { enabled: false, write() {} };
  return {
    enabled: true,
    write(fields) {
      const at = now();
      file?.write(accessLine(fields, redact, at));
      // The stdout copy is deferred too: a slow terminal or pipe must not hold up the response.
      if (stdout) setImmediate(() => stdout.write(accessRecord(fields, redact, at)));
    },
  };
}
