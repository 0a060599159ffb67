/**
 * Small response helpers. Every status the API answers comes from an SvcError kind through
 * httpStatusOf (src/core/errors.ts), except the fixed 200s of the handlers.
 */
import { httpStatusOf, publicMessageOf, SvcError, toSvcError } from "../core/errors.ts";

const JSON_TYPE = "application/json";

export function jsonResponse(body: unknown, status = 200, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), { status, headers: { "content-type": JSON_TYPE, ...headers } });
}

/** Headers some error kinds must carry (RFC 9110 asks for them with 401 and 405). */
export interface ErrorHeaders {
  allow?: string;
}

/**
 * The response for an error. 409 has an empty body (docs/api.md). What a 5xx may say is decided in
 * core/errors.ts (publicMessageOf); the caller logs the full message.
 */
export function errorResponse(error: unknown, extra: ErrorHeaders = {}): Response {
  const svcError = toSvcError(error);
  const status = httpStatusOf(svcError);
  if (svcError.kind === "busy") return new Response(null, { status });
  const headers: Record<string, string> = {};
  if (svcError.kind === "unauthorized") headers["www-authenticate"] = 'Bearer realm="svc"';
  if (extra.allow) headers.allow = extra.allow;
  return jsonResponse({ error: publicMessageOf(svcError) }, status, headers);
}

export const notFound = () => new SvcError("not_found", "not found");
export const unauthorized = () => new SvcError("unauthorized", "unauthorized");
export const forbidden = () => new SvcError("forbidden", "forbidden: this token (or user) may only read");
export const methodNotAllowed = () => new SvcError("method_not_allowed", "method not allowed");
