/**
 * The scheduler on a real croner schedule firing every second (6 fields), the skip-while-busy rule,
 * stop(), 5-field patterns, and the time zone taken from TZ. The runner is a small fake of our
 * own CycleRunner port: what is under test is when cycles are started.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { createScheduler, type Scheduler } from "../../../src/scheduler/index.ts";
import { recordingLogger } from "../../support/logger.ts";
import { FakeRunner, waitFor } from "../../unit/scheduler/fakes.ts";

let scheduler: Scheduler | undefined;
let runner: FakeRunner | undefined;

afterEach(async () => {
  const stopping = scheduler?.stop();
  if (runner?.holding) runner.release();
  await stopping;
  scheduler = undefined;
  runner = undefined;
});

function start(schedule: string, fake: FakeRunner, update_on_start = false) {
  const log = recordingLogger();
  runner = fake;
  scheduler = createScheduler({ config: { schedule, update_on_start }, runner: fake, log });
  scheduler.start();
  return log;
}

describe("schedule (cron)", () => {
  test("a 1-second cron (`* * * * * *`) starts a cycle every second, with trigger schedule", async () => {
    const fake = new FakeRunner();
    const log = start("* * * * * *", fake);
    await waitFor(() => fake.calls.length >= 3, "three cron cycles");
    expect(fake.ran.slice(0, 3)).toEqual(["schedule", "schedule", "schedule"]);
    expect(log.lines.some((l) => l.message === "scheduled by cron" && l.fields.schedule === "* * * * * *")).toBe(true);
  });

  test("a fire while a cycle runs reaches the runner, which skips and counts it; nothing is queued", async () => {
    const fake = new FakeRunner({ hold: true });
    start("* * * * * *", fake);
    await waitFor(() => fake.calls.length >= 3, "a cycle and two fires during it", 15_000);
    expect(fake.ran).toEqual(["schedule"]);
    expect(fake.skipped).toBe(fake.calls.length - 1);

    // Ending the long cycle does not replay the skipped fires; the next fire runs normally.
    const before = fake.calls.length;
    fake.release();
    await Bun.sleep(0);
    await Bun.sleep(0);
    expect(fake.calls.length).toBe(before);
    await waitFor(() => fake.ran.length === 2, "the next cron cycle");
    expect(fake.calls.length).toBe(before + 1);
  });

  test("update_on_start with a cron schedule: a startup cycle at once, then the cron fires", async () => {
    const fake = new FakeRunner();
    start("* * * * * *", fake, true);
    expect(fake.calls[0]?.trigger).toBe("startup");
    await waitFor(() => fake.ran.includes("schedule"), "a cron cycle");
  });

  test("stop() stops the cron job: no cycle afterwards", async () => {
    const fake = new FakeRunner();
    start("* * * * * *", fake);
    await waitFor(() => fake.calls.length >= 1, "a cron cycle");
    await scheduler!.stop();
    const count = fake.calls.length;
    await Bun.sleep(2_200);
    expect(fake.calls.length).toBe(count);
  });

  test("a 5-field pattern fires on minutes (seconds 0)", () => {
    const fake = new FakeRunner();
    const log = start("*/5 * * * *", fake);
    const next = new Date(String(log.lines.find((l) => l.message === "scheduled by cron")?.fields.next));
    expect(next.getSeconds()).toBe(0);
    expect(next.getMinutes() % 5).toBe(0);
    expect(next.getTime()).toBeGreaterThan(Date.now());
  });

  test("a stopped scheduler lets the process exit; a running one keeps it alive", async () => {
    const script = (stop: boolean) => `
      import { createScheduler } from ${JSON.stringify(`${import.meta.dir}/../../../src/scheduler/index.ts`)};
      import { silentLogger } from ${JSON.stringify(`${import.meta.dir}/../../../src/log/index.ts`)};
      const runner = { busy: false, run: async () => null };
      const s = createScheduler({ config: { schedule: "* * * * * *", update_on_start: false }, runner, log: silentLogger });
      s.start();
      ${stop ? "await s.stop();" : ""}
    `;
    const stopped = Bun.spawn(["bun", "-e", script(true)], { stdout: "ignore", stderr: "ignore" });
    const running = Bun.spawn(["bun", "-e", script(false)], { stdout: "ignore", stderr: "ignore" });
    try {
      expect(await stopped.exited).toBe(0);
      await Bun.sleep(1_500);
      expect(running.exitCode).toBeNull();
    } finally {
      stopped.kill();
      running.kill();
    }
  });
});

describe("time zone", () => {
  /** The next run of `0 0 9 * * *` as the scheduler computes it in a process with this TZ. */
  async function nextNineOClock(tz: string): Promise<Date> {
    const script = `
      import { createScheduler } from ${JSON.stringify(`${import.meta.dir}/../../../src/scheduler/index.ts`)};
      import { createLogging } from ${JSON.stringify(`${import.meta.dir}/../../../src/log/index.ts`)};
      import { defaultConfig, logSettings } from ${JSON.stringify(`${import.meta.dir}/../../../src/config/index.ts`)};
      const logging = createLogging(logSettings(defaultConfig({ log_format: "json" })));
      const runner = { busy: false, run: async () => null };
      const s = createScheduler({ config: { schedule: "0 0 9 * * *", update_on_start: false }, runner, log: logging.log });
      s.start();
      await s.stop();
      await logging.close();
    `;
    const proc = Bun.spawn(["bun", "-e", script], { stdout: "pipe", stderr: "pipe", env: { ...process.env, TZ: tz } });
    const [out, code] = [await new Response(proc.stdout).text(), await proc.exited];
    expect(code).toBe(0);
    const line = out
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l))
      .find((l) => l.message === "scheduled by cron");
    return new Date(line.fields.next);
  }

  test("cron times are read in the time zone of TZ", async () => {
    expect((await nextNineOClock("UTC")).getUTCHours()).toBe(9);
    expect((await nextNineOClock("Asia/Tokyo")).getUTCHours()).toBe(0); // 09:00 JST = 00:00 UTC
    expect((await nextNineOClock("America/New_York")).getUTCHours()).toBeOneOf([13, 14]); // EDT / EST
  });
});
