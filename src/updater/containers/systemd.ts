/**
 * A container systemd runs (Podman's label PODMAN_SYSTEMD_UNIT), where svc reaches that systemd:
 * updated as `podman auto-update` does (docs/podman.md, "Containers systemd runs"). The new image
 * is pulled under the container's own tag (replace.ts), then the unit restarted: the unit makes
 * the container again from that tag. The container the unit runs afterwards must run the new
 * image and pass the rollback checks a replacement passes (protocol.ts: watch); otherwise the old
 * image is tagged back and the unit restarted once more, as `podman auto-update --rollback` does.
 */
import { toSvcError } from "../../core/errors.ts";
import type { ContainerInspect, Engine, SystemdUnit } from "../../engine/port.ts";
import type { Remembered } from "../../state/index.ts";
import { act } from "../cycle/act.ts";
import type { ProtocolContext } from "../cycle/context.ts";
import { finish, type TargetEntry } from "../cycle/target.ts";
import { anyRollbackCheck, watch } from "./protocol.ts";

/** What this module reads and writes of a container's entry (replace.ts's ContainerEntry). */
export interface UnitEntry extends TargetEntry {
  inspect?: ContainerInspect;
  id: string;
  newImageId: string | null;
  newDigest: string | null;
  newImage: string | null;
}

/**
 * Why svc does not restart the unit for this update: a move to another tag, which the unit's own
 * `Image=` (or its `podman run` line) names, so it is the unit file's to change.
 */
export function unitUpdateRefused(entry: UnitEntry, target: SystemdUnit): string | null {
  if (entry.newImage === null) return null;
  return `systemd runs it (unit ${target.unit}) from its image's tag: svc does not move it to ${entry.newImage}; move Image= in the unit's quadlet .container file (or its podman run line), then \`systemctl${target.scope === "user" ? " --user" : ""} daemon-reload\` and restart it`;
}

/** The unit restarted onto the pulled image (`reference`, the container's own tag), checked, else rolled back. */
export async function updateThroughSystemd(
  ctx: ProtocolContext,
  engine: Engine,
  entry: UnitEntry,
  target: SystemdUnit,
  reference: string,
  rolledBack: Pick<Remembered, "set">,
): Promise<void> {
  const old = entry.inspect!;
  const name = old.Name.replace(/^\//, "");
  const where = { container: entry.summary.name, container_id: old.Id, image: reference };
  let problem: string;
  try {
    const now = await act(
      ctx,
      "unit_restart",
      where,
      () => engine.restartSystemdUnit!(target, name),
      (fresh) => fresh.Id,
    );
    // watched as a replacement is (protocol.ts), under the unit's own restart policy
    const verdict = anyRollbackCheck(ctx.config) ? await watch(ctx, now.Id) : { ok: true as const };
    if (now.Image === entry.newImageId && verdict.ok) {
      entry.id = now.Id;
      finish(entry, "updated", `restarted by systemd (unit ${target.unit}) on the new image`);
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
      await engine.tagImage(old.Image, reference);
      return engine.restartSystemdUnit!(target, name);
    });
    finish(entry, "rolled_back", `${problem}; ${reference} tagged back to the old image and the unit restarted`);
  } catch (error) {
    finish(entry, "failed", `${problem}; the rollback failed too: ${toSvcError(error).message}`);
  }
}
