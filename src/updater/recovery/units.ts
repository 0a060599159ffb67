/**
 * Crash recovery of a tag move written into a unit's file (containers/unitmove.ts; docs/podman.md,
 * "A tag move of a container systemd runs"): svc stopped between writing the file and seeing the
 * unit's container run the new tag. The journal (the state's `unit_moves`) holds the file's old
 * text; at start, for each entry:
 *   - the file still holds its old text: nothing was written, the entry goes;
 *   - the file holds something else than svc wrote: a person changed it since, it is theirs;
 *   - the unit's container runs the new tag and passes the rollback checks: the move stands;
 *   - otherwise (no container, another image, a failed check): the old text back, the manager
 *     reloaded, the unit restarted.
 * Each one is a `recover` line of the audit log, as recovery.ts writes for a parked container.
 */
import { readText, replaceFile } from "../../compose/index.ts";
import { toSvcError } from "../../core/errors.ts";
import type { Systemd } from "../../engine/systemd.ts";
import type { Remembered } from "../../state/index.ts";
import { watch } from "../containers/protocol.ts";
import { auditMove } from "../containers/systemd.ts";
import { MAX_UNIT_FILE_BYTES, readJournal, type UnitMove } from "../containers/unitmove.ts";
import type { ProtocolContext } from "../cycle/context.ts";

/** Finishes or undoes each journaled move; one line per entry: what was done. */
export async function recoverUnitMoves(ctx: ProtocolContext, systemd: Systemd, journal: Remembered): Promise<string[]> {
  const actions: string[] = [];
  for (const [container, value] of journal.entries()) {
    const move = readJournal(value);
    if (!move) {
      journal.delete(container);
      actions.push(`${container}: an unreadable unit_moves entry dropped`);
      continue;
    }
    let outcome: string;
    let error: string | undefined;
    try {
      outcome = await recoverOne(ctx, systemd, journal, container, move);
    } catch (failure) {
      error = toSvcError(failure).message;
      outcome = `the unit's file could not be put back (left for the next start): ${error}`;
    }
    actions.push(`${container}: ${outcome}`);
    ctx.audit.record({
      action: "recover",
      container,
      file: move.file,
      trigger: ctx.trigger,
      ...(error ? { error } : {}),
    });
  }
  return actions;
}

async function recoverOne(
  ctx: ProtocolContext,
  systemd: Systemd,
  journal: Remembered,
  container: string,
  move: UnitMove,
): Promise<string> {
  const now = readText(move.file, MAX_UNIT_FILE_BYTES);
  if (now === move.before) {
    journal.delete(container);
    return `${move.file} was not changed: nothing to undo`;
  }
  if (now !== move.after) {
    journal.delete(container);
    return `${move.file} changed since svc wrote it: left as it is`;
  }
  // nothing lost: a unit's container the engine does not show has not passed: the move is put back below
  const running = await ctx.engine.inspectContainer(container).catch(() => null);
  if (running?.State.Running && running.Config.Image === move.to && (await watch(ctx, running.Id)).ok) {
    journal.delete(container);
    return `its unit runs ${move.to} and passed the checks: the move in ${move.file} stands`;
  }
  replaceFile(move.file, move.after, move.before);
  journal.delete(container);
  auditMove(ctx, "unit_revert", container, move);
  await systemd.reload(move);
  await systemd.restart(move, container);
  return `its unit did not come up on ${move.to}: ${move.file} names ${move.from} again, the unit restarted`;
}
