/**
 * Swarm services as targets of a cycle, beside containers (docs/swarm.md). What is done with a
 * service is what is done with a container: the same selection (its spec's labels, label_enable,
 * disable_containers/containers by service name, scope), the same check (one registry request per
 * unique image, against the digest the service is pinned to), the same policies (tag policies,
 * min_image_age, skip, monitor-only, dry run) and one report entry however many tasks it has.
 * How it is replaced differs: Swarm's own rolling update (swarm/rollout.ts).
 *
 * Only a manager sees services; on a worker svc updates plain containers and says once that
 * services are updated from a manager. svc's own service (svc running as a task) goes last, and
 * is not waited for: its new task takes over.
 */
import { type Config, labelName } from "../../config/index.ts";
import { SvcError, toSvcError } from "../../core/errors.ts";
import type { ContainerSummary, Platform } from "../../engine/port.ts";
import { type ServiceSummary, type Swarm, TASK_LABELS } from "../../engine/swarm.ts";
import type { Logger } from "../../log/index.ts";
import type { RegistryCheckSession } from "../../registry/port.ts";
import { parseReference } from "../../registry/reference.ts";
import { type Checker, type CheckInput, createChecker } from "../check/check.ts";
import { snoozedUntil } from "../check/snooze.ts";
import type { ProtocolContext } from "../cycle/context.ts";
import { readReleaseNotes } from "../cycle/notes.ts";
import { forEachLimited } from "../cycle/pool.ts";
import { announce } from "../cycle/progress.ts";
import { checkSignatures } from "../cycle/signatures.ts";
import {
  appliesAtOf,
  type CycleScope,
  checkTargets,
  durationOf,
  finish,
  heldByWindow,
  type KindDeps,
  newTarget,
  type TargetEntry,
  type TargetKind,
  toReplace,
  unlessAsked,
} from "../cycle/target.ts";
import { labelValue, policyFor, selectionFilter } from "../selection/selection.ts";
import { type ContainerReport, DRY_RUN_REASON, type RollbackResult, type UpdateFilter } from "../types.ts";
import { awaitRollout, requestRollback, type ServiceOutcome, waitSettled, writeImage } from "./rollout.ts";

/** A service kind works with what every kind does (cycle/target.ts). */
export type ServiceTargetDeps = KindDeps;

/** One service in a cycle: a target (cycle/target.ts) and the service it is. */
interface Entry extends TargetEntry {
  service: ServiceSummary;
}

const HOOK_LABELS = ["hooks.pre_check", "hooks.pre_update", "hooks.post_update", "hooks.post_check"] as const;

/** What the functions below share: the deps, the engine's Swarm, and what was said once. */
interface Kind {
  deps: ServiceTargetDeps;
  swarm: Swarm;
  log: Logger;
  told: { worker: boolean; hooks: Set<string> };
}

/** Undefined for an engine without Swarm mode. */
export function createServiceTargets(deps: ServiceTargetDeps): TargetKind | undefined {
  const swarm = deps.engine.swarm;
  if (!swarm) return undefined;
  const kind: Kind = { deps, swarm, log: deps.log.child("updater"), told: { worker: false, hooks: new Set() } };
  return {
    run: async (scope) => {
      const entries = await runServices(kind, scope);
      // nothing to settle: Swarm keeps the previous spec, and hooks do not apply to services
      return { selfReplaced: false, settle: async () => {}, report: () => entries.map(reportOf) };
    },
    rollback: (ctx, name) => rollbackService(kind, ctx, name),
    reference: (name) => followedReference(kind, name),
  };
}

/** The services, on a manager; null elsewhere (said once on a worker). */
async function managedServices(kind: Kind): Promise<ServiceSummary[] | null> {
  const { swarm, log } = kind;
  const state = await swarm.state().catch((error) => {
    log.debug("swarm state unknown; services are not looked at", { error: toSvcError(error).message });
    return { active: false, manager: false };
  });
  if (!state.active) return null;
  if (!state.manager) {
    if (!kind.told.worker)
      log.info(
        "this engine is a Swarm worker: svc updates its plain containers here; services are updated by svc on a manager",
      );
    kind.told.worker = true;
    return null;
  }
  try {
    return await swarm.listServices();
  } catch (error) {
    log.error("cannot list Swarm services; they are left alone this cycle", { error: toSvcError(error).message });
    return null;
  }
}

