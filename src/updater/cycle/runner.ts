/**
 * One cycle at a time. A scheduled cycle (`schedule`, `startup`) asked for while one runs waits for
 * it and runs next, before anything else (a dry run of a reader, "Check now", a peer's read can
 * never make svc lose its schedule); one waits at most, and a later fire joins it (counted as
 * skipped). A request that asks to be queued (`queue`: a press in Home Assistant, an update asked
 * of the API or the page) waits its turn after them and runs, told as queued meanwhile (at most
 * MAX_QUEUED wait; one more is refused as any other); any other cycle asked for while one runs or waits (or once svc is draining)
 * is not queued but answered null. A real cycle's report goes to the metrics, the memory of earlier images
 * (for `svc rollback`) and the report sink; a dry run tells its caller only.
 */
import type { Config } from "../../config/index.ts";
import { toSvcError } from "../../core/errors.ts";
import type { Logger } from "../../log/index.ts";
import type { Metrics } from "../../metrics/index.ts";
import type { Remembered } from "../../state/index.ts";
import type {
  CycleOptions,
  QueuedRequest,
  ReportSink,
  RunOptions,
  SessionReport,
  Trigger,
  UpdateFilter,
} from "../types.ts";
import type { CycleResult } from "./cycle.ts";
import { metricCounts } from "./report.ts";

/** The triggers of the schedule: never lost to a cycle under way. */
const SCHEDULED: ReadonlySet<Trigger> = new Set(["schedule", "startup"]);
/** More requests than a person presses while one cycle runs: a bound on what waits in memory. */
export const MAX_QUEUED = 16;

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
  /** the requests queued behind the cycle under way, oldest first */
  queuedRequests(): QueuedRequest[];
}

/** How a queued request is shown (GET /v1/progress). */
export function queuedRequest(trigger: Trigger, filter: UpdateFilter | undefined): QueuedRequest {
  return {
    trigger,
    filter: {
      container: [...(filter?.container ?? [])],
      image: [...(filter?.image ?? [])],
      ...(filter?.stack ? { stack: [...filter.stack] } : {}),
    },
    asked_at: new Date().toISOString(),
  };
}

/**
 * What makes two queued requests the same (the same names, the same dry run), so that a button
 * pressed twice runs once; undefined for a request that carries more (a rollback's references).
 */
function sameRequestKey(trigger: Trigger, filter: UpdateFilter | undefined, options: RunOptions): string | undefined {
  if (options.toLocalTag || options.localReferences || options.restoreCopies || options.seen) return undefined;
  const names = (list: string[] | undefined) => [...new Set(list ?? [])].sort();
  return JSON.stringify([
    trigger,
    options.dryRun ?? null,
    names(filter?.container),
    names(filter?.image),
    names(filter?.stack),
  ]);
}

export function createRunner(deps: RunnerDeps): Runner {
  let current: Promise<unknown> | undefined;
  /** the scheduled cycle waiting for the one under way */
  let waiting: Promise<SessionReport | null> | undefined;
  let draining = false;
  /** requests queued behind the cycle under way (RunOptions.queue) */
  const queued: QueuedRequest[] = [];
  /** each queued request's outcome, by what it asks: the same request again joins it */
  const queuedRuns = new Map<string, { entry: QueuedRequest; outcome: Promise<SessionReport | null> }>();

  const run = (trigger: Trigger, filter?: UpdateFilter, options: RunOptions = {}): Promise<SessionReport | null> => {
    if (draining) return Promise.resolve(null);
    if (current || waiting) {
      if (SCHEDULED.has(trigger) && !waiting) return (waiting = runNext(trigger, filter, options));
      if (options.queue) {
        const key = sameRequestKey(trigger, filter, options);
        const same = key === undefined ? undefined : queuedRuns.get(key);
        if (same) {
          options.onQueued?.(structuredClone(same.entry));
          return same.outcome;
        }
        if (queued.length < MAX_QUEUED) {
          const entry = queuedRequest(trigger, filter);
          const outcome = afterTheOthers(entry, filter, options);
          // it leaves the map once it starts (afterTheOthers): a request then is queued behind it anew
          if (key !== undefined) queuedRuns.set(key, { entry, outcome });
          return outcome;
        }
      }
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
    entry: QueuedRequest,
    filter: UpdateFilter | undefined,
    options: RunOptions,
  ): Promise<SessionReport | null> => {
    const { trigger } = entry;
    queued.push(entry);
    options.onQueued?.(structuredClone(entry));
    try {
      for (let ahead = current ?? waiting; ahead; ahead = current ?? waiting) await ahead.catch(() => {});
    } finally {
      queued.splice(queued.indexOf(entry), 1);
      const key = sameRequestKey(trigger, filter, options);
      if (key !== undefined) queuedRuns.delete(key);
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
      return current !== undefined || waiting !== undefined || queued.length > 0;
    },
    queuedRequests: () => queued.map((entry) => structuredClone(entry)),
    get draining() {
      return draining;
    },
  };
}
