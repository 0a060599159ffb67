/**
 * Bearer-token check. Both sides are hashed to fixed-length sha256 digests before a
 * constant-time comparison, so neither the token's content nor its length leaks through
 * timing (a plain `===` stops at the first differing byte).
 */
export type TokenCheck = (authorization: string | null) => boolean;

// Bun's own hashing and the global crypto.timingSafeEqual: loading node:crypto cost every
// start about 3 ms before the API could listen.
const digest = (value: string): Uint8Array => Bun.SHA256.hash(value) as Uint8Array;

/** Extracts the credential of `Bearer <credential>` (scheme case-insensitive), or null. */
export function bearerCredential(authorization: string | null): string | null {
  if (!authorization) return null;
  const match = /^bearer[ \t]+(.+)$/i.exec(authorization.trim());
  return match?.[1] ? match[1].trim() : null;
}

/** Without a configured token nothing is accepted: an authenticated endpoint fails closed. */
export function createTokenCheck(token: string | undefined): TokenCheck {
  if (!token) return () => false;
  const expected = digest(token);
  return (authorization) => {
    const credential = bearerCredential(authorization);
    if (credential === null) return false;
    return crypto.timingSafeEqual(digest(credential), expected);
  };
}