/** The services the cycle selects, checked, decided and (unless a dry run) updated. */
async function runServices(kind: Kind, { ctx, all, filter, options, releases }: CycleScope): Promise<Entry[]> {
  const { deps } = kind;
  // a container's rollback (local images) has nothing to do with services
  if (options.toLocalTag) return [];
  const services = await managedServices(kind);
  // what GET /v1/containers describes a service with (views/overview.ts): no second listing
  if (options.seen && services) options.seen.services = services;
  if (!services?.length) return [];
  const keep = selectionFilter(deps.config, filter);
  const entries = services
    .map((service) => newEntry(service, deps.config, options.dryRun ? {} : filter))
    .filter((entry) => keep(entry.summary));
  if (entries.length === 0) return [];
  for (const entry of entries) tellHooks(kind, entry);
  const checker = serviceChecker(deps, entries);
  await checkTargets(ctx, entries, checker, (entry) => checkInput(kind, entry));
  // a service that holds breaking updates waits for its notes; the others are updated meanwhile
  const notes = readReleaseNotes({ releases, filter, options, trigger: ctx.trigger }, entries, checker, deps.config);
  await notes.decided;
  await checkSignatures(deps.signatures, ctx, entries, (entry) => checker.platformOf(entry.summary.imageId));
  const stale = toReplace(entries);
  if (options.dryRun) {
    for (const entry of stale) finish(entry, "stale", DRY_RUN_REASON);
  } else {
    await updateAll(kind, ctx, stale, ownServiceId(deps, all));
  }
  await notes.done;
  return entries;
}

/** Every stale service, a few at a time; svc's own service last: its new task takes over from this one. */
async function updateAll(kind: Kind, ctx: ProtocolContext, stale: Entry[], own: string | undefined): Promise<void> {
  const { deps } = kind;
  const ownEntries = stale.filter((e) => e.service.id === own);
  if (deps.config.run_once)
    for (const entry of ownEntries) finish(entry, "skipped", "svc's own service is not updated in run-once mode");
  await forEachLimited(
    stale.filter((e) => e.service.id !== own),
    deps.concurrency,
    (entry) => updateOne(kind, ctx, entry, false),
  );
  if (!deps.config.run_once) for (const entry of ownEntries) await updateOne(kind, ctx, entry, true);
}

function tellHooks(kind: Kind, entry: Entry): void {
  // svc's hook labels, or their Watchtower twins
  const hooks = HOOK_LABELS.filter((name) => labelValue(entry.summary.labels, name) !== undefined).map(labelName);
  if (hooks.length === 0 || kind.told.hooks.has(entry.service.name)) return;
  kind.told.hooks.add(entry.service.name);
  kind.log.warn("lifecycle hooks do not apply to Swarm services (Swarm runs the tasks): these labels are ignored", {
    service: entry.service.name,
    labels: hooks,
  });
}

function checkInput(kind: Kind, entry: Entry): CheckInput | { notChecked: string } {
  // a new spec would run the job again
  if (entry.service.mode.endsWith("job")) return { notChecked: "a Swarm job: svc does not run it again" };
  const { name, image, imageId } = entry.summary;
  return {
    name,
    image,
    imageId,
    noPull: false,
    minImageAgeMs: entry.policy.minImageAgeMs,
    tagPolicy: entry.policy.tagPolicy,
    snoozedUntil: snoozedUntil(kind.deps.snoozed, name),
  };
}

/** One service's failure goes into its report entry; it never aborts the cycle. */
function updateOne(kind: Kind, ctx: ProtocolContext, entry: Entry, self: boolean): Promise<void> {
  return update(kind, ctx, entry, self).catch((error) =>
    finish(entry, "failed", `updating the service failed: ${toSvcError(error).message}`),
  );
}

