/**
 * The scheduler: starts update cycles on `poll_interval` or the cron `schedule`, and once at
 * start with `update_on_start` (docs/configuration.md); with `update_window`, also as each of the
 * host's windows opens, so what waits for it lands then and not at the next check (docs/windows.md),
 * and as the earliest window a pending target waits for opens (a label's, narrower than the
 * host's, may open between two checks). It never queues itself: a fire while a cycle runs
 * calls the runner, which runs it right after that cycle (a fire while one already waits joins
 * it, and is counted in svc_scans_skipped).
 * Run-once mode is the service's business, not this module's.
 */
import { Cron } from "croner";
import type { Config } from "../config/index.ts";
import { nextStart, parseWindows, serviceTimeZone } from "../config/window.ts";
import { MAX_TIMER_MS, timerDelay } from "../core/timers.ts";
import { describeError, type Logger } from "../log/index.ts";
import type { CycleRunner, SessionReport, Trigger } from "../updater/types.ts";

export interface SchedulerDeps {
  config: Pick<Config, "poll_interval" | "schedule" | "update_on_start"> & Partial<Pick<Config, "update_window">>;
  runner: CycleRunner;
  log: Logger;
}

export interface Scheduler {
  /** Starts the timers (and the startup cycle with update_on_start). Calling it twice does nothing. */
  start(): void;
  /**
   * Stops every timer and cron job at once (before returning), so nothing new starts and the
   * process can exit. The promise resolves when the cycles this scheduler started have finished.
   */
  stop(): Promise<void>;
  /** When the next scheduled cycle starts (undefined: none is scheduled, or it waits for a cycle to end) */
  nextRun(): Date | undefined;
}

/**
 * croner's pattern mode for svc: 5 fields (minute precision) or 6 (with seconds). The config room
 * validates `schedule` with the same mode.
 */
export const CRON_MODE = "5-or-6-parts" as const;

