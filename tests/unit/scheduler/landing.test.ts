/**
 * A pending target lands as its window opens (docs/windows.md), even a window of its own (the
 * label svc.update_window, narrower than the host's) that opens between two checks: the scheduler
 * runs a cycle then, not at the next poll hours later.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { createScheduler, earliestLanding, type Scheduler } from "../../../src/scheduler/index.ts";
import type { ContainerReport, SessionReport } from "../../../src/updater/types.ts";
import { recordingLogger } from "../../support/logger.ts";
import { emptyReport } from "../../support/report.ts";
import { FakeRunner, waitFor } from "./fakes.ts";

let scheduler: Scheduler | undefined;

afterEach(async () => {
  await scheduler?.stop();
  scheduler = undefined;
});

function entry(name: string, state: ContainerReport["state"], applies_at?: string | null): ContainerReport {
  return {
    id: name,
    name,
    image: `r.example/${name}:1`,
    new_image: null,
    old_image_id: "sha256:0",
    new_image_id: null,
    old_digest: null,
    new_digest: null,
    state,
    reason: null,
    duration_ms: 0,
    ...(applies_at === undefined ? {} : { applies_at }),
  };
}

const reportOf = (...containers: ContainerReport[]): SessionReport => emptyReport("schedule", {}, { containers });

describe("the earliest landing of a report", () => {
  const now = Date.parse("2026-11-28T01:00:00Z");
  test("is the soonest future applies_at of a pending target", () => {
    const report = reportOf(
      entry("late", "pending", "2026-11-28T03:00:00Z"),
      entry("soon", "pending", "2026-11-28T02:00:00Z"),
      entry("stale", "stale", "2026-11-28T01:30:00Z"),
      entry("past", "pending", "2026-11-28T00:30:00Z"),
      entry("never", "pending", null),
      entry("garbled", "pending", "tomorrow"),
    );
    expect(earliestLanding(report, now)).toBe(Date.parse("2026-11-28T02:00:00Z"));
  });

  test("is none when nothing waits for a window", () => {
    expect(earliestLanding(reportOf(entry("a", "stale"), entry("b", "pending", null)), now)).toBeUndefined();
  });
});

describe("the scheduler", () => {
  test("runs a cycle as a pending target's window opens, between two polls", async () => {
    let opensAt = 0;
    const runner = new FakeRunner({
      report: (n) => {
        if (n > 0) return reportOf();
        opensAt = Date.now() + 300;
        return reportOf(entry("web", "pending", new Date(opensAt).toISOString()));
      },
    });
    // the startup cycle, then a poll far longer away than the window
    scheduler = createScheduler({
      config: { poll_interval: 3_600_000, update_on_start: true },
      runner,
      log: recordingLogger(),
    });
    scheduler.start();
    await waitFor(() => runner.calls.length === 2, "the cycle as the window opens");
    expect(runner.calls.map((call) => call.trigger)).toEqual(["startup", "schedule"]);
    expect(Date.now()).toBeGreaterThanOrEqual(opensAt);
    // the report of that cycle has nothing pending: no further cycle until the next poll
    await Bun.sleep(400);
    expect(runner.calls).toHaveLength(2);
  });

  test("arms nothing once stopped", async () => {
    const runner = new FakeRunner({
      report: () => reportOf(entry("web", "pending", new Date(Date.now() + 150).toISOString())),
    });
    scheduler = createScheduler({
      config: { poll_interval: 3_600_000, update_on_start: true },
      runner,
      log: recordingLogger(),
    });
    scheduler.start();
    await waitFor(() => runner.calls.length === 1, "the startup cycle");
    await scheduler.stop();
    await Bun.sleep(300);
    expect(runner.calls).toHaveLength(1);
  });
});

describe("a window's opening during a cycle asked for before it", () => {
  test("one more cycle is asked for as the window opens (the runner runs it after the one under way)", async () => {
    let opensAt = 0;
    const runner = new FakeRunner({
      hold: true,
      report: (n) => {
        if (n > 0) return reportOf();
        opensAt = Date.now() + 400;
        return reportOf(entry("web", "pending", new Date(opensAt).toISOString()));
      },
    });
    scheduler = createScheduler({
      config: { poll_interval: 50, update_on_start: true },
      runner,
      log: recordingLogger(),
    });
    scheduler.start();
    await waitFor(() => runner.holding, "the startup cycle");
    runner.release();
    // the poll after it starts before the window opens, and is still running when it does
    await waitFor(() => runner.calls.length === 2 && runner.holding, "the poll's cycle");
    await waitFor(() => runner.calls.length === 3, "the cycle as the window opens", 5_000);
    expect(Date.now()).toBeGreaterThanOrEqual(opensAt);
    expect(runner.calls.map((call) => call.trigger)).toEqual(["startup", "schedule", "schedule"]);
    runner.release();
  });
});
