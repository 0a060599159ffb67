/**
 * What says a value is a credential, for every redactor of notification settings (the URLs here,
 * and the webhook's URL and headers in the notify room): its name, its look, and the credential
 * after an authorization scheme.
 */

/** Names that say a value is a credential (a query parameter, a header, an extra field). */
const CREDENTIAL_NAME = /auth|token|key|secret|sig|pass|cookie|session|signature/i;

/** shoutrrr's own parameters whose names hold one of those words, and no credential. */
const NOT_CREDENTIALS = new Set(["cleansession", "titlekey", "messagekey"]);

/** Whether a parameter or header of this name holds a credential. */
export function isCredentialName(name: string): boolean {
  return CREDENTIAL_NAME.test(name) && !NOT_CREDENTIALS.has(name.toLowerCase());
}

/**
 * Long with a digit, or very long: a token, a key. Never a short word ("prod", "/svc"), which
 * would mask ordinary words in every log line.
 */
export function looksLikeToken(text: string): boolean {
  return (text.length >= 8 && /\d/.test(text)) || text.length >= 16;
}

/** `Bearer abc` -> `abc`: the credential of a header value that starts with a scheme. */
export function credentialOf(value: string): string[] {
  const match = /^[A-Za-z][A-Za-z0-9._-]{0,31}\s+(\S.*)$/.exec(value);
  return match ? [match[1]!] : [];
}
