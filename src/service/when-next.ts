/** The start's last line: when the first check comes. */
import type { Config } from "../config/index.ts";

/**
 * The start's last line, as Watchtower's "Scheduling first run": when the first check comes.
 * `next check at 04:00 (in 5 h 12 min)`; the date too when it is not within the next 24 hours.
 */
export function whenNext(config: Pick<Config, "update_on_start" | "http_api">, next: Date | undefined, now: Date): string {
  const onRequest = config.http_api.update ? "; also on request (POST /v1/update)" : "";
  if (config.update_on_start) return `first check now (update_on_start)${next ? `, then at ${clock(next, now)}` : ""}${onRequest}`;
  if (!next) return "checks only on request (POST /v1/update)";
  return `next check at ${clock(next, now)} (in ${span(next.getTime() - now.getTime())})${onRequest}`;
}

function clock(at: Date, now: Date): string {
  const two = (n: number) => String(n).padStart(2, "0");
  const time = `${two(at.getHours())}:${two(at.getMinutes())}`;
  if (at.getTime() - now.getTime() < 24 * 3_600_000) return time;
  return `${at.getFullYear()}-${two(at.getMonth() + 1)}-${two(at.getDate())} ${time}`;
}

/** `5 h 12 min`, `3 min`, `40 s`, `2 d 4 h`. */
function span(ms: number): string {
  const minutes = Math.round(ms / 60_000);
  if (ms < 60_000) return `${Math.max(0, Math.round(ms / 1000))} s`;
  const [d, h, m] = [Math.floor(minutes / 1440), Math.floor((minutes % 1440) / 60), minutes % 60];
  if (d > 0) return h > 0 ? `${d} d ${h} h` : `${d} d`;
  if (h > 0) return m > 0 ? `${h} h ${m} min` : `${h} h`;
  return `${m} min`;
}
