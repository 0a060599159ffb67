/**
 * The history (docs/api.md, GET /v1/history): the last `history_size` session reports, oldest
 * first, in `history.json` (`history-<scope>.json` for a scoped instance) under `state_dir`,
 * written atomically on each new report; in memory without it. A file that cannot be used is a
 * warning and an empty history (the file kept aside), as for state.json.
 */
import { join } from "node:path";
import { z } from "zod";
import type { Logger } from "../log/index.ts";
import { atomicWriter, readOrSetAside, scopedFileName } from "./file.ts";

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
  const save = (): void => write(JSON.stringify({ version: 1, reports }));

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
