/**
 * Small response helpers. Every status the API answers comes from an SvcError kind through
 * httpStatusOf (src/errors.ts), except the fixed 200s of the handlers.
 */
import { type ErrorKind, httpStatusOf, SvcError, toSvcError } from "../errors.ts";

const JSON_TYPE = "application/json";

export function jsonResponse(body: unknown, status = 200, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), { status, headers: { "content-type": JSON_TYPE, ...headers } });
}

/** Headers some error kinds must carry (RFC 9110 asks for them with 401 and 405). */
export interface ErrorHeaders {
  allow?: string;
}

/**
 * The response for an error. 409 has an empty body (SPEC 4). A 500 carries our own message only
 * for the expected failures an operator must act on (the engine or a registry unreachable: those
 * messages are written by us and never hold a credential); anything unexpected is answered
 * "internal error" (its message may name internals) and the caller logs it.
 */
export function errorResponse(error: unknown, extra: ErrorHeaders = {}): Response {
  const svcError = toSvcError(error);
  const status = httpStatusOf(svcError);
  if (svcError.kind === "busy") return new Response(null, { status });
  const headers: Record<string, string> = {};
  if (svcError.kind === "unauthorized") headers["www-authenticate"] = 'Bearer realm="svc"';
  if (extra.allow) headers.allow = extra.allow;
  const message = status >= 500 && !OPERATIONAL_KINDS.has(svcError.kind) ? "internal error" : svcError.message;
  return jsonResponse({ error: message }, status, headers);
}

const OPERATIONAL_KINDS: ReadonlySet<ErrorKind> = new Set(["engine", "registry"]);

/** HEAD behaves like GET without a body: same status and headers. */
export function withoutBody(response: Response): Response {
  return new Response(null, { status: response.status, headers: response.headers });
}

export const notFound = () => new SvcError("not_found", "not found");
export const unauthorized = () => new SvcError("unauthorized", "unauthorized");
export const methodNotAllowed = () => new SvcError("method_not_allowed", "method not allowed");
