/**
 * The request fields of one access-log entry (docs/api.md, "Logs the API writes"). The logging room's sink turns them
 * into an NDJSON line (`target` svc::access) in `http_api.access_log` and/or on stdout.
 */
import type { SocketAddress } from "bun";
import { type AccessFields, redactAuthorization } from "../log/index.ts";

/** The parts of a request's absolute URL the API needs, without building a URL object. */
export interface RequestTarget {
  /** "http" */
  scheme: string;
  /** host[:port] as in the URL */
  authority: string;
  path: string;
  /** "" or "?..." */
  query: string;
}

/** Splits `scheme://authority/path?query` (the form Bun gives request.url). */
export function requestTarget(href: string): RequestTarget {
  const schemeEnd = href.indexOf("://");
  const authorityStart = schemeEnd < 0 ? 0 : schemeEnd + 3;
  let pathStart = href.indexOf("/", authorityStart);
  if (pathStart < 0) pathStart = href.length;
  let queryStart = href.indexOf("?", pathStart);
  if (queryStart < 0) queryStart = href.length;
  const hashStart = href.indexOf("#", queryStart);
  const end = hashStart < 0 ? href.length : hashStart;
  return {
    scheme: schemeEnd < 0 ? "" : href.slice(0, schemeEnd),
    authority: href.slice(authorityStart, pathStart),
    path: href.slice(pathStart, queryStart) || "/",
    query: href.slice(queryStart, end),
  };
}

/** `ip:port`, with brackets around an IPv6 address so the port stays unambiguous. */
export function formatAddress(address: SocketAddress | null | undefined): string {
  if (!address) return "";
  const ip = address.family === "IPv6" ? `[${address.address}]` : address.address;
  return `${ip}:${address.port}`;
}

/**
 * The Host header as sent; when it carries no port, the port the request reached is added,
 * so `host` always has one (docs/api.md: the Host header value, with the port).
 */
export function hostWithPort(header: string | null, target: RequestTarget, serverPort: number | undefined): string {
  const host = header ?? target.authority;
  if (/:\d+$/.test(host)) return host;
  const port = serverPort === undefined ? (target.scheme === "https" ? "443" : "80") : String(serverPort);
  return `${host}:${port}`;
}

export interface RequestInfo {
  request: Request;
  target: RequestTarget;
  remote: SocketAddress | null | undefined;
  serverPort: number | undefined;
  startedAt: number;
}

export function accessFields(info: RequestInfo, status: number): AccessFields {
  const { request, target } = info;
  return {
    remote_addr: formatAddress(info.remote),
    host: hostWithPort(request.headers.get("host"), target, info.serverPort),
    uri: target.path + target.query,
    path: target.path,
    method: request.method,
    // Bun.serve speaks HTTP/1.1 only (no HTTP/2 server), and does not expose the version.
    protocol: "HTTP/1.1",
    scheme: target.scheme,
    user_agent: request.headers.get("user-agent") ?? "",
    authorization: redactAuthorization(request.headers.get("authorization")),
    status,
    duration_ms: Math.max(0, Math.round(performance.now() - info.startedAt)),
  };
}
