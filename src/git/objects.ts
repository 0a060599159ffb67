/**
 * Git's objects through isomorphic-git (loose and packed, deltas, the object format), read and
 * written without a git binary (svc's scratch image has none; docs/compose.md, "Git"). The library
 * is handed a file system of svc's own over the repository's shared git folder, which keeps the
 * room's rules: a regular file only and capped (a FIFO would hang the read), no link followed
 * inside the git folder, objects written atomically, borrowed objects (objects/info/alternates,
 * which the library does not read) found in the folders they name, and nothing but objects written:
 * refs, reflogs and the index stay svc's own, under Git's lock files (repo.ts, commit.ts).
 */
import { existsSync, lstatSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { basename, dirname, isAbsolute, join, relative, sep } from "node:path";
import type { PromiseFsClient } from "isomorphic-git";
import * as git from "isomorphic-git";
import { SvcError } from "../core/errors.ts";
import { linkUnlessPresent, readRegularFile } from "../core/files.ts";

/** The largest file of the git folder svc lets the library read: a pack is read whole. */
const MAX_READ_BYTES = 1024 * 1024 * 1024;

export function gitError(message: string): SvcError {
  return new SvcError("config", message);
}

export function isOid(text: string): boolean {
  return /^[0-9a-f]{40}$/.test(text);
}

/** What isomorphic-git is handed for one repository: its file system, its git folder and a cache of packs. */
export interface ObjectAccess {
  fs: PromiseFsClient;
  gitdir: string;
  cache: object;
}

/** The objects of the shared git folder `commonDir` (a linked worktree's objects live there). */
export function objectAccess(commonDir: string): ObjectAccess {
  return { fs: libraryFs(commonDir), gitdir: commonDir, cache: {} };
}

/** Whether the repository holds the object (its own, packed or borrowed). */
export async function hasObject(objects: ObjectAccess, oid: string): Promise<boolean> {
  try {
    await git.readObject({ ...objects, oid, format: "deflated" });
    return true;
  } catch (error) {
    if ((error as { code?: string }).code === "NotFoundError") return false;
    throw error;
  }
}

/**
 * The file system isomorphic-git works through, for the shared git folder `commonDir` (its
 * `gitdir`): reads of regular files, links refused, alternates followed; writes under objects/ only.
 */
function libraryFs(commonDir: string): PromiseFsClient {
  const objects = join(commonDir, "objects");
  const borrowed = alternates(objects);
  /** where an object file named inside objects/ is: its own folder, else an alternate's */
  const located = (path: string): string => {
    const below = relative(objects, path);
    if (below.startsWith("..") || isAbsolute(below) || existsSync(path)) return path;
    for (const dir of borrowed) if (existsSync(join(dir, below))) return join(dir, below);
    return path;
  };
  // the library names only paths of the git folder; a borrowed object is found by `located`
  const guard = (path: string) => refuseLinks(commonDir, path);
  const missing = (path: string) => Object.assign(new Error(`ENOENT: ${path}`), { code: "ENOENT" });
  const outsideObjects = (path: string) => relative(commonDir, path).split(sep)[0] !== "objects";
  const promises = {
    readFile: async (path: string, options?: { encoding?: string } | string) => {
      guard(path);
      const file = located(path);
      if (!existsSync(file)) throw missing(path);
      const bytes = Buffer.from(readUserFile(file, MAX_READ_BYTES));
      const encoding = typeof options === "string" ? options : options?.encoding;
      return encoding ? bytes.toString(encoding as BufferEncoding) : bytes;
    },
    writeFile: async (path: string, data: Uint8Array | string) => {
      if (outsideObjects(path)) throw refused(path);
      guard(path);
      writeObject(path, typeof data === "string" ? Buffer.from(data) : data);
    },
    mkdir: async (path: string) => {
      if (outsideObjects(path)) throw refused(path);
      guard(path);
      mkdirSync(path, { recursive: true });
    },
    readdir: async (path: string) => {
      guard(path);
      const own = existsSync(path) ? readdirSync(path) : [];
      const below = relative(objects, path);
      if (below !== "pack") {
        if (!existsSync(path)) throw missing(path);
        return own;
      }
      return [...new Set([...own, ...borrowed.flatMap((dir) => safeList(join(dir, "pack")))])];
    },
    stat: async (path: string) => (guard(path), statOf(located(path))),
    lstat: async (path: string) => (guard(path), statOf(located(path))),
    // svc's objects are only ever added: nothing removed, no link read or made
    unlink: async (path: string) => {
      throw refused(path);
    },
    rmdir: async (path: string) => {
      throw refused(path);
    },
    readlink: async (path: string) => {
      throw refused(path);
    },
    symlink: async (_target: string, path: string) => {
      throw refused(path);
    },
  };
  return { promises };
}

function statOf(path: string) {
  try {
    return lstatSync(path);
  } catch (error) {
    throw Object.assign(new Error((error as Error).message), { code: (error as NodeJS.ErrnoException).code });
  }
}

const refused = (path: string) => gitError(`svc lets its Git library add objects only, not touch ${path}`);

const safeList = (dir: string) => (existsSync(dir) ? readdirSync(dir) : []);

/**
 * A loose object, as Git writes one: a temporary file hard-linked to its name (nothing half
 * written is ever seen under it; a link fails when the object appeared meanwhile: the same bytes).
 */
function writeObject(path: string, data: Uint8Array): void {
  const temporary = join(dirname(path), `tmp_obj_${crypto.randomUUID()}`);
  writeFileSync(temporary, data, { mode: 0o444, flag: "wx" });
  linkUnlessPresent(temporary, path);
}

/** The object folders `objects/info/alternates` names (one level, as `git clone --shared` makes). */
function alternates(objects: string): string[] {
  const file = join(objects, "info", "alternates");
  if (!existsSync(file)) return [];
  refuseLinks(dirname(objects), file);
  return Buffer.from(readUserFile(file, 1024 * 1024))
    .toString("utf8")
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line !== "" && !line.startsWith("#"))
    .map((line) => (line.startsWith("/") ? line : join(objects, line)))
    .filter((dir) => basename(dir) !== "" && existsSync(dir));
}

/**
 * Refuses a link at `path` or at any folder between `base` and it (those that exist): svc follows
 * no link inside a git folder, where one would send its writes (a ref, a reflog line, a lock)
 * anywhere the link points.
 */
export function refuseLinks(base: string, path: string): void {
  const below = relative(base, path);
  if (below.startsWith("..") || isAbsolute(below)) throw gitError(`${path} lies outside ${base}`);
  let at = base;
  for (const part of below.split(sep).filter(Boolean)) {
    at = join(at, part);
    let link: boolean;
    try {
      link = lstatSync(at).isSymbolicLink();
    } catch {
      return; // the rest does not exist yet: svc makes it, as folders and files
    }
    if (link) throw gitError(`${at} is a link: svc follows no link inside a Git folder`);
  }
}

/**
 * A file of a repository, read as a user's file is (core/files.ts: a regular one only, never
 * waited on), capped; a refusal is the Git room's error.
 */
export function readUserFile(file: string, cap: number): Uint8Array {
  try {
    return readRegularFile(file, cap);
  } catch (error) {
    throw error instanceof SvcError ? gitError(error.message) : error;
  }
}
