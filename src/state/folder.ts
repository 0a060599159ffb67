/**
 * Whether a folder may hold svc's decisions (state_dir): only svc's user (or root) can change what
 * is in it, now and between two writes. As sshd's StrictModes does for a user's keys: the folder is
 * looked at itself (`lstat`, never through a link someone planted), it is svc's user's or root's and
 * nobody else may write to it, and every folder above it is svc's user's or root's and writable
 * by nobody else unless sticky (`/tmp`: others may add their own entries, never rename ours). A link
 * is followed only when svc's user or root made it, in folders only they may write, to a folder
 * that passes too (systemd's `StateDirectory=` with `DynamicUser=` is such a link to
 * `/var/lib/private/`). docs/security.md.
 */
import { lstatSync, readlinkSync, type Stats } from "node:fs";
import { dirname, resolve } from "node:path";
import { SvcError } from "../core/errors.ts";

/** Links followed on the way to one folder, at most (a loop of links is refused, not walked). */
const MAX_LINKS = 8;

/**
 * Throws SvcError("startup"), naming the path at fault, when `dir` is not a folder only svc's user
 * may change. A folder that does not exist yet passes when the folders above it do: it is created
 * for svc's user only on the first write.
 */
export function checkStateDir(dir: string): void {
  checkPrivateFolder(dir, "state_dir");
}

/**
 * The same check for another folder svc keeps to itself (`option` names it in the message): the
 * data guard's copies (data_guard_dir), which svc sweeps and restores from as root.
 */
export function checkPrivateFolder(dir: string, option: string): void {
  checkPath(resolve(dir), { dir, option }, 0);
}

/** The folder asked for, and the option that asked for it, for the messages. */
interface Asked {
  dir: string;
  option: string;
}

function checkPath(path: string, dir: Asked, links: number): void {
  const stat = lstatOrUndefined(path);
  if (stat === undefined) return checkParents(path, dir, links);
  if (stat.isSymbolicLink()) return followLink(path, stat, dir, links);
  if (!stat.isDirectory()) throw refused(dir, path, "is not a folder");
  checkOwner(path, stat, dir);
  if ((stat.mode & 0o022) !== 0) {
    throw refused(
      dir,
      path,
      `can be written by other users (mode ${modeOf(stat)}): choose a folder only svc's user can write to, or chmod go-w ${path}`,
    );
  }
  checkParents(path, dir, links);
}

/** Every folder above `path`: svc's user's or root's, writable by nobody else unless sticky. */
function checkParents(path: string, dir: Asked, links: number): void {
  for (let parent = dirname(path), child = path; parent !== child; child = parent, parent = dirname(parent)) {
    const stat = lstatOrUndefined(parent);
    if (stat === undefined) continue; // made with the folder, svc's user's only
    if (stat.isSymbolicLink()) return followLink(parent, stat, dir, links);
    checkOwner(parent, stat, dir);
    const sticky = (stat.mode & 0o1000) !== 0;
    if ((stat.mode & 0o022) !== 0 && !sticky) {
      throw refused(
        dir,
        parent,
        `(a folder above it) can be written by other users and is not sticky (mode ${modeOf(stat)}): they could replace the folder; choose another place, or chmod go-w ${parent}`,
      );
    }
  }
}

/** A link svc's user or root made (its own folder is checked with it), then what it points to. */
function followLink(path: string, stat: Stats, dir: Asked, links: number): void {
  if (links >= MAX_LINKS) throw refused(dir, path, `leads through more than ${MAX_LINKS} links`);
  if (!trustedOwner(stat.uid))
    throw refused(dir, path, `is a link made by another user (uid ${stat.uid}): choose a folder of svc's user's own`);
  checkParents(path, dir, links);
  checkPath(resolve(dirname(path), readlinkSync(path)), dir, links + 1);
}

function checkOwner(path: string, stat: Stats, dir: Asked): void {
  if (!trustedOwner(stat.uid))
    throw refused(dir, path, `belongs to another user (uid ${stat.uid}): choose a folder of svc's user's own`);
}

function trustedOwner(uid: number): boolean {
  const own = process.getuid?.();
  return own === undefined || uid === own || uid === 0;
}

function lstatOrUndefined(path: string): Stats | undefined {
  try {
    return lstatSync(path);
  } catch {
    return undefined;
  }
}

function modeOf(stat: Stats): string {
  return (stat.mode & 0o7777).toString(8).padStart(4, "0");
}

/** `state_dir DIR <why>`, or `state_dir DIR: PATH <why>` when the fault is elsewhere on its way. */
function refused(asked: Asked, path: string, why: string): SvcError {
  const { dir, option } = asked;
  return new SvcError("startup", path === dir ? `${option} ${dir} ${why}` : `${option} ${dir}: ${path} ${why}`);
}
