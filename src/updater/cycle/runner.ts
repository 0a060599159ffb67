/**
 * One cycle at a time: a cycle asked for while one runs (or once svc is draining) is not queued
 * but answered null; a real cycle's report goes to the metrics, the memory of earlier images
 * (for `svc rollback`) and the report sink; a dry run tells its caller only.
 */
import type { Config } from "../../config/index.ts";
import { toSvcError } from "../../core/errors.ts";
import type { Logger } from "../../log/index.ts";
import type { Metrics } from "../../metrics/index.ts";
import type { Remembered } from "../../state/index.ts";
import type { CycleResult } from "./cycle.ts";
import { metricCounts } from "./report.ts";
import type { CycleOptions, ReportSink, RunOptions, SessionReport, Trigger, UpdateFilter } from "../types.ts";

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
  let draining = false;

  const run = async (trigger: Trigger, filter?: UpdateFilter, options: RunOptions = {}): Promise<SessionReport | null> => {
    if (current || draining) {
      // a cycle asked for while one runs is skipped and counted, never queued (not counted once shutting down)
      if (!draining) deps.metrics.recordSkipped();
      return null;
    }
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
    for (const c of report.containers) if (c.state === "updated") deps.previous.set(c.name, c.new_image === null ? c.old_image_id : `${c.old_image_id} ${c.image}`);
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
      await current?.catch(() => {});
    },
    get busy() {
      return current !== undefined;
    },
    get draining() {
      return draining;
    },
  };
}
