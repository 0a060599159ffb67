/**
 * A container systemd runs (Podman's label PODMAN_SYSTEMD_UNIT), where svc reaches that systemd:
 * updated as `podman auto-update` does (docs/podman.md, "Containers systemd runs"). The new image
 * is pulled under the container's own tag (replace.ts), then the unit restarted: the unit makes
 * the container again from that tag. A move to another tag is first written into the unit's file
 * and the manager reloaded (unitmove.ts). The container the unit runs afterwards must run the new
 * image and pass the rollback checks a replacement passes (protocol.ts: watch); otherwise the old
 * image is tagged back (or the file's old text put back) and the unit restarted once more, as
 * `podman auto-update --rollback` does.
 */
import { toSvcError } from "../../core/errors.ts";
import { SYSTEMD_UNIT_LABEL } from "../../engine/podman.ts";
import type { ContainerInspect, Engine, SystemdUnit } from "../../engine/port.ts";
import type { Systemd } from "../../engine/systemd.ts";
import type { Remembered } from "../../state/index.ts";
import { act } from "../cycle/act.ts";
import type { ProtocolContext } from "../cycle/context.ts";
import { finish, type TargetEntry } from "../cycle/target.ts";
import { anyRollbackCheck, watch } from "./protocol.ts";
import {
  describeMove,
  moveCommand,
  planUnitMove,
  revertUnitMove,
  stillRunsOld,
  type UnitMove,
  writeUnitMove,
} from "./unitmove.ts";

/** What this module reads and writes of a container's entry (entry.ts's ContainerEntry). */
export interface UnitEntry extends TargetEntry {
  inspect?: ContainerInspect;
  id: string;
  newImageId: string | null;
  newDigest: string | null;
  newImage: string | null;
  /** a move to another tag, planned in the unit's file before the pull */
  unitMove?: UnitMove;
}

/**
 * Plans a move to another tag in the unit's file (nothing written yet); why svc leaves the update
 * to the unit's owner otherwise, with the command. Null: no move (the same tag), or planned.
 */
export async function planUnitUpdate(systemd: Systemd, entry: UnitEntry, target: SystemdUnit): Promise<string | null> {
  if (entry.newImage === null) return null;
  const from = entry.inspect!.Config.Image;
  const planned = await planUnitMove(systemd, target, from, entry.newImage);
  if (typeof planned !== "string") {
    entry.unitMove = planned;
    return null;
  }
  return `systemd runs it (unit ${target.unit}) from its image's tag, and svc does not move it to ${entry.newImage}: ${planned}; ${moveByHand(target, from, entry.newImage)}`;
}

/**
 * A dry run, and a monitor-only container: what a tag move of a container systemd runs would
 * change (its file's line), or why svc would leave it, with the command; nothing is written.
 */
export async function tellUnitMoves(
  systemd: Systemd,
  engine: Pick<Engine, "inspectContainer">,
  entries: Iterable<UnitEntry & { summary: { labels: Record<string, string> } }>,
): Promise<void> {
  for (const entry of entries) {
    if (entry.newImage === null || !entry.summary.labels[SYSTEMD_UNIT_LABEL]) continue;
    try {
      entry.inspect ??= await engine.inspectContainer(entry.id);
      const target = await systemd.unitOf(entry.inspect);
      if (!target || typeof target === "string") continue;
      const planned = await planUnitMove(systemd, target, entry.inspect.Config.Image, entry.newImage);
      const what =
        typeof planned === "string"
          ? `svc would not move its unit's file (${planned}); ${moveByHand(target, entry.inspect.Config.Image, entry.newImage)}`
          : `svc would ${moveCommand(target, describeMove(planned))}`;
      entry.reason = entry.reason ? `${entry.reason}; ${what}` : what;
    } catch {
      // a container gone meanwhile, a manager that does not answer: the verdict stands alone
    }
  }
}

/**
 * The unit restarted onto the pulled image (`reference`: the container's own tag, or the new one
 * its unit's file was moved to first), checked, else rolled back.
 */
