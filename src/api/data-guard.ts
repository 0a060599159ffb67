/**
 * GET /v1/data-guard: the data guard's copies (docs/data-guard.md), with their container, size,
 * age and version; DELETE /v1/data-guard?container=NAME&id=ID removes one. A copy a restore is
 * using is not removed (409).
 */

import { SvcError } from "../core/errors.ts";
import type { CopyList } from "../dataguard/index.ts";
import type { Endpoint, Handler } from "./endpoint.ts";
import { jsonResponse } from "./http.ts";

export function dataGuardEndpoint(copies: CopyList | undefined): Endpoint {
  const list: Handler = () => jsonResponse({ copies: copies?.list() ?? [] });
  const remove: Handler = ({ target }) => {
    const query = new URLSearchParams(target.query);
    const container = query.get("container");
    const id = query.get("id");
    if (!container || !id)
      throw new SvcError("bad_request", "name the copy: ?container=NAME&id=ID (GET /v1/data-guard lists them)");
    const outcome = copies?.remove(container, id) ?? "missing";
    if (outcome === "missing") throw new SvcError("not_found", `no copy ${id} of ${container}`);
    if (outcome === "restoring") throw new SvcError("busy", `copy ${id} of ${container} is being restored`);
    return new Response(null, { status: 204 });
  };
  return { path: "/v1/data-guard", enabled: true, authenticated: true, methods: { GET: list, DELETE: remove } };
}
