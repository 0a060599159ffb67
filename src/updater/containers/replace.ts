/**
 * A container's replacement in a cycle: the dependency graph over every running container, then
 * each connected group of containers to update (a few groups at a time, svc's own last): pulls
 * first (nothing stopped yet), dependents stopped before their dependencies, then the update
 * protocol (containers/protocol.ts: park, replace, watch, restore) and the dependents started again after
 * their dependencies. One container's failure goes into its entry and never stops the others.
 */

import type { ComposeFiles } from "../../compose/index.ts";
import { toSvcError } from "../../core/errors.ts";
import { refusedByPolicy } from "../../engine/podman.ts";
import type { ContainerInspect, ContainerSummary, Engine, ImageInspect, SystemdUnit } from "../../engine/port.ts";
import type { Systemd } from "../../engine/systemd.ts";
import type { GitStep } from "../../git/index.ts";
import type { Logger } from "../../log/index.ts";
import type { ImageRef } from "../../registry/port.ts";
import { inMemory, type Remembered } from "../../state/index.ts";
import { type Checker, digestFor } from "../check/check.ts";
import { act } from "../cycle/act.ts";
import type { ProtocolContext } from "../cycle/context.ts";
import { forEachLimited } from "../cycle/pool.ts";
import { applyDecisions, type Decision, decision, finish, heldByWindow, type KindDeps } from "../cycle/target.ts";
import { isOldName, parseHandoverName } from "../selection/names.ts";
import {
  allOf,
  type ContainerPolicy,
  enableLabelFilter,
  notDisabledFilter,
  policyFor,
  scopeFilter,
} from "../selection/selection.ts";
import { failedInStack, mergeStacks, type StackWrite, settleCompose, writeCompose } from "./compose.ts";
import type { ContainerEntry } from "./entry.ts";
import {
  buildGraph,
  connectedGroups,
  type DependencyGraph,
  dependentsOf,
  findCycles,
  type NodeInput,
  networkModeTarget,
  nodeFromInspect,
  topologicalOrder,
} from "./graph.ts";
import { dropGuardPlan, prepareGuard } from "./guard.ts";
import { needsHandover, startHandover } from "./handover.ts";
import { park, planReplacement, replace, restore, stopOptionsFor } from "./protocol.ts";
import { rebuild, settleRebuild } from "./rebuild.ts";
import type { Replacement } from "./replacement.ts";
import { planUnitUpdate, updateThroughSystemd } from "./systemd.ts";

