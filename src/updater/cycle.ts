/**
 * One update cycle: select, check, then update in dependency order, then clean up and report.
 * One container's failure goes into the report and never aborts the cycle; only failing to
 * list the containers does.
 */
import type { Config } from "../config/index.ts";
import type { ContainerInspect, ContainerSummary, Engine } from "../engine/port.ts";
import { SvcError, toSvcError } from "../errors.ts";
import type { AuditLog, Logger } from "../log/index.ts";
import type { ImageRef, Registry } from "../registry/port.ts";
import type { Remembered } from "../state/index.ts";
import { unmatchedFilters } from "./unmatched.ts";
import { createChecker, type Checker, type RolledBackDigests, type Verdict } from "./check.ts";
import { hookFor, runHook } from "./hooks.ts";
import { buildGraph, COMPOSE, connectedGroups, dependentsOf, findCycles, networkModeTarget, nodeFromInspect, topologicalOrder, type DependencyGraph, type NodeInput } from "./graph.ts";
import { forEachLimited } from "./pool.ts";
import { act, park, planReplacement, replace, restore, stopOptionsFor, type Replacement } from "./protocol.ts";
import type { ProtocolContext, WatchTiming } from "./context.ts";
import { needsHandover, startHandover } from "./handover.ts";
import { announce, type ProgressListener } from "./progress.ts";
import { snoozedUntil } from "./snooze.ts";
import { buildReport } from "./report.ts";
import { decide, durationOf, finish, newTarget, toReplace, type TargetEntry, type TargetKind } from "./target.ts";
import { allOf, enableLabelFilter, notDisabledFilter, policyFor, scopeFilter, selectContainers, type ContainerPolicy } from "./selection.ts";
import { isOldName, parseHandoverName } from "./names.ts";
import { DRY_RUN_REASON, type ContainerReport, type RunOptions, type SessionReport, type Trigger, type UpdateFilter } from "./types.ts";

export interface CycleDeps {
  config: Config;
  engine: Engine;
  registry: Registry;
  log: Logger;
  audit: AuditLog;
  selfContainerId?: string;
  timing: WatchTiming;
  /** independent groups of containers updated at the same time */
  concurrency: number;
  rolledBack: RolledBackDigests;
  /** when each container's newer digest was first seen (min_image_age) */
  firstSeen: Remembered;
  /** digests skipped on request (POST /v1/skip) */
  skipped: Remembered;
  /** containers whose updates wait until a moment, by name (POST /v1/snooze; snooze.ts) */
  snoozed?: Remembered;
  /** images left by an update and waiting for cleanup_delay: image id -> "<container> <ISO time>" */
  leftImages: Remembered;
  /** true once a graceful stop was asked for: no new container update starts */
  draining: () => boolean;
  /**
   * Repairs leftovers of interrupted updates found in the list (an engine that failed in the
   * middle of a restore, a kill before the last start): resolves true when it changed something,
   * and the cycle lists again. Only leftovers the cycle's filter selects count.
   */
  repairLeftovers?: (all: ContainerSummary[], filter: UpdateFilter) => Promise<boolean>;
  selfHandover?: SelfHandover;
  /** told of each step as it starts (progress.ts) */
  progress?: ProgressListener;
  /** the kinds of target beside containers (services.ts: Swarm services, absent without Swarm mode) */
  kinds?: readonly TargetKind[];
}

/**
 * What the running service gives up while its replacement starts: with host networking or a
 * published host port the replacement cannot listen (or even start) while this instance holds
 * the port. `release` stops accepting connections (requests in flight, such as the one that
 * triggered this cycle, still get their answer); `reclaim` listens again after a rollback.
 */
export interface SelfHandover {
  release(): Promise<void>;
  reclaim(): Promise<void>;
}

export interface CycleResult {
  report: SessionReport;
  /** svc's own container was replaced: the new instance takes over, this one must stop */
  selfReplaced: boolean;
}

/** Per selected container, everything the cycle learns about it (beside what every target has: target.ts). */
interface Entry extends TargetEntry {
  /** only when something is to be updated in this cycle */
  inspect?: ContainerInspect;
  ref?: ImageRef;
  id: string;
  newImageId: string | null;
  oldDigest: string | null;
  newDigest: string | null;
  /** the reference the container moves to (tag policy, rollback across tags); null: its own */
  newImage: string | null;
}

