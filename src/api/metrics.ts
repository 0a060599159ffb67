/** GET /v1/metrics: Prometheus text 0.0.4 by default, JSON on request (docs/api.md). */
import { type Metrics, PROMETHEUS_CONTENT_TYPE } from "../metrics/index.ts";
import { jsonResponse } from "./http.ts";

/** Media types the client accepts (q > 0), lower-cased, parameters dropped. */
function acceptedTypes(accept: string | null): Set<string> {
  const types = new Set<string>();
  if (!accept) return types;
  for (const range of accept.split(",")) {
    const [type, ...params] = range.split(";").map((part) => part.trim().toLowerCase());
    if (!type) continue;
    const q = params.find((param) => param.startsWith("q="));
    if (q !== undefined && !(Number(q.slice(2)) > 0)) continue;
    types.add(type);
  }
  return types;
}

/** JSON only when asked for explicitly and text/plain is not also acceptable. */
export function wantsJson(accept: string | null): boolean {
  const types = acceptedTypes(accept);
  return types.has("application/json") && !types.has("text/plain");
}

export function metricsResponse(metrics: Metrics, accept: string | null): Response {
  if (wantsJson(accept)) return jsonResponse(metrics.snapshot());
  return new Response(metrics.toPrometheus(), { status: 200, headers: { "content-type": PROMETHEUS_CONTENT_TYPE } });
}
