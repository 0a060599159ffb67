/**
 * Error messages of network libraries sometimes echo what they were given (a URL with a token in
 * its path, a rejected password). Every reason we log goes through the log room's redactor, given
 * the configuration's secrets and those notify derives from them.
 */
import type { Redactor } from "../log/index.ts";

/** The reason of a failure, as one line, secrets masked. */
export function reasonOf(error: unknown, redact: Redactor): string {
  let text: string;
  if (error instanceof Error) {
    // DOMExceptions carry a numeric legacy code (23 for a timeout): only string codes say something.
    const raw = (error as { code?: unknown }).code;
    const code = typeof raw === "string" ? raw : undefined;
    text = error.message || code || error.name;
    if (code && !text.includes(code)) text = `${text} (${code})`;
  } else {
    text = String(error);
  }
  return redact(text.replace(/\s+/g, " ").trim());
}