const INSPECT_CONCURRENCY = 8;
const RESTARTED_FOR_DEPENDENCY = "restarted for dependency";

/** How a cycle runs: see RunOptions (types.ts); `dryRun` is resolved against the option by then. */
export interface CycleOptions extends Omit<RunOptions, "dryRun"> {
  dryRun: boolean;
}

export async function runCycle(deps: CycleDeps, trigger: Trigger, filter: UpdateFilter = {}, options: CycleOptions = { dryRun: false }): Promise<CycleResult> {
  const { dryRun } = options;
  const startedAt = new Date();
  // the global Web Crypto: node:crypto would cost a compiled svc ~4 MiB of memory to load
  const sessionId = crypto.randomUUID();
  const log = deps.log.child("updater");
  const ctx: ProtocolContext = { engine: deps.engine, config: deps.config, log, audit: deps.audit, trigger, sessionId, timing: deps.timing, progress: deps.progress };

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
  if (!dryRun && deps.repairLeftovers && (await deps.repairLeftovers(all, filter))) all = await list();

  // Fresh containers cost no inspect: the list and one image list answer every check. Only
  // when something is to be updated is every candidate inspected, for the dependency graph.
  const entries = newEntries(deps, selectContainers(all, deps.config, filter), options.toLocalTag === true);
  for (const problem of unmatchedFilters(all, deps.config, filter)) log.warn(problem);
  // a dry run runs no hook: a hook may change anything
  if (!dryRun) await runHooks(ctx, entries, "pre_check", (entry) => entry.summary.state === "running");
  if (options.seen) options.seen.containers = all;
  const checker = await checkEntries(deps, ctx, entries, options);
  const toUpdate = chooseUpdates(deps, entries);
  if (dryRun) {
    for (const name of toUpdate) finish(entries.get(name)!, "stale", DRY_RUN_REASON);
    toUpdate.clear();
  } else {
    await preUpdateHooks(ctx, entries, toUpdate);
  }
  const selfReplaced = toUpdate.size > 0 ? await updateInOrder({ deps, ctx, log, all, entries, checker, toUpdate }) : false;
  const others: ContainerReport[] = [];
  for (const kind of deps.kinds ?? []) others.push(...(await kind.run(ctx, all, filter, options)));
  if (deps.config.cleanup && !dryRun) await cleanupImages(deps, ctx, entries);
  if (!dryRun) await runHooks(ctx, entries, "post_check", (entry) => entry.summary.state === "running" && entry.state !== "failed");

  const report = buildReport({ id: sessionId, trigger, startedAt, finishedAt: new Date(), filter, containers: [...reportEntries(entries), ...others].sort((a, b) => a.name.localeCompare(b.name)) });
  if (dryRun) report.dry_run = true;
  // told by whoever runs the cycle (summary.ts: a line per container, then the summary)
  return { report, selfReplaced };
}

async function checkEntries(deps: CycleDeps, ctx: ProtocolContext, entries: Map<string, Entry>, options: CycleOptions): Promise<Checker> {
  const localReferences = options.localReferences ?? new Map<string, string>();
  const images = entries.size > 0 ? await deps.engine.listImages().catch(() => []) : [];
  if (options.seen) options.seen.images = images;
  const checker = createChecker({ engine: deps.engine, session: deps.registry.session(), images, rolledBack: deps.rolledBack, firstSeen: deps.firstSeen, skipped: deps.skipped, log: deps.log.child("updater") });
  await Promise.all(
    [...entries.values()].map(async (entry) => {
      const { name, image, imageId, labels } = entry.summary;
      const { policy } = entry;
      if (policy.problem) return finish(entry, "skipped", policy.problem);
      const reportTagOnly = labels[COMPOSE.project] !== undefined && !policy.moveCompose;
      // a rollback on request goes where it was asked to, snoozed or not
      const snoozed = options.toLocalTag ? undefined : snoozedUntil(deps.snoozed, name);
      const input = { name, image, imageId, noPull: policy.noPull, minImageAgeMs: policy.minImageAgeMs, tagPolicy: policy.tagPolicy, reportTagOnly, localReference: localReferences.get(name), snoozedUntil: snoozed };
      announce(ctx.progress, ctx, name, "check");
      applyVerdict(entry, await checker.check(input));
    }),
  );
  return checker;
}

