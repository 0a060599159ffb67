/**
 * Crash recovery: run at start, before the first cycle and before the API accepts updates.
 *
 * A parked old container (`<name>.svc-old-<id>-running|stopped`) means an update was interrupted.
 *   - a container under the original name is running: it is watched against the rollback checks;
 *     when it passes the update is finished (the old container is removed), else it is undone;
 *   - a container under the original name exists but does not run (killed after create, or after
 *     start before it came up): it is a half-made replacement: removed, and the update undone;
 *   - no container has the name: the old one is started if it was running (stopped and started
 *     when it still runs: a stop the killed svc sent may still be under way), then gets its name back.
 * Every action goes to the audit log, plus one `recover` entry per leftover saying what was done.
 *
 * With the data guard (docs/data-guard.md), undoing an update whose new container may have run, or
 * whose restore was interrupted, puts the copy back before the old container starts (the helper
 * begins from the checksums again); an update finished here keeps its copy for data_guard_keep.
 */

import { toSvcError } from "../../core/errors.ts";
import type { Copy } from "../../dataguard/index.ts";
import type { ContainerSummary } from "../../engine/port.ts";
import { stopOptionsFor, watch } from "../containers/protocol.ts";
import { act } from "../cycle/act.ts";
import type { ProtocolContext } from "../cycle/context.ts";
import { type OldName, parseHandoverName, parseOldName } from "../selection/names.ts";
import { policyFor } from "../selection/selection.ts";

export interface RecoveryOptions {
  /**
   * Which leftovers are this instance's: the selection rules that do not depend on state, applied
   * to the original name and the (unchanged) labels. Another svc instance sharing the engine under
   * another scope may be in the middle of its own update; its parked containers are not ours.
   */
  inScope: (container: ContainerSummary) => boolean;
  /** svc's own container: a parked predecessor of it is an old svc still finishing its self-update */
  selfContainerId?: string;
  /** how long to wait for a predecessor svc to stop by itself before removing it */
  predecessorGraceMs: number;
}

export interface RecoveryResult {
  /** one line per leftover: what was done */
  actions: string[];
  /** waits for a predecessor svc to stop, then removes it; resolves when done */
  background: Promise<void>;
}

/**
 * Whether the list shows leftovers of interrupted updates that recovery would repair: a handover
 * container that is not running, or a parked container of ours whose update is not still under
 * way (a running handover) and is not a retiring svc (svc parked by its own update whose
 * successor runs, or a previous instance still stopping).
 */
export function hasLeftovers(
  all: readonly ContainerSummary[],
  inScope: (c: ContainerSummary) => boolean,
  selfContainerId?: string,
): boolean {
  const isOurs = (c: ContainerSummary) => selfContainerId !== undefined && c.id.startsWith(selfContainerId);
  const selfName = all.find(isOurs)?.name;
  const busy = handoversRunning(all, inScope);
  return all.some((c) => {
    const handoverOf = parseHandoverName(c.name);
    if (handoverOf !== null && c.state !== "running" && inScope({ ...c, name: handoverOf })) return true;
    const parsed = parseOldName(c.name);
    if (!parsed || !inScope({ ...c, name: parsed.original }) || busy.has(parsed.original)) return false;
    if (isOurs(c) && all.some((o) => o.name === parsed.original && o.state === "running")) return false;
    return !(parsed.original === selfName && c.state === "running");
  });
}

export async function recoverLeftovers(ctx: ProtocolContext, options: RecoveryOptions): Promise<RecoveryResult> {
  const log = ctx.log;
  const all = await ctx.engine.listContainers();
  // Only this instance's leftovers: another svc sharing the engine may be mid-update right now.
  const actions: string[] = [];
  // A running handover container is finishing a self-update: its parked svc is its business.
  const busy = handoversRunning(all, options.inScope);
  await removeDeadHandovers(ctx, all, options.inScope, actions);
  const leftovers = all.filter((c) => {
    const parsed = parseOldName(c.name);
    return parsed !== null && options.inScope({ ...c, name: parsed.original }) && !busy.has(parsed.original);
  });
  let background: Promise<void> = Promise.resolve();
  if (leftovers.length === 0) return { actions, background };

  const selfName = options.selfContainerId ? await ownName(ctx, options.selfContainerId) : undefined;
  for (const leftover of leftovers) {
    const parsed = parseOldName(leftover.name)!;
    try {
      if (selfName !== undefined && parsed.original === selfName && leftover.state === "running") {
        background = background.then(() => retirePredecessor(ctx, leftover, parsed, options.predecessorGraceMs));
        actions.push(`${leftover.name}: previous svc instance, removed once it has stopped`);
        continue;
      }
      const outcome = isSelf(leftover, options.selfContainerId)
        ? await recoverSelf(ctx, leftover, parsed, all)
        : await recoverOne(ctx, leftover, parsed, all);
      actions.push(`${leftover.name}: ${outcome}`);
      ctx.audit.record({
        action: "recover",
        container: parsed.original,
        container_id: leftover.id,
        image: leftover.image,
        trigger: ctx.trigger,
        error: undefined,
      });
      log.info("recovered an interrupted update", { container: parsed.original, outcome });
    } catch (error) {
      const message = toSvcError(error).message;
      actions.push(`${leftover.name}: recovery failed: ${message}`);
      ctx.audit.record({
        action: "recover",
        container: parsed.original,
        container_id: leftover.id,
        image: leftover.image,
        trigger: ctx.trigger,
        error: message,
      });
      log.error("could not recover an interrupted update", { container: parsed.original, error: message });
    }
  }
  return { actions, background };
}

