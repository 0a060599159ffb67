/**
 * Containers as targets of a cycle (cycle/target.ts): selected by scope, labels and options; checked
 * against their local images (one image list for all, one registry request per image); the
 * pre_check and pre_update hooks; replaced in dependency order by the update protocol
 * (containers/replace.ts); once every kind has replaced its targets, the images updates left are
 * cleaned up (containers/cleanup.ts) and the post_check hooks run. `svc rollback NAME` moves a container back
 * to its earlier image through a cycle over it alone, with the protocol's checks.
 */

import { SvcError, toSvcError } from "../../core/errors.ts";
import type { Copy } from "../../dataguard/index.ts";
import type { ContainerSummary } from "../../engine/port.ts";
import type { Remembered } from "../../state/index.ts";
import type { Vulnerabilities } from "../../vulns/index.ts";
import { type Checker, createChecker, type Verdict } from "../check/check.ts";
import { imagesOfContainers } from "../check/images.ts";
import { snoozedUntil } from "../check/snooze.ts";
import type { ProtocolContext } from "../cycle/context.ts";
import { readReleaseNotes, VERSION_LABEL } from "../cycle/notes.ts";
import { checkSignatures } from "../cycle/signatures.ts";
import {
  appliesAtOf,
  applyDecisions,
  type CycleScope,
  checkTargets,
  type Decision,
  decide,
  decision,
  durationOf,
  type KindCycle,
  type KindDeps,
  newTarget,
  type TargetKind,
  toReplace,
  unlessAsked,
} from "../cycle/target.ts";
import { type ContainerPolicy, type ImageLabels, policyFor, selectContainers } from "../selection/selection.ts";
import {
  type ContainerReport,
  type CycleOptions,
  DRY_RUN_REASON,
  type RollbackOptions,
  type RollbackResult,
  type RunOptions,
  type SessionReport,
  type Trigger,
  type UpdateFilter,
} from "../types.ts";
import { builtCheckInput, builtReport, findBuilt, planBuilt } from "./built.ts";
import { cleanupImages } from "./cleanup.ts";
import { composeCheckInput, locateCompose, planCompose, proposeCompose } from "./compose.ts";
import type { ContainerEntry } from "./entry.ts";
import { hookFor, runHook } from "./hooks.ts";
import { createPrePuller, forgetPrePulled, prePull } from "./prepull.ts";
import { rebuildHeld, rebuildPlan } from "./rebuild.ts";
import { isSelf, type ReplaceDeps, updateInOrder } from "./replace.ts";
import { tellUnitMoves } from "./systemd.ts";
import { readVulnerabilities } from "./vulns.ts";

export interface ContainerTargetDeps extends KindDeps, ReplaceDeps {
  /** the image pulled ahead of each pending container's window (containers/prepull.ts) */
  prePulled: Remembered;
  /** what each update fixes and brings in (containers/vulns.ts); null or absent: vulnerabilities are off */
  vulns?: Vulnerabilities | null;
  /** images left by an update and waiting for cleanup_delay: image id -> "<container> <ISO time>" */
  leftImages: Remembered;
  /** the image each container ran before svc's last update of it: "<image id>" or "<image id> <reference>" */
  previous: Remembered;
  /** repairs the leftovers of interrupted updates the filter selects: true when there were some (recovery/repair.ts) */
  repairLeftovers?: (all: readonly ContainerSummary[], filter: UpdateFilter) => Promise<boolean>;
  /** each built service's bases and the digests it was built from, per container name (check/bases.ts) */
  buildBases: Remembered;
  /** a cycle over the containers the filter names, one cycle at a time (the runner's): a rollback is one */
  cycleOver(trigger: Trigger, filter: UpdateFilter, options: RunOptions): Promise<SessionReport | null>;
}

export function createContainerTargets(deps: ContainerTargetDeps): TargetKind {
  return {
    repair: deps.repairLeftovers,
    run: (scope) => runContainers(deps, scope),
    rollback: (ctx, name, trigger, options) => rollbackContainer(deps, ctx, name, trigger, options),
    // nothing lost: a container the engine does not show has no reference here; the caller says no such container
    reference: async (name) => (await deps.engine.inspectContainer(name).catch(() => null))?.Config.Image,
  };
}

