/**
 * The updater: runs update cycles one at a time, repairs interrupted updates at start, and
 * stops gracefully. Routes and the scheduler call `run`; the service calls `recover` before the
 * first cycle and `drain` on SIGTERM/SIGINT.
 *
 * What it decides (scope, the watch, rolled-back digests, dependents, parked names, the
 * self-update) is said once, in docs/decisions.md, "Updater"; the folders in README.md beside.
 */

import { join } from "node:path";
import { ComposeFiles } from "../compose/index.ts";
import type { Config } from "../config/index.ts";
import { SvcError } from "../core/errors.ts";
import { DataGuard, dataGuardOptions } from "../dataguard/index.ts";
import type { Engine } from "../engine/port.ts";
import { createSystemd, type Systemd } from "../engine/systemd.ts";
import { createGitStep, type GitStep } from "../git/index.ts";
import type { AuditLog, Logger } from "../log/index.ts";
import type { Metrics } from "../metrics/index.ts";
import type { Registry } from "../registry/port.ts";
import { parseReference } from "../registry/reference.ts";
import type { ReleaseNotesService } from "../releases/index.ts";
import { inMemory, type Remembered } from "../state/index.ts";
import { createSignatureCheck, rootSource, type SignatureCheck } from "../verify/index.ts";
import { createVulnerabilities, type Vulnerabilities } from "../vulns/index.ts";
import type { RolledBackDigests } from "./check/check.ts";
import { snooze } from "./check/snooze.ts";
import { completeHandover, type HandoverJob } from "./containers/handover.ts";
import { createContainerTargets } from "./containers/kind.ts";
import type { SelfHandover } from "./containers/replace.ts";
import { retireSelf } from "./containers/retire.ts";
import { DEFAULT_TIMING, type ProtocolContext, type WatchTiming } from "./cycle/context.ts";
import { type CycleDeps, runCycle } from "./cycle/cycle.ts";
import type { ProgressListener } from "./cycle/progress.ts";
import { createRunner, type Runner } from "./cycle/runner.ts";
import { firstOfKinds, type KindDeps } from "./cycle/target.ts";
import type { Updater } from "./port.ts";
import { createRepair } from "./recovery/repair.ts";
import { rollbackTarget } from "./requests/rollback.ts";
import { skipTarget } from "./requests/skip.ts";
import { createServiceTargets } from "./swarm/kind.ts";
import type { CycleSightings, ReportSink, RollbackOptions, Trigger, UpdateFilter } from "./types.ts";
import { containerOverviews, excludedContainers, type Overview, type OverviewMemory } from "./views/overview.ts";
import { recentOverviews } from "./views/recent.ts";

export type { HandoverJob } from "./containers/handover.ts";
export type { SelfHandover } from "./containers/replace.ts";
export type { ProgressEvent, ProgressListener, Step } from "./cycle/progress.ts";
export type { Updater } from "./port.ts";
export type {
  ContainerOutcome,
  ContainerReport,
  CycleRunner,
  ReportCounts,
  SessionReport,
  Trigger,
  UpdateFilter,
} from "./types.ts";
export type { ContainerOverview, DashboardActions, Overview } from "./views/overview.ts";

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
  /** images pulled ahead of an update window, per container name (default: in memory) */
  prePulled?: Remembered;
  /** tag moves written into units' files and not yet seen through, per container name (default: in memory) */
  unitMoves?: Remembered;
  /** the units that run Podman's containers (docs/podman.md); default: systemctl on this machine, for the units the engine names */
  systemd?: Systemd;
  /** each built service's bases and the digests it was last built from, per container name (default: in memory) */
  buildBases?: Remembered;
  /** told of each step of a running cycle as it starts (cycle/progress.ts) */
  progress?: ProgressListener;
  /** containers whose updates wait, by name (POST /v1/snooze; default: in memory) */
  snoozed?: Remembered;
  /** the source hosts, for what each update brings (docs/release-notes.md); absent: no release notes */
  releases?: ReleaseNotesService;
  /** what each update fixes and brings in (docs/vulnerabilities.md); default: from `[vulnerabilities]` (null when off) */
  vulns?: Vulnerabilities | null;
  /** compose projects' files, where tag moves are written (docs/compose.md); default: from `[compose]`, state_dir and docker.config */
  compose?: ComposeFiles;
  /** what follows a compose change in Git (docs/compose.md, "Git"); default: from `[compose] git` */
  git?: GitStep;
  /** the data guard (docs/data-guard.md); default: one from the configuration, with the real clock */
  guard?: DataGuard;
  /** the signer pinned per repository, and the one a held update carries (docs/verification.md; default: in memory) */
  signers?: Remembered;
  signersPending?: Remembered;
  /** who signed a new image; default: from `[[verify]]` and the registry's artifacts (none: not asked) */
  signatures?: SignatureCheck;
}

