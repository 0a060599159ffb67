/**
 * How one log record becomes one line of text. JSON and logfmt are for machines (one record per
 * line, always); pretty is for a person at a terminal and is drawn by consola's reporters.
 */
import type { Fields, LevelName } from "./types.ts";

export interface LogRecord {
  timestamp: Date;
  level: LevelName;
  target: string;
  message: string;
  /** already sanitized: plain JSON values, secrets redacted */
  fields: Fields;
}

/** `{"timestamp","level","target","message","fields"}` on one line (no trailing newline). */
export function formatJson(record: LogRecord): string {
  return JSON.stringify({
    timestamp: record.timestamp.toISOString(),
    level: record.level,
    target: record.target,
    message: record.message,
    fields: record.fields,
  });
}

/** `timestamp=... level=info target=svc message="..." key=value ...` (no trailing newline). */
export function formatLogfmt(record: LogRecord): string {
  const pairs: string[] = [
    `timestamp=${record.timestamp.toISOString()}`,
    `level=${record.level}`,
    `target=${logfmtValue(record.target)}`,
    `message=${logfmtValue(record.message)}`,
  ];
  const fields = logfmtFields(record.fields);
  return fields === "" ? pairs.join(" ") : `${pairs.join(" ")} ${fields}`;
}

/** Fields as `key=value` pairs; nested objects flatten to dotted keys, arrays become JSON. */
export function logfmtFields(fields: Fields, prefix = ""): string {
  const pairs: string[] = [];
  for (const [key, value] of Object.entries(fields)) {
    const name = prefix + logfmtKey(key);
    if (value !== null && typeof value === "object" && !Array.isArray(value)) {
      const nested = logfmtFields(value as Fields, `${name}.`);
      if (nested !== "") pairs.push(nested);
    } else {
      pairs.push(`${name}=${logfmtValue(value)}`);
    }
  }
  return pairs.join(" ");
}

function logfmtKey(key: string): string {
  const clean = key.replace(/[^A-Za-z0-9_.:/-]/g, "_");
  return clean === "" ? "_" : clean;
}

/** Bare when unambiguous, else a JSON string literal (the quoting logfmt parsers accept). */
export function logfmtValue(value: unknown): string {
  const text = typeof value === "string" ? value : value === undefined ? "" : JSON.stringify(value);
  if (typeof value === "string" || Array.isArray(value)) {
    // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what must be quoted
    return text === "" || /[\s"=\\\u0000-\u001f\u007f]/.test(text) ? JSON.stringify(text) : text;
  }
  return text;
}