/**
 * For the API's stack filter only: each image's labels, so that a container's group label from
 * its image puts it in no stack (selection.ts, groupOf). One image list, asked only then.
 */
async function stackImageLabels(deps: ContainerTargetDeps, filter: UpdateFilter): Promise<ImageLabels | undefined> {
  if (!filter.stack?.length) return undefined;
  const images = new Map((await deps.engine.listImages()).map((image) => [image.id, image.labels]));
  return (imageId) => images.get(imageId);
}

async function runContainers(deps: ContainerTargetDeps, scope: CycleScope): Promise<KindCycle> {
  const { ctx, all, filter, options } = scope;
  // Fresh containers cost no inspect: the list and one image list answer every check. Only
  // when something is to be updated is every candidate inspected, for the dependency graph.
  // a dry run says what the window says, even of a target it names (GET /v1/containers, the page's Check)
  const entries = newEntries(
    deps,
    selectContainers(all, deps.config, filter, await stackImageLabels(deps, filter)),
    options.toLocalTag === true,
    options.dryRun ? {} : filter,
  );
  for (const [name, copy] of options.restoreCopies ?? []) {
    const entry = entries.get(name);
    if (entry) entry.keepCopy = copy;
  }
  // a dry run runs no hook: a hook may change anything
  if (!options.dryRun) await runHooks(ctx, entries, "pre_check", (entry) => entry.summary.state === "running");
  const checker = await checkEntries(deps, ctx, entries, options);
  // a target that holds breaking updates waits for its notes; the others are replaced meanwhile
  const notes = readReleaseNotes(
    { releases: scope.releases, filter, options, trigger: ctx.trigger },
    entries.values(),
    checker,
    deps.config,
  );
  await notes.decided;
  await checkSignatures(deps.signatures, ctx, entries.values(), (entry) => checker.platformOf(entry.summary.imageId));
  // one puller for the cycle: an image the vulnerabilities' read pulled ahead is not pulled again
  const puller = options.dryRun
    ? null
    : createPrePuller(
        { engine: deps.engine, registry: deps.registry, cleanup: deps.config.cleanup, prePulled: deps.prePulled },
        ctx,
        checker,
      );
  await readVulnerabilities(
    { engine: deps.engine, registry: deps.registry, config: deps.config, vulns: deps.vulns ?? null, puller },
    ctx,
    checker,
    { filter, options },
    entries.values(),
  );
  // each phase returns the containers it holds back; they leave toUpdate here, and only here
  const toUpdate = new Set(toReplace(entries.values()).map((entry) => entry.summary.name));
  const hold = (decisions: readonly Decision[]) => applyDecisions(entries, toUpdate, decisions);
  hold(selfInRunOnce(deps, entries, toUpdate));
  hold(planCompose(deps.compose, entries.values(), toUpdate, options));
  hold(planBuilt(entries.values(), toUpdate));
  // a container systemd runs: what a tag move would write into its unit's file, and the command
  await tellUnitMoves(
    deps.systemd,
    deps.engine,
    [...entries.values()].filter((e) => e.state === "stale" && e.policy.monitorOnly),
  );
  if (options.dryRun) {
    const wouldUpdate = [...toUpdate].map((name) => entries.get(name)!);
    hold(wouldUpdate.map((entry) => decision(entry.summary.name, "stale", DRY_RUN_REASON)));
    await tellUnitMoves(deps.systemd, deps.engine, wouldUpdate);
  } else {
    // pull_request: the moves go into pull requests, nothing is applied here
    hold(await proposeCompose(deps.git, ctx, entries, toUpdate));
    hold(await preUpdateHooks(ctx, entries, toUpdate));
  }
  if (puller) await prePull(puller, entries.values());
  if (!options.dryRun) pruneCopies(ctx);
  const selfReplaced = toUpdate.size > 0 ? await updateInOrder({ deps, ctx, all, entries, checker, toUpdate }) : false;
  if (!options.dryRun) forgetPrePulled(deps.prePulled, entries.values());
  return {
    selfReplaced,
    settle: async () => {
      await notes.done;
      if (options.dryRun) return;
      if (deps.config.cleanup) await cleanupImages(deps, ctx, leftImages(entries));
      await runHooks(
        ctx,
        entries,
        "post_check",
        (entry) => entry.summary.state === "running" && entry.state !== "failed",
      );
    },
    report: () => (options.toLocalTag ? asRollback(reportEntries(entries), ctx.trigger) : reportEntries(entries)),
  };
}

