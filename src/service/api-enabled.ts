/**
 * Whether the API listens: the one rule the service shares with `svc healthcheck`. A file of its
 * own so the healthcheck, run every few seconds on small hosts, loads nothing else of the service.
 */
import type { Config } from "../config/index.ts";

/** The API listens only when one of its features is on, and never in run-once mode. */
export function apiEnabled(config: Config): boolean {
  return !config.run_once && (config.http_api.update || config.http_api.metrics || config.http_api.ui);
}
