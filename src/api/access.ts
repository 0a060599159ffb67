/**
 * The request fields of one access-log entry (SPEC 2.6). The logging room's sink turns them
 * into an NDJSON line (`target` svc::access) in `http_api.access_log` and/or on stdout.
 */
import type { SocketAddress } from "bun";

// TEMPORARY SHIM until src/log exports AccessLog, AccessFields and redactAuthorization:
// same shape as agreed with the logging room. Replace with imports when they land.
export interface AccessFields {
  remote_addr: string;
  host: string;
  uri: string;
  path: string;
  method: string;
  protocol: string;
  scheme: string;
  user_agent: string;
  authorization: string;
  status: number;
  duration_ms: number;
}
export interface AccessLog {
  write(fields: AccessFields): void;
}
const KNOWN_SCHEMES = ["Basic", "Bearer", "Digest", "HOBA", "Mutual", "Negotiate", "NTLM", "OAuth", "SCRAM-SHA-1", "SCRAM-SHA-256", "Token", "vapid"];
/**
 * The authorization scheme followed by a redaction marker; "" without the header. Only a
 * registered scheme name is kept: a client that sends its bare token (no scheme) must not
 * see it logged as if it were the scheme.
 */
export function redactAuthorization(header: string | null): string {
  if (!header) return "";
  const first = header.trim().split(/[ \t]/, 1)[0]?.toLowerCase();
  const scheme = KNOWN_SCHEMES.find((known) => known.toLowerCase() === first);
  return scheme ? `${scheme} [redacted]` : "[redacted]";
}
// END TEMPORARY SHIM

/** `ip:port`, with brackets around an IPv6 address so the port stays unambiguous. */
export function formatAddress(address: SocketAddress | null | undefined): string {
  if (!address) return "";
  const ip = address.family === "IPv6" ? `[${address.address}]` : address.address;
  return `${ip}:${address.port}`;
}

/**
 * The Host header as sent; when it carries no port, the port the request reached is added,
 * so `host` always has one (SPEC 2.6 "Host header value, with port").
 */
export function hostWithPort(header: string | null, url: URL, serverPort: number | undefined): string {
  const host = header ?? url.host;
  if (/:\d+$/.test(host)) return host;
  const port = url.port || (serverPort === undefined ? "" : String(serverPort)) || (url.protocol === "https:" ? "443" : "80");
  return `${host}:${port}`;
}

export interface RequestInfo {
  request: Request;
  url: URL;
  remote: SocketAddress | null | undefined;
  serverPort: number | undefined;
  startedAt: number;
}

export function accessFields(info: RequestInfo, status: number): AccessFields {
  const { request, url } = info;
  return {
    remote_addr: formatAddress(info.remote),
    host: hostWithPort(request.headers.get("host"), url, info.serverPort),
    uri: url.pathname + url.search,
    path: url.pathname,
    method: request.method,
    // Bun.serve speaks HTTP/1.1 only (no HTTP/2 server), and does not expose the version.
    protocol: "HTTP/1.1",
    scheme: url.protocol.replace(/:$/, ""),
    user_agent: request.headers.get("user-agent") ?? "",
    authorization: redactAuthorization(request.headers.get("authorization")),
    status,
    duration_ms: Math.max(0, Math.round(performance.now() - info.startedAt)),
  };
}