export async function updateThroughSystemd(
  ctx: ProtocolContext,
  systemd: Systemd,
  entry: UnitEntry,
  target: SystemdUnit,
  reference: string,
  rolledBack: Pick<Remembered, "set">,
  journal: Pick<Remembered, "set" | "delete">,
): Promise<void> {
  const old = entry.inspect!;
  const name = old.Name.replace(/^\//, "");
  const where = { container: entry.summary.name, container_id: old.Id, image: reference };
  const move = entry.unitMove;
  if (move) {
    try {
      await writeUnitMove(systemd, journal, entry.summary.name, move);
      auditMove(ctx, "unit_write", entry.summary.name, move);
    } catch (error) {
      auditMove(ctx, "unit_write", entry.summary.name, move, toSvcError(error).message);
      finish(entry, "skipped", `its unit's file was not changed: ${toSvcError(error).message}`);
      return;
    }
    const overridden = await stillRunsOld(systemd, move);
    if (overridden) {
      try {
        await putBack(ctx, systemd, entry.summary.name, move, journal);
        finish(entry, "skipped", `${overridden}: its file put back, the unit not restarted`);
      } catch (error) {
        finish(entry, "failed", `${overridden}, and its file could not be put back: ${toSvcError(error).message}`);
      }
      return;
    }
  }
  let problem: string;
  try {
    const now = await act(
      ctx,
      "unit_restart",
      where,
      () => systemd.restart(target, name),
      (fresh) => fresh.Id,
    );
    // watched as a replacement is (protocol.ts), under the unit's own restart policy
    const verdict = anyRollbackCheck(ctx.config) ? await watch(ctx, now.Id) : { ok: true as const };
    if (now.Image === entry.newImageId && verdict.ok) {
      entry.id = now.Id;
      if (move) journal.delete(entry.summary.name);
      const moved = move ? `${describeMove(move)} in its unit's file, then ` : "";
      finish(entry, "updated", `${moved}restarted by systemd (unit ${target.unit}) on the new image`);
      return;
    }
    problem =
      now.Image !== entry.newImageId
        ? `the unit runs ${now.Image.replace(/^sha256:/, "").slice(0, 12)}, not the pulled image`
        : `after the unit's restart: ${verdict.ok ? "" : verdict.reason}`;
  } catch (error) {
    problem = toSvcError(error).message;
  }
  rolledBack.set(entry.summary.name, entry.newDigest ?? entry.newImageId ?? "");
  try {
    await act(ctx, "rollback", where, async () => {
      if (move) await putBack(ctx, systemd, entry.summary.name, move, journal);
      else await ctx.engine.tagImage(old.Image, reference);
      return systemd.restart(target, name);
    });
    const back = move
      ? `its unit's file put back (${move.file} names ${move.from} again)`
      : `${reference} tagged back to the old image`;
    finish(entry, "rolled_back", `${problem}; ${back} and the unit restarted`);
  } catch (error) {
    finish(entry, "failed", `${problem}; the rollback failed too: ${toSvcError(error).message}`);
  }
}

/** What a person runs to move the unit's image from `from` to `to` where svc does not. */
function moveByHand(target: SystemdUnit, from: string, to: string): string {
  return moveCommand(target, `the image ${from} in the unit's file to ${to}`);
}

/** The unit's file back as it was, its manager reloaded; audited. */
async function putBack(
  ctx: ProtocolContext,
  systemd: Systemd,
  container: string,
  move: UnitMove,
  journal: Pick<Remembered, "delete">,
): Promise<void> {
  try {
    await revertUnitMove(systemd, journal, container, move);
    auditMove(ctx, "unit_revert", container, move);
  } catch (error) {
    auditMove(ctx, "unit_revert", container, move, toSvcError(error).message);
    throw error;
  }
}

/** A unit_write or unit_revert line of the audit log: the file and the change. */
export function auditMove(
  ctx: ProtocolContext,
  action: "unit_write" | "unit_revert",
  container: string,
  move: UnitMove,
  error?: string,
): void {
  const change = action === "unit_write" ? move : { ...move, from: move.to, to: move.from };
  ctx.audit.record({
    action,
    container,
    file: move.file,
    change: describeMove(change),
    trigger: ctx.trigger,
    session_id: ctx.sessionId,
    ...(error ? { error } : {}),
  });
}
