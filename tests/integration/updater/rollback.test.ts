/** Rollback on each of the three conditions, against the sandbox engine and registry. */
import { afterAll, describe, expect, test } from "bun:test";
import type { RunOptions } from "../../support/fixture.ts";
import { containersByPrefix, entryOf, expectState, Fixture, inspect, makeUpdater } from "./support.ts";

const fx = new Fixture();
afterAll(() => fx.cleanup(), 120_000);

async function expectRollback(
  what: string,
  badImage: { changes: string[] },
  options: RunOptions,
  reason: string,
  rollback = {},
) {
  const v1 = fx.image(what);
  const app = fx.run(what, v1.ref, options);
  const before = inspect(app);
  const bad = fx.image(what, badImage);
  const h = await makeUpdater({ containers: [app], rollback });

  const report = await h.updater.run("api");
  const entry = expectState(report, app, "rolled_back");
  expect(entry.reason).toContain(reason);
  expect(entry.id).toBe(before.Id);

  const after = inspect(app);
  expect(after.Id).toBe(before.Id);
  expect(after.Image).toBe(v1.id);
  expect(after.State.Running).toBe(true);
  expect(Object.keys(containersByPrefix(app))).toEqual([app]);
  expect(report!.counts.rolled_back).toBe(1);
  expect(h.metrics.snapshot().svc_containers_failed).toBe(1);
  expect(h.audit.entries.some((e) => e.action === "rollback" && e.container === app && e.error)).toBe(true);
  // the old container's own lines (its stop, its start again) name the image it runs, not the failed one
  const oldLines = h.audit.entries.filter((e) => e.container_id === before.Id && e.action !== "pull");
  expect(oldLines.map((e) => e.action)).toEqual(["rename", "stop", "start", "rename"]);
  for (const line of oldLines) expect(line.image).toBe(v1.id);

  // the same digest is not tried again in the next cycle
  const again = entryOf(await h.updater.run("api"), app);
  expect(again.state).toBe("skipped");
  expect(again.reason).toContain(bad.digest!);
  expect(inspect(app).Id).toBe(before.Id);
  return { entry, h, app, v1 };
}

describe("rollback", () => {
  test("a failed version that ran on an unguarded volume is told that data_guard would have kept it", async () => {
    const volume = fx.volume("unguarded-data");
    const { entry } = await expectRollback(
      "unguarded",
      { changes: ['CMD ["/bin/sh","-c","echo rewritten > /data/f; exit 3"]'] },
      { binds: [`${volume}:/data`] },
      "exited with code 3",
      { startup_timeout: 20_000 },
    );
    expect(entry.reason).toContain(
      `the failed version ran on ${volume} (/data) with no copy taken: what it changed there stays; data_guard would have kept a copy and put it back`,
    );
  }, 60_000);

  test("on a non-zero exit code, with the failed container's last log lines", async () => {
    const { entry } = await expectRollback(
      "exit",
      { changes: ['CMD ["/bin/sh","-c","echo config is broken; exit 3"]'] },
      {},
      "exited with code 3",
      { startup_timeout: 20_000 },
    );
    expect(entry.reason).toContain("config is broken");
  }, 60_000);

  test("on an unhealthy healthcheck", async () => {
    await expectRollback(
      "unhealthy",
      { changes: ["HEALTHCHECK --interval=1s --retries=1 CMD false", 'CMD ["/bin/sleep","3600"]'] },
      {},
      "unhealthy",
      { startup_timeout: 20_000 },
    );
  }, 60_000);

  test("on not becoming healthy within startup_timeout", async () => {
    await expectRollback(
      "slow",
      { changes: ["HEALTHCHECK --interval=60s CMD true", 'CMD ["/bin/sleep","3600"]'] },
      {},
      "not healthy within the startup timeout",
    );
  }, 60_000);

  test("on a restart loop", async () => {
    await expectRollback(
      "loop",
      { changes: ['CMD ["/bin/sh","-c","exit 0"]'] },
      { restart: "always" },
      "restart loop",
      { startup_timeout: 20_000 },
    );
  }, 60_000);

  test("a healthcheck set on the container counts too (--health-cmd false)", async () => {
    const v1 = fx.image("hcflag");
    const app = fx.run("hcflag", v1.ref, { healthcheck: { cmd: "test ! -e /broken", intervalMs: 1000, retries: 1 } });
    fx.image("hcflag", { changes: ['CMD ["/bin/sh","-c","touch /broken; exec sleep 3600"]'] });
    // a generous timeout: the rollback must come from the healthcheck, however loaded the machine
    const h = await makeUpdater({ containers: [app], rollback: { startup_timeout: 20_000 } });
    const entry = expectState(await h.updater.run("api"), app, "rolled_back");
    expect(entry.reason).toContain("unhealthy");
    expect(inspect(app).Image).toBe(v1.id);
  }, 60_000);

  test("with a check turned off, the failing container is kept", async () => {
    const v1 = fx.image("off");
    const app = fx.run("off", v1.ref);
    const bad = fx.image("off", { changes: ["HEALTHCHECK --interval=60s CMD true", 'CMD ["/bin/sleep","3600"]'] });
    const h = await makeUpdater({ containers: [app], rollback: { on_timeout: false } });
    expectState(await h.updater.run("api"), app, "updated");
    expect(inspect(app).Image).toBe(bad.id);
    expect(v1.id).not.toBe(bad.id);
  }, 60_000);
});