export function createScheduler(deps: SchedulerDeps): Scheduler {
  const { config, runner } = deps;
  const log = deps.log.child("scheduler");
  let started = false;
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let job: Cron | undefined;
  let windowTimer: ReturnType<typeof setTimeout> | undefined;
  let landingTimer: ReturnType<typeof setTimeout> | undefined;
  let landingAt: number | undefined;
  let nextAt: Date | undefined;
  /** the cycles this scheduler asked for, and when it asked */
  const inFlight = new Map<Promise<void>, number>();

  /** Runs one cycle; resolves when it is over, whatever its outcome. */
  const runCycle = (trigger: Trigger): Promise<void> => {
    const cycle = (async () => {
      try {
        const report = await runner.run(trigger);
        if (report === null) log.info("cycle skipped: another cycle is running", { trigger });
        else if (!stopped) cycleAsPendingLand(report);
      } catch (error) {
        log.error("cycle failed", { trigger, error: error instanceof Error ? describeError(error) : String(error) });
      }
    })();
    inFlight.set(cycle, Date.now());
    void cycle.finally(() => inFlight.delete(cycle));
    return cycle;
  };

  /** Waits `ms` (any length: longer than a timer can hold is chained), then calls `then`, unless stopped meanwhile. */
  const after = (ms: number, then: () => void): void => {
    const step = Math.min(ms, MAX_TIMER_MS);
    timer = setTimeout(() => {
      timer = undefined;
      if (stopped) return;
      if (ms > step) after(ms - step, then);
      else then();
    }, step);
  };

  /** Each poll waits one interval after the END of the previous cycle, so cycles never pile up. */
  const pollAfterInterval = (interval: number): void => {
    nextAt = new Date(Date.now() + interval);
    log.debug("next cycle scheduled", { in_ms: interval, at: nextAt.toISOString() });
    after(interval, () => {
      nextAt = undefined;
      void runCycle("schedule").then(() => {
        if (!stopped) pollAfterInterval(interval);
      });
    });
  };

  const startCron = (pattern: string): void => {
    // No `protect`: a fire during a cycle must reach the runner, which counts the skip.
    job = new Cron(pattern, { mode: CRON_MODE }, () => {
      if (stopped) return;
      void runCycle("schedule");
      logNextCronRun();
    });
    logNextCronRun();
  };

  /**
   * Calls `fire` at `moment` unless stopped first: a timer that cannot wait that long fires early
   * and waits again. `hold` keeps the timer under way, for stop().
   */
  const atMoment = (moment: number, hold: (pending: ReturnType<typeof setTimeout>) => void, fire: () => void): void => {
    hold(
      setTimeout(
        () => {
          if (stopped) return;
          if (Date.now() < moment) atMoment(moment, hold, fire);
          else fire();
        },
        timerDelay(moment - Date.now()),
      ),
    );
  };

  /** A cycle as each of the host's update windows opens (a timer longer than one holds fires early and waits again). */
  const cycleAtWindows = (text: string): void => {
    const parsed = parseWindows(text);
    if ("problem" in parsed) return;
    const timeZone = serviceTimeZone();
    const arm = (opens: number): void =>
      atMoment(
        opens,
        (pending) => (windowTimer = pending),
        () => {
          void runCycle("schedule");
          arm(nextStart(parsed.windows, Date.now(), timeZone));
        },
      );
    const first = nextStart(parsed.windows, Date.now(), timeZone);
    log.info("a cycle also runs as the update window opens", {
      update_window: text,
      next: new Date(first).toISOString(),
    });
    arm(first);
  };

  /**
   * A cycle as the earliest window a pending target of this report waits for opens, unless one
   * is already armed for that moment or earlier. A cycle asked for since that moment (the host
   * window's own) is that cycle: nothing more is started; one asked for before it may have
   * decided before the window opened, so one more runs after it.
   */
  const cycleAsPendingLand = (report: SessionReport): void => {
    const now = Date.now();
    const opens = earliestLanding(report, now);
    if (opens === undefined || (landingAt !== undefined && landingAt > now && landingAt <= opens)) return;
    if (landingTimer !== undefined) clearTimeout(landingTimer);
    landingAt = opens;
    log.debug("a cycle runs as a pending target's window opens", { at: new Date(opens).toISOString() });
    atMoment(
      opens,
      (pending) => (landingTimer = pending),
      () => {
        landingTimer = landingAt = undefined;
        // one asked for since the moment (the host window's own) sees the window open; one from before may not
        if (![...inFlight.values()].some((asked) => asked >= opens)) void runCycle("schedule");
      },
    );
  };

  const logNextCronRun = (): void => {
    const next = job?.nextRun();
    if (next) log.debug("next cycle scheduled", { at: next.toISOString() });
  };

  return {
    start() {
      if (started || stopped) return;
      started = true;
      const interval = config.poll_interval;
      const startup = config.update_on_start ? runCycle("startup") : null;
      if (config.schedule) {
        startCron(config.schedule);
        log.info("scheduled by cron", { schedule: config.schedule, next: job?.nextRun()?.toISOString() ?? null });
      } else if (interval !== undefined && interval > 0) {
        log.info("scheduled by interval", { poll_interval_ms: interval });
        // With update_on_start the startup cycle is "the previous cycle" the interval counts from.
        if (startup) void startup.then(() => !stopped && pollAfterInterval(interval));
        else pollAfterInterval(interval);
      }
      if (config.update_window !== undefined && (config.schedule || (interval !== undefined && interval > 0)))
        cycleAtWindows(config.update_window);
    },
    nextRun: () => (job ? (job.nextRun() ?? undefined) : nextAt),
    async stop() {
      stopped = true;
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
      job?.stop();
      job = undefined;
      if (windowTimer !== undefined) clearTimeout(windowTimer);
      if (landingTimer !== undefined) clearTimeout(landingTimer);
      await Promise.all(inFlight.keys());
    },
  };
}

/** The earliest moment after `now` at which a pending target of the report may be applied. */
export function earliestLanding(report: SessionReport, now: number): number | undefined {
  let earliest: number | undefined;
  for (const entry of report.containers) {
    if (entry.state !== "pending" || !entry.applies_at) continue;
    const at = Date.parse(entry.applies_at);
    if (Number.isFinite(at) && at > now && (earliest === undefined || at < earliest)) earliest = at;
  }
  return earliest;
}
