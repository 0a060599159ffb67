/**
 * One cycle at a time. A scheduled cycle (`schedule`, `startup`) asked for while one runs waits for
 * it and runs next, before anything else (a dry run of a reader, "Check now", a peer's read can
 * never make svc lose its schedule); one waits at most, and a later fire joins it (counted as
 * skipped). A request that asks to be queued (`queue`: a press in Home Assistant) waits its turn
 * after them and runs; any other cycle asked for while one runs or waits (or once svc is draining)
 * is not queued but answered null. A real cycle's report goes to the metrics, the memory of earlier images
 * (for `svc rollback`) and the report sink; a dry run tells its caller only.
 */
import type { Config } from "../../config/index.ts";
import { toSvcError } from "../../core/errors.ts";
import type { Logger } from "../../log/index.ts";
import type { Metrics } from "../../metrics/index.ts";
import type { Remembered } from "../../state/index.ts";
import type { CycleOptions, ReportSink, RunOptions, SessionReport, Trigger, UpdateFilter } from "../types.ts";
import type { CycleResult } from "./cycle.ts";
import { metricCounts } from "./report.ts";

/** The triggers of the schedule: never lost to a cycle under way. */
const SCHEDULED: ReadonlySet<Trigger> = new Set(["schedule", "startup"]);

export interface RunnerDeps {
  config: Config;
  metrics: Metrics;
  log: Logger;
  sink?: ReportSink;
  /** the image each container ran before svc's last update of it */
  previous: Remembered;
  cycle(trigger: Trigger, filter: UpdateFilter | undefined, options: CycleOptions): Promise<CycleResult>;
  /** svc's own container was replaced by this cycle (containers/retire.ts) */
  selfReplaced(): void;
}

export interface Runner {
  run(trigger: Trigger, filter?: UpdateFilter, options?: RunOptions): Promise<SessionReport | null>;
  /** graceful stop: the running cycle finishes the containers it started on and starts no others */
  drain(): Promise<void>;
  /** a cycle runs */
  readonly busy: boolean;
  /** a graceful stop was asked for */
  readonly draining: boolean;
}

export function createRunner(deps: RunnerDeps): Runner {
  let current: Promise<unknown> | undefined;
  /** the scheduled cycle waiting for the one under way */
  let waiting: Promise<SessionReport | null> | undefined;
  let draining = false;
  /** requests queued behind the cycle under way (RunOptions.queue) */
  let queued = 0;

  const run = (trigger: Trigger, filter?: UpdateFilter, options: RunOptions = {}): Promise<SessionReport | null> => {
    if (draining) return Promise.resolve(null);
    if (current || waiting) {
      if (SCHEDULED.has(trigger) && !waiting) return (waiting = runNext(trigger, filter, options));
      if (options.queue) return afterTheOthers(trigger, filter, options);
      // skipped and counted, never queued: a request while a cycle runs, a fire that joins the waiting one
      deps.metrics.recordSkipped();
      return Promise.resolve(null);
    }
    return start(trigger, filter, options);
  };

  /** Waits for the cycle under way (and any it was waiting behind), then starts in the same step, so nothing gets between. */
  const runNext = async (
    trigger: Trigger,
    filter: UpdateFilter | undefined,
    options: RunOptions,
  ): Promise<SessionReport | null> => {
    // nothing lost: the cycle's own caller gets its error; this only waits for its end
    while (current) await current.catch(() => {});
    waiting = undefined;
    return draining ? null : start(trigger, filter, options);
  };

  /** A queued request: runs once no cycle runs or waits (the scheduled one first), unless svc stops meanwhile. */
  const afterTheOthers = async (
    trigger: Trigger,
    filter: UpdateFilter | undefined,
    options: RunOptions,
  ): Promise<SessionReport | null> => {
    queued++;
    try {
      for (let ahead = current ?? waiting; ahead; ahead = current ?? waiting) await ahead.catch(() => {});
    } finally {
      queued--;
    }
    return draining ? null : start(trigger, filter, options);
  };

  const start = async (
    trigger: Trigger,
    filter: UpdateFilter | undefined,
    options: RunOptions,
  ): Promise<SessionReport | null> => {
    const dryRun = options.dryRun ?? deps.config.dry_run;
    const cycle = deps.cycle(trigger, filter, { ...options, dryRun });
    current = cycle;
    try {
      const { report, selfReplaced } = await cycle;
      // a dry run tells its caller only: no metrics, no notification
      if (dryRun) return report;
      record(report, filter);
      publish(report);
      if (selfReplaced) deps.selfReplaced();
      return report;
    } finally {
      current = undefined;
    }
  };

  const record = (report: SessionReport, filter: UpdateFilter | undefined): void => {
    deps.metrics.recordCycle(metricCounts(report.counts));
    for (const c of report.containers)
      if (c.state === "updated")
        deps.previous.set(c.name, c.new_image === null ? c.old_image_id : `${c.old_image_id} ${c.image}`);
    deps.metrics.recordAvailability(report.containers, !filter?.container?.length && !filter?.image?.length);
  };

  const publish = (report: SessionReport): void => {
    if (!deps.sink) return;
    try {
      deps.sink.publish(report);
    } catch (error) {
      deps.log.warn("report sink failed", { error: toSvcError(error).message });
    }
  };

  return {
    run,
    async drain() {
      draining = true;
      // nothing lost: the cycle's own caller gets its error; draining only waits for its end
      await current?.catch(() => {});
      await waiting;
    },
    get busy() {
      return current !== undefined || waiting !== undefined || queued > 0;
    },
    get draining() {
      return draining;
    },
  };
}
