/**
 * Durations and moments in words, said one way everywhere: "40 s", "5 h 12 min", "in 9 h",
 * "3 min ago". Pure (no node: imports), so the dashboard page can import it as well.
 */

const SECOND_MS = 1_000;
const MINUTE_MS = 60_000;
const DAY_MINUTES = 24 * 60;

/**
 * How long `ms` is: `0.5 s` and `1.5 s` below ten seconds, `40 s`, `3 min`, `5 h 12 min`,
 * `2 d 5 h` (the two largest units, rounded to the minute from a minute on).
 */
export function duration(ms: number): string {
  const tenths = Math.round(Math.max(0, ms) / 100);
  if (tenths < 100) return `${tenths / 10} s`;
  const seconds = Math.round(ms / SECOND_MS);
  if (seconds < 60) return `${seconds} s`;
  const minutes = Math.round(ms / MINUTE_MS);
  const [d, h, m] = [Math.floor(minutes / DAY_MINUTES), Math.floor((minutes % DAY_MINUTES) / 60), minutes % 60];
  if (d > 0) return h > 0 ? `${d} d ${h} h` : `${d} d`;
  if (h > 0) return m > 0 ? `${h} h ${m} min` : `${h} h`;
  return `${m} min`;
}

/** How far off the moment `at` is from `now` (both in ms): `in 9 h`, `now`, `3 min ago`. */
export function fromNow(at: number, now: number): string {
  const ms = at - now;
  if (Math.abs(ms) < SECOND_MS) return "now";
  return ms > 0 ? `in ${duration(ms)}` : `${duration(-ms)} ago`;
}

/** A moment on this machine's clock: `04:00`, with the date when it is a day or more away (`2026-11-28 04:00`). */
export function clockTime(at: Date, now: Date): string {
  const two = (n: number) => String(n).padStart(2, "0");
  const time = `${two(at.getHours())}:${two(at.getMinutes())}`;
  if (at.getTime() - now.getTime() < DAY_MINUTES * MINUTE_MS) return time;
  return `${at.getFullYear()}-${two(at.getMonth() + 1)}-${two(at.getDate())} ${time}`;
}