const DEFAULT_CONCURRENCY = 4;

export function createUpdater(deps: UpdaterDeps): Updater {
  const log = deps.log.child("updater");
  const timing: WatchTiming = { ...DEFAULT_TIMING, ...deps.timing };
  const previous = deps.previous ?? inMemory();
  const guard =
    deps.guard ?? new DataGuard(deps.engine, dataGuardOptions(deps.config), undefined, deps.selfContainerId);
  const context = (trigger: string): ProtocolContext => ({
    engine: deps.engine,
    config: deps.config,
    log,
    audit: deps.audit,
    trigger,
    timing,
    progress: deps.progress,
    guard,
  });
  const unitMoves = deps.unitMoves ?? inMemory();
  const systemd = deps.systemd ?? createSystemd(deps.engine);
  const repair = createRepair({
    config: deps.config,
    log,
    selfContainerId: deps.selfContainerId,
    context,
    unitMoves,
    systemd,
  });
  const shared = kindDepsOf(deps, () => runner.draining);
  const containers = createContainerTargets({
    ...shared,
    leftImages: deps.leftImages ?? inMemory(),
    prePulled: deps.prePulled ?? inMemory(),
    vulns: deps.vulns !== undefined ? deps.vulns : vulnerabilitiesOf(deps, log),
    unitMoves,
    systemd,
    buildBases: deps.buildBases ?? inMemory(),
    previous,
    selfHandover: deps.selfHandover,
    compose:
      deps.compose ??
      new ComposeFiles({
        write: deps.config.compose.write,
        stateDir: deps.config.state_dir ?? null,
        dockerConfig: deps.config.docker.config,
      }),
    git: deps.git ?? createGitStep(deps.config, deps.log),
    repairLeftovers: repair.repairLeftovers,
    cycleOver: (trigger, filter, options) => runner.run(trigger, filter, options),
  });
  const services = createServiceTargets(shared);
  const kinds = services ? [containers, services] : [containers];
  const cycleDeps: CycleDeps = {
    config: deps.config,
    engine: deps.engine,
    log: deps.log,
    audit: deps.audit,
    timing,
    progress: deps.progress,
    kinds,
    releases: deps.releases,
    guard,
  };
  const runner: Runner = createRunner({
    config: deps.config,
    metrics: deps.metrics,
    log,
    sink: deps.sink,
    previous,
    cycle: (trigger, filter, options) => runCycle(cycleDeps, trigger, filter, options),
    selfReplaced: () =>
      retireSelf({ config: deps.config, engine: deps.engine, log, audit: deps.audit }, deps.selfContainerId!),
  });
  const memory = { firstSeen: shared.firstSeen, skipped: shared.skipped, snoozed: shared.snoozed, previous };
  /** real cycles asked for and not over (one running, or a scheduled one waiting for it) */
  let changingNow = 0;
  const recent = recentOverviews(
    (filter) => overviewOf(runner, deps.config, memory, filter),
    () => changingNow > 0,
  );
  /** what changes the containers or svc's memory of them: the overviews read before are forgotten */
  const changing =
    <A extends unknown[], T>(act: (...args: A) => Promise<T>) =>
    async (...args: A): Promise<T> => {
      try {
        return await act(...args);
      } finally {
        recent.forget();
      }
    };

  return {
    run: async (trigger, filter, options) => {
      if (options?.dryRun ?? deps.config.dry_run) return runner.run(trigger, filter, options);
      changingNow++;
      try {
        const report = await runner.run(trigger, filter, options);
        if (report !== null) recent.forget();
        return report;
      } finally {
        changingNow--;
      }
    },
    recover: changing(repair.recover),
    drain: runner.drain,
    skip: changing((name: string, what?: { digest?: string; tag?: string }) =>
      skipTarget({ log, skipped: shared.skipped, kinds, run: runner.run }, name, what),
    ),
    rollback: changing((name: string, trigger?: Trigger, options?: RollbackOptions) =>
      rollbackTarget({ kinds, context, runner }, name, trigger, options),
    ),
    overview: recent.overview,
    snooze: changing(async (name: string, ms: number) => {
      if ((await firstOfKinds(kinds, (kind) => kind.reference(name))) === undefined)
        throw new SvcError("not_found", `no container or service named ${name}`);
      const until = snooze(shared.snoozed, name, ms);
      log.info(until === null ? "snooze lifted on request" : "updates snoozed on request", { container: name, until });
      return { container: name, until };
    }),
    acceptSigner: changing(async (name: string, trigger: Trigger = "api") => {
      const reference = await firstOfKinds(kinds, (kind) => kind.reference(name));
      if (reference === undefined) throw new SvcError("not_found", `no container or service named ${name}`);
      const ref = parseReference(reference);
      const repository = `${ref.registry}/${ref.repository}`;
      const accepted = shared.signatures?.accept(repository) ?? null;
      if (accepted === null)
        throw new SvcError("bad_request", `${name} has no update held for its signer (${repository})`);
      const { signer, was } = accepted;
      log.info("signer accepted on request", { container: name, image: repository, signer, was });
      // who trusts whom is a decision the audit log keeps, as it keeps each engine change
      deps.audit.record({
        action: "signer_accept",
        container: name,
        image: repository,
        trigger,
        change: `${was ?? "unsigned"} -> ${signer}`,
      });
      return { container: name, repository, signer };
    }),
    get busy() {
      return runner.busy;
    },
    queuedRequests: () => runner.queuedRequests(),
  };
}