/** What replacing containers works with: the kinds' deps, and how svc lets go of its own port. */
export interface ReplaceDeps
  extends Pick<
    KindDeps,
    "config" | "engine" | "registry" | "concurrency" | "draining" | "selfContainerId" | "rolledBack"
  > {
  selfHandover?: SelfHandover;
  /** images pulled ahead of an update window (containers/prepull.ts): not pulled again */
  prePulled?: Remembered;
  /** compose projects' files (docs/compose.md); absent: files are never written */
  compose?: ComposeFiles;
  /** what follows a compose change in Git (`[compose] git`: docs/compose.md, "Git"); absent: nothing */
  git?: GitStep;
  /** the journal of tag moves written into units' files (containers/unitmove.ts); absent: in memory */
  unitMoves?: Remembered;
  /** the units that run containers (Podman's, containers/systemd.ts) */
  systemd: Systemd;
  /** each built service's bases and the digests it was built from (check/bases.ts); absent: not recorded */
  buildBases?: Remembered;
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

const INSPECT_CONCURRENCY = 8;
const RESTARTED_FOR_DEPENDENCY = "restarted for dependency";

/**
 * Builds the dependency graph, skips stale members of cycles, and updates connected groups
 * (bounded concurrency), svc's own group last. Resolves true when svc's own container was replaced.
 */
export async function updateInOrder(input: {
  deps: ReplaceDeps;
  ctx: ProtocolContext;
  all: readonly ContainerSummary[];
  entries: Map<string, ContainerEntry>;
  checker: Checker;
  toUpdate: Set<string>;
}): Promise<boolean> {
  const { deps, entries, toUpdate } = input;
  const hold = (decisions: readonly Decision[]) => applyDecisions(entries, toUpdate, decisions);
  hold(await inspectEntries(deps, entries, input.ctx.log));
  // dependents may be outside the selection (a `network_mode: container:` sidecar must follow
  // its host whatever its labels): the graph covers every running container
  const others = await inspectOthers(deps, input.all, entries);
  const inspected = [...entries.values()].filter((e) => e.inspect !== undefined);
  const graph = buildGraph([
    ...inspected.map((e) => nodeFromInspect(e.inspect!, e.policy.dependsOn)),
    ...others.map((o) => o.node),
  ]);
  const { inCycle, skipped } = markCycles(graph);
  hold(skipped);
  const running = new Map<string, { inspect: ContainerInspect; policy: ContainerPolicy }>();
  for (const o of others) running.set(o.summary.name, o);
  for (const e of inspected) running.set(e.summary.name, { inspect: e.inspect!, policy: e.policy });

  const idToName = new Map(input.all.map((c) => [c.id, c.name]));
  const g: GroupContext = {
    deps,
    ctx: input.ctx,
    entries,
    graph,
    idToName,
    checker: input.checker,
    toUpdate,
    running,
    inCycle,
    log: input.ctx.log,
    pulls: new Map(),
    builds: { queue: Promise.resolve() },
    unitMoves: deps.unitMoves ?? inMemory(),
  };
  const involved = new Set([...toUpdate, ...[...dependentsOf(graph, toUpdate)].filter((n) => isRestartable(g, n))]);
  const groups = mergeStacks(connectedGroups(graph, involved), entries);
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

export function isSelf(deps: Pick<KindDeps, "selfContainerId">, entry: ContainerEntry): boolean {
  return (
    deps.selfContainerId !== undefined &&
    (entry.summary.id === deps.selfContainerId || entry.summary.id.startsWith(deps.selfContainerId))
  );
}

/**
 * Inspects every selected container (the graph needs the stale ones' neighbours too). One gone
 * meanwhile is skipped (returned), if it was to be updated.
 */
async function inspectEntries(
  deps: ReplaceDeps,
  entries: Map<string, ContainerEntry>,
  log: Logger,
): Promise<Decision[]> {
  const gone: Decision[] = [];
  await forEachLimited([...entries.values()], INSPECT_CONCURRENCY, async (entry) => {
    try {
      entry.inspect = await deps.engine.inspectContainer(entry.summary.id);
    } catch (error) {
      log.debug("container vanished before inspect", {
        container: entry.summary.name,
        error: toSvcError(error).message,
      });
      gone.push(
        decision(
          entry.summary.name,
          "skipped",
          `the container disappeared during the cycle: ${toSvcError(error).message}`,
        ),
      );
    }
  });
  return gone;
}

/**
 * Running containers outside the selection, for finding dependents. One outside this instance's
 * reach (another scope, `svc.enable=false`, `disable_containers`) is only followed through
 * `network_mode: container:`, the one tie an update breaks for good; links and depends_on of such
 * a container are its operator's business.
 */
async function inspectOthers(
  deps: ReplaceDeps,
  all: readonly ContainerSummary[],
  entries: Map<string, ContainerEntry>,
): Promise<Other[]> {
  const others: Other[] = [];
  const reachable = allOf([
    scopeFilter(deps.config.scope),
    enableLabelFilter(false),
    notDisabledFilter(deps.config.disable_containers),
  ]);
  const candidates = all.filter(
    (c) => !entries.has(c.name) && !isOldName(c.name) && parseHandoverName(c.name) === null && c.state === "running",
  );
  await forEachLimited(candidates, INSPECT_CONCURRENCY, async (summary) => {
    // nothing lost: a container removed since the list depends on nothing; on an engine error this update's own steps fail on the same engine
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

/**
 * The members of dependency cycles; those to be updated are skipped, naming the cycle (the first
 * cycle that names one wins), the others keep their state.
 */
function markCycles(graph: DependencyGraph): { inCycle: Set<string>; skipped: Decision[] } {
  const inCycle = new Set<string>();
  const skipped: Decision[] = [];
  for (const cycle of findCycles(graph)) {
    const reason = `dependency cycle: ${cycle.join(" -> ")}`;
    for (const name of new Set(cycle)) {
      inCycle.add(name);
      skipped.push(decision(name, "skipped", reason));
    }
  }
  return { inCycle, skipped };
}

interface GroupContext {
  deps: ReplaceDeps;
  ctx: ProtocolContext;
  entries: Map<string, ContainerEntry>;
  graph: DependencyGraph;
  idToName: Map<string, string>;
  checker: Checker;
  toUpdate: Set<string>;
  running: Map<string, { inspect: ContainerInspect; policy: ContainerPolicy }>;
  inCycle: Set<string>;
  log: Logger;
  /** one pull per reference and platform in a cycle */
  pulls: Map<string, Promise<void>>;
  /** one build at a time (containers/rebuild.ts) */
  builds: { queue: Promise<unknown> };
  unitMoves: Remembered;
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
  try {
    return await replaceGroup(g, group);
  } finally {
    for (const name of group) {
      const entry = g.entries.get(name);
      if (entry?.built) await settleRebuild(g.deps.engine, g.ctx, g.deps.buildBases, entry);
    }
  }
}

async function replaceGroup(g: GroupContext, group: string[]): Promise<boolean> {
  // a built service's base tag is written before its build, which reads the Dockerfile
  const early: StackWrite[] = [];
  const updating = await pullGroup(g, group, early);
  const writtenEarly = new Set(early.flatMap((w) => w.moves.map((m) => m.container)));
  // the files first, while nothing is stopped: a stack whose files cannot be written stays as it is
  const late = new Set([...updating].filter((name) => !writtenEarly.has(name)));
  const writes = [...early, ...(await writeCompose(g.deps.compose, g.deps.git, g.ctx, g.entries, late))];
  for (const name of [...updating]) if (!writtenEarly.has(name) && !late.has(name)) updating.delete(name);
  if (updating.size === 0) {
    await settleCompose(g.deps.compose, g.deps.git, g.ctx, g.entries, writes);
    return false;
  }

  const members = new Set([
    ...updating,
    ...[...dependentsOf(g.graph, updating)].filter((n) => group.includes(n) && isRestartable(g, n)),
  ]);
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
    if (plan?.kind === "update") {
      const failed = failedInStack(g.entries, name);
      if (failed !== null) {
        // a stack moves as a unit: once one of its services failed, the rest stay as they were
        const problems = await restore(g.ctx, plan.r);
        finish(
          g.entries.get(name)!,
          problems.length > 0 ? "failed" : "skipped",
          [`not updated: ${failed} of its stack failed`, ...problems].join("; "),
        );
        continue;
      }
      if (!(await updateMember(g, name, plan.r))) continue;
      replaced.add(name);
      if (plan.r.self) selfReplaced = true;
    } else if (plan?.kind === "recreate") {
      await finishRecreate(g, name, plan, replaced.has(plan.host));
    } else if (plan) {
      await restartDependent(g, name, plan);
    }
  }
  await settleCompose(g.deps.compose, g.deps.git, g.ctx, g.entries, writes);
  return selfReplaced;
}

/** The group's containers to update whose new image is pulled (none once svc is draining). */
async function pullGroup(g: GroupContext, group: string[], early: StackWrite[]): Promise<Set<string>> {
  const updating = new Set(group.filter((name) => g.toUpdate.has(name)));
  if (g.deps.draining()) {
    applyDecisions(
      g.entries,
      updating,
      [...updating].map((name) => decision(name, "skipped", "svc is shutting down")),
    );
    return updating;
  }
  const building = new Set(
    [...updating].filter((name) => g.entries.get(name)!.built && g.entries.get(name)!.composeMove),
  );
  if (building.size > 0) {
    const asked = [...building];
    early.push(...(await writeCompose(g.deps.compose, g.deps.git, g.ctx, g.entries, building)));
    for (const name of asked) if (!building.has(name)) updating.delete(name);
  }
  // the window is asked at the moment of acting, before the pulls and again before the first stop:
  // one that closes meanwhile lets running replacements finish and starts nothing new
  const closed = (name: string) => heldByWindow(g.entries.get(name)!);
  for (const name of topologicalOrder(g.graph, updating)) {
    const pulled = closed(name) ? "done" : await pull(g, g.entries.get(name)!);
    if (pulled === "done") updating.delete(name);
    else if (pulled !== "replace") applyDecisions(g.entries, updating, [pulled]);
  }
  for (const name of [...updating]) if (closed(name)) updating.delete(name);
  return updating;
}

/**
 * One parked container replaced by the update protocol (svc's own with published ports: handed
 * over to a helper container). True when its replacement runs now.
 */
async function updateMember(g: GroupContext, name: string, r: Replacement): Promise<boolean> {
  const entry = g.entries.get(name)!;
  if (r.self && needsHandover(r.old)) {
    // published ports: a helper container finishes the update once this instance has stopped
    const started = await startHandover(g.ctx, r, {
      networkContainer: networkHostName(g, r.old),
      stopping: g.deps.draining,
    });
    if (started.kind === "handed_over") {
      entry.id = started.newId;
      finish(
        entry,
        "updated",
        `handed over to ${started.helper}, which starts and watches the new svc (rolled back there if it fails)`,
      );
    } else {
      finish(entry, "failed", started.reason);
    }
    return false;
  }
  if (r.self) await handOver(g, "release");
  const outcome = await replace(g.ctx, r, networkHostName(g, r.old));
  if (r.dataGuard) entry.dataGuard = r.dataGuard;
  if (r.self && outcome.kind !== "replaced") await handOver(g, "reclaim");
  if (outcome.kind === "replaced") {
    entry.id = outcome.newId;
    entry.newImageId = outcome.newImageId;
    finish(entry, "updated", null);
    return true;
  }
  if (outcome.kind === "held") {
    finish(entry, "held", outcome.reason);
    return false;
  }
  // only an image that failed a check is not retried; an engine outage is not its fault
  if (outcome.kind === "rolled_back" || outcome.rejectedImage)
    g.deps.rolledBack.set(name, entry.newDigest ?? entry.newImageId ?? "");
  finish(entry, outcome.kind, outcome.reason);
  return false;
}

/**
 * What pulling a member's new image came to: it is to be replaced; it is done with here (rebuilt
 * or updated through its unit, its entry says how); or the decision that stops it.
 */
type Pulled = "replace" | "done" | Decision;

/** Pulls the new image for an entry, or says why there is nothing to replace after all. */
async function pull(g: GroupContext, entry: ContainerEntry): Promise<Pulled> {
  const name = entry.summary.name;
  const ref = entry.ref!;
  let unreplaceable: string | null;
  // a container systemd runs, where svc reaches that systemd: its unit restarted after the pull
  let unit: SystemdUnit | null = null;
  try {
    const found = await g.deps.systemd.unitOf(entry.inspect!);
    unit = typeof found === "string" ? null : found;
    unreplaceable =
      typeof found === "string"
        ? found
        : unit
          ? await planUnitUpdate(g.deps.systemd, entry, unit)
          : ((await g.deps.engine.unreplaceable?.(entry.inspect!)) ?? null);
  } catch (error) {
    return decision(name, "failed", toSvcError(error).message);
  }
  if (unreplaceable) return decision(name, "skipped", unreplaceable);
  let lost: string[];
  try {
    lost = await g.deps.engine.settingsBeyondApi(entry.inspect!);
  } catch (error) {
    // a check that cannot run proves nothing is lost: held (stale, tried again next cycle), never replaced blind
    return decision(
      name,
      "held",
      `svc could not check what a replacement would lose (held until it can): ${toSvcError(error).message}`,
    );
  }
  if (lost.length > 0) {
    const api = (await g.deps.engine.info()).apiVersion;
    return decision(
      name,
      "skipped",
      `a replacement would lose settings at API ${api} (docker.api_version): ${lost.join("; ")}`,
    );
  }
  // a service compose builds: its image is built here, from its bases as the registry names them now
  if (entry.built) return (await rebuild({ ...g.deps, builds: g.builds }, g.ctx, entry)) ? "replace" : "done";
  const reference = entry.newImage ?? pullReference(ref);
  // pulled ahead of its window (containers/prepull.ts): the window holds no pull
  const pulledAhead =
    g.deps.prePulled?.get(entry.summary.name) !== undefined && (await isHere(g.deps.engine, entry, reference));
  if (!entry.policy.noPull && !pulledAhead) {
    try {
      const platform = await g.checker.platformOf(entry.summary.imageId);
      // containers sharing an image share its pull, even across groups running at the same time
      const key = `${reference}|${platform.os}/${platform.architecture}/${platform.variant ?? ""}`;
      let pulling = g.pulls.get(key);
      if (!pulling) {
        pulling = g.deps.registry
          .pullAuth(ref)
          .then((auth) =>
            act(
              g.ctx,
              "pull",
              { container: entry.summary.name, container_id: entry.summary.id, image: reference },
              () => g.deps.engine.pullImage(reference, { platform, auth, digest: entry.newDigest }),
            ),
          );
        g.pulls.set(key, pulling);
      }
      await pulling;
    } catch (error) {
      // Podman's signature policy said no: the update waits, as one whose signature svc refused
      const refused = refusedByPolicy(error);
      return refused !== null
        ? decision(name, "held", `refused by Podman's signature policy (policy.json): ${refused}`)
        : decision(name, "failed", `pull failed: ${toSvcError(error).message}`);
    }
  }
  // nothing lost: only a shortcut (the same image: fresh); without an answer the replacement goes on with the reference just pulled
  const pulled = await g.deps.engine.inspectImage(entry.newImage ?? entry.inspect!.Config.Image).catch(() => null);
  // (a container moving to another tag moves even to the same image: its reference changes)
  if (pulled && pulled.Id === entry.summary.imageId && entry.newImage === null) {
    // the registry's answer changed (e.g. a multi-arch index) but not the image for this platform
    return decision(name, "fresh", null);
  }
  if (pulled) entry.newImageId = pulled.Id;
  if (unit) {
    await updateThroughSystemd(g.ctx, g.deps.systemd, entry, unit, reference, g.deps.rolledBack, g.unitMoves);
    return "done";
  }
  return "replace";
}

/** Whether the local image `reference` names is the newer one the check found (its digest, or on the containerd store its id). */
export async function isHere(engine: Engine, entry: ContainerEntry, reference: string): Promise<boolean> {
  const digest = entry.newDigest;
  if (!digest || !entry.verdict?.ref) return false;
  // nothing lost: not known to be here means pulled again
  const local = await engine.inspectImage(reference).catch(() => null);
  if (!local || local.Id === entry.summary.imageId) return false;
  return local.Id === digest || digestFor(entry.verdict.ref, local.RepoDigests ?? []) === digest;
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
    let oldImage: ImageInspect | null;
    try {
      // null: the image is gone (404), and the container's settings are all it has
      oldImage = await g.deps.engine.inspectImage(entry.inspect!.Image);
    } catch (error) {
      // an engine error is no answer: its defaults would be taken for the user's settings
      finish(
        entry,
        "held",
        `svc could not read its old image, whose defaults tell the user's settings from the image's (held until it can): ${toSvcError(error).message}`,
      );
      return undefined;
    }
    const r = planReplacement(entry.inspect!, oldImage, {
      image: entry.newImage ?? undefined,
      stopSignal: entry.policy.stopSignal,
      stopTimeoutMs: entry.policy.stopTimeoutMs,
      revive: g.deps.config.revive_stopped,
      self: isSelf(g.deps, entry),
      labels: entry.composeLabels,
    });
    r.keepCopy = entry.keepCopy;
    const held = await prepareGuard(g.ctx, r);
    if (held !== undefined) {
      finish(entry, "held", held);
      return undefined;
    }
    if (r.dataGuard) entry.dataGuard = r.dataGuard;
    try {
      await park(g.ctx, r);
      return { kind: "update", r };
    } catch (error) {
      await dropGuardPlan(g.ctx, r);
      finish(entry, "failed", toSvcError(error).message);
      return undefined;
    }
  }

  const host = networkHostName(g, known.inspect);
  if (host !== undefined && updating.has(host)) {
    try {
      // null on 404 only (the image gone); an engine error is thrown, not taken for "no defaults"
      const oldImage = await g.deps.engine.inspectImage(known.inspect.Image);
      const r = planReplacement(known.inspect, oldImage, {
        stopSignal: known.policy.stopSignal,
        stopTimeoutMs: known.policy.stopTimeoutMs,
        revive: false,
        self: false,
      });
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

async function restartDependent(
  g: GroupContext,
  name: string,
  plan: Extract<Plan, { kind: "restart" }>,
): Promise<void> {
  try {
    await act(
      g.ctx,
      "start",
      { container: name, container_id: plan.inspect.Id, image: plan.inspect.Config.Image },
      () => g.deps.engine.startContainer(plan.inspect.Id),
    );
    markRestarted(g, name);
  } catch (error) {
    dependentProblem(g, name, `restarting for dependency failed: ${toSvcError(error).message}`);
  }
}

async function finishRecreate(
  g: GroupContext,
  name: string,
  plan: Extract<Plan, { kind: "recreate" }>,
  hostReplaced: boolean,
): Promise<void> {
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
