/**
 * TEMPORARY STUB: the running service (composition root). The API/scheduler room replaces it:
 * wires config -> log -> engine -> registry -> updater -> notify -> scheduler -> API, handles
 * signals, and resolves with the process exit code.
 */
import type { Config } from "./config/index.ts";

export async function runService(_config: Config): Promise<number> {
  throw new Error("the service is not wired yet");
}

/** `svc healthcheck`: exits 0 when GET /v1/health on the configured port answers 200. */
export async function runHealthcheck(_config: Config): Promise<number> {
  return 1;
}