/** Runs one hook, one container at a time, in the containers `when` picks; failures are logged only. */
async function runHooks(ctx: ProtocolContext, entries: Map<string, Entry>, name: "pre_check" | "post_check", when: (entry: Entry) => boolean): Promise<void> {
  for (const entry of entries.values()) {
    const hook = hookFor(entry.summary.labels, name, ctx.config);
    if (hook && when(entry)) await runHook(ctx, { id: entry.id, name: entry.summary.name, image: entry.summary.image }, hook);
  }
}

/** pre_update, before anything is stopped: a container whose hook fails is skipped with the reason. */
async function preUpdateHooks(ctx: ProtocolContext, entries: Map<string, Entry>, toUpdate: Set<string>): Promise<void> {
  for (const name of [...toUpdate]) {
    const entry = entries.get(name)!;
    const hook = hookFor(entry.summary.labels, "pre_update", ctx.config);
    if (!hook || entry.summary.state !== "running") continue;
    const failure = await runHook(ctx, { id: entry.id, name, image: entry.summary.image }, hook);
    if (failure === null) continue;
    finish(entry, "skipped", failure);
    toUpdate.delete(name);
  }
}

/** Stale containers still to be decided: not monitor-only, not held back (nor svc's own in run-once mode). */
function chooseUpdates(deps: CycleDeps, entries: Map<string, Entry>): Set<string> {
  const toUpdate = new Set<string>();
  // a stale state already finished is final: monitor-only, or waiting for min_image_age
  for (const entry of toReplace(entries.values())) {
    if (isSelf(deps, entry) && deps.config.run_once) {
      finish(entry, "skipped", "svc's own container is not updated in run-once mode");
      continue;
    }
    toUpdate.add(entry.summary.name);
  }
  return toUpdate;
}

/**
 * Builds the dependency graph, skips stale members of cycles, and updates connected groups
 * (bounded concurrency), svc's own group last. Resolves true when svc's own container was replaced.
 */
async function updateInOrder(input: {
  deps: CycleDeps;
  ctx: ProtocolContext;
  log: Logger;
  all: ContainerSummary[];
  entries: Map<string, Entry>;
  checker: Checker;
  toUpdate: Set<string>;
}): Promise<boolean> {
  const { deps, entries, toUpdate } = input;
  await inspectEntries(deps, entries, toUpdate, input.log);
  // dependents may be outside the selection (a `network_mode: container:` sidecar must follow
  // its host whatever its labels): the graph covers every running container
  const others = await inspectOthers(deps, input.all, entries);
  const inspected = [...entries.values()].filter((e) => e.inspect !== undefined);
  const graph = buildGraph([...inspected.map((e) => nodeFromInspect(e.inspect!, e.policy.dependsOn)), ...others.map((o) => o.node)]);
  const inCycle = markCycles(entries, graph, toUpdate);
  const running = new Map<string, { inspect: ContainerInspect; policy: ContainerPolicy }>();
  for (const o of others) running.set(o.summary.name, o);
  for (const e of inspected) running.set(e.summary.name, { inspect: e.inspect!, policy: e.policy });

  const idToName = new Map(input.all.map((c) => [c.id, c.name]));
  const g: GroupContext = { deps, ctx: input.ctx, entries, graph, idToName, checker: input.checker, toUpdate, running, inCycle, log: input.log, pulls: new Map() };
  const involved = new Set([...toUpdate, ...[...dependentsOf(graph, toUpdate)].filter((n) => isRestartable(g, n))]);
  const groups = connectedGroups(graph, involved);
  const selfGroup = groups.find((group) => group.some((n) => entries.has(n) && isSelf(deps, entries.get(n)!)));
  await forEachLimited(
    groups.filter((group) => group !== selfGroup),
    deps.concurrency,
    async (group) => {
      await updateGroup(g, group);
    },
  );
  return selfGroup ? updateGroup(g, selfGroup) : false;
}

function reportEntries(entries: Map<string, Entry>): ContainerReport[] {
  const now = Date.now();
  return [...entries.values()]
    .sort((a, b) => a.summary.name.localeCompare(b.summary.name))
    .map((e) => ({
      id: e.id,
      name: e.summary.name,
      image: e.summary.image,
      new_image: e.newImage,
      old_image_id: e.summary.imageId,
      new_image_id: e.newImageId,
      old_digest: e.oldDigest,
      new_digest: e.newDigest,
      state: e.state,
      reason: e.reason,
      duration_ms: durationOf(e, now),
    }));
}

