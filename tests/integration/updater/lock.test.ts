/** One cycle at a time, an unreachable engine, and a graceful stop, against the real engine. */
import { afterAll, expect, test } from "bun:test";
import { defaultConfig } from "../../../src/config/index.ts";
import { createDockerEngine } from "../../../src/engine/index.ts";
import { silentAudit, silentLogger } from "../../../src/log/index.ts";
import { Metrics } from "../../../src/metrics/index.ts";
import { createRegistry } from "../../../src/registry/index.ts";
import { createUpdater } from "../../../src/updater/index.ts";
import { expectState, Fixture, inspect, makeUpdater } from "./support.ts";

const fx = new Fixture();
afterAll(() => fx.cleanup(), 120_000);

test("a second request while a cycle runs resolves null at once and is counted as skipped", async () => {
  const v1 = fx.image("busy");
  const app = fx.run("busy", v1.ref);
  const v2 = fx.image("busy");
  const h = await makeUpdater({ containers: [app] });
  const first = h.updater.run("schedule");
  expect(h.updater.busy).toBe(true);
  expect(await h.updater.run("api")).toBeNull();
  expect(await h.updater.run("api")).toBeNull();
  const report = await first;
  expectState(report, app, "updated");
  expect(inspect(app).Image).toBe(v2.id);
  expect(h.updater.busy).toBe(false);
  expect(h.metrics.snapshot()).toEqual({
    svc_scans_total: 1,
    svc_scans_skipped: 2,
    svc_containers_scanned: 1,
    svc_containers_updated: 1,
    svc_containers_failed: 0,
  });
}, 60_000);

test("an unreachable engine: each cycle rejects with one engine error, the updater stays usable", async () => {
  const config = defaultConfig({ docker: { host: `unix:///tmp/${fx.prefix}-missing.sock` } });
  const metrics = new Metrics();
  const updater = createUpdater({
    config,
    engine: await createDockerEngine(config.docker, silentLogger),
    registry: createRegistry(config, silentLogger),
    metrics,
    log: silentLogger,
    audit: silentAudit,
  });
  for (let i = 0; i < 2; i++) {
    const error = await updater.run("schedule").then(
      () => null,
      (e) => e,
    );
    expect(error?.kind).toBe("engine");
    expect(error?.message).toContain("cannot list containers");
    expect(updater.busy).toBe(false);
  }
  expect(metrics.snapshot().svc_scans_total).toBe(0);
});

test("drain lets the running update finish, then no new cycle starts", async () => {
  const v1 = fx.image("drain");
  const app = fx.run("drain", v1.ref);
  const v2 = fx.image("drain");
  const h = await makeUpdater({ containers: [app] });
  const cycle = h.updater.run("schedule");
  // the cycle has listed and begun work once the first audit entry exists
  while (h.audit.entries.length === 0) await Bun.sleep(20);
  await h.updater.drain();
  const report = await cycle;
  expectState(report, app, "updated");
  expect(inspect(app).Image).toBe(v2.id);
  expect(inspect(app).State.Running).toBe(true);
  expect(await h.updater.run("api")).toBeNull();
}, 60_000);
