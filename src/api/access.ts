/**
 * The request fields of one access-log entry (SPEC 2.6). The logging room's sink turns them
 * into an NDJSON line (`target` svc::access) in `http_api.access_log` and/or on stdout.
 */
import type { SocketAddress } from "bun";
import { type AccessFields, redactAuthorization } from "../log/index.ts";


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
