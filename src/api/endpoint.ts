/** One path of the API: whether it is on, whether it needs the token, its handlers by method. */
import type { Server } from "bun";
import { SvcError } from "../core/errors.ts";
import type { RequestTarget } from "./access.ts";
import type { Principal } from "./auth.ts";
import { errorResponse, jsonResponse } from "./http.ts";

/** One request as a handler sees it: never Elysia's Context. */
export interface Call {
  request: Request;
  target: RequestTarget;
  server: Server<unknown> | null;
  /** the path's parameters (`/v1/peers/:name/containers`), decoded by Elysia */
  params: Record<string, string>;
  /** the caller of an endpoint that needs the token (its role and the name the audit log writes) */
  who?: Principal;
}

export type Handler = (call: Call) => Response | Promise<Response>;

/** A GET answers HEAD too (Elysia answers it as the GET without a body). */
export type Method = "GET" | "POST" | "DELETE";

export interface Endpoint {
  /** Elysia's path, exact (`strictPath`), with `:name` for a parameter */
  path: string;
  enabled: boolean;
  authenticated: boolean;
  methods: Partial<Record<Method, Handler>>;
  /** a path with parameters: whether they name something; otherwise 404 whatever the method */
  names?: (params: Record<string, string>) => boolean;
}

/** The runner's answer as JSON; null means another cycle is running (the runner counted the skip). */
export function answer<T>(result: T | null, render: (value: T) => unknown = (value) => value): Response {
  return result === null
    ? errorResponse(new SvcError("busy", "another update cycle is running"))
    : jsonResponse(render(result));
}

/** The one container a request about a single container names. */
export function oneContainer(names: string[] | undefined): string {
  if (names?.length !== 1) throw new SvcError("bad_request", "name exactly one container");
  return names[0]!;
}

/** A read: GET (and so HEAD), with or without the token. */
export function getEndpoint(path: string, enabled: boolean, authenticated: boolean, get: Handler): Endpoint {
  return { path, enabled, authenticated, methods: { GET: get } };
}

/** An action: POST, always with the admin's token. */
export function postEndpoint(path: string, enabled: boolean, post: Handler): Endpoint {
  return { path, enabled, authenticated: true, methods: { POST: post } };
}
