/**
 * The updater: runs update cycles one at a time, repairs interrupted updates at start, and
 * stops gracefully. Routes and the scheduler call `run`; the service calls `recover` before the
 * first cycle and `drain` on SIGTERM/SIGINT.
 *
 * Decisions taken here (docs/decisions.md, "Updater"):
 * - Scope: with `scope` set, only containers labelled `svc.scope=<scope>`; without it, only
 *   containers with no scope label, so instances sharing an engine never touch each other's.
 * - An unreachable engine: `run` rejects with SvcError kind "engine" ("cannot list containers:
 *   ..."), logged once; no report, no metrics; the next cycle tries again.
 * - A rolled-back digest is remembered per container name in memory (a restart of svc tries it
 *   once more); the same digest is reported `skipped` until a newer one appears.
 * - An engine that stops answering during the watch is not the image's fault: the watch polls
 *   through inspect errors until startup_timeout; if the engine never answered, or a check failed
 *   after it had been away, the update is undone and reported `failed` (not rolled_back), and the
 *   digest is tried again by the next cycle. `rolled_back` means the old container runs again:
 *   when it cannot be started, the report says `failed` (the image's digest is still not retried).
 * - Without a healthcheck, a new container passes once it has kept running for 3 s (capped by
 *   startup_timeout); with one, once healthy. A restart loop always fails. An exit with code 0
 *   is a failure only through on_timeout (not running).
 * - Dependents (links, network_mode, svc.depends_on, compose depends_on) are restarted among all
 *   running containers in this instance's reach; outside it (other scope, svc.enable=false,
 *   disable_containers) only `network_mode: container:` dependents, which are recreated.
 * - Old containers are parked as `<name>.svc-old-<12 hex id>-running|stopped`, renamed before
 *   they are stopped so a kill during a long stop still leaves the marker.
 * - Crash recovery only touches leftovers of containers this instance would select (scope,
 *   enable label, disable_containers, containers); a running replacement is watched again and
 *   kept when it passes. It runs at start and again at the start of any cycle whose container
 *   list shows such leftovers (an engine that failed mid-restore, a recovery that could not run).
 * - Self-update: updated after everything else; the replacement is watched by this instance,
 *   which then stops its own container through the engine (SIGTERM -> drain -> exit 0, and no
 *   restart policy revives it); the new instance's recovery removes it once stopped.
 *   With published ports (off the host network) the replacement cannot start while this instance
 *   holds the binding: a handover container from the new image finishes the update (handover.ts).
 */
import type { Config } from "../config/index.ts";
import type { Engine } from "../engine/port.ts";
import { SvcError, toSvcError } from "../errors.ts";
import type { AuditLog, Logger } from "../log/index.ts";
import type { Metrics } from "../metrics/index.ts";
import type { Registry } from "../registry/port.ts";
import { parseReference, withTag } from "../registry/reference.ts";
import { inMemory, type Remembered } from "../state/index.ts";
import type { RolledBackDigests } from "./check.ts";
import { runCycle, type CycleDeps, type SelfHandover } from "./cycle.ts";
import { stopOptionsFor } from "./protocol.ts";
import { DEFAULT_TIMING, type ProtocolContext, type WatchTiming } from "./context.ts";
import { completeHandover, type HandoverJob } from "./handover.ts";
import { hasLeftovers, recoverLeftovers } from "./recovery.ts";
import type { ProgressListener } from "./progress.ts";
import { containerOverviews, excludedContainers, type Overview } from "./overview.ts";
import type { Updater } from "./port.ts";
import { snooze } from "./snooze.ts";
import { metricCounts } from "./report.ts";
import { createServiceTargets } from "./services.ts";
import { allOf, enableLabelFilter, imagePrefixFilter, namesFilter, notDisabledFilter, policyFor, scopeFilter, type Filter } from "./selection.ts";
import type { CycleSightings, ReportSink, RollbackResult, RunOptions, SessionReport, SkipResult, Trigger, UpdateFilter } from "./types.ts";

export type { SelfHandover } from "./cycle.ts";
export type { Updater } from "./port.ts";
export type { HandoverJob } from "./handover.ts";
export type { ProgressEvent, ProgressListener, Step } from "./progress.ts";
export type { ContainerOverview, DashboardActions, Overview } from "./overview.ts";
export type { CycleRunner, SessionReport, Trigger, UpdateFilter, ContainerReport, ContainerOutcome, ReportCounts } from "./types.ts";

