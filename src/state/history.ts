/**
 * The history (docs/api.md, GET /v1/history): the last `history_size` session reports, oldest
 * first, in `history.json` (`history-<scope>.json` for a scoped instance) under `state_dir`,
 * written atomically on each new report; in memory without it. A file that cannot be used is a
 * warning and an empty history (the file kept aside), as for state.json.
 */
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import type { Logger } from "../log/index.ts";

/** What svc needs of a kept report to list it; the rest is kept as written. */
const KEPT_REPORT = z.looseObject({
  id: z.string(),
  finished_at: z.string(),
  containers: z.array(z.looseObject({ name: z.string(), state: z.string() })),
});
const FILE = z.object({ version: z.literal(1), reports: z.array(KEPT_REPORT) });

/** Bigger files are not read: 10 000 reports of a few hundred containers stay well under it. */
const MAX_FILE_BYTES = 256 * 1024 * 1024;

export interface History<T> {
  add(report: T): void;
  /** oldest first */
  list(): readonly T[];
  readonly size: number;
}

function fileName(scope: string | undefined): string {
  return scope === undefined ? "history.json" : `history-${scope.replace(/[^A-Za-z0-9._-]/g, "_")}.json`;
}

export function openHistory<T extends { id: string; finished_at: string }>(dir: string | undefined, size: number, log: Logger, scope?: string): History<T> {
  const logger = log.child("state");
  const file = dir === undefined ? undefined : join(dir, fileName(scope));
  let reports: T[] = file === undefined ? [] : (load(file, logger) as unknown as T[]).slice(-size);
  let writable = file !== undefined;

  const save = (): void => {
    if (!writable || file === undefined || dir === undefined) return;
    try {
      mkdirSync(dir, { recursive: true });
      const temporary = `${file}.${process.pid}.tmp`;
      writeFileSync(temporary, JSON.stringify({ version: 1, reports }), { mode: 0o600 });
      renameSync(temporary, file);
    } catch (error) {
      writable = false;
      logger.warn("cannot write the history file: reports are kept in memory until svc restarts", { file, error: (error as Error).message });
    }
  };

  return {
    size,
    add(report) {
      if (size === 0) return;
      reports = [...reports.slice(-(size - 1)), report];
      save();
    },
    list: () => reports,
  };
}

function load(file: string, log: Logger): z.infer<typeof KEPT_REPORT>[] {
  if (!existsSync(file)) return [];
  try {
    const bytes = readFileSync(file);
    if (bytes.byteLength > MAX_FILE_BYTES) throw new Error(`larger than ${MAX_FILE_BYTES / 1024 / 1024} MiB`);
    return FILE.parse(JSON.parse(bytes.toString("utf8"))).reports;
  } catch (error) {
    const aside = `${file}.unreadable-${Date.now()}`;
    try {
      renameSync(file, aside);
    } catch {
      // kept where it is; the next save replaces it
    }
    log.warn("the history file cannot be used: starting with an empty history (the file is kept aside)", { file, kept_as: aside, error: (error as Error).message });
    return [];
  }
}
