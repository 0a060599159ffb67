import type { Config } from "../config/index.ts";
import { clockTime, duration } from "../core/moments.ts";

/**
 * The start's last line, as Watchtower's "Scheduling first run": when the first check comes.
 * `next check at 04:00 (in 5 h 12 min)`; the date too when it is not within the next 24 hours.
 */
export function whenNext(
  config: Pick<Config, "update_on_start" | "http_api">,
  next: Date | undefined,
  now: Date,
): string {
  const onRequest = config.http_api.update ? "; also on request (POST /v1/update)" : "";
  if (config.update_on_start)
    return `first check now (update_on_start)${next ? `, then at ${clockTime(next, now)}` : ""}${onRequest}`;
  if (!next) return "checks only on request (POST /v1/update)";
  return `next check at ${clockTime(next, now)} (in ${duration(next.getTime() - now.getTime())})${onRequest}`;
}
