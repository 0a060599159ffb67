/**
 * `svc healthcheck`. Kept apart from the service (src/service/) so the scratch image's HEALTHCHECK,
 * run every few seconds on small hosts, loads neither the engine client nor the HTTP framework.
 */
import type { Config } from "../config/index.ts";
import { reachableAddress, urlHost } from "../core/loopback.ts";
import { apiEnabled } from "../service/api-enabled.ts";

/** Where this machine reaches an API listening on `address`, as a URL's host: loopback for the wildcard addresses. */
export function localAddress(address: string): string {
  return urlHost(reachableAddress(address));
}

/**
 * `svc healthcheck` (the scratch image's HEALTHCHECK, no shell there): 0 when GET /v1/health
 * on the configured port answers 200. Without any API feature nothing listens by design, so
 * there is nothing to ask: that counts as healthy rather than marking every such container
 * unhealthy (which would also make a self-update roll back).
 */
export async function runHealthcheck(config: Config, timeoutMs = 3000): Promise<number> {
  if (!apiEnabled(config)) return 0;
  try {
    const response = await fetch(`http://${localAddress(config.http_api.address)}:${config.http_api.port}/v1/health`, {
      signal: AbortSignal.timeout(timeoutMs),
    });
    await response.body?.cancel();
    return response.status === 200 ? 0 : 1;
  } catch {
    return 1;
  }
}