function isSelf(deps: CycleDeps, entry: Entry): boolean {
  return deps.selfContainerId !== undefined && (entry.summary.id === deps.selfContainerId || entry.summary.id.startsWith(deps.selfContainerId));
}

function newEntries(deps: CycleDeps, selected: ContainerSummary[], toLocalTag: boolean): Map<string, Entry> {
  const startedAt = Date.now();
  const policyOf = (summary: ContainerSummary): ContainerPolicy => {
    const policy = policyFor(summary, deps.config);
    return toLocalTag ? { ...policy, noPull: true, monitorOnly: false, minImageAgeMs: 0 } : policy;
  };
  return new Map(
    selected.map((summary) => [
      summary.name,
      { ...newTarget(summary, policyOf(summary), startedAt), id: summary.id, newImageId: null, oldDigest: null, newDigest: null, newImage: null },
    ]),
  );
}

/** Inspects every selected container (the graph needs the stale ones' neighbours too). */
async function inspectEntries(deps: CycleDeps, entries: Map<string, Entry>, toUpdate: Set<string>, log: Logger): Promise<void> {
  await forEachLimited([...entries.values()], INSPECT_CONCURRENCY, async (entry) => {
    try {
      entry.inspect = await deps.engine.inspectContainer(entry.summary.id);
    } catch (error) {
      log.debug("container vanished before inspect", { container: entry.summary.name, error: toSvcError(error).message });
      if (toUpdate.delete(entry.summary.name)) finish(entry, "skipped", `the container disappeared during the cycle: ${toSvcError(error).message}`);
    }
  });
}

/**
 * Running containers outside the selection, for finding dependents. One outside this instance's
 * reach (another scope, `svc.enable=false`, `disable_containers`) is only followed through
 * `network_mode: container:`, the one tie an update breaks for good; links and depends_on of such
 * a container are its operator's business.
 */
async function inspectOthers(deps: CycleDeps, all: ContainerSummary[], entries: Map<string, Entry>): Promise<Other[]> {
  const others: Other[] = [];
  const reachable = allOf([scopeFilter(deps.config.scope), enableLabelFilter(false), notDisabledFilter(deps.config.disable_containers)]);
  const candidates = all.filter((c) => !entries.has(c.name) && !isOldName(c.name) && parseHandoverName(c.name) === null && c.state === "running");
  await forEachLimited(candidates, INSPECT_CONCURRENCY, async (summary) => {
    const inspect = await deps.engine.inspectContainer(summary.id).catch(() => null);
    if (!inspect) return;
    const policy = policyFor(summary, deps.config);
    const node = nodeFromInspect(inspect, policy.dependsOn);
    const followed = reachable(summary) ? node : { ...node, links: [], dependsOn: [], labels: {} };
    others.push({ summary, inspect, policy, node: followed });
  });
  return others;
}

interface Other {
  summary: ContainerSummary;
  inspect: ContainerInspect;
  policy: ContainerPolicy;
  node: NodeInput;
}

/** Stale members of a dependency cycle are skipped, naming the cycle; the others keep their state. */
function markCycles(entries: Map<string, Entry>, graph: DependencyGraph, toUpdate: Set<string>): Set<string> {
  const members = new Set<string>();
  for (const cycle of findCycles(graph)) {
    const reason = `dependency cycle: ${cycle.join(" -> ")}`;
    for (const name of new Set(cycle)) {
      members.add(name);
      if (toUpdate.delete(name)) finish(entries.get(name)!, "skipped", reason);
    }
  }
  return members;
}

function applyVerdict(entry: Entry, verdict: Verdict): void {
  entry.ref = verdict.ref;
  entry.oldDigest = verdict.oldDigest;
  entry.newDigest = verdict.newDigest;
  entry.newImageId = verdict.newImageId;
  entry.newImage = verdict.newImage;
  decide(entry, verdict);
}

interface GroupContext {
  deps: CycleDeps;
  ctx: ProtocolContext;
  entries: Map<string, Entry>;
  graph: DependencyGraph;
  idToName: Map<string, string>;
  checker: Checker;
  toUpdate: Set<string>;
  running: Map<string, { inspect: ContainerInspect; policy: ContainerPolicy }>;
  inCycle: Set<string>;
  log: Logger;
  /** one pull per reference and platform in a cycle */
  pulls: Map<string, Promise<void>>;
}

