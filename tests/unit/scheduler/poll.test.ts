/**
 * poll_interval and update_on_start (docs/configuration.md), driven by a fake runner with
 * short real intervals. Assertions are about which cycles start and in what order, never about
 * how precisely a timer fired.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { createScheduler, type Scheduler } from "../../../src/scheduler/index.ts";
import { recordingLogger } from "../../support/logger.ts";
import { FakeRunner, waitFor } from "./fakes.ts";

const INTERVAL = 40;
let scheduler: Scheduler | undefined;
let runner: FakeRunner | undefined;

afterEach(async () => {
  const stopping = scheduler?.stop();
  if (runner?.holding) runner.release();
  await stopping;
  scheduler = undefined;
  runner = undefined;
});

function start(config: { poll_interval?: number; schedule?: string; update_on_start?: boolean }, fake: FakeRunner) {
  const log = recordingLogger();
  runner = fake;
  scheduler = createScheduler({ config: { update_on_start: false, ...config }, runner: fake, log });
  scheduler.start();
  return log;
}

describe("poll_interval", () => {
  test("the first cycle starts one interval after start, not at start", async () => {
    const runner = new FakeRunner();
    const startedAt = performance.now();
    start({ poll_interval: 200 }, runner);
    await Bun.sleep(0);
    expect(runner.calls).toHaveLength(0);
    await waitFor(() => runner.calls.length === 1, "first cycle");
    expect(runner.calls[0]!.trigger).toBe("schedule");
    expect(runner.calls[0]!.at - startedAt).toBeGreaterThanOrEqual(200 - 2);
  });

  test("the next cycle waits one interval after the END of the previous one", async () => {
    const runner = new FakeRunner({ hold: true });
    start({ poll_interval: INTERVAL }, runner);
    await waitFor(() => runner.calls.length === 1, "first cycle");

    // The cycle takes many intervals: no other cycle is started meanwhile (none queued, none skipped).
    await Bun.sleep(INTERVAL * 8);
    expect(runner.calls).toHaveLength(1);

    runner.release();
    await waitFor(() => runner.calls.length === 2, "second cycle");
    expect(runner.calls.map((c) => c.outcome)).toEqual(["ran", "ran"]);
    expect(runner.calls[1]!.at - runner.finished[0]!).toBeGreaterThanOrEqual(INTERVAL - 2);

    runner.release();
    await waitFor(() => runner.calls.length === 3, "third cycle");
    expect(runner.ran).toEqual(["schedule", "schedule", "schedule"]);
    expect(runner.skipped).toBe(0);
  });

  test("a poll that finds another cycle running (the API's) is skipped, counted, and polling goes on", async () => {
    const runner = new FakeRunner();
    runner.setExternallyBusy(true);
    const log = start({ poll_interval: INTERVAL }, runner);
    await waitFor(() => runner.skipped === 2, "two skipped polls");
    expect(runner.calls.every((c) => c.outcome === "skipped" && c.trigger === "schedule")).toBe(true);
    expect(log.lines.some((l) => l.message.includes("skipped") && l.level === "info")).toBe(true);

    runner.setExternallyBusy(false);
    await waitFor(() => runner.ran.length === 1, "a cycle once the other one ended");
  });

  test("a cycle that throws is logged and polling goes on", async () => {
    const runner = new FakeRunner({ fail: true });
    const log = start({ poll_interval: INTERVAL }, runner);
    await waitFor(() => runner.calls.length === 2, "two cycles");
    const failure = log.lines.find((l) => l.level === "error");
    expect(failure?.message).toBe("cycle failed");
    expect(failure?.fields.error).toBe("cycle exploded");
    expect(failure?.target).toBe("svc::scheduler");
  });

  test("an interval longer than a timer can hold (about 24.8 days) is waited in full, not fired at once", async () => {
    const runner = new FakeRunner();
    start({ poll_interval: 30 * 24 * 3_600_000 }, runner);
    await Bun.sleep(INTERVAL * 3);
    expect(runner.calls).toHaveLength(0);
  });

  test("stop() stops polling: no cycle starts afterwards", async () => {
    const runner = new FakeRunner();
    start({ poll_interval: INTERVAL }, runner);
    await waitFor(() => runner.calls.length === 2, "two cycles");
    await scheduler!.stop();
    const count = runner.calls.length;
    await Bun.sleep(INTERVAL * 5);
    expect(runner.calls).toHaveLength(count);
  });

  test("stop() during a cycle: no next cycle, and stop resolves only when that cycle has ended", async () => {
    const runner = new FakeRunner({ hold: true });
    start({ poll_interval: INTERVAL }, runner);
    await waitFor(() => runner.calls.length === 1, "first cycle");
    let stopped = false;
    const stopping = scheduler!.stop().then(() => {
      stopped = true;
    });
    await Bun.sleep(INTERVAL * 2);
    expect(stopped).toBe(false);
    runner.release();
    await stopping;
    await Bun.sleep(INTERVAL * 4);
    expect(runner.calls).toHaveLength(1);
  });
});

describe("update_on_start", () => {
  test("runs one startup cycle right at start, then polls one interval after it ended", async () => {
    const runner = new FakeRunner({ hold: true });
    start({ poll_interval: INTERVAL, update_on_start: true }, runner);
    expect(runner.calls.map((c) => c.trigger)).toEqual(["startup"]);

    await Bun.sleep(INTERVAL * 5);
    expect(runner.calls).toHaveLength(1);
    runner.release();
    await waitFor(() => runner.calls.length === 2, "first poll");
    expect(runner.ran).toEqual(["startup", "schedule"]);
    expect(runner.calls[1]!.at - runner.finished[0]!).toBeGreaterThanOrEqual(INTERVAL - 2);
  });

  test("without poll_interval or schedule (update API only), it runs the startup cycle and nothing else", async () => {
    const runner = new FakeRunner();
    start({ update_on_start: true }, runner);
    expect(runner.calls.map((c) => c.trigger)).toEqual(["startup"]);
    await Bun.sleep(INTERVAL * 4);
    expect(runner.calls).toHaveLength(1);
  });

  test("off by default: nothing runs at start", async () => {
    const runner = new FakeRunner();
    start({ poll_interval: 10_000 }, runner);
    await Bun.sleep(INTERVAL * 2);
    expect(runner.calls).toHaveLength(0);
  });

  test("start() twice starts one set of timers", async () => {
    const runner = new FakeRunner();
    start({ poll_interval: INTERVAL, update_on_start: true }, runner);
    scheduler!.start();
    expect(runner.calls).toHaveLength(1);
    await waitFor(() => runner.calls.length >= 3, "a few polls");
    await scheduler!.stop();
    expect(runner.skipped).toBe(0);
  });
});
