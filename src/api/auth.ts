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

/**
 * Who a request comes from (docs/dashboard.md, roles): the admin token may do everything, a
 * viewer token or (by default) a user an identity proxy signed in may only read. `name` is what
 * the audit log writes; never a token.
 */
export type Role = "admin" | "viewer";
export interface Principal {
  role: Role;
  name: string;
  /** "proxy": signed in by the identity proxy's header (its cookie: same-origin.ts); absent: a token */
  via?: "proxy";
}

/** The request's Authorization header, the proxy header's value and the address it came from (read only when needed). */
export type Authenticate = (
  authorization: string | null,
  proxyUser: () => string | null,
  remote: () => string | undefined,
) => Principal | null;

export interface AuthSettings {
  token?: string;
  viewer_tokens: readonly string[];
  trusted_proxy_header?: string;
  trusted_proxies: readonly string[];
  trusted_proxy_role: Role;
}

/** A user name as a proxy sends it: letters, digits and `._@+-`, at most 128 (anything else signs no one in). */
const PROXY_USER = /^[A-Za-z0-9._@+-]{1,128}$/;

/** `::ffff:10.0.0.1` (an IPv4 client of a dual-stack socket) is 10.0.0.1. */
export function plainAddress(address: string): string {
  return address.toLowerCase().startsWith("::ffff:") && address.includes(".")
    ? address.slice(7)
    : address.toLowerCase();
}

/**
 * A bearer token, when one is sent, decides alone (a wrong one is 401 even behind the proxy).
 * Without one, the proxy's header is believed only from a configured proxy address.
 */
export function createAuthenticator(settings: AuthSettings): Authenticate {
  const admin = createTokenCheck(settings.token);
  const viewers = settings.viewer_tokens.map((token) => createTokenCheck(token));
  const proxies = new Set(settings.trusted_proxies.map(plainAddress));
  const header = settings.trusted_proxy_header;
  return (authorization, proxyUser, remote) => {
    if (bearerCredential(authorization) !== null) {
      if (admin(authorization)) return { role: "admin", name: "admin token" };
      const index = viewers.findIndex((check) => check(authorization));
      return index < 0 ? null : { role: "viewer", name: `viewer token ${index + 1}` };
    }
    if (!header) return null;
    const address = remote();
    if (address === undefined || !proxies.has(plainAddress(address))) return null;
    const user = proxyUser()?.trim();
    return user && PROXY_USER.test(user) ? { role: settings.trusted_proxy_role, name: user, via: "proxy" } : null;
  };
}
