/** One path of the API: whether it is on, whether it needs the token, its handlers by method. */
import type { Server } from "bun";
import { SvcError } from "../core/errors.ts";
import type { RequestTarget } from "./access.ts";
import type { Principal } from "./auth.ts";
import { errorResponse, jsonResponse, withoutBody } from "./http.ts";

/** `who`: the caller of an authenticated endpoint (its role and the name the audit log writes). */
export type Handler = (
  request: Request,
  target: RequestTarget,
  server: Server<unknown> | null,
  who?: Principal,
) => Response | Promise<Response>;

export interface Endpoint {
  enabled: boolean;
  authenticated: boolean;
  methods: Partial<Record<string, Handler>>;
  allow: string;
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

export function getEndpoint(enabled: boolean, authenticated: boolean, get: Handler): Endpoint {
  const head: Handler = async (request, target, server, who) => withoutBody(await get(request, target, server, who));
  return { enabled, authenticated, methods: { GET: get, HEAD: head }, allow: "GET, HEAD" };
}