/** What every kind of target works with: the deps, with every memory svc keeps defaulting to one in memory. */
function kindDepsOf(deps: UpdaterDeps, draining: () => boolean): KindDeps & { snoozed: Remembered } {
  return {
    config: deps.config,
    engine: deps.engine,
    registry: deps.registry,
    log: deps.log,
    selfContainerId: deps.selfContainerId,
    concurrency: deps.concurrency ?? DEFAULT_CONCURRENCY,
    rolledBack: deps.rolledBack ?? inMemory(),
    firstSeen: deps.firstSeen ?? inMemory(),
    skipped: deps.skipped ?? inMemory(),
    snoozed: deps.snoozed ?? inMemory(),
    draining,
    signatures: deps.signatures ?? signatureCheckOf(deps),
  };
}

/** The vulns room, reading the SBOMs attached in the registry where the registry reads artifacts. */
function vulnerabilitiesOf(deps: UpdaterDeps, log: Logger): Vulnerabilities | null {
  const artifacts = deps.registry.artifacts?.();
  return createVulnerabilities(deps.config, deps.engine, {
    ...(artifacts ? { artifacts } : {}),
    onSbomProblem: (problem) =>
      log.debug("SBOM attestation not read; the image's packages are read instead", { problem }),
  });
}

/** The verify room over the registry's artifacts; none where the registry reads none (a fake). */
function signatureCheckOf(deps: UpdaterDeps): SignatureCheck | undefined {
  const reader = deps.registry.artifacts?.();
  if (!reader) return undefined;
  const stateDir = deps.config.state_dir;
  return createSignatureCheck({
    config: deps.config,
    reader,
    signers: deps.signers ?? inMemory(),
    pending: deps.signersPending ?? inMemory(),
    root: rootSource({
      file: deps.config.trusted_root,
      cacheDir: stateDir === undefined ? undefined : join(stateDir, "sigstore"),
    }),
    log: deps.log.child("verify"),
  });
}

/** The dashboard's view: a dry run over the filter, with what svc remembers of each container. */
async function overviewOf(
  runner: Runner,
  config: Config,
  memory: OverviewMemory,
  filter?: UpdateFilter,
): Promise<Overview | null> {
  const seen: CycleSightings = {};
  const report = await runner.run("api", filter, { dryRun: true, seen });
  if (report === null) return null;
  // with a filter, what it leaves out is not excluded by svc
  const excluded = filter?.container?.length || filter?.image?.length ? [] : excludedContainers(seen, report, config);
  return { checked_at: report.finished_at, containers: containerOverviews(report, seen, config, memory), excluded };
}

/**
 * `svc handover` (the helper container of a self-update with published ports, see containers/handover.ts):
 * resolves true when the new svc runs, false when the old one was put back (or could not be).
 */
export async function runHandover(
  deps: Pick<UpdaterDeps, "config" | "engine" | "log" | "audit" | "timing">,
  job: Omit<HandoverJob, "stopTimeoutMs">,
): Promise<boolean> {
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
