/**
 * Whether a request the identity proxy vouches for comes from svc's own page (docs/security.md).
 * The proxy sets its header for its session cookie, which a browser sends with any site's form
 * too: such a request acts only when it is same-origin (Fetch's `Sec-Fetch-Site`, else an `Origin`
 * naming the host it was sent to), carries a header no form can set (`X-Svc-Request`, or a JSON
 * content type), and is not a form body. svc's page sends both; a bearer token needs neither.
 */

/** The header svc's page sends with every request: a form cannot, and another origin's script cannot without CORS. */
export const PAGE_REQUEST_HEADER = "x-svc-request";

/** What an HTML form can send as a body (its enctypes). */
const FORM_TYPES = new Set(["application/x-www-form-urlencoded", "multipart/form-data", "text/plain"]);

/** Why the request may not act on the proxy's word, or null when it may. */
export function notFromThePage(request: Request): string | null {
  if (!sameOrigin(request)) return "it does not come from svc's own origin (Sec-Fetch-Site, Origin)";
  const type = (request.headers.get("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
  if (FORM_TYPES.has(type)) return "it is a form's body";
  if (!request.headers.has(PAGE_REQUEST_HEADER) && type !== "application/json")
    return `it carries neither ${PAGE_REQUEST_HEADER} nor a JSON body`;
  return null;
}

function sameOrigin(request: Request): boolean {
  const site = request.headers.get("sec-fetch-site");
  if (site !== null) return site === "same-origin";
  const origin = request.headers.get("origin");
  if (origin === null) return false;
  let host: string;
  try {
    host = new URL(origin).host;
  } catch {
    return false; // "null" (a sandboxed frame, a file) is no origin
  }
  // the Host the browser sent to, as the proxy passed it on (or named it apart)
  const own = [request.headers.get("host"), request.headers.get("x-forwarded-host")].filter(
    (value): value is string => value !== null,
  );
  return own.some((value) => value.split(",")[0]!.trim().toLowerCase() === host.toLowerCase());
}
