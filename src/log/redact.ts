/**
 * Secrets never reach a log line: every message and every string inside fields goes through one
 * redactor that knows the configured secret values.
 */
import type { Fields } from "./types.ts";

export const REDACTED = "[redacted]";

export type Redactor = (text: string) => string;

/**
 * A one- or two-character "secret" would mask ordinary letters in every line and protects nothing,
 * so values shorter than this are not searched for.
 */
const MIN_SECRET_LENGTH = 3;

export function createRedactor(secrets: ReadonlyArray<string | undefined>): Redactor {
  // Longest first, so a secret that contains another one is masked whole.
  const values = [
    ...new Set(secrets.filter((s): s is string => typeof s === "string" && s.length >= MIN_SECRET_LENGTH)),
  ].sort((a, b) => b.length - a.length);
  if (values.length === 0) return (text) => text;
  return (text) => {
    let out = text;
    for (const value of values) if (out.includes(value)) out = out.split(value).join(REDACTED);
    return out;
  };
}

/**
 * HTTP authentication schemes (IANA's registry, and the common token forms): names, never
 * credentials, so the only first words of an Authorization header an access log may show.
 */
const AUTH_SCHEMES = new Set([
  "basic",
  "bearer",
  "digest",
  "token",
  "negotiate",
  "ntlm",
  "hoba",
  "mutual",
  "vapid",
  "dpop",
  "oauth",
  "apikey",
  "aws4-hmac-sha256",
  "scram-sha-1",
  "scram-sha-256",
  "privatetoken",
  "concealed",
  "gnap",
]);

/**
 * The `authorization` field of an access-log entry: "" without a header, "<Scheme> [redacted]"
 * for a known authentication scheme, else the mask alone: a first word that is no scheme (a
 * `ghp_...` token followed by anything) may be the credential itself.
 */
export function redactAuthorization(headerValue: string | null | undefined): string {
  const value = (headerValue ?? "").trim();
  if (value === "") return "";
  const match = /^(\S+)\s+\S/.exec(value);
  return match && AUTH_SCHEMES.has(match[1]!.toLowerCase()) ? `${match[1]} ${REDACTED}` : REDACTED;
}

/**
 * Fields as they are written: plain JSON values, errors as their message, no cycles, no
 * undefined, every string redacted.
 */
export function sanitizeFields(fields: Fields | undefined, redact: Redactor): Fields {
  if (!fields) return {};
  return sanitizeValue(fields, redact, new WeakSet()) as Fields;
}

/** A copy of a plain value (a report, an option's value) with every string in it redacted. */
export function redactValue<T>(value: T, redact: Redactor): T {
  return sanitizeValue(value, redact, new WeakSet()) as T;
}

function sanitizeValue(value: unknown, redact: Redactor, seen: WeakSet<object>): unknown {
  switch (typeof value) {
    case "string":
      return redact(value);
    case "number":
      return Number.isFinite(value) ? value : String(value);
    case "boolean":
      return value;
    case "bigint":
      return value.toString();
    case "undefined":
      return undefined;
    case "function":
    case "symbol":
      return redact(String(value));
  }
  if (value === null) return null;
  if (value instanceof Error) return redact(describeError(value));
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? null : value.toISOString();
  const object = value as object;
  if (seen.has(object)) return "[circular]";
  seen.add(object);
  try {
    if (Array.isArray(object)) return object.map((item) => sanitizeValue(item, redact, seen) ?? null);
    if (object instanceof Map) return sanitizeValue(Object.fromEntries(object), redact, seen);
    if (object instanceof Set) return sanitizeValue([...object], redact, seen);
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(object)) {
      const clean = sanitizeValue(item, redact, seen);
      if (clean !== undefined) out[key] = clean;
    }
    return out;
  } finally {
    seen.delete(object);
  }
}

/** One line about an error: its message, the details of an SvcError, and the cause when it adds something. */
export function describeError(error: Error): string {
  let text = error.message || error.name;
  const details = (error as { details?: unknown }).details;
  if (Array.isArray(details) && details.length > 0) text += `: ${details.join("; ")}`;
  const cause = (error as { cause?: unknown }).cause;
  if (cause instanceof Error && cause.message && !text.includes(cause.message)) text += ` (cause: ${cause.message})`;
  return text;
}
