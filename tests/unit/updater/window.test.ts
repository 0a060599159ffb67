/** The decision with an update window (docs/windows.md): pending outside it, with when it applies; a request naming the target is not held. */
import { expect, test } from "bun:test";
import { defaultConfig } from "../../../src/config/index.ts";
import type { Verdict } from "../../../src/updater/check/check.ts";
import { appliesAtOf, decide, heldByWindow, newTarget, unlessAsked } from "../../../src/updater/cycle/target.ts";
import { policyFor } from "../../../src/updater/selection/selection.ts";

const summary = { id: "1", name: "web", image: "r/web:1", imageId: "sha256:a", state: "running" as const, labels: {} };
const stale: Verdict = {
  state: "stale",
  reason: null,
  oldDigest: "sha256:o",
  newDigest: "sha256:n",
  newImageId: null,
  newImage: null,
};
const config = defaultConfig({ update_window: "Sat,Sun 02:00-05:00" });
const friday = Date.parse("2026-11-27T17:00:00Z");
const saturday = Date.parse("2026-11-28T03:00:00Z");

test("outside its window a stale target is pending, with when its window opens", () => {
  const entry = newTarget(summary, policyFor(summary, config));
  decide(entry, stale, friday, "UTC");
  expect(entry.state).toBe("pending");
  expect(entry.reason).toBe("outside its update window (Sat,Sun 02:00-05:00); applies Sat 02:00 (in 9 h)");
  expect(appliesAtOf(entry)).toEqual({ applies_at: "2026-11-28T02:00:00.000Z" });
});

test("inside its window, or without one, it is to be replaced", () => {
  const inside = newTarget(summary, policyFor(summary, config));
  expect(heldByWindow(inside, saturday, "UTC")).toBe(false);
  const none = newTarget(summary, policyFor(summary, defaultConfig()));
  decide(none, stale, friday, "UTC");
  expect(none.state).toBe("stale");
  expect(none.finishedAt).toBeUndefined();
});

test("a request that names the target is not held by a window; one that does not name it is", () => {
  const policy = policyFor(summary, config);
  expect(unlessAsked(policy, { container: ["web"] }, summary).window).toEqual([]);
  expect(unlessAsked(policy, { container: ["/web"] }, summary).window).toEqual([]);
  expect(unlessAsked(policy, { container: ["db"] }, summary).window).toHaveLength(1);
  expect(unlessAsked(policy, {}, summary).window).toHaveLength(1);
  // its compose project's name, or the project's service, names it too
  const inProject = {
    ...summary,
    labels: { "com.docker.compose.project": "shop", "com.docker.compose.service": "app" },
  };
  expect(unlessAsked(policy, { container: ["shop"] }, inProject).window).toEqual([]);
  expect(unlessAsked(policy, { container: ["shop/app"] }, inProject).window).toEqual([]);
  expect(unlessAsked(policy, { container: ["shop/db"] }, inProject).window).toHaveLength(1);
});

test("monitor-only and held verdicts stay stale, not pending", () => {
  const monitor = newTarget(summary, { ...policyFor(summary, config), monitorOnly: true });
  decide(monitor, stale, friday, "UTC");
  expect(monitor.state).toBe("stale");
});

test("GET /v1/containers says when a pending target applies, as a person reads it, and its window", async () => {
  const { containerOverviews } = await import("../../../src/updater/views/overview.ts");
  const { describeMoment, serviceTimeZone } = await import("../../../src/config/window.ts");
  const entry = {
    id: "1",
    name: "web",
    image: "r/web:1",
    new_image: null,
    old_image_id: "sha256:a",
    new_image_id: null,
    old_digest: "sha256:o",
    new_digest: "sha256:n",
    state: "pending" as const,
    reason: "outside its update window",
    duration_ms: 1,
    applies_at: "2026-11-28T02:00:00.000Z",
  };
  const report = {
    id: "r",
    trigger: "api" as const,
    started_at: "",
    finished_at: "",
    duration_ms: 0,
    filter: { container: [], image: [] },
    counts: { scanned: 1, updated: 0, failed: 0, skipped: 0, fresh: 0, stale: 0, pending: 1, rolled_back: 0, held: 0 },
    containers: [entry],
  };
  const [view] = containerOverviews(
    report,
    { containers: [{ ...summary, labels: { "svc.update_window": "02:00-04:00" } }] },
    config,
    {},
    friday,
  );
  expect(view!.applies_at).toBe("2026-11-28T02:00:00.000Z");
  expect(view!.applies).toBe(describeMoment(Date.parse("2026-11-28T02:00:00Z"), friday, serviceTimeZone()));
  expect(view!.policy.update_window).toBe("Sat,Sun 02:00-05:00 within 02:00-04:00");
  expect(view!.would_update).toBe(false);
});