function isRestartable(g: GroupContext, name: string): boolean {
  const known = g.running.get(name);
  return known !== undefined && known.inspect.State?.Running === true && !g.inCycle.has(name);
}

/** What happens to one member of a group in the two phases. */
type Plan =
  | { kind: "update"; r: Replacement }
  /** a dependent restarted after its dependencies */
  | { kind: "restart"; inspect: ContainerInspect; stopped: boolean }
  /** a `network_mode: container:` dependent: its namespace dies with its host, so it is recreated */
  | { kind: "recreate"; r: Replacement; host: string };

/**
 * Updates one group of connected containers: pulls first (nothing stopped yet), then stops
 * dependents before their dependencies, then starts dependencies before their dependents.
 * Resolves true when svc's own container was replaced.
 */
async function updateGroup(g: GroupContext, group: string[]): Promise<boolean> {
  const updating = new Set(group.filter((name) => g.toUpdate.has(name)));
  if (g.deps.draining()) {
    for (const name of updating) finish(g.entries.get(name)!, "skipped", "svc is shutting down");
    return false;
  }
  for (const name of topologicalOrder(g.graph, updating)) {
    if (!(await pull(g, g.entries.get(name)!))) updating.delete(name);
  }
  if (updating.size === 0) return false;

  const members = new Set([...updating, ...[...dependentsOf(g.graph, updating)].filter((n) => group.includes(n) && isRestartable(g, n))]);
  const order = topologicalOrder(g.graph, members);
  const plans = new Map<string, Plan>();

  for (const name of [...order].reverse()) {
    const plan = await parkMember(g, name, updating);
    if (plan) plans.set(name, plan);
  }

  let selfReplaced = false;
  const replaced = new Set<string>();
  for (const name of order) {
    const plan = plans.get(name);
    if (!plan) continue;
    if (plan.kind === "update") {
      const entry = g.entries.get(name)!;
      if (plan.r.self && needsHandover(plan.r.old)) {
        // published ports: a helper container finishes the update once this instance has stopped
        const started = await startHandover(g.ctx, plan.r, { networkContainer: networkContainerOf(g, plan.r.old), stopping: g.deps.draining });
        if (started.kind === "handed_over") {
          entry.id = started.newId;
          finish(entry, "updated", `handed over to ${started.helper}, which starts and watches the new svc (rolled back there if it fails)`);
        } else {
          finish(entry, "failed", started.reason);
        }
        continue;
      }
      if (plan.r.self) await handOver(g, "release");
      const outcome = await replace(g.ctx, plan.r, networkContainerOf(g, plan.r.old));
      if (plan.r.self && outcome.kind !== "replaced") await handOver(g, "reclaim");
      if (outcome.kind === "replaced") {
        replaced.add(name);
        entry.id = outcome.newId;
        entry.newImageId = outcome.newImageId;
        finish(entry, "updated", null);
        if (plan.r.self) selfReplaced = true;
      } else {
        // only an image that failed a check is not retried; an engine outage is not its fault
        if (outcome.kind === "rolled_back" || outcome.rejectedImage) g.deps.rolledBack.set(name, entry.newDigest ?? entry.newImageId ?? "");
        finish(entry, outcome.kind, outcome.reason);
      }
    } else if (plan.kind === "recreate") {
      await finishRecreate(g, name, plan, replaced.has(plan.host));
    } else {
      await restartDependent(g, name, plan);
    }
  }
  return selfReplaced;
}