async function update(kind: Kind, ctx: ProtocolContext, entry: Entry, self: boolean): Promise<void> {
  const { deps, swarm } = kind;
  if (deps.draining()) return finish(entry, "skipped", "svc is shutting down");
  // the window is asked again at the moment of acting: one that closed meanwhile applies nothing new
  if (heldByWindow(entry)) return;
  const verdict = entry.verdict!;
  const image = `${verdict.newImage ?? entry.summary.image}@${verdict.newDigest}`;
  // nothing lost: without credentials the spec is written without them, and a private image's tasks fail their start, which the rollout watches
  const auth = await deps.registry.pullAuth(verdict.ref!).catch(() => undefined);
  const written = await writeImage(ctx, swarm, entry.service, image, auth);
  if ("failed" in written) return finish(entry, "failed", written.failed);
  if ("skipped" in written) return finish(entry, "skipped", written.skipped);
  if (self)
    return finish(
      entry,
      "updated",
      "svc's own service: Swarm replaces this task with one on the new image, which takes over",
    );
  announce(ctx.progress, ctx, entry.service.name, "watch");
  settle(deps, entry, await awaitRollout(ctx, swarm, written, deps.draining));
}

/** The outcome into the entry; a digest Swarm (or svc) rolled back is not retried until a newer one. */
function settle(deps: ServiceTargetDeps, entry: Entry, outcome: ServiceOutcome): void {
  const digest = entry.verdict?.newDigest ?? "";
  if (outcome.kind === "updated") {
    finish(entry, "updated", null);
    return;
  }
  if (outcome.kind === "rolled_back" || outcome.rejectedImage) deps.rolledBack.set(entry.service.name, digest);
  finish(entry, outcome.kind, outcome.reason);
}

function ownServiceId(deps: ServiceTargetDeps, all: readonly ContainerSummary[]): string | undefined {
  const self = deps.selfContainerId;
  return self === undefined
    ? undefined
    : all.find((c) => c.id === self || c.id.startsWith(self))?.labels[TASK_LABELS.serviceId];
}

/** `svc rollback NAME` for a service: Swarm goes back to the previous spec. undefined: no such service here. */
async function rollbackService(kind: Kind, ctx: ProtocolContext, name: string): Promise<RollbackResult | undefined> {
  const { deps, swarm } = kind;
  // nothing lost: an engine that does not say it manages a Swarm has no service to roll back (undefined: the next kind, else 404)
  const state = await swarm.state().catch(() => ({ active: false, manager: false }));
  if (!state.manager) return undefined;
  // nothing lost: a service the manager does not show is not this kind's to roll back
  const service = await swarm.inspectService(name).catch(() => null);
  if (!service || service.name !== name) return undefined;
  const from = unpinned(service.image);
  const to = unpinned(service.previousImage ?? "");
  const result = (state: RollbackResult["state"], reason: string | null): RollbackResult => ({
    container: name,
    from_image_id: from.digest,
    to_image_id: to.digest,
    state,
    reason,
  });
  // another instance's service (scope), or one svc is told to leave alone, stays as it is
  if (!selectionFilter(deps.config, { container: [name] })(newEntry(service, deps.config).summary))
    return result("skipped", "not selected by svc (scope, labels or options)");
  if (service.previousImage === null)
    throw new SvcError("not_found", `Swarm keeps no previous spec of service ${name} (it was never updated)`);
  try {
    await requestRollback(ctx, swarm, service);
  } catch (error) {
    return result("failed", toSvcError(error).message);
  }
  const settled = await waitSettled(ctx, swarm, service.id, service.update, deps.config.service_update_timeout);
  const status = "missing" in settled ? null : settled.status;
  if (status?.state !== "rollback_completed")
    return result(
      "failed",
      `Swarm's rollback did not complete: ${status ? `${status.state}: ${status.message}` : "no answer in time"}`,
    );
  // the image it left is not to come back by itself: its digest waits for a newer one, kept
  // with who rolled back, for the reason the next cycles give (check/check.ts)
  if (from.digest) deps.skipped.set(name, `${from.digest} rollback:${ctx.trigger}`);
  kind.log.info("service rolled back to its previous spec", {
    service: name,
    image: service.previousImage,
    skipped_digest: from.digest,
  });
  return result("updated", "Swarm rolled the service back to its previous spec");
}

