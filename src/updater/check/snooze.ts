/**
 * Snooze (POST /v1/snooze): a container's newer images are found and shown as ever, but none is
 * applied until a moment passes. Kept beside the skips, per container name, as the ISO time it
 * ends (in state_dir when set). A snooze that ended is forgotten the next time it is read.
 */
import type { Remembered } from "../../state/index.ts";

/** The longest snooze: a year (longer is "exclude it", which labels say better). */
export const MAX_SNOOZE_MS = 366 * 24 * 3_600_000;

/** When the container's snooze ends (ms since the epoch), or undefined when it is not snoozed. */
export function snoozedUntil(snoozed: Remembered | undefined, name: string, now = Date.now()): number | undefined {
  const value = snoozed?.get(name);
  if (value === undefined) return undefined;
  const until = Date.parse(value);
  if (Number.isNaN(until) || until <= now) {
    snoozed!.delete(name);
    return undefined;
  }
  return until;
}

/** Snoozes `name` for `ms` (0 lifts the snooze); the ISO time it ends, or null when lifted. */
export function snooze(snoozed: Remembered, name: string, ms: number, now = Date.now()): string | null {
  if (ms <= 0) {
    snoozed.delete(name);
    return null;
  }
  const until = new Date(now + Math.min(ms, MAX_SNOOZE_MS)).toISOString();
  snoozed.set(name, until);
  return until;
}

/** What the report says of a newer image held back by a snooze. */
export function snoozeReason(until: number): string {
  return `updates snoozed until ${new Date(until).toISOString()} (POST /v1/snooze)`;
}
