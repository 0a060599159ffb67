/**
 * `svc rollback NAME --with-data` a day later (an injected clock): v2 ran and rewrote its data;
 * the rollback copies the present data first, then puts back the copy of v1's and starts v1 on it.
 * A copy past data_guard_keep is gone, and the rollback with data says so (docs/data-guard.md).
 */
import { afterAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { CopyList, CopyStore, DataGuard, dataGuardOptions } from "../../../src/dataguard/index.ts";
import { docker } from "../../harness.ts";
import { decorate, MIGRATE_V2, manifestOf, WRITE_V1, waitForVersion } from "./data-guard-support.ts";
import { expectState, Fixture, inspect, makeUpdater } from "./support.ts";

const fx = new Fixture();
afterAll(() => fx.cleanup(), 120_000);

const DAY = 86_400_000;
const V1_CHANGES = [`CMD ${JSON.stringify(["/bin/sh", "-c", `${WRITE_V1}; exec sleep 3600`])}`];
const V2_CHANGES = [
  `CMD ${JSON.stringify(["/bin/sh", "-c", `test -e /data/new || (${MIGRATE_V2}); exec sleep 3600`])}`,
];

async function updatedToV2(what: string, clock: { now: number }) {
  const volume = fx.volume(`${what}-vol`);
  const v1 = fx.image(what, { changes: V1_CHANGES });
  const app = fx.run(what, v1.ref, { binds: [`${volume}:/data`] });
  await waitForVersion(app, "v1");
  const before = decorate(app);
  const v2 = fx.image(what, { changes: V2_CHANGES });
  const dir = join(fx.tempDir(`${what}-copies`), "copies");
  const h = await makeUpdater(
    { containers: [app], data_guard: "volumes", data_guard_dir: dir },
    { guard: (engine, config) => new DataGuard(engine, dataGuardOptions(config), () => new Date(clock.now)) },
  );
  expectState(await h.updater.run("api"), app, "updated");
  await waitForVersion(app, "v2");
  return { app, v1, v2, before, dir, h };
}

describe("svc rollback --with-data", () => {
  test("a day later: v1 back on its own data; the present data copied first", async () => {
    const clock = { now: Date.now() };
    const s = await updatedToV2("withdata", clock);
    clock.now += DAY;
    // a cycle a day later keeps the copy (data_guard_keep is 7 days)
    expectState(await s.h.updater.run("schedule"), s.app, "fresh");

    const result = await s.h.updater.rollback(s.app, "api", { withData: true });
    expect(result?.state, JSON.stringify(result)).toBe("updated");
    expect(result!.data_guard).toMatchObject({ restored: true });
    expect(inspect(s.app).Image).toBe(s.v1.id);
    expect(docker(["exec", s.app, "cat", "/data/version"]).stdout.trim()).toBe("v1");
    expect(manifestOf(s.app)).toEqual(s.before);
    // the one copy left is v2's data, taken before the rollback: it can be undone in turn
    const copies = new CopyList(new CopyStore(s.dir), 7 * DAY).list();
    expect(copies.map((c) => [c.container, c.image_id])).toEqual([[s.app, s.v2.id]]);
  }, 240_000); // a hang limit: two copies, a restore and the helper image's first import took 70-120 s at load

  test("past data_guard_keep the copy is gone: the rollback with data says so and touches nothing", async () => {
    const clock = { now: Date.now() };
    const s = await updatedToV2("expired", clock);
    clock.now += 8 * DAY;
    expectState(await s.h.updater.run("schedule"), s.app, "fresh");
    const id = inspect(s.app).Id;
    await expect(s.h.updater.rollback(s.app, "api", { withData: true })).rejects.toThrow("keeps no copy");
    expect(inspect(s.app).Id).toBe(id);
    expect(docker(["exec", s.app, "cat", "/data/version"]).stdout.trim()).toBe("v2");
  }, 240_000);
});
