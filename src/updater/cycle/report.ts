/** The SessionReport (docs/api.md), built from the per-container results of a cycle. */
import type { ContainerReport, ReportCounts, SessionReport, Trigger, UpdateFilter } from "../types.ts";

export function countOutcomes(containers: readonly ContainerReport[]): ReportCounts {
  const counts: ReportCounts = {
    scanned: containers.length,
    updated: 0,
    failed: 0,
    skipped: 0,
    fresh: 0,
    stale: 0,
    pending: 0,
    rolled_back: 0,
    held: 0,
  };
  for (const container of containers) counts[container.state] += 1;
  return counts;
}

export function buildReport(input: {
  id: string;
  trigger: Trigger;
  startedAt: Date;
  finishedAt: Date;
  filter: UpdateFilter;
  containers: ContainerReport[];
}): SessionReport {
  return {
    id: input.id,
    trigger: input.trigger,
    started_at: input.startedAt.toISOString(),
    finished_at: input.finishedAt.toISOString(),
    duration_ms: Math.max(0, input.finishedAt.getTime() - input.startedAt.getTime()),
    filter: {
      container: [...(input.filter.container ?? [])],
      image: [...(input.filter.image ?? [])],
      ...(input.filter.stack?.length ? { stack: [...input.filter.stack] } : {}),
    },
    counts: countOutcomes(input.containers),
    containers: input.containers,
  };
}

/** The gauges (docs/api.md, GET /v1/metrics): `failed` counts failed and rolled back containers. */
export function metricCounts(counts: ReportCounts): {
  scanned: number;
  updated: number;
  failed: number;
  pending: number;
} {
  return {
    scanned: counts.scanned,
    updated: counts.updated,
    failed: counts.failed + counts.rolled_back,
    pending: counts.pending,
  };
}