export interface UpdaterDeps {
  config: Config;
  engine: Engine;
  registry: Registry;
  metrics: Metrics;
  log: Logger;
  audit: AuditLog;
  /** receives each finished cycle's report; never awaited */
  sink?: ReportSink;
  /** the id of the container svc itself runs in, when it does */
  selfContainerId?: string;
  /** watch timing; tests shorten it */
  timing?: Partial<WatchTiming>;
  /** independent groups of containers updated at the same time (default 4) */
  concurrency?: number;
  /** self-update: the service lets go of its port while its replacement starts (see SelfHandover) */
  selfHandover?: SelfHandover;
  /** digests rolled back, per container name (default: remembered in memory only) */
  rolledBack?: RolledBackDigests;
  /** when each container's newer digest was first seen, for min_image_age (default: in memory) */
  firstSeen?: Remembered;
  /** digests skipped on request, per container name (default: in memory) */
  skipped?: Remembered;
  /** the image each container ran before svc's last update of it (default: in memory) */
  previous?: Remembered;
  /** images an update left, waiting for cleanup_delay (default: in memory) */
  leftImages?: Remembered;
  /** told of each step of a running cycle as it starts (progress.ts) */
  progress?: ProgressListener;
  /** containers whose updates wait, by name (POST /v1/snooze; default: in memory) */
  snoozed?: Remembered;
}

const DEFAULT_CONCURRENCY = 4;

