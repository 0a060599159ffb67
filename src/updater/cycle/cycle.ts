/**
 * One update cycle, over every kind of target (cycle/target.ts: containers, and Swarm services on a
 * manager): each kind selects, checks, decides and replaces its own, one kind after the other;
 * then each settles (image cleanup, post_check hooks), and one report tells them all. A target's
 * failure goes into the report and never aborts the cycle; only failing to list the containers does.
 */
import type { Config } from "../../config/index.ts";
import { SvcError, toSvcError } from "../../core/errors.ts";
import type { DataGuard } from "../../dataguard/index.ts";
import type { ContainerSummary, Engine } from "../../engine/port.ts";
import type { AuditLog, Logger } from "../../log/index.ts";
import type { ReleaseNotesService } from "../../releases/index.ts";
import { unmatchedFilters } from "../selection/unmatched.ts";
import type { CycleOptions, SessionReport, Trigger, UpdateFilter } from "../types.ts";
import type { ProtocolContext, WatchTiming } from "./context.ts";
import type { ProgressListener } from "./progress.ts";
import { buildReport } from "./report.ts";
import type { KindCycle, TargetKind } from "./target.ts";

export interface CycleDeps {
  config: Config;
  engine: Engine;
  log: Logger;
  audit: AuditLog;
  timing: WatchTiming;
  /** told of each step as it starts (cycle/progress.ts) */
  progress?: ProgressListener;
  /** the kinds of target, in the order they run (containers first) */
  kinds: readonly TargetKind[];
  /** the source hosts, for what each update brings (cycle/notes.ts); absent: no release notes */
  releases?: ReleaseNotesService;
  /** the data guard every container update goes through (docs/data-guard.md) */
  guard?: DataGuard;
}

export interface CycleResult {
  report: SessionReport;
  /** svc's own container was replaced: the new instance takes over, this one must stop */
  selfReplaced: boolean;
}

export async function runCycle(
  deps: CycleDeps,
  trigger: Trigger,
  filter: UpdateFilter = {},
  options: CycleOptions = { dryRun: false },
): Promise<CycleResult> {
  const startedAt = new Date();
  // the global Web Crypto: node:crypto would cost a compiled svc ~4 MiB of memory to load
  const sessionId = crypto.randomUUID();
  const log = deps.log.child("updater");
  const ctx: ProtocolContext = {
    engine: deps.engine,
    config: deps.config,
    log,
    audit: deps.audit,
    trigger,
    sessionId,
    timing: deps.timing,
    progress: deps.progress,
    guard: deps.guard,
  };

  const list = async (): Promise<ContainerSummary[]> => {
    try {
      return await deps.engine.listContainers();
    } catch (error) {
      const message = `cannot list containers: ${toSvcError(error).message}`;
      log.error("cycle aborted", { session_id: sessionId, error: message });
      throw new SvcError("engine", message, { cause: error });
    }
  };
  let all = await list();
  // a dry run changes nothing, not even what a crash left half-done
  if (!options.dryRun && (await repairedAny(deps.kinds, all, filter))) all = await list();
  if (options.seen) options.seen.containers = all;

  const runs: KindCycle[] = [];
  // one view of the source hosts per cycle: a repository is asked once, however many targets share it
  const releases = deps.releases?.session();
  for (const kind of deps.kinds) runs.push(await kind.run({ ctx, all, filter, options, releases }));
  for (const run of runs) await run.settle();
  const targets = runs.flatMap((run) => run.report()).sort((a, b) => a.name.localeCompare(b.name));
  for (const problem of unmatchedFilters(all, deps.config, filter, targets)) log.warn(problem);

  const report = buildReport({
    id: sessionId,
    trigger,
    startedAt,
    finishedAt: new Date(),
    filter,
    containers: targets,
  });
  if (options.dryRun) report.dry_run = true;
  // told by whoever runs the cycle (wrappers/summary.ts: a line per container, then the summary)
  return { report, selfReplaced: runs.some((run) => run.selfReplaced) };
}

/** Each kind repairs what an interrupted replacement left; true when any did (the list changed). */
async function repairedAny(
  kinds: readonly TargetKind[],
  all: readonly ContainerSummary[],
  filter: UpdateFilter,
): Promise<boolean> {
  let repaired = false;
  for (const kind of kinds) if (kind.repair && (await kind.repair(all, filter))) repaired = true;
  return repaired;
}
