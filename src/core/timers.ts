/**
 * Timers svc sets from values it was given (options, labels, a container's own StopTimeout).
 * setTimeout fires at once for a delay past 2^31-1 ms (about 24.8 days): no timer is asked for
 * more than that (docs/security.md). Waits that must be longer are chained (the scheduler).
 */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** `ms` as a delay setTimeout honours: at most MAX_TIMER_MS, never negative or NaN. */
export function timerDelay(ms: number): number {
  if (Number.isNaN(ms)) return MAX_TIMER_MS;
  return Math.min(Math.max(0, ms), MAX_TIMER_MS);
}