function isSelf(c: ContainerSummary, selfContainerId: string | undefined): boolean {
  return selfContainerId !== undefined && c.id.startsWith(selfContainerId);
}

/**
 * svc itself is parked (it was restarted, say by its restart policy, after a crash in the middle of
 * its own update, with no handover running): it must not stop itself. A replacement that does not
 * run is removed and svc takes its name back; a running one is its successor (it is retiring).
 */
async function recoverSelf(
  ctx: ProtocolContext,
  self: ContainerSummary,
  parsed: OldName,
  all: ContainerSummary[],
): Promise<string> {
  const current = all.find((c) => c.name === parsed.original);
  const target = { container: parsed.original, image: self.image };
  if (current?.state === "running") return "svc's successor runs: left to it";
  if (current)
    await act(ctx, "remove", { ...target, container_id: current.id }, () =>
      ctx.engine.removeContainer(current.id, { force: true }),
    );
  await act(ctx, "rename", { ...target, container_id: self.id }, () =>
    ctx.engine.renameContainer(self.id, parsed.original),
  );
  return "svc's own update was interrupted: its replacement removed, its name taken back";
}

async function ownName(ctx: ProtocolContext, id: string): Promise<string | undefined> {
  // nothing lost: a name the engine does not give is only missing from the message
  const inspected = await ctx.engine.inspectContainer(id).catch(() => null);
  return inspected?.Name.replace(/^\//, "");
}

async function recoverOne(
  ctx: ProtocolContext,
  old: ContainerSummary,
  parsed: OldName,
  all: ContainerSummary[],
): Promise<string> {
  const current = all.find((c) => c.name === parsed.original);
  const target = { container: parsed.original, image: old.image };

  if (current && current.state === "running") {
    const verdict = await watch(ctx, current.id);
    if (verdict.ok) {
      await act(ctx, "remove", { ...target, container_id: old.id }, () =>
        ctx.engine.removeContainer(old.id, { force: true }),
      );
      keepCopyOf(ctx, old.id);
      return "the new container passed the checks: update finished, old container removed";
    }
    await undo(ctx, old, parsed, current.id);
    return `the new container failed the checks (${verdict.reason}): update undone`;
  }
  if (current) {
    await undo(ctx, old, parsed, current.id);
    return `the new container was not running (${current.state}): update undone`;
  }
  await undo(ctx, old, parsed, undefined);
  return "no new container: old container restored";
}

/**
 * Removes the new container, starts the old one if it ran (still under its parked name, so a kill
 * before the rename leaves the marker for the next start), then gives it its name back.
 *
 * A parked `-running` container that still runs may have a stop pending: the engine carries out
 * a stop after the svc that asked for it died (during a long stop timeout, say), and would stop it
 * for good right after recovery looked. Nothing in an inspect tells such a container from one
 * that is simply running, so it is stopped (which waits for a pending stop, bounded by its stop
 * timeout) and started again: one restart, and it is certainly running afterwards.
 */
async function undo(
  ctx: ProtocolContext,
  old: ContainerSummary,
  parsed: OldName,
  newId: string | undefined,
): Promise<void> {
  const target = { container: parsed.original, image: old.image };
  const copy = await dataToRestore(ctx, old.id, newId);
  if (copy) ctx.guard!.beginRestore(copy, old.id);
  if (newId)
    await act(ctx, "remove", { ...target, container_id: newId }, () =>
      ctx.engine.removeContainer(newId, { force: true }),
    );
  if (parsed.wasRunning) {
    const inspected = await ctx.engine.inspectContainer(old.id);
    if (inspected.State.Running || inspected.State.Restarting) {
      const stop = stopOptionsFor(inspected, policyFor(old, ctx.config));
      await act(ctx, "stop", { ...target, container_id: old.id }, () => ctx.engine.stopContainer(old.id, stop));
    }
  }
  // into the stopped old container; a restore that fails throws: it stays parked and stopped, for the next cycle or start
  if (copy) {
    await act(ctx, "data_restore", { ...target, container_id: old.id }, () => ctx.guard!.restore(copy));
    ctx.guard!.endRestore(copy);
  }
  if (parsed.wasRunning)
    await act(ctx, "start", { ...target, container_id: old.id }, () => ctx.engine.startContainer(old.id));
  await act(ctx, "rename", { ...target, container_id: old.id }, () =>
    ctx.engine.renameContainer(old.id, parsed.original),
  );
}

/**
 * The copy to put back before the old container starts: one whose restore was interrupted, or the
 * copy of this update when its new container was started (it may have changed the data). A new
 * container created but never started changed nothing.
 */
async function dataToRestore(ctx: ProtocolContext, oldId: string, newId: string | undefined): Promise<Copy | null> {
  if (!ctx.guard) return null;
  const interrupted = ctx.guard.restoringInto(oldId);
  if (interrupted) return interrupted;
  if (!newId) return null;
  const copy = ctx.guard.copyOf(oldId);
  if (!copy) return null;
  // nothing lost: a new container the engine does not show (gone, or no answer) may have run, so its
  // copy goes back; the copy is the old container's own data, so putting it back loses nothing
  const inspected = await ctx.engine.inspectContainer(newId).catch(() => null);
  if (!inspected) return copy;
  const started = inspected.State?.StartedAt;
  return started === undefined || started.startsWith("0001-") ? null : copy;
}

/** An update finished by recovery: its copy is kept data_guard_keep from now, and no restore is pending. */
function keepCopyOf(ctx: ProtocolContext, oldId: string): void {
  const copy = ctx.guard?.copyOf(oldId);
  if (!copy) return;
  ctx.guard!.endRestore(copy);
  ctx.guard!.supersede(copy);
}

/**
 * After a self-update the old svc watches its replacement (this process), then stops its own
 * container. Removing it earlier would kill it mid-watch; so wait, bounded, then remove.
 */
async function retirePredecessor(
  ctx: ProtocolContext,
  old: ContainerSummary,
  parsed: OldName,
  graceMs: number,
): Promise<void> {
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline) {
    // nothing lost: a predecessor the engine no longer shows is gone already: nothing to wait for or remove
    const inspected = await ctx.engine.inspectContainer(old.id).catch(() => null);
    if (!inspected) return;
    if (!inspected.State.Running) break;
    await Bun.sleep(500);
  }
  try {
    await act(ctx, "remove", { container: parsed.original, container_id: old.id, image: old.image }, () =>
      ctx.engine.removeContainer(old.id, { force: true }),
    );
    ctx.audit.record({
      action: "recover",
      container: parsed.original,
      container_id: old.id,
      image: old.image,
      trigger: ctx.trigger,
    });
  } catch (error) {
    ctx.log.warn("could not remove the previous svc container", {
      container: old.name,
      error: toSvcError(error).message,
    });
  }
}

/** Names whose self-update a running handover container is finishing (see containers/handover.ts). */
export function handoversRunning(
  all: readonly ContainerSummary[],
  inScope: (container: ContainerSummary) => boolean,
): Set<string> {
  const names = new Set<string>();
  for (const c of all) {
    const original = parseHandoverName(c.name);
    if (original !== null && c.state === "running" && inScope({ ...c, name: original })) names.add(original);
  }
  return names;
}

/** A handover container that is not running (a crash, or created and never started) is removed. */
async function removeDeadHandovers(
  ctx: ProtocolContext,
  all: ContainerSummary[],
  inScope: (container: ContainerSummary) => boolean,
  actions: string[],
): Promise<void> {
  for (const c of all) {
    const original = parseHandoverName(c.name);
    if (original === null || c.state === "running" || !inScope({ ...c, name: original })) continue;
    try {
      await act(ctx, "remove", { container: original, container_id: c.id, image: c.image }, () =>
        ctx.engine.removeContainer(c.id, { force: true }),
      );
      actions.push(`${c.name}: leftover handover container removed`);
    } catch (error) {
      actions.push(`${c.name}: could not remove the leftover handover container: ${toSvcError(error).message}`);
    }
  }
}
