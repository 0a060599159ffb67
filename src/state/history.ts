/**
 * The history (docs/api.md, GET /v1/history): the last `history_size` session reports, oldest
 * first, in `history.json` (`history-<scope>.json` for a scoped instance) under `state_dir`,
 * written atomically on each new report; in memory without it. A file that cannot be used is a
 * warning and an empty history (the file kept aside), as for state.json.
 *
 * Several processes write the same file (a running service, a `svc --run-once` or `svc rollback`
 * beside it): each new report is merged into what the file holds now, under a lock file, never
 * written over it; and a reader that sees the file changed since it last looked merges it in, so
 * the service's API shows the run-once's report too.
 */
import { closeSync, openSync, readFileSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import type { Logger } from "../log/index.ts";
import { atomicWriter, MAX_FILE_BYTES, readOrSetAside, scopedFileName } from "./file.ts";

/** What svc needs of a kept report to list it; the rest is kept as written. */
const KEPT_REPORT = z.looseObject({
  id: z.string(),
  finished_at: z.string(),
  containers: z.array(z.looseObject({ name: z.string(), state: z.string() })),
});
const FILE = z.object({ version: z.literal(1), reports: z.array(KEPT_REPORT) });

export interface History<T> {
  add(report: T): void;
  /** oldest first */
  list(): readonly T[];
  readonly size: number;
}

export function openHistory<T extends { id: string; finished_at: string }>(
  dir: string | undefined,
  size: number,
  log: Logger,
  scope?: string,
): History<T> {
  const logger = log.child("state");
  const file = dir === undefined ? undefined : join(dir, scopedFileName("history", scope));
  const read = (text: string) => FILE.parse(JSON.parse(text)).reports as unknown as T[];
  let reports: T[] = file === undefined ? [] : readOrSetAside(file, read, () => [], logger, "history").slice(-size);
  const write = atomicWriter(dir, file, logger, "history");
  /** the file as this process last read or wrote it: another writer changes it */
  let seen = file === undefined ? "" : stamp(file);
  /** What another process added since: merged in; a file that cannot be read now is left to the next look. */
  const catchUp = (): void => {
    if (file === undefined || stamp(file) === seen) return;
    try {
      reports = merged(reports, read(readText(file)), size);
      seen = stamp(file);
    } catch {
      // being replaced, or not ours to judge here: the start's reading set a bad file aside
    }
  };

  return {
    size,
    add(report) {
      if (size === 0) return;
      if (file === undefined) {
        reports = merged(reports, [report], size);
        return;
      }
      withLock(`${file}.lock`, () => {
        catchUp();
        reports = merged(reports, [report], size);
        write(JSON.stringify({ version: 1, reports }));
        seen = stamp(file);
      });
    },
    list: () => {
      catchUp();
      return reports;
    },
  };
}

/** The reports of both, each once (by id), oldest first, the newest `size` kept. */
function merged<T extends { id: string; finished_at: string }>(
  mine: readonly T[],
  theirs: readonly T[],
  size: number,
): T[] {
  const byId = new Map<string, T>();
  for (const report of [...mine, ...theirs]) byId.set(report.id, report);
  return [...byId.values()].sort((a, b) => a.finished_at.localeCompare(b.finished_at)).slice(-size);
}

/** What changes when another process writes the file (it is replaced: a new inode, mtime and size). */
function stamp(file: string): string {
  try {
    const info = statSync(file);
    return `${info.ino}:${info.mtimeMs}:${info.size}`;
  } catch {
    return "";
  }
}

function readText(file: string): string {
  if (statSync(file).size > MAX_FILE_BYTES) throw new Error("too large");
  return readFileSync(file, "utf8");
}

/** A lock older than this was left by a process that died holding it: taken over. */
const STALE_LOCK_MS = 10_000;
/** How long a writer waits for another's lock before it writes all the same (a merge lost, never a report). */
const LOCK_WAIT_MS = 2_000;

/**
 * Runs `work` holding `lock` (a file created exclusively). The work is a read, a merge and a
 * write, milliseconds: a writer that cannot get the lock in time writes anyway.
 */
function withLock(lock: string, work: () => void): void {
  const until = Date.now() + LOCK_WAIT_MS;
  let held = false;
  while (!held) {
    try {
      closeSync(openSync(lock, "wx", 0o600));
      held = true;
    } catch (error) {
      // no folder yet (the writer makes it) or not writable: nobody else can hold the lock either
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") break;
      if (lockIsStale(lock)) rmSync(lock, { force: true });
      else if (Date.now() >= until) break;
      else Bun.sleepSync(5);
    }
  }
  try {
    work();
  } finally {
    if (held) rmSync(lock, { force: true });
  }
}

function lockIsStale(lock: string): boolean {
  try {
    return Date.now() - statSync(lock).mtimeMs > STALE_LOCK_MS;
  } catch {
    return false;
  }
}