/** The reference a service follows (`repo:tag`, as a container's Config.Image); undefined: no such service here. */
async function followedReference(kind: Kind, name: string): Promise<string | undefined> {
  // nothing lost: no Swarm known, no service followed (undefined, as for a name that is none)
  const state = await kind.swarm.state().catch(() => ({ active: false, manager: false }));
  // nothing lost: a service the manager does not show is followed by none
  const service = state.manager ? await kind.swarm.inspectService(name).catch(() => null) : null;
  return service?.name === name ? unpinned(service.image).image : undefined;
}

function newEntry(service: ServiceSummary, config: Config, filter: UpdateFilter = {}): Entry {
  const summary = serviceAsContainer(service);
  return { ...newTarget(summary, unlessAsked(policyFor(summary, config), filter, summary)), service };
}

/** A service as the selection and the check see a container: its spec's labels, the reference it follows, the digest it is pinned to. */
export function serviceAsContainer(service: ServiceSummary): ContainerSummary {
  const { image, digest } = unpinned(service.image);
  return { id: service.id, name: service.name, image, imageId: digest, state: "running", labels: service.labels };
}

/**
 * A checker for services: an image is stale when its tag names another digest than the one the
 * service is pinned to (the index digest for a multi-arch image, as Swarm pins it), one HEAD per
 * unique image. Tag policies look for our platform as the manager's engine reports it.
 */
function serviceChecker(deps: ServiceTargetDeps, entries: Entry[]): Checker {
  const session = deps.registry.session();
  const pinned: RegistryCheckSession = {
    check: async (ref, local) => {
      const digest = await session.digest(ref);
      return { stale: digest !== local.id, digest };
    },
    digest: (ref) => session.digest(ref),
    tags: (ref) => session.tags(ref),
    platformImage: (ref, tag, platform) => session.platformImage(ref, tag, platform),
    created: (ref, reference, platform) => session.created(ref, reference, platform),
    labels: (ref, reference, platform) => session.labels(ref, reference, platform),
  };
  let platform: Promise<Platform> | undefined;
  const managerPlatform = (): Promise<Platform> => (platform ??= deps.engine.platform());
  // the digest each service is pinned to, as the repository's own (the check's old digest)
  const images = entries
    .filter((e) => e.summary.imageId !== "")
    .map((e) => ({
      id: e.summary.imageId,
      repoTags: [],
      repoDigests: [`${repositoryOf(e.summary.image)}@${e.summary.imageId}`],
    }));
  return createChecker({
    engine: deps.engine,
    session: pinned,
    images,
    rolledBack: deps.rolledBack,
    firstSeen: deps.firstSeen,
    skipped: deps.skipped,
    log: deps.log.child("updater"),
    platform: managerPlatform,
  });
}

/**
 * A service's image as the manager pinned it, `repo:tag@sha256:...`: the reference it follows
 * (`repo:tag`) and the digest. One pinned by digest alone stays as written (nothing to follow);
 * one not pinned (created without resolving) has no digest yet.
 */
export function unpinned(image: string): { image: string; digest: string } {
  const at = image.indexOf("@");
  if (at === -1) return { image, digest: "" };
  const name = image.slice(0, at);
  const hasTag = name.lastIndexOf(":") > name.lastIndexOf("/");
  return hasTag ? { image: name, digest: image.slice(at + 1) } : { image, digest: image.slice(at + 1) };
}

function repositoryOf(image: string): string {
  try {
    const ref = parseReference(image);
    return `${ref.registry}/${ref.repository}`;
  } catch {
    return image;
  }
}

function reportOf(entry: Entry): ContainerReport {
  const verdict = entry.verdict;
  return {
    kind: "service",
    id: entry.service.id,
    name: entry.service.name,
    image: entry.summary.image,
    new_image: verdict?.newImage ?? null,
    old_image_id: entry.summary.imageId,
    new_image_id: entry.state === "updated" ? (verdict?.newDigest ?? null) : null,
    old_digest: verdict?.oldDigest ?? (entry.summary.imageId || null),
    new_digest: verdict?.newDigest ?? null,
    state: entry.state,
    reason: entry.reason,
    duration_ms: durationOf(entry),
    ...appliesAtOf(entry),
    ...(entry.releases ? { releases: entry.releases } : {}),
    ...(entry.signature ? { signature: entry.signature } : {}),
  };
}
