/**
 * The state room: decisions that must survive a restart (a digest that was rolled back, the
 * stale digests already announced, when a newer digest was first seen, digests skipped on request, the containers whose updates are snoozed, the image each container ran
 * before its last update, the images an update left while cleanup_delay runs, each digest channel's
 * period, the Home Assistant entities announced), kept in one small JSON file under `state_dir` and written
 * atomically (a temporary file renamed over the old one) on every change. Without `state_dir`
 * they live in memory only, as before. A file that cannot be read or makes no sense is a warning
 * and a fresh start (the unreadable file is kept aside), never a crash; a folder that cannot be
 * written is a warning, and svc goes on remembering in memory. A folder other users can write to
 * is refused, and one under folders others can write (folder.ts, docs/security.md): they could
 * replace the file between two writes.
 */
import { accessSync, closeSync, constants, mkdirSync, openSync, readFileSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { writeFileAtomically } from "../core/files.ts";
import type { Logger } from "../log/index.ts";
import { readOrSetAside, scopedFileName } from "./file.ts";
import { checkStateDir } from "./folder.ts";

/** One kind of decision: a string per container name. */
export interface Remembered {
  get(name: string): string | undefined;
  set(name: string, value: string): void;
  delete(name: string): void;
  /** every (name, value) pair, in no particular order */
  entries(): [string, string][];
}

/** The kinds svc keeps (the file's sections). */
export type Section =
  | "rolled_back"
  | "announced_stale"
  | "first_seen"
  | "skipped"
  | "previous"
  | "left_images"
  | "snoozed"
  | "pre_pulled"
  | "digests"
  | "unit_moves"
  | "build_bases"
  | "home_assistant"
  | "signers"
  | "signers_pending";

const SECTIONS: readonly Section[] = [
  "rolled_back",
  "announced_stale",
  "first_seen",
  "skipped",
  "previous",
  "left_images",
  "snoozed",
  "pre_pulled",
  "digests",
  "unit_moves",
  "build_bases",
  "home_assistant",
  "signers",
  "signers_pending",
];
const VERSION = 1;

/** The state file of an instance (undefined without state_dir). */
export function stateFile(dir: string | undefined, scope: string | undefined): string | undefined {
  return dir === undefined ? undefined : join(dir, scopedFileName("state", scope));
}

export interface StateStore {
  section(name: Section): Remembered;
  /** the file, or undefined when svc remembers in memory only */
  readonly file: string | undefined;
}

type Contents = Record<Section, Map<string, string>>;

/**
 * The store of one svc instance. Instances that share an engine under different scopes may share
 * a folder too: each keeps its own file (`state-<scope>.json`), so none overwrites another's.
 *
 * Two processes may use the same file at once (a running service and `svc rollback`): every read
 * first looks whether the file changed since this process last saw it (one `stat`) and reads it
 * again if so, and every write is read-modify-write under a lock file, applying only its own
 * change to what the file holds then. Neither process ever clobbers the other's decisions.
 */
export function openState(dir: string | undefined, log: Logger, scope?: string): StateStore {
  const logger = log.child("state");
  if (dir !== undefined) checkStateDir(dir);
  const file = stateFile(dir, scope);
  let contents = file === undefined ? emptyContents() : readOrSetAside(file, parse, emptyContents, logger, "state");
  let seen = signature(file);
  let writable = file !== undefined;

  /** The contents as the file holds them now (another process may have written it). */
  const current = (): Contents => {
    if (!writable || file === undefined) return contents;
    const now = signature(file);
    if (now === seen) return contents;
    try {
      contents = now === undefined ? emptyContents() : parse(readFileSync(file, "utf8"));
      seen = now;
    } catch (error) {
      // half-written files cannot happen (rename); a file some other program wrote is replaced by our next write
      logger.debug("the state file changed and cannot be read again: keeping what svc knew", {
        file,
        error: (error as Error).message,
      });
    }
    return contents;
  };

  const change = (name: Section, key: string, value: string | undefined): void => {
    if (!writable || file === undefined || dir === undefined) return void apply(contents, name, key, value);
    try {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      withFileLock(`${file}.lock`, () => {
        if (!apply(current(), name, key, value)) return;
        writeFileAtomically(file, serialize(contents));
        seen = signature(file);
      });
    } catch (error) {
      writable = false;
      apply(contents, name, key, value);
      logger.warn("cannot write the state file: decisions are kept in memory until svc restarts", {
        file,
        error: (error as Error).message,
      });
    }
  };

  return {
    file,
    section(name) {
      return {
        get: (key) => current()[name].get(key),
        set: (key, value) => change(name, key, value),
        delete: (key) => change(name, key, undefined),
        entries: () => [...current()[name]],
      };
    },
  };
}

/** Sets (or, with undefined, deletes) one entry; false when that changes nothing. */
function apply(contents: Contents, name: Section, key: string, value: string | undefined): boolean {
  const entries = contents[name];
  if (value === undefined) return entries.delete(key);
  if (entries.get(key) === value) return false;
  entries.set(key, value);
  return true;
}

/** What identifies one version of the file (a rename gives a new inode); undefined when there is none. */
function signature(file: string | undefined): string | undefined {
  if (file === undefined) return undefined;
  try {
    const stat = statSync(file);
    return `${stat.ino}:${stat.size}:${stat.mtimeMs}`;
  } catch {
    return undefined;
  }
}

/** A lock older than this was left by a process that died holding it (the work under it takes milliseconds). */
const STALE_LOCK_MS = 5_000;
const LOCK_WAIT_MS = 3_000;

/**
 * Runs `work` while holding `lock` (a file created exclusively). A lock left by a dead process
 * is taken over once it is older than STALE_LOCK_MS; waiting is bounded by LOCK_WAIT_MS, after
 * which the lock is taken over as well (a write late by seconds is worse than one rare race).
 */
export function withFileLock<T>(lock: string, work: () => T): T {
  const deadline = Date.now() + LOCK_WAIT_MS;
  for (;;) {
    try {
      closeSync(openSync(lock, "wx", 0o600));
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      const age = Date.now() - (statSync(lock, { throwIfNoEntry: false })?.mtimeMs ?? Date.now());
      if (age > STALE_LOCK_MS || Date.now() > deadline) rmSync(lock, { force: true });
      else Bun.sleepSync(2);
    }
  }
  try {
    return work();
  } finally {
    rmSync(lock, { force: true });
  }
}

/** What a folder that cannot be written costs, said once at start (docs/policies.md). */
export const FORGOTTEN_ON_RESTART =
  "digests rolled back or skipped, snoozes, stale digests already announced, when each newer digest was first seen, the images svc rollback and cleanup_delay need, the Home Assistant entities announced, and the history";

/**
 * The folder svc keeps its decisions in, made now (svc's user's only) so that a folder that cannot
 * be written is said once at start, with what will not survive a restart, rather than at the first
 * decision; undefined then (kept in memory). A folder other users may write, or another user's, is
 * refused (checkStateDir) when the operator chose it; the default folder is then not used either,
 * with the same warning (svc in the image run as root finds the folder of the image's user 65532).
 */
export function usableStateDir(dir: string | undefined, log: Logger, chosen = true): string | undefined {
  if (dir === undefined) return undefined;
  const unusable = (why: string) => {
    log
      .child("state")
      .warn(
        `state_dir ${dir} cannot be used (${why}): these decisions will not survive a restart: ${FORGOTTEN_ON_RESTART}; set state_dir (SVC_STATE_DIR) to a folder svc's user can write`,
      );
    return undefined;
  };
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    accessSync(dir, constants.W_OK);
  } catch (error) {
    return unusable(
      (error as NodeJS.ErrnoException).code === "EACCES" ? "permission denied" : (error as Error).message,
    );
  }
  try {
    checkStateDir(dir);
  } catch (error) {
    if (chosen) throw error;
    return unusable((error as Error).message.replace(`state_dir ${dir}: `, "").replace(`state_dir ${dir} `, ""));
  }
  return dir;
}

