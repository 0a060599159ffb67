/**
 * The access-log sink (docs/api.md, "Logs the API writes"): {timestamp, level, target: "svc::access", fields} with
 * exactly the listed request fields. The API builds the fields; this writes them without ever
 * making the response wait.
 */
import type { LogRecord } from "./format.ts";
import type { Redactor } from "./redact.ts";
import type { AccessFields, AccessLog } from "./types.ts";

export const ACCESS_TARGET = "svc::access";

/** The fields in their documented order, strings redacted, numbers as integers. */
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
  return lineOf(accessFields(fields, redact), now.toISOString());
}

/** The NDJSON line of fields already cleaned by accessFields. */
function lineOf(clean: AccessFields, timestamp: string): string {
  return JSON.stringify({ timestamp, level: "info", target: ACCESS_TARGET, fields: clean });
}

function recordOf(clean: AccessFields, now: Date): LogRecord {
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
}

export function createAccessLog(outputs: AccessOutputs): AccessLog {
  const { file, stdout, redact } = outputs;
  if (!file && !stdout) return { enabled: false, write() {} };
  const timestamp = isoClock();
  return {
    enabled: true,
    write(fields) {
      const at = Date.now();
      const clean = accessFields(fields, redact);
      file?.write(lineOf(clean, timestamp(at)));
      // The stdout copy is deferred too: a slow terminal or pipe must not hold up the response.
      if (stdout) setImmediate(() => stdout.write(recordOf(clean, new Date(at))));
    },
  };
}

/**
 * toISOString, remembered for the millisecond: under load many entries share one, and
 * formatting each anew (and a Date for each) was a measurable part of what the access log costs
 * a request.
 */
function isoClock(): (ms: number) => string {
  let last = Number.NaN;
  let text = "";
  return (ms) => {
    if (ms !== last) {
      last = ms;
      text = new Date(ms).toISOString();
    }
    return text;
  };
}
