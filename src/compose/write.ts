/**
 * The smallest change: only the characters of the version, each file written once, atomically
 * (a temporary file in the same folder, fsync, rename; the folder fsynced), with the file's mode
 * and owner, never over a file that changed since svc read it (docs/compose.md, "How svc writes").
 */
import {
  accessSync,
  closeSync,
  constants,
  fchmodSync,
  fchownSync,
  fsyncSync,
  lstatSync,
  openSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  writeSync,
} from "node:fs";
import { basename, dirname, join, relative } from "node:path";
import { SvcError } from "../core/errors.ts";
import { randomHex } from "../core/files.ts";
import { lineOf, readText } from "./text.ts";

/** One run of characters replaced. */
export interface Edit {
  file: string;
  offset: number;
  old: string;
  new: string;
}

/** A file before and after svc's change, for the rollback and the audit log. */
export interface FileChange {
  file: string;
  before: string;
  after: string;
  edits: Edit[];
}

/** Applies edits to a text (each checked against what it replaces), last first so offsets hold. */
export function applyEdits(text: string, edits: readonly Edit[]): string {
  let out = text;
  for (const edit of [...edits].sort((a, b) => b.offset - a.offset)) {
    if (out.slice(edit.offset, edit.offset + edit.old.length) !== edit.old)
      throw new SvcError("bad_request", `${edit.file} does not hold "${edit.old}" where svc read it`);
    out = out.slice(0, edit.offset) + edit.new + out.slice(edit.offset + edit.old.length);
  }
  return out;
}

/** The edits reversed: what puts the version back. */
export function reverseEdits(edits: readonly Edit[]): Edit[] {
  const sorted = [...edits].sort((a, b) => a.offset - b.offset);
  let shift = 0;
  return sorted.map((edit) => {
    const reversed = { file: edit.file, offset: edit.offset + shift, old: edit.new, new: edit.old };
    shift += edit.new.length - edit.old.length;
    return reversed;
  });
}

/** "compose.yaml line 12: 2.3.1 -> 2.4.0", relative to the project folder. */
export function describeEdit(edit: Edit, text: string, workingDir: string, variable?: string | null): string {
  const name = relative(workingDir, edit.file) || basename(edit.file);
  const shown = name.startsWith("..") ? edit.file : name;
  return `${shown} line ${lineOf(text, edit.offset)}${variable ? ` (${variable})` : ""}: ${edit.old} -> ${edit.new}`;
}

/**
 * Writes `after` over `file` if it still holds `before`: a temporary file beside it (same mode and
 * owner), fsynced, compared once more, renamed over it, the folder fsynced. A symlink is followed
 * (its target is the file). Throws, changing nothing, when the file changed or cannot be kept as it was.
 */
export function replaceFile(file: string, before: string, after: string): void {
  const path = realpathSync(file);
  if (readText(path) !== before) throw new SvcError("bad_request", `${file} changed since svc read it`);
  const stat = statSync(path);
  const temporary = join(dirname(path), `.${basename(path)}.svc-${randomHex(6)}.tmp`);
  let fd: number;
  try {
    fd = openSync(
      temporary,
      constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY | constants.O_NOFOLLOW,
      stat.mode & 0o7777,
    );
  } catch (error) {
    throw new SvcError("bad_request", `svc cannot write beside ${file}: ${(error as Error).message.split(",")[0]}`, {
      cause: error,
    });
  }
  try {
    try {
      fchmodSync(fd, stat.mode & 0o7777);
      const created = statSync(temporary);
      if (created.uid !== stat.uid || created.gid !== stat.gid) {
        try {
          fchownSync(fd, stat.uid, stat.gid);
        } catch (error) {
          throw new SvcError(
            "bad_request",
            `svc cannot keep the owner of ${file} (${stat.uid}:${stat.gid}): ${(error as Error).message.split(",")[0]}`,
            { cause: error },
          );
        }
      }
      writeSync(fd, Buffer.from(after, "utf8"));
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    if (readText(path) !== before) throw new SvcError("bad_request", `${file} changed since svc read it`);
    renameSync(temporary, path);
  } catch (error) {
    rmSync(temporary, { force: true });
    throw error;
  }
  syncFolder(dirname(path));
}

/** Whether svc could write the file (asked of the kernel, nothing created): its folder writable (the temporary file), the file a regular one. */
export function writable(file: string): string | null {
  try {
    const path = realpathSync(file);
    if (!lstatSync(path).isFile()) return `${file} is not a regular file`;
    accessSync(dirname(path), constants.W_OK);
    accessSync(path, constants.W_OK);
    return ownerProblem(file, statSync(path));
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const why =
      code === "EROFS"
        ? "a read-only mount"
        : code === "EACCES" || code === "EPERM"
          ? "no permission"
          : code === "ENOENT"
            ? "not visible"
            : (error as Error).message;
    return `svc cannot write ${dirname(file)} (${why})`;
  }
}

/**
 * The file replacing it is svc's own until chowned, and only root may give a file away: svc as
 * another user keeps the owner only of its own files (and a group it is in).
 */
function ownerProblem(file: string, stat: { uid: number; gid: number }): string | null {
  const uid = process.geteuid?.();
  if (uid === undefined || uid === 0) return null;
  if (stat.uid !== uid)
    return `svc runs as user ${uid} and cannot keep the owner of ${file} (user ${stat.uid}): run svc as that user, or as root (docs/compose.md)`;
  const groups = new Set([process.getegid?.(), ...(process.getgroups?.() ?? [])]);
  if (!groups.has(stat.gid))
    return `svc is not in the group of ${file} (${stat.gid}) and cannot keep it: run svc in that group (docs/compose.md)`;
  return null;
}

function syncFolder(folder: string): void {
  try {
    const fd = openSync(folder, "r");
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  } catch {
    // some file systems refuse a folder's fsync; the rename is done all the same
  }
}
