import { describe, expect, test } from "bun:test";
import { NotifyPolicy } from "../../../src/notify/decide.ts";
import type { ContainerReport, SessionReport } from "../../../src/updater/types.ts";
import { sampleReport } from "./fixtures.ts";

function container(name: string, state: ContainerReport["state"], new_digest: string | null = null): ContainerReport {
  return {
    id: name,
    name,
    image: `${name}:latest`,
    new_image: null,
    old_image_id: "sha256:aa",
    new_image_id: null,
    old_digest: "sha256:old",
    new_digest,
    state,
    reason: null,
    duration_ms: 1,
  };
}

function report(...containers: ContainerReport[]): SessionReport {
  const counts = {
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
  for (const c of containers) counts[c.state]++;
  return sampleReport({ containers, counts });
}

describe("when to notify", () => {
  test("a cycle that changed nothing is quiet", () => {
    const policy = new NotifyPolicy(false);
    expect(policy.decide(report(container("a", "fresh"), container("b", "skipped"))).notify).toBe(false);
    expect(policy.decide(report()).notify).toBe(false);
  });

  test("updated, failed or rolled back: always", () => {
    for (const state of ["updated", "failed", "rolled_back"] as const) {
      const policy = new NotifyPolicy(false);
      expect(policy.decide(report(container("a", state)))).toEqual({ notify: true, reason: "changes" });
      expect(policy.decide(report(container("a", state))).notify).toBe(true);
    }
  });

  test("notify_on_every_cycle: also a quiet cycle", () => {
    const policy = new NotifyPolicy(true);
    expect(policy.decide(report(container("a", "fresh")))).toEqual({ notify: true, reason: "every_cycle" });
    expect(policy.decide(report()).notify).toBe(true);
  });

  test("a stale container is told once per new digest, not every cycle", () => {
    const policy = new NotifyPolicy(false);
    expect(policy.decide(report(container("a", "stale", "sha256:d1")))).toEqual({ notify: true, reason: "new_stale" });
    expect(policy.decide(report(container("a", "stale", "sha256:d1"))).notify).toBe(false);
    expect(policy.decide(report(container("a", "stale", "sha256:d1"), container("b", "fresh"))).notify).toBe(false);
    // a newer image again: news
    expect(policy.decide(report(container("a", "stale", "sha256:d2"))).notify).toBe(true);
    expect(policy.decide(report(container("a", "stale", "sha256:d2"))).notify).toBe(false);
    // another container going stale for the same digest is news too
    expect(
      policy.decide(report(container("a", "stale", "sha256:d2"), container("b", "stale", "sha256:d2"))).notify,
    ).toBe(true);
  });

  test("a cycle filtered to other containers does not forget what was told", () => {
    const policy = new NotifyPolicy(false);
    policy.decide(report(container("a", "stale", "sha256:d1")));
    policy.decide(report(container("b", "fresh")));
    expect(policy.decide(report(container("a", "stale", "sha256:d1"))).notify).toBe(false);
  });

  test("after catching up, the same container going stale again is news", () => {
    const policy = new NotifyPolicy(false);
    policy.decide(report(container("a", "stale", "sha256:d1")));
    policy.decide(report(container("a", "fresh")));
    expect(policy.decide(report(container("a", "stale", "sha256:d1"))).notify).toBe(true);
  });

  test("with notify_on_every_cycle, stale digests are still remembered", () => {
    const policy = new NotifyPolicy(true);
    expect(policy.decide(report(container("a", "stale", "sha256:d1"))).notify).toBe(true);
    expect(policy.decide(report(container("a", "stale", "sha256:d1"))).reason).toBe("every_cycle");
  });

  test("counts alone (no container list) are enough to notify", () => {
    const policy = new NotifyPolicy(false);
    const r = report();
    r.counts.rolled_back = 1;
    expect(policy.decide(r).notify).toBe(true);
  });
});