export function createUpdater(deps: UpdaterDeps): Updater {
  const log = deps.log.child("updater");
  const timing: WatchTiming = { ...DEFAULT_TIMING, ...deps.timing };
  const rolledBack: RolledBackDigests = deps.rolledBack ?? inMemory();
  const previous = deps.previous ?? inMemory();
  let current: Promise<unknown> | undefined;
  let draining = false;

  const cycleDeps: CycleDeps = {
    config: deps.config,
    engine: deps.engine,
    registry: deps.registry,
    log: deps.log,
    audit: deps.audit,
    selfContainerId: deps.selfContainerId,
    timing,
    concurrency: deps.concurrency ?? DEFAULT_CONCURRENCY,
    rolledBack,
    firstSeen: deps.firstSeen ?? inMemory(),
    skipped: deps.skipped ?? inMemory(),
    snoozed: deps.snoozed ?? inMemory(),
    leftImages: deps.leftImages ?? inMemory(),
    draining: () => draining,
    selfHandover: deps.selfHandover,
    progress: deps.progress,
    repairLeftovers: async (all, filter) => {
      const inScope = allOf([recoveryScope(deps.config), namesFilter(filter.container), imagePrefixFilter(filter.image)]);
      const pending = hasLeftovers(all, inScope, deps.selfContainerId);
      if (!pending) return false;
      await recoverWithin(inScope).catch(() => {});
      return true;
    },
  };

  const services = createServiceTargets({ ...cycleDeps, log: deps.log, selfContainerId: deps.selfContainerId });
  cycleDeps.services = services;

  const run = async (trigger: Trigger, filter?: UpdateFilter, options: RunOptions = {}): Promise<SessionReport | null> => {
    if (current || draining) {
      // a cycle asked for while one runs is skipped and counted, never queued (not counted once shutting down)
      if (!draining) deps.metrics.recordSkipped();
      return null;
    }
    const dryRun = options.dryRun ?? deps.config.dry_run;
    const cycle = runCycle(cycleDeps, trigger, filter, { ...options, dryRun });
    current = cycle;
    try {
      const { report, selfReplaced } = await cycle;
      // a dry run tells its caller only: no metrics, no notification
      if (dryRun) return report;
      deps.metrics.recordCycle(metricCounts(report.counts));
      for (const c of report.containers) if (c.state === "updated") previous.set(c.name, c.new_image === null ? c.old_image_id : `${c.old_image_id} ${c.image}`);
      deps.metrics.recordAvailability(report.containers, !filter?.container?.length && !filter?.image?.length);
      publish(report);
      if (selfReplaced) retireSelf();
      return report;
    } finally {
      current = undefined;
    }
  };

  const publish = (report: SessionReport): void => {
    if (!deps.sink) return;
    try {
      deps.sink.publish(report);
    } catch (error) {
      log.warn("report sink failed", { error: toSvcError(error).message });
    }
  };

  /**
   * The replacement of svc's own container passed its checks and now runs as the new svc.
   * Stopping our container through the engine (not just exiting) keeps a restart policy from
   * bringing the old instance back; the engine's SIGTERM makes the service drain and exit, and
   * the new instance's recovery removes this container once it has stopped.
   */
  const retireSelf = (): void => {
    const id = deps.selfContainerId!;
    log.info("svc's own container was replaced; stopping this instance", { container_id: id });
    // a moment for the caller (API response, notifications) to see the report first
    setTimeout(() => {
      const entry = { action: "stop" as const, container_id: id, trigger: "self_update" };
      deps.engine
        .inspectContainer(id)
        .then((own) => deps.engine.stopContainer(id, stopOptionsFor(own, policyFor({ labels: own.Config.Labels ?? {} }, deps.config))))
        .then(() => deps.audit.record(entry))
        .catch((error) => {
          deps.audit.record({ ...entry, error: toSvcError(error).message });
          log.error("could not stop the old svc container", { error: toSvcError(error).message });
        });
    }, 100);
  };

  const protocolContext = (trigger: string): ProtocolContext => ({
    engine: deps.engine,
    config: deps.config,
    log,
    audit: deps.audit,
    trigger,
    timing,
    progress: deps.progress,
  });

  const recover = (): Promise<void> => recoverWithin(recoveryScope(deps.config));

  const recoverWithin = async (inScope: Filter): Promise<void> => {
    let result: Awaited<ReturnType<typeof recoverLeftovers>>;
    try {
      result = await recoverLeftovers(protocolContext("recovery"), {
        selfContainerId: deps.selfContainerId,
        inScope,
        predecessorGraceMs: deps.config.stop_timeout + deps.config.rollback.startup_timeout + 30_000,
      });
    } catch (error) {
      // the leftovers stay; the next cycle that sees them repairs them first
      const failure = toSvcError(error, "engine");
      log.error("crash recovery could not run; it is retried by the next cycle", { error: failure.message });
      throw failure;
    }
    for (const action of result.actions) log.info("recovery", { action });
    result.background.catch(() => {});
  };

  const drain = async (): Promise<void> => {
    draining = true;
    await current?.catch(() => {});
  };

  const skip = async (name: string, what: { digest?: string; tag?: string } = {}): Promise<SkipResult | null> => {
    const { digest, tag } = what;
    if (digest !== undefined && !/^sha256:[0-9a-f]{64}$/.test(digest)) throw new SvcError("bad_request", `"${digest.slice(0, 80)}" is not a digest (sha256:<64 hex digits>)`);
    if (tag !== undefined) return skipTag(name, tag);
    let chosen = digest;
    if (chosen === undefined) {
      const report = await run("api", { container: [name] }, { dryRun: true });
      if (report === null) return null;
      const entry = report.containers.find((c) => c.name === name);
      if (!entry) throw new SvcError("not_found", `svc watches no container named ${name}`);
      if (entry.state !== "stale" || !entry.new_digest) throw new SvcError("bad_request", `${name} has no newer image to skip (${entry.state}${entry.reason ? `: ${entry.reason}` : ""})`);
      chosen = entry.new_digest;
    }
    cycleDeps.skipped.set(name, chosen);
    log.info("digest skipped on request", { container: name, digest: chosen });
    return { container: name, digest: chosen };
  };

  /** A tag is skipped as the reference the container would move to: the container's image with that tag. */
  const skipTag = async (name: string, tag: string): Promise<SkipResult> => {
    const container = await deps.engine.inspectContainer(name).catch(() => null);
    // a Swarm service's tag is skipped on the reference it follows (services.ts)
    const followed = container?.Config.Image ?? (await services?.reference(name));
    if (followed === undefined) throw new SvcError("not_found", `no container named ${name}`);
    let image: string;
    try {
      image = withTag(parseReference(followed), tag);
      parseReference(image);
    } catch (error) {
      throw new SvcError("bad_request", `cannot skip tag "${tag.slice(0, 80)}": ${toSvcError(error).message}`);
    }
    cycleDeps.skipped.set(name, image);
    log.info("tag skipped on request", { container: name, image });
    return { container: name, image };
  };

  const rollback = async (name: string, trigger: Trigger = "api"): Promise<RollbackResult | null> => {
    if (current || draining) return null;
    // a Swarm service is rolled back by Swarm, to its previous spec (services.ts)
    const service = await services?.rollback(protocolContext(trigger), name);
    if (service) return service;
    // "<image id>", or "<image id> <reference>" when the update moved it to another tag
    const [back, backReference] = previous.get(name)?.split(" ") ?? [];
    if (back === undefined) throw new SvcError("not_found", `svc knows no earlier image of ${name} (it has not updated it${deps.config.state_dir ? "" : " since it started: set state_dir to remember across restarts"})`);
    const container = await deps.engine.inspectContainer(name).catch(() => null);
    if (!container) throw new SvcError("not_found", `no container named ${name}`);
    if (container.Image === back) throw new SvcError("bad_request", `${name} already runs ${back}`);
    if (!(await deps.engine.inspectImage(back).catch(() => null))) {
      throw new SvcError("not_found", `the earlier image of ${name} (${back}) is no longer on the engine (removed by cleanup?)`);
    }
    const reference = backReference ?? container.Config.Image;
    await deps.engine.tagImage(back, reference);
    const localReferences = new Map(reference === container.Config.Image ? [] : [[name, reference]]);
    const report = await run(trigger, { container: [name] }, { toLocalTag: true, localReferences, dryRun: false });
    if (report === null) return null;
    const entry = report.containers.find((c) => c.name === name);
    if (entry?.state === "updated") {
      // the image it left is not to come back by itself: its digest (as the check saw it) waits for a newer one
      // kept with who rolled back, for the reason the next cycles give (check.ts)
      if (entry.old_digest) cycleDeps.skipped.set(name, `${entry.old_digest} rollback:${trigger}`);
      log.debug("container put back on its earlier image", { container: name, image_id: back, skipped_digest: entry.old_digest });
    }
    if (!entry) return { container: name, from_image_id: container.Image, to_image_id: back, state: "skipped", reason: "not selected by svc (scope, labels or options)" };
    return { container: name, from_image_id: container.Image, to_image_id: back, state: entry.state, reason: entry.reason };
  };

  const overview = async (filter?: UpdateFilter): Promise<Overview | null> => {
    const seen: CycleSightings = {};
    const report = await run("api", filter, { dryRun: true, seen });
    if (report === null) return null;
    const memory = { firstSeen: cycleDeps.firstSeen, skipped: cycleDeps.skipped, snoozed: cycleDeps.snoozed, previous };
    // with a filter, what it leaves out is not excluded by svc
    const excluded = filter?.container?.length || filter?.image?.length ? [] : excludedContainers(seen, report, deps.config);
    return { checked_at: report.finished_at, containers: containerOverviews(report, seen, deps.config, memory), excluded };
  };

  const snoozeContainer = async (name: string, ms: number) => {
    if (!(await deps.engine.inspectContainer(name).catch(() => null))) throw new SvcError("not_found", `no container named ${name}`);
    const until = snooze(cycleDeps.snoozed!, name, ms);
    log.info(until === null ? "snooze lifted on request" : "updates snoozed on request", { container: name, until });
    return { container: name, until };
  };

  return {
    run,
    recover,
    drain,
    skip,
    rollback,
    overview,
    snooze: snoozeContainer,
    get busy() {
      return current !== undefined;
    },
  };
}

/** The selection rules crash recovery honours: everything but the container state. */
function recoveryScope(config: Config): Filter {
  return allOf([scopeFilter(config.scope), enableLabelFilter(config.label_enable), notDisabledFilter(config.disable_containers), namesFilter(config.containers)]);
}

/**
 * `svc handover` (the helper container of a self-update with published ports, see handover.ts):
 * resolves true when the new svc runs, false when the old one was put back (or could not be).
 */
export async function runHandover(deps: Pick<UpdaterDeps, "config" | "engine" | "log" | "audit" | "timing">, job: Omit<HandoverJob, "stopTimeoutMs">): Promise<boolean> {
  const ctx: ProtocolContext = {
    engine: deps.engine,
    config: deps.config,
    log: deps.log.child("updater"),
    audit: deps.audit,
    trigger: "self_update",
    timing: { ...DEFAULT_TIMING, ...deps.timing },
  };
  const outcome = await completeHandover(ctx, { stopTimeoutMs: deps.config.stop_timeout, ...job });
  return outcome.kind === "replaced";
}