/** A Remembered that lives as long as the process (no `state_dir`, tests). */
export function inMemory(): Remembered {
  const entries = new Map<string, string>();
  return {
    get: (key) => entries.get(key),
    set: (key, value) => void entries.set(key, value),
    delete: (key) => void entries.delete(key),
    entries: () => [...entries],
  };
}

function emptyContents(): Contents {
  return Object.fromEntries(SECTIONS.map((name) => [name, new Map<string, string>()])) as Contents;
}

/** The file's contents; throws on anything that is not exactly what svc writes. */
export function parse(text: string): Contents {
  const data = JSON.parse(text) as unknown;
  if (typeof data !== "object" || data === null || (data as { version?: unknown }).version !== VERSION)
    throw new Error(`not a version ${VERSION} state file`);
  const contents = emptyContents();
  for (const name of SECTIONS) {
    const section = (data as Record<string, unknown>)[name] ?? {};
    if (typeof section !== "object" || section === null || Array.isArray(section))
      throw new Error(`${name} is not an object`);
    for (const [key, value] of Object.entries(section)) {
      if (typeof value !== "string") throw new Error(`${name}.${key} is not a string`);
      contents[name].set(key, value);
    }
  }
  return contents;
}

function serialize(contents: Contents): string {
  const data: Record<string, unknown> = { version: VERSION };
  for (const name of SECTIONS) data[name] = Object.fromEntries(contents[name]);
  return `${JSON.stringify(data, null, 2)}\n`;
}

export { checkPrivateFolder } from "./folder.ts";
export { type History, openHistory } from "./history.ts";
export { derivedKey, SECRET_FILE, stateSecret } from "./secret.ts";
