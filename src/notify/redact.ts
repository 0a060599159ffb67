/**
 * Error messages of network libraries sometimes echo what they were given (a URL with a token in
 * its path, a rejected password). Every reason we log goes through a redactor that knows the
 * configured secrets.
 */
export type Redactor = (text: string) => string;

export const MASK = "***";

export function createRedactor(secrets: ReadonlyArray<string | undefined>): Redactor {
  // Longest first, so a secret containing another is masked whole. Very short values would mask
  // ordinary words ("a", "on"); a secret that short is no secret anyway.
  const values = [...new Set(secrets.filter((s): s is string => typeof s === "string" && s.length >= 3))].sort((a, b) => b.length - a.length);
  return (text) => {
    let out = text;
    for (const value of values) out = out.split(value).join(MASK);
    return out;
  };
}

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