/**
 * A rollback on request moved its container back: the report (the history, the notifications,
 * the page) counts it as rolled back, never as "1 updated", and says who asked. The answer of
 * POST /v1/rollback and `svc rollback` keeps `updated` (rollbackContainer).
 */
function asRollback(entries: ContainerReport[], trigger: string): ContainerReport[] {
  const asked = trigger === "api" ? "POST /v1/rollback" : "svc rollback";
  return entries.map((entry) =>
    entry.state === "updated" ? { ...entry, state: "rolled_back", reason: `rolled back on request (${asked})` } : entry,
  );
}

/** The data guard's copies kept past data_guard_keep go at each real cycle (docs/data-guard.md). */
function pruneCopies(ctx: ProtocolContext): void {
  try {
    for (const copy of ctx.guard?.prune() ?? [])
      ctx.log.info("data guard: copy kept data_guard_keep, removed", { copy });
  } catch (error) {
    ctx.log.warn("data guard: could not prune data_guard_dir", { error: toSvcError(error).message });
  }
}

function newEntries(
  deps: ContainerTargetDeps,
  selected: ContainerSummary[],
  toLocalTag: boolean,
  filter: UpdateFilter,
): Map<string, ContainerEntry> {
  const startedAt = Date.now();
  const policyOf = (summary: ContainerSummary): ContainerPolicy => {
    const policy = unlessAsked(policyFor(summary, deps.config), filter, summary);
    return toLocalTag ? { ...policy, noPull: true, monitorOnly: false, minImageAgeMs: 0, window: [] } : policy;
  };
  return new Map(
    selected.map((summary) => [
      summary.name,
      {
        ...newTarget(summary, policyOf(summary), startedAt),
        id: summary.id,
        newImageId: null,
        oldDigest: null,
        newDigest: null,
        newImage: null,
      },
    ]),
  );
}

/** Each container against its local image; the checker, for the pulls' platforms. */
async function checkEntries(
  deps: ContainerTargetDeps,
  ctx: ProtocolContext,
  entries: Map<string, ContainerEntry>,
  options: CycleOptions,
): Promise<Checker> {
  const localReferences = options.localReferences ?? new Map<string, string>();
  // nothing lost: without the image list each check inspects its image itself (locateCompose, the checker)
  const images =
    entries.size > 0
      ? await imagesOfContainers(
          deps.engine,
          [...entries.values()].map((entry) => entry.summary),
        ).catch(() => [])
      : [];
  if (options.seen) options.seen.images = images;
  await locateCompose(deps.compose, deps.engine, images, entries.values(), options);
  // a rollback on request goes back to a local image: no base is asked then
  if (!options.toLocalTag) await findBuilt(deps.engine, images, entries.values(), deps.compose?.enabled ?? false);
  const rebuildsHeld = [...entries.values()].some((e) => e.built)
    ? await rebuildHeld(deps.config, deps.compose, deps.engine)
    : null;
  for (const entry of entries.values())
    if (entry.built?.spec && !rebuildsHeld) {
      const plan = await rebuildPlan(deps.config, deps.compose, entry.built.spec);
      entry.built.command = plan.command;
      entry.built.held = plan.held;
    }
  const checker = createChecker({
    engine: deps.engine,
    session: deps.registry.session(),
    images,
    rolledBack: deps.rolledBack,
    firstSeen: deps.firstSeen,
    skipped: deps.skipped,
    log: deps.log.child("updater"),
    buildBases: deps.buildBases,
  });
  const inputOf = (entry: ContainerEntry) => ({
    ...composeCheckInput(entry),
    ...inputOfSummary(entry),
    built: builtCheckInput(entry, rebuildsHeld ?? entry.built?.held ?? null, entry.built?.command ?? null),
  });
  const inputOfSummary = ({ summary, policy }: ContainerEntry) => ({
    name: summary.name,
    image: summary.image,
    imageId: summary.imageId,
    noPull: policy.noPull,
    minImageAgeMs: policy.minImageAgeMs,
    tagPolicy: policy.tagPolicy,
    localReference: localReferences.get(summary.name),
    // a rollback on request goes where it was asked to, snoozed or not
    snoozedUntil: options.toLocalTag ? undefined : snoozedUntil(deps.snoozed, summary.name),
  });
  await checkTargets(ctx, entries.values(), checker, inputOf, applyVerdict);
  return checker;
}

