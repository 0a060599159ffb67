/**
 * The counts a person (the page's summary bar) or a home dashboard (GET /v1/summary) reads at a
 * glance, from GET /v1/containers' rows (docs/dashboard.md, "At a glance"). Pure, and shared by
 * the page and the API so both count alike.
 */

/** What the counts read of a row; a peer's older svc may lack some of it. */
export interface CountedRow {
  state: string;
  would_update?: boolean;
  available_version?: string | null;
  update_kind?: string | null;
  last_cycle?: { state: string } | null;
}

export const UPDATE_KINDS = ["major", "minor", "patch", "digest", "tag"] as const;
export type CountedKind = (typeof UPDATE_KINDS)[number];

/** Which counts a row falls under: each one is also a filter of the page. */
export type Bucket = CountedKind | "held" | "failed";

export interface Counts {
  /** rows counted */
  containers: number;
  /** newer image found and not applied yet */
  updates: number;
  by_kind: Record<CountedKind, number>;
  /** held back: monitor only, min_image_age, a snooze, an update window (pending) */
  held: number;
  /** failed or rolled back, now or at the last cycle */
  failed: number;
}

/** States of a row with a newer image not applied yet: held back, or waiting for an update window. */
const WAITING = ["pending", "held"];

/** A row with a newer image not applied: stale, held or pending. */
export const hasUpdate = (row: CountedRow): boolean => row.state === "stale" || WAITING.includes(row.state);

export const isHeld = (row: CountedRow): boolean =>
  WAITING.includes(row.state) || (row.state === "stale" && row.would_update === false);

export const hasFailed = (row: CountedRow): boolean =>
  ["failed", "rolled_back"].includes(row.state) || ["failed", "rolled_back"].includes(row.last_cycle?.state ?? "");

export function kindOf(row: CountedRow): CountedKind {
  return (UPDATE_KINDS as readonly string[]).includes(row.update_kind ?? "")
    ? (row.update_kind as CountedKind)
    : "digest";
}

/** Whether a row is in a bucket (the page's summary filters). */
export function inBucket(row: CountedRow, bucket: Bucket): boolean {
  if (bucket === "held") return isHeld(row);
  if (bucket === "failed") return hasFailed(row);
  return hasUpdate(row) && kindOf(row) === bucket;
}

export function countRows(rows: readonly CountedRow[]): Counts {
  const by_kind: Record<CountedKind, number> = { major: 0, minor: 0, patch: 0, digest: 0, tag: 0 };
  let updates = 0;
  for (const row of rows) {
    if (!hasUpdate(row)) continue;
    updates += 1;
    by_kind[kindOf(row)] += 1;
  }
  return {
    containers: rows.length,
    updates,
    by_kind,
    held: rows.filter(isHeld).length,
    failed: rows.filter(hasFailed).length,
  };
}
