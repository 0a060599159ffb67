/** Shared by the notify unit and integration tests. */
import type { ContainerOutcome, ContainerReport, SessionReport } from "../../../src/updater/types.ts";

/** A report with one updated and one failed container. */
export function sampleReport(overrides: Partial<SessionReport> = {}): SessionReport {
  return {
    id: crypto.randomUUID(),
    trigger: "schedule",
    started_at: "2026-11-21T10:00:00.000Z",
    finished_at: "2026-11-21T10:00:02.500Z",
    duration_ms: 2500,
    filter: { container: [], image: [] },
    counts: { scanned: 3, updated: 1, failed: 1, skipped: 0, fresh: 1, stale: 0, pending: 0, rolled_back: 0, held: 0 },
    containers: [
      {
        id: "c0ffee01",
        name: "web",
        image: "127.0.0.1:5000/web:latest",
        new_image: null,
        old_image_id: "sha256:1111111111111111111111111111111111111111111111111111111111111111",
        new_image_id: "sha256:2222222222222222222222222222222222222222222222222222222222222222",
        old_digest: "sha256:3333333333333333333333333333333333333333333333333333333333333333",
        new_digest: "sha256:4444444444444444444444444444444444444444444444444444444444444444",
        state: "updated",
        reason: null,
        duration_ms: 1800,
      },
      {
        id: "c0ffee02",
        name: "db",
        image: "127.0.0.1:5000/db:16",
        new_image: null,
        old_image_id: "sha256:5555555555555555555555555555555555555555555555555555555555555555",
        new_image_id: null,
        old_digest: null,
        new_digest: null,
        state: "failed",
        reason: "pull failed: manifest unknown",
        duration_ms: 300,
      },
      {
        id: "c0ffee03",
        name: "cache",
        image: "127.0.0.1:5000/cache:7",
        new_image: null,
        old_image_id: "sha256:6666666666666666666666666666666666666666666666666666666666666666",
        new_image_id: null,
        old_digest: "sha256:7777777777777777777777777777777777777777777777777777777777777777",
        new_digest: "sha256:7777777777777777777777777777777777777777777777777777777777777777",
        state: "fresh",
        reason: null,
        duration_ms: 50,
      },
    ],
    ...overrides,
  };
}

/** One container's entry of a report, in `state`. */
export function entry(name: string, state: ContainerOutcome, extra: Partial<ContainerReport> = {}): ContainerReport {
  return {
    id: name,
    name,
    image: `r/${name}:1`,
    new_image: null,
    old_image_id: "sha256:a",
    new_image_id: null,
    old_digest: null,
    new_digest: "sha256:b",
    state,
    reason: null,
    duration_ms: 1,
    ...extra,
  };
}
