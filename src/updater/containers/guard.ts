/**
 * The data guard in a container's update (docs/data-guard.md): decided while the old container
 * still runs (`prepareGuard`: which mounts, whether they fit), copied once it has stopped and
 * before the new one is created (`copyGuarded`), put back when the update is undone after the new
 * one started and before the old one starts again (`restoreGuarded`).
 */
import { formatSize } from "../../config/values.ts";
import { toSvcError } from "../../core/errors.ts";
import { versionOf } from "../../dataguard/index.ts";
import { act } from "../cycle/act.ts";
import type { ProtocolContext } from "../cycle/context.ts";
import type { Replacement } from "./replacement.ts";

const HOLD_ADVICE =
  'held until it fits: raise data_guard_max_size, free room in data_guard_dir, set data_guard_over = "skip", or label the container svc.data_guard=off';

/** Decides the guard of `r` while its old container runs. Returns the reason when the update is held. */
export async function prepareGuard(ctx: ProtocolContext, r: Replacement): Promise<string | undefined> {
  if (!ctx.guard || r.self) return undefined;
  let preparation;
  // svc rollback --with-data copies the present data first, whatever data_guard says of the container
  const atLeast = r.keepCopy ? (r.keepCopy.manifest.mounts.some((m) => m.type === "bind") ? "all" : "volumes") : "off";
  try {
    preparation = await ctx.guard.prepare(r.old, atLeast);
  } catch (error) {
    preparation = {
      kind: "over" as const,
      action: ctx.guard.options.over,
      reason: `data_guard: measuring the guarded mounts failed: ${toSvcError(error).message}`,
    };
  }
  if (r.keepCopy && preparation.kind !== "copy") {
    return `svc rollback --with-data copies the present data first, and cannot: ${preparation.kind === "over" ? preparation.reason : "the container has no guarded mount"}`;
  }
  if (preparation.kind === "off") return undefined;
  if (preparation.kind === "over") return overLimit(r, preparation.action, preparation.reason);
  r.guardPlan = preparation;
  return undefined;
}

function overLimit(r: Replacement, action: "hold" | "skip", reason: string): string | undefined {
  if (action === "hold") return `${reason}: ${HOLD_ADVICE}`;
  r.dataGuard = {
    bytes: 0,
    duration_ms: 0,
    restored: false,
    problem: `${reason}: updated without a copy (data_guard_over = skip)`,
  };
  return undefined;
}

/**
 * Copies the stopped old container's guarded mounts. Returns the reason when the update is held
 * (the copy ran past its limit and data_guard_over is hold); throws when the copy failed.
 */
export async function copyGuarded(ctx: ProtocolContext, r: Replacement): Promise<string | undefined> {
  const plan = r.guardPlan;
  if (!ctx.guard || !plan) return undefined;
  const guard = ctx.guard;
  const meta = {
    image: r.old.Config.Image,
    imageId: r.old.Image ?? null,
    version: versionOf(r.old.Config.Image, r.oldImage?.Config?.Labels ?? undefined),
  };
  let outcome;
  try {
    outcome = await act(ctx, "data_copy", { container: r.name, container_id: r.old.Id, image: r.image }, () =>
      guard.copy(r.old, plan, meta, r.keepCopy),
    );
  } catch (error) {
    const message = toSvcError(error).message;
    if (!/ENOSPC|no space left/i.test(message)) throw new Error(`data_guard: ${message}`, { cause: error });
    outcome = { kind: "over" as const, bytes: 0, reason: `data_guard_dir ran out of room while copying (${message})` };
  }
  if (outcome.kind === "over")
    return overLimit(r, r.keepCopy ? "hold" : guard.options.over, `data_guard: ${outcome.reason}`);
  r.copy = outcome.copy;
  r.dataGuard = { bytes: outcome.copy.manifest.bytes, duration_ms: outcome.copy.manifest.duration_ms, restored: false };
  ctx.log.info("data copied", {
    container: r.name,
    size: formatSize(outcome.copy.manifest.bytes),
    duration_ms: outcome.copy.manifest.duration_ms,
  });
  return undefined;
}

/** An update given up before its copy: the helper prepared for the copy goes (docs/data-guard.md). */
export async function dropGuardPlan(ctx: ProtocolContext, r: Replacement): Promise<void> {
  if (r.guardPlan) await ctx.guard?.drop(r.guardPlan);
  r.guardPlan = undefined;
}

/** Whether undoing `r` must put its data back: a copy exists and the new container may have run. */
export function mustRestore(r: Replacement): boolean {
  return r.copy !== undefined && r.dataTouched === true;
}

/** Puts the copy back into the old container's mounts. Returns the problem, if any (the old container must then not start). */
export async function restoreGuarded(ctx: ProtocolContext, r: Replacement): Promise<string | undefined> {
  const copy = r.copy!;
  const guard = ctx.guard!;
  try {
    const restored = await act(ctx, "data_restore", { container: r.name, container_id: r.old.Id, image: r.image }, () =>
      guard.restore(copy),
    );
    r.dataGuard = {
      ...(r.dataGuard ?? { bytes: copy.manifest.bytes, duration_ms: 0 }),
      duration_ms: (r.dataGuard?.duration_ms ?? 0) + restored.duration_ms,
      restored: true,
    };
    ctx.log.info("data restored", {
      container: r.name,
      size: formatSize(restored.bytes),
      duration_ms: restored.duration_ms,
    });
    return undefined;
  } catch (error) {
    const problem = toSvcError(error).message;
    r.dataGuard = {
      ...(r.dataGuard ?? { bytes: copy.manifest.bytes, duration_ms: 0 }),
      restored: false,
      problem: `restore failed: ${problem}`,
    };
    return problem;
  }
}

/**
 * `svc rollback --with-data`: the copy of the version being gone back to, put into the old
 * container's mounts once their present data is copied (`r.copy`) and before the new container is
 * created. The mark is on the present data's copy: a kill or a failure from here on puts that back.
 */
export async function restoreKept(ctx: ProtocolContext, r: Replacement): Promise<void> {
  const kept = r.keepCopy!;
  const guard = ctx.guard!;
  if (!r.copy) throw new Error("svc rollback --with-data: the present data was not copied first");
  guard.beginRestore(r.copy, r.old.Id);
  r.dataTouched = true;
  const restored = await act(ctx, "data_restore", { container: r.name, container_id: r.old.Id, image: r.image }, () =>
    guard.restore(kept),
  );
  guard.endRestore(r.copy);
  r.dataGuard = {
    bytes: r.copy.manifest.bytes,
    duration_ms: (r.dataGuard?.duration_ms ?? 0) + restored.duration_ms,
    restored: true,
  };
  ctx.log.info("data put back to the copy of the version rolled back to", {
    container: r.name,
    version: kept.manifest.version ?? "",
    copied_at: kept.manifest.created_at,
  });
}

/**
 * The new version runs: the copy is kept data_guard_keep from now (or until the next update). A
 * copy `svc rollback --with-data` put back is live data again: it goes.
 */
export function supersedeGuarded(ctx: ProtocolContext, r: Replacement): void {
  if (r.copy) ctx.guard?.supersede(r.copy);
  if (r.keepCopy) ctx.guard?.store?.remove(r.keepCopy.manifest.container, r.keepCopy.id);
}
