/**
 * A tag move of a container systemd runs, written into the file its unit is made from (a quadlet
 * `.container` file's `Image=`, a `podman generate systemd --new` unit's `podman run` line;
 * docs/podman.md, "A tag move of a container systemd runs"). The file is the unit owner's: svc
 * edits it only where the manager's own user owns it and nobody else may change it, reads it
 * capped, changes only the reference's characters (engine/unitfile.ts), and writes it through the
 * compose room's atomic replace (a temporary file beside it, its mode and owner kept, renamed over
 * it only while it still holds what svc read).
 *
 * Before the write, the move is journaled in svc's state (`unit_moves`, kept across restarts with
 * state_dir): the file's old text, so that crash recovery (recovery/units.ts) puts it back when the
 * unit never came up on the new tag.
 */
import { accessSync, constants, lstatSync, readdirSync, realpathSync, type Stats } from "node:fs";
import { basename, dirname, isAbsolute, join } from "node:path";
import { z } from "zod";
import { readText, replaceFile } from "../../compose/index.ts";
import { parseJsonText } from "../../core/bounded.ts";
import { SvcError, toSvcError } from "../../core/errors.ts";
import type { SystemdUnit } from "../../engine/port.ts";
import { type Systemd, systemctlCommand } from "../../engine/systemd.ts";
import { dropInFolders, findImage, moveImage, setsImage, shapeOf } from "../../engine/unitfile.ts";
import type { Remembered } from "../../state/index.ts";

/** A unit file is a few lines; a larger one is not read (and the journal keeps its text). */
export const MAX_UNIT_FILE_BYTES = 64 * 1024;

/** A package's file: its next upgrade would undo the move; an override in /etc is the admin's. */
const PACKAGED = /^\/(usr|lib|lib64)\//;
const PACKAGED_WHY = "belongs to a package (copy it to /etc/containers/systemd or /etc/systemd/system to change it)";

/** A planned move: the unit, its file (links resolved) before and after, and what svc says of it. */
export interface UnitMove {
  unit: string;
  scope: SystemdUnit["scope"];
  file: string;
  from: string;
  to: string;
  line: number;
  before: string;
  after: string;
}

/** The journal of a move under way (the state's `unit_moves`, by container name). */
const JOURNAL = z.object({
  unit: z.string().max(256),
  scope: z.enum(["system", "user"]),
  file: z.string().max(4096),
  from: z.string().max(512),
  to: z.string().max(512),
  line: z.number().int().nonnegative(),
  before: z.string().max(MAX_UNIT_FILE_BYTES),
  after: z.string().max(MAX_UNIT_FILE_BYTES * 2),
});

/** "web.container line 7: app:1.0 -> app:1.1", as the report and the audit log say it. */
export function describeMove(move: Pick<UnitMove, "file" | "line" | "from" | "to">): string {
  return `${move.file} line ${move.line}: ${move.from} -> ${move.to}`;
}

/** What a person runs instead of svc: the edit, then the reload and the restart. */
export function moveCommand(target: SystemdUnit, change: string): string {
  const systemctl = `systemctl${target.scope === "user" ? " --user" : ""}`;
  return `change ${change}, then \`${systemctl} daemon-reload\` and \`${systemctlCommand(target, "restart")}\``;
}

/**
 * The move of the unit's image reference `from` to `to`, read from its file now, or why svc does
 * not make it (the file is not one svc may edit, the reference is not found exactly once).
 */
export async function planUnitMove(
  systemd: Systemd,
  target: SystemdUnit,
  from: string,
  to: string,
): Promise<UnitMove | string> {
  let file: string;
  try {
    file = safeUnitFile(await systemd.unitFile(target), target.scope);
  } catch (error) {
    return toSvcError(error).message;
  }
  const shape = shapeOf(file)!;
  const pin = shape === "quadlet" ? dropInSettingImage(file) : null;
  if (pin)
    return `${pin} sets Image=, and quadlet reads it after ${basename(file)}: moving the file's would change nothing`;
  let text: string;
  try {
    text = readText(file, MAX_UNIT_FILE_BYTES);
  } catch (error) {
    return toSvcError(error).message;
  }
  const moved = moveImage(text, shape, from, to);
  if (typeof moved === "string") return `${file}: ${moved}`;
  return { unit: target.unit, scope: target.scope, file, from, to, line: moved.line, before: text, after: moved.after };
}

/**
 * The path systemd names, links resolved, when it is a file svc may edit for the unit's manager: a
 * regular file with one link, owned by the user the manager runs as (root for the system's, svc's
 * own user for `systemctl --user`), in a folder of that user's or root's, neither writable by
 * others, and svc able to write both; not a package's (under /usr or /lib). The path itself may be
 * a link only when that user or root made it. Throws with why not.
 */