function applyVerdict(entry: ContainerEntry, verdict: Verdict): void {
  entry.ref = verdict.ref;
  entry.oldDigest = verdict.oldDigest;
  entry.newDigest = verdict.newDigest;
  entry.newImageId = verdict.newImageId;
  entry.newImage = verdict.newImage;
  decide(entry, verdict);
}

/** Runs one hook, one container at a time, in the containers `when` picks; failures are logged only. */
async function runHooks(
  ctx: ProtocolContext,
  entries: Map<string, ContainerEntry>,
  name: "pre_check" | "post_check",
  when: (entry: ContainerEntry) => boolean,
): Promise<void> {
  for (const entry of entries.values()) {
    const hook = hookFor(entry.summary.labels, name, ctx.config);
    if (hook && when(entry))
      await runHook(ctx, { id: entry.id, name: entry.summary.name, image: entry.summary.image }, hook);
  }
}

/** pre_update, before anything is stopped: a container whose hook fails is skipped with the reason (returned). */
async function preUpdateHooks(
  ctx: ProtocolContext,
  entries: Map<string, ContainerEntry>,
  toUpdate: ReadonlySet<string>,
): Promise<Decision[]> {
  const failed: Decision[] = [];
  for (const name of toUpdate) {
    const entry = entries.get(name)!;
    const hook = hookFor(entry.summary.labels, "pre_update", ctx.config);
    if (!hook || entry.summary.state !== "running") continue;
    const failure = await runHook(ctx, { id: entry.id, name, image: entry.summary.image }, hook);
    if (failure !== null) failed.push(decision(name, "skipped", failure));
  }
  return failed;
}

/** svc's own container, held in run-once mode (a stale state already finished is final: monitor-only, min_image_age). */
function selfInRunOnce(
  deps: ContainerTargetDeps,
  entries: Map<string, ContainerEntry>,
  toUpdate: ReadonlySet<string>,
): Decision[] {
  if (!deps.config.run_once) return [];
  return [...toUpdate]
    .filter((name) => isSelf(deps, entries.get(name)!))
    .map((name) => decision(name, "skipped", "svc's own container is not updated in run-once mode"));
}

/** The images the updated containers left (a container moved to another tag of the same image left none). */
function leftImages(entries: Map<string, ContainerEntry>): { container: string; imageId: string }[] {
  return [...entries.values()]
    .filter((e) => e.state === "updated" && e.newImageId !== e.summary.imageId)
    .map((e) => ({ container: e.summary.name, imageId: e.summary.imageId }));
}

function reportEntries(entries: Map<string, ContainerEntry>): ContainerReport[] {
  const now = Date.now();
  return [...entries.values()].map((e) => ({
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
    ...appliesAtOf(e),
    ...(e.releases ? { releases: e.releases } : {}),
    ...(e.signature ? { signature: e.signature } : {}),
    ...(e.vulnerabilities ? { vulnerabilities: e.vulnerabilities } : {}),
    ...(e.compose ? { compose: e.compose } : {}),
    ...(e.built ? { built: builtReport(e) } : {}),
    ...(e.dataGuard ? { data_guard: e.dataGuard } : {}),
    ...versionOf(e.summary.labels),
  }));
}

