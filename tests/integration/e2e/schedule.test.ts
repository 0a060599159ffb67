/**
 * Scheduled cycles, as a user runs them: `--poll-interval 2s` or a 6-field cron, no API call.
 * A newer image is picked up by itself; we poll the engine (no timed assertion).
 */
import { afterAll, describe, expect, test } from "bun:test";
import { docker, inspect, waitUntil } from "../../harness.ts";
import { Fixture, baseFlags, parseJsonLines, startSvc, stopAll } from "./support.ts";

const fx = new Fixture("e2e-sched");

afterAll(async () => {
  await stopAll();
  fx.cleanup();
});

async function picksUpNewImage(what: string, scheduleFlags: string[]): Promise<void> {
  const name = fx.name(what);
  const v1 = fx.image(what);
  fx.run(what, v1.ref, ["-e", "KEEP=1"]);
  const oldId = inspect(name).Id;
  const svc = startSvc([...baseFlags(), ...scheduleFlags, name]);
  const v2 = fx.image(what);

  await waitUntil(
    () => {
      if (!svc.running) throw new Error(`svc exited (${svc.proc.exitCode})\n${svc.describe()}`);
      // mid-update the name is briefly absent (the old container is renamed first)
      const found = docker(["inspect", "--format", "{{.Image}} {{.State.Running}}", name], { allowFailure: true });
      return found.code === 0 && found.stdout === `${v2.id} true`;
    },
    60_000,
    `${name} to run the new image`,
  );
  const now = inspect(name);
  expect(now.Id).not.toBe(oldId);
  expect(now.Config.Env).toContain("KEEP=1");

  // The cycle that did it was a scheduled one, and svc said so.
  await waitUntil(() => svc.records().some((r) => r.message === "cycle finished" && r.fields?.updated === 1), 10_000, "the cycle-finished log line").catch(() => {});
  const finished = svc.records().filter((r) => r.message === "cycle finished" && r.fields?.updated === 1);
  expect(finished.length, svc.describe()).toBeGreaterThan(0);
  expect(finished[0].fields.trigger).toBe("schedule");

  svc.signal("SIGTERM");
  expect(await svc.exit(30_000), svc.describe()).toBe(0);
}

describe("scheduled updates without any API call", () => {
  test("--poll-interval 2s updates a container whose image got newer", async () => {
    await picksUpNewImage("poll", ["--poll-interval", "2s"]);
  }, 90_000);

  test("--schedule '*/1 * * * * *' (6-field cron) updates a container whose image got newer", async () => {
    await picksUpNewImage("cron", ["--schedule", "*/1 * * * * *"]);
  }, 90_000);

  test("a poll-interval service that finds nothing to do keeps running and leaves the container alone", async () => {
    const name = fx.name("idle");
    const image = fx.image("idle");
    fx.run("idle", image.ref);
    const oldId = inspect(name).Id;
    const svc = startSvc([...baseFlags(), "--poll-interval", "1s", name]);
    // two scheduled cycles have run
    await waitUntil(() => {
      if (!svc.running) throw new Error(`svc exited\n${svc.describe()}`);
      return parseJsonLines(svc.stdout).filter((r) => r.message === "cycle finished").length >= 2;
    }, 30_000, "two cycles");
    const cycles = svc.records().filter((r) => r.message === "cycle finished");
    expect(cycles.every((r) => r.fields.fresh === 1 && r.fields.updated === 0)).toBe(true);
    expect(inspect(name).Id).toBe(oldId);
    svc.signal("SIGTERM");
    expect(await svc.exit(30_000), svc.describe()).toBe(0);
  }, 60_000);
});