/** Pulls the new image for an entry; false when there is nothing to update after all. */
async function pull(g: GroupContext, entry: Entry): Promise<boolean> {
  const ref = entry.ref!;
  const lost = await g.deps.engine.settingsBeyondApi(entry.inspect!).catch(() => []);
  if (lost.length > 0) {
    const api = (await g.deps.engine.info()).apiVersion;
    finish(entry, "skipped", `a replacement would lose settings at API ${api} (docker.api_version): ${lost.join("; ")}`);
    return false;
  }
  if (!entry.policy.noPull) {
    const reference = entry.newImage ?? pullReference(ref);
    try {
      const platform = await g.checker.platformOf(entry.summary.imageId);
      // containers sharing an image share its pull, even across groups running at the same time
      const key = `${reference}|${platform.os}/${platform.architecture}/${platform.variant ?? ""}`;
      let pulling = g.pulls.get(key);
      if (!pulling) {
        pulling = g.deps.registry
          .pullAuth(ref)
          .then((auth) => act(g.ctx, "pull", { container: entry.summary.name, container_id: entry.summary.id, image: reference }, () => g.deps.engine.pullImage(reference, { platform, auth })));
        g.pulls.set(key, pulling);
      }
      await pulling;
    } catch (error) {
      finish(entry, "failed", `pull failed: ${toSvcError(error).message}`);
      return false;
    }
  }
  const pulled = await g.deps.engine.inspectImage(entry.newImage ?? entry.inspect!.Config.Image).catch(() => null);
  // (a container moving to another tag moves even to the same image: its reference changes)
  if (pulled && pulled.Id === entry.summary.imageId && entry.newImage === null) {
    // the registry's answer changed (e.g. a multi-arch index) but not the image for this platform
    finish(entry, "fresh", null);
    return false;
  }
  if (pulled) entry.newImageId = pulled.Id;
  return true;
}

/** A reference with its tag written out: pulling a bare name would fetch every tag. */
export function pullReference(ref: ImageRef): string {
  const text = ref.original;
  const hasTag = text.lastIndexOf(":") > text.lastIndexOf("/");
  return hasTag || ref.tag === undefined ? text : `${text}:${ref.tag}`;
}

async function parkMember(g: GroupContext, name: string, updating: Set<string>): Promise<Plan | undefined> {
  const known = g.running.get(name)!;
  if (updating.has(name)) {
    const entry = g.entries.get(name)!;
    const oldImage = await g.deps.engine.inspectImage(entry.inspect!.Image).catch(() => null);
    const r = planReplacement(entry.inspect!, oldImage, {
      image: entry.newImage ?? undefined,
      stopSignal: entry.policy.stopSignal,
      stopTimeoutMs: entry.policy.stopTimeoutMs,
      revive: g.deps.config.revive_stopped,
      self: isSelf(g.deps, entry),
    });
    try {
      await park(g.ctx, r);
      return { kind: "update", r };
    } catch (error) {
      finish(entry, "failed", toSvcError(error).message);
      return undefined;
    }
  }

  const host = networkHostName(g, known.inspect);
  if (host !== undefined && updating.has(host)) {
    const oldImage = await g.deps.engine.inspectImage(known.inspect.Image).catch(() => null);
    const r = planReplacement(known.inspect, oldImage, { stopSignal: known.policy.stopSignal, stopTimeoutMs: known.policy.stopTimeoutMs, revive: false, self: false });
    try {
      await park(g.ctx, r);
      return { kind: "recreate", r, host };
    } catch (error) {
      dependentProblem(g, name, `recreating for dependency: ${toSvcError(error).message}`);
      return undefined;
    }
  }

  const inspect = known.inspect;
  try {
    await act(g.ctx, "stop", { container: name, container_id: inspect.Id, image: inspect.Config.Image }, () =>
      g.deps.engine.stopContainer(inspect.Id, stopOptionsFor(inspect, known.policy)),
    );
    return { kind: "restart", inspect, stopped: true };
  } catch (error) {
    dependentProblem(g, name, `stopping for dependency failed: ${toSvcError(error).message}`);
    return undefined;
  }
}

async function restartDependent(g: GroupContext, name: string, plan: Extract<Plan, { kind: "restart" }>): Promise<void> {
  try {
    await act(g.ctx, "start", { container: name, container_id: plan.inspect.Id, image: plan.inspect.Config.Image }, () => g.deps.engine.startContainer(plan.inspect.Id));
    markRestarted(g, name);
  } catch (error) {
    dependentProblem(g, name, `restarting for dependency failed: ${toSvcError(error).message}`);
  }
}

async function finishRecreate(g: GroupContext, name: string, plan: Extract<Plan, { kind: "recreate" }>, hostReplaced: boolean): Promise<void> {
  if (!hostReplaced) {
    // the host kept its old container (failed or rolled back): the old namespace is back, start as before
    const problems = await restore(g.ctx, plan.r);
    if (problems.length > 0) dependentProblem(g, name, `restarting for dependency failed: ${problems.join("; ")}`);
    else markRestarted(g, name);
    return;
  }
  const outcome = await replace(g.ctx, plan.r, plan.host);
  if (outcome.kind === "replaced") {
    const entry = g.entries.get(name);
    if (entry) entry.id = outcome.newId;
    markRestarted(g, name);
  } else {
    dependentProblem(g, name, `recreating for dependency failed: ${outcome.reason}`);
  }
}

