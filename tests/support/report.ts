/** The one SessionReport builder of the test suite. */
import type { SessionReport, Trigger, UpdateFilter } from "../../src/updater/types.ts";

/** A report of a cycle that found nothing, for `trigger` and `filter`; `overrides` replace fields. */
export function emptyReport(
  trigger: Trigger = "schedule",
  filter: UpdateFilter = {},
  overrides: Partial<SessionReport> = {},
): SessionReport {
  const now = new Date().toISOString();
  return {
    id: crypto.randomUUID(),
    trigger,
    started_at: now,
    finished_at: now,
    duration_ms: 0,
    filter: { container: filter.container ?? [], image: filter.image ?? [] },
    counts: { scanned: 0, updated: 0, failed: 0, skipped: 0, fresh: 0, stale: 0, pending: 0, rolled_back: 0, held: 0 },
    containers: [],
    ...overrides,
  };
}