/** The running image's version label, as its containers carry the image's labels (docs/api.md). */
function versionOf(labels: Readonly<Record<string, string>>): { version?: string } {
  const version = labels[VERSION_LABEL]?.trim();
  return version ? { version: version.slice(0, 128) } : {};
}

/**
 * `svc rollback NAME` for a container: its earlier image tagged again as the reference it follows
 * (or the one it came from, across tags), and a cycle over it alone takes it there. undefined: no
 * container has that name; null: a cycle was running.
 */
async function rollbackContainer(
  deps: ContainerTargetDeps,
  ctx: ProtocolContext,
  name: string,
  trigger: Trigger,
  options: RollbackOptions = {},
): Promise<RollbackResult | null | undefined> {
  // nothing lost: a container the engine does not show is not this kind's to roll back (undefined: the caller tries the next kind, else 404)
  const container = await deps.engine.inspectContainer(name).catch(() => null);
  if (!container) return undefined;
  // "<image id>", or "<image id> <reference>" when the update moved it to another tag
  const [back, backReference] = deps.previous.get(name)?.split(" ") ?? [];
  if (back === undefined)
    throw new SvcError(
      "not_found",
      `svc knows no earlier image of ${name} (it has not updated it${deps.config.state_dir ? "" : " since it started: set state_dir to remember across restarts"})`,
    );
  if (container.Image === back) throw new SvcError("bad_request", `${name} already runs ${back}`);
  // null only when the engine has no such image (404); an engine error is thrown as itself, not told as a removed image
  if (!(await deps.engine.inspectImage(back))) {
    throw new SvcError(
      "not_found",
      `the earlier image of ${name} (${back}) is no longer on the engine (removed by cleanup?)`,
    );
  }
  const restoreCopies = options.withData ? new Map([[name, copyToGoBackTo(ctx, name, back)]]) : undefined;
  const reference = backReference ?? container.Config.Image;
  // a reference pinned by digest (a compose line `repo:tag@sha256:...`) names the image already; a tag cannot carry a digest
  if (!reference.includes("@")) await deps.engine.tagImage(back, reference);
  const localReferences = new Map(reference === container.Config.Image ? [] : [[name, reference]]);
  const report = await deps.cycleOver(
    trigger,
    { container: [name] },
    { toLocalTag: true, localReferences, restoreCopies, dryRun: false },
  );
  if (report === null) return null;
  const reported = report.containers.find((c) => c.name === name);
  const result = { container: name, from_image_id: container.Image, to_image_id: back };
  if (!reported) return { ...result, state: "skipped", reason: "not selected by svc (scope, labels or options)" };
  // the report says rolled_back (asRollback); the answer says `updated`: it runs the earlier image (docs/api.md)
  const entry = reported.state === "rolled_back" ? { ...reported, state: "updated" as const, reason: null } : reported;
  if (entry.state === "updated" && entry.old_digest) {
    // the image it left is not to come back by itself: its digest (as the check saw it) waits for
    // a newer one, kept with who rolled back, for the reason the next cycles give (check/check.ts)
    deps.skipped.set(name, `${entry.old_digest} rollback:${trigger}`);
    deps.log.debug("container put back on its earlier image", {
      container: name,
      image_id: back,
      skipped_digest: entry.old_digest,
    });
  }
  return {
    ...result,
    state: entry.state,
    reason: entry.reason,
    ...(entry.data_guard ? { data_guard: entry.data_guard } : {}),
  };
}

/** `svc rollback --with-data`: the data guard's copy taken from the container that ran `imageId` (docs/data-guard.md). */
function copyToGoBackTo(ctx: ProtocolContext, name: string, imageId: string): Copy {
  const copy = ctx.guard?.store?.list(name).find((c) => c.manifest.image_id === imageId);
  if (!copy) {
    throw new SvcError(
      "not_found",
      `svc keeps no copy of ${name}'s data from ${imageId} (data_guard was off at that update, or data_guard_keep or a later update removed it: GET /v1/data-guard lists the copies)`,
    );
  }
  return copy;
}