export function safeUnitFile(path: string, scope: SystemdUnit["scope"]): string {
  if (!isAbsolute(path)) throw refused(path, "is not an absolute path");
  const owner = scope === "user" ? (process.geteuid?.() ?? 0) : 0;
  const whose = owner === 0 ? "root" : `user ${owner} (svc's, whom the user manager runs as)`;
  if (PACKAGED.test(path)) throw refused(path, PACKAGED_WHY);
  const link = lstatSync(path);
  if (link.isSymbolicLink() && link.uid !== owner && link.uid !== 0)
    throw refused(path, `is a link made by user ${link.uid}, not by ${whose} or root`);
  const real = realpathSync(path);
  const stat = lstatSync(real);
  const shown = real === path ? path : `${path} (a link to ${real})`;
  if (PACKAGED.test(real)) throw refused(shown, PACKAGED_WHY);
  if (!stat.isFile()) throw refused(shown, "is not a regular file");
  if (shapeOf(real) === null) throw refused(shown, "is neither a quadlet .container file nor a .service file");
  if (stat.uid !== owner) throw refused(shown, `is owned by user ${stat.uid}, not by ${whose}`);
  if (!mayKeepGroup(stat.gid))
    throw refused(
      shown,
      `belongs to group ${stat.gid}, which svc is not in: a new file in its place could not keep it`,
    );
  if (stat.nlink > 1) throw refused(shown, `has ${stat.nlink} hard links: a new file in its place would part them`);
  if (othersMayWrite(stat)) throw refused(shown, `can be written by other users (mode ${modeOf(stat)})`);
  const folder = lstatSync(dirname(real));
  if (folder.uid !== owner && folder.uid !== 0)
    throw refused(shown, `lies in ${dirname(real)}, owned by user ${folder.uid}, not by ${whose} or root`);
  if (othersMayWrite(folder))
    throw refused(shown, `lies in ${dirname(real)}, which other users can write to (mode ${modeOf(folder)})`);
  try {
    accessSync(dirname(real), constants.W_OK);
    accessSync(real, constants.W_OK);
  } catch (error) {
    throw refused(shown, `cannot be written by svc (${(error as NodeJS.ErrnoException).code ?? "denied"})`);
  }
  return real;
}

/** Only root may give a file to a group it is not in: svc's new file keeps the group only then. */
function mayKeepGroup(gid: number): boolean {
  if ((process.geteuid?.() ?? 0) === 0) return true;
  return new Set([process.getegid?.(), ...(process.getgroups?.() ?? [])]).has(gid);
}

function othersMayWrite(stat: Stats): boolean {
  return (stat.mode & 0o002) !== 0;
}

function modeOf(stat: Stats): string {
  return (stat.mode & 0o7777).toString(8).padStart(4, "0");
}

function refused(path: string, why: string): SvcError {
  return new SvcError("engine", `the unit's file ${path} ${why}: svc does not edit it`);
}

/** Journals the move, writes the file, reloads the unit's manager. The file is as before when this throws. */
export async function writeUnitMove(
  systemd: Systemd,
  journal: Pick<Remembered, "set" | "delete">,
  container: string,
  move: UnitMove,
): Promise<void> {
  journal.set(container, JSON.stringify(move));
  try {
    replaceFile(move.file, move.before, move.after);
  } catch (error) {
    journal.delete(container);
    throw error;
  }
  try {
    await systemd.reload(move);
  } catch (error) {
    // a manager that did not read the new file restarts the old one: the file goes back with it
    replaceFile(move.file, move.after, move.before);
    journal.delete(container);
    throw error;
  }
}

/**
 * After the move and the reload: why the unit quadlet made again from the moved `.container` file
 * still runs the old reference (a drop-in, `NAME.container.d/*.conf`, setting `Image=`: quadlet
 * reads those after the file), or null: it runs the new one, or svc cannot tell (the restart's
 * check then decides). A restart would only restart the old image.
 */
export async function stillRunsOld(systemd: Systemd, move: UnitMove): Promise<string | null> {
  if (shapeOf(move.file) !== "quadlet") return null;
  let loaded: string;
  let text: string;
  try {
    loaded = await systemd.loadedUnit(move);
    text = readText(loaded, MAX_UNIT_FILE_BYTES);
  } catch {
    return null;
  }
  if (!runsOnlyOld(text, move)) return null;
  return `the unit quadlet made of the moved file (${loaded}) still runs ${move.from}: a drop-in of ${basename(move.file)} sets Image= after it`;
}

/** Whether a `.service` file quadlet made runs `from` and not `to` (its podman run line's image). */
export function runsOnlyOld(loaded: string, move: Pick<UnitMove, "from" | "to">): boolean {
  const runs = (reference: string) => typeof findImage(loaded, "service", reference) !== "string";
  return runs(move.from) && !runs(move.to);
}

/** Drop-ins read at most, beside a quadlet file: a handful is usual. */
const MAX_DROP_INS = 64;

/**
 * The first drop-in beside the quadlet `file` that sets `Image=`, or null. Only the file's own
 * folder is read (quadlet also reads the other unit folders: `stillRunsOld` sees those after the
 * move); a drop-in svc cannot read is passed over.
 */
function dropInSettingImage(file: string): string | null {
  let read = 0;
  for (const folder of dropInFolders(basename(file)).map((name) => join(dirname(file), name))) {
    let names: string[];
    try {
      names = readdirSync(folder)
        .filter((name) => name.endsWith(".conf"))
        .sort();
    } catch {
      continue;
    }
    for (const name of names) {
      if (++read > MAX_DROP_INS) return null;
      try {
        if (setsImage(readText(join(folder, name), MAX_UNIT_FILE_BYTES))) return join(folder, name);
      } catch {}
    }
  }
  return null;
}

/**
 * The file's old text back (only while it still holds what svc wrote), the manager reloaded; the
 * journal entry goes once the file is back. The caller restarts the unit.
 */
export async function revertUnitMove(
  systemd: Systemd,
  journal: Pick<Remembered, "delete">,
  container: string,
  move: UnitMove,
): Promise<void> {
  replaceFile(move.file, move.after, move.before);
  journal.delete(container);
  await systemd.reload(move);
}

/** A journal entry read back, or null when it makes no sense (it is then dropped by the caller). */
export function readJournal(value: string): UnitMove | null {
  const parsed = parseJsonText(value, JOURNAL);
  return "value" in parsed ? parsed.value : null;
}