async function handOver(g: GroupContext, step: keyof SelfHandover): Promise<void> {
  if (!g.deps.selfHandover) return;
  try {
    await g.deps.selfHandover[step]();
  } catch (error) {
    g.log.error(`self-update: could not ${step} the service's resources`, { error: toSvcError(error).message });
  }
}

function markRestarted(g: GroupContext, name: string): void {
  const entry = g.entries.get(name);
  if (entry && entry.reason === null) entry.reason = RESTARTED_FOR_DEPENDENCY;
}

function dependentProblem(g: GroupContext, name: string, reason: string): void {
  g.log.error("dependent container", { container: name, error: reason });
  const entry = g.entries.get(name);
  if (entry) finish(entry, "failed", reason);
}

/** The name of the container whose network namespace `inspect` joins, if any. */
function networkHostName(g: GroupContext, inspect: ContainerInspect): string | undefined {
  const target = networkModeTarget(inspect.HostConfig?.NetworkMode);
  if (target === undefined) return undefined;
  if (g.idToName.has(target)) return g.idToName.get(target);
  for (const [id, name] of g.idToName) if (target.length >= 12 && id.startsWith(target)) return name;
  return target.replace(/^\//, "");
}

function networkContainerOf(g: GroupContext, inspect: ContainerInspect): string | undefined {
  return networkHostName(g, inspect);
}

/** `cleanup`: old images of updated containers that no container uses any more. */
async function cleanupImages(deps: CycleDeps, ctx: ProtocolContext, entries: Map<string, Entry>): Promise<void> {
  const updated = [...entries.values()].filter((e) => e.state === "updated" && e.newImageId !== e.summary.imageId);
  // every image an update leaves waits cleanup_delay (for `svc rollback`; 0: it goes now)
  const now = Date.now();
  for (const entry of updated) deps.leftImages.set(entry.summary.imageId, `${entry.summary.name} ${new Date(now).toISOString()}`);
  const kept = newestLeftImages(deps.leftImages.entries(), deps.config.cleanup_keep);
  const due = deps.leftImages.entries().filter(([imageId, value]) => !kept.has(imageId) && parseLeft(value).at + deps.config.cleanup_delay <= now);
  if (due.length === 0) return;
  let inUse: Set<string>;
  try {
    inUse = new Set((await deps.engine.listContainers()).map((c) => c.imageId));
  } catch (error) {
    ctx.log.warn("cleanup skipped: cannot list containers", { error: toSvcError(error).message });
    return;
  }
  const done = new Set<string>();
  for (const [imageId, left] of due) {
    if (done.has(imageId)) continue;
    done.add(imageId);
    // an image a container runs again (a rollback) is no longer waiting to be removed
    deps.leftImages.delete(imageId);
    if (inUse.has(imageId)) continue;
    const { container } = parseLeft(left);
    try {
      await act(ctx, "image_remove", { container, image: imageId }, () => deps.engine.removeImage(imageId));
    } catch (error) {
      ctx.log.warn("could not remove the old image", { image: imageId, error: toSvcError(error).message });
    }
  }
}

/** A left-images entry, "<container> <ISO time>": whose update left the image, and when. */
function parseLeft(value: string): { container: string; at: number } {
  const [container = "", at = ""] = value.split(" ");
  return { container, at: Date.parse(at) };
}

/** cleanup_keep: the images the last `count` updates of each container left. */
function newestLeftImages(entries: [string, string][], count: number): Set<string> {
  const byContainer = new Map<string, { imageId: string; at: number }[]>();
  for (const [imageId, value] of entries) {
    const { container, at } = parseLeft(value);
    const list = byContainer.get(container) ?? [];
    list.push({ imageId, at });
    byContainer.set(container, list);
  }
  const kept = new Set<string>();
  for (const list of byContainer.values()) {
    for (const { imageId } of list.sort((a, b) => b.at - a.at).slice(0, count)) kept.add(imageId);
  }
  return kept;
}
