/** The SessionReport (docs/api.md), built from the per-container results of a cycle. */
import {
  type ContainerReport,
  OUTCOMES,
  type ReportCounts,
  type SessionReport,
  type Trigger,
  type UpdateFilter,
} from "../types.ts";

export function countOutcomes(containers: readonly ContainerReport[]): ReportCounts {
  const counts = { scanned: containers.length } as ReportCounts;
  for (const outcome of OUTCOMES) counts[outcome] = 0;
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
