import { expect, test } from "bun:test";
import { defaultConfig } from "../../../src/config/index.ts";
import { silentLogger } from "../../../src/log/index.ts";
import { Metrics } from "../../../src/metrics/index.ts";
import { createUpdater } from "../../../src/updater/index.ts";
import { oldContainerName } from "../../../src/updater/selection/names.ts";
import { FakeEngine, FakeRegistry, MemoryAudit } from "./fakes.ts";

function setup(selfContainerId?: string, engine = new FakeEngine()) {
  const audit = new MemoryAudit();
  const config = defaultConfig({ stop_timeout: 1000, rollback: { startup_timeout: 200 } });
  const updater = createUpdater({
    config,
    engine,
    registry: new FakeRegistry(engine),
    metrics: new Metrics(),
    log: silentLogger,
    audit,
    selfContainerId,
    timing: { pollMs: 5, stableMs: 20 },
  });
  engine.addImage("r.io/app:1");
  return { engine, audit, updater };
}

test("a parked container without a replacement gets its name back and is started if it ran", async () => {
  const { engine, audit, updater } = setup();
  const ran = engine.addContainer("x", "r.io/app:1", { state: "exited" });
  ran.name = oldContainerName("web", ran.id, true);
  const stopped = engine.addContainer("y", "r.io/app:1", { state: "exited" });
  stopped.name = oldContainerName("job", stopped.id, false);
  await updater.recover();
  expect(engine.byName("web")).toMatchObject({ id: ran.id, state: "running" });
  expect(engine.byName("job")).toMatchObject({ id: stopped.id, state: "exited" });
  expect(
    audit.entries
      .filter((e) => e.action === "recover")
      .map((e) => e.container)
      .sort(),
  ).toEqual(["job", "web"]);
  // started while the parked name still tells a later recovery what to do, then renamed back
  expect(engine.events.filter((e) => e.includes(ran.id.slice(0, 12)))).toEqual([
    `start:${oldContainerName("web", ran.id, true)}`,
    `rename:${oldContainerName("web", ran.id, true)}->web`,
  ]);
});

test("a running replacement that passes the checks finishes the update", async () => {
  const { engine, updater } = setup();
  const old = engine.addContainer("x", "r.io/app:1", { state: "exited" });
  old.name = oldContainerName("web", old.id, true);
  const fresh = engine.addContainer("web", "r.io/app:1");
  await updater.recover();
  expect(engine.containers.size).toBe(1);
  expect(engine.byName("web")!.id).toBe(fresh.id);
});

test("a half-made or failing replacement is removed and the old container restored", async () => {
  const { engine, updater } = setup();
  const old = engine.addContainer("x", "r.io/app:1", { state: "exited" });
  old.name = oldContainerName("web", old.id, true);
  engine.addContainer("web", "r.io/app:1", { state: "created" });
  const old2 = engine.addContainer("x2", "r.io/app:1", { state: "exited" });
  old2.name = oldContainerName("api", old2.id, true);
  engine.addContainer("api", "r.io/app:1", { state: "running", health: "unhealthy" });
  await updater.recover();
  expect(engine.containers.size).toBe(2);
  expect(engine.byName("web")).toMatchObject({ id: old.id, state: "running" });
  expect(engine.byName("api")).toMatchObject({ id: old2.id, state: "running" });
});

test("svc's own running predecessor is left to stop by itself, then removed", async () => {
  const engine = new FakeEngine();
  engine.addImage("r.io/app:1");
  const predecessor = engine.addContainer("x", "r.io/app:1", { state: "running" });
  predecessor.name = oldContainerName("svc", predecessor.id, true);
  const me = engine.addContainer("svc", "r.io/app:1");
  const { updater } = setup(me.id, engine);
  await updater.recover();
  expect(engine.containers.has(predecessor.id)).toBe(true);
  predecessor.state = "exited";
  for (let i = 0; i < 50 && engine.containers.has(predecessor.id); i++) await Bun.sleep(100);
  expect(engine.containers.has(predecessor.id)).toBe(false);
  expect(engine.byName("svc")!.id).toBe(me.id);
});

test("a recovery the engine was down for is retried before the next cycle", async () => {
  const { engine, updater } = setup();
  const old = engine.addContainer("x", "r.io/app:1", { state: "exited" });
  old.name = oldContainerName("web", old.id, true);
  engine.unreachable = true;
  await expect(updater.recover()).rejects.toMatchObject({ kind: "engine" });
  engine.unreachable = false;
  const report = await updater.run("schedule");
  expect(engine.byName("web")).toMatchObject({ id: old.id, state: "running" });
  expect(report!.containers.map((c) => c.name)).toEqual(["web"]);
});

test("recovery leaves alone the leftovers of containers outside its selection (another instance's update)", async () => {
  const engine = new FakeEngine();
  engine.addImage("r.io/app:1");
  const theirs = engine.addContainer("x", "r.io/app:1", { state: "exited", labels: { "svc.scope": "blue" } });
  theirs.name = oldContainerName("blue-web", theirs.id, true);
  const unlisted = engine.addContainer("y", "r.io/app:1", { state: "exited" });
  unlisted.name = oldContainerName("other", unlisted.id, true);
  const mine = engine.addContainer("z", "r.io/app:1", { state: "exited" });
  mine.name = oldContainerName("web", mine.id, true);
  const config = defaultConfig({ containers: ["web", "blue-web"] });
  const updater = createUpdater({
    config,
    engine,
    registry: new FakeRegistry(engine),
    metrics: new Metrics(),
    log: silentLogger,
    audit: new MemoryAudit(),
  });
  await updater.recover();
  expect(engine.byName("web")!.id).toBe(mine.id);
  expect(theirs.name).toContain(".svc-old-");
  expect(unlisted.name).toContain(".svc-old-");
});

test("a cycle that finds a leftover repairs it before selecting", async () => {
  const { engine, updater, audit } = setup();
  const parked = engine.addContainer("x", "r.io/app:1", { state: "exited" });
  parked.name = oldContainerName("web", parked.id, true);
  const report = await updater.run("schedule");
  expect(engine.byName("web")).toMatchObject({ id: parked.id, state: "running" });
  expect(report!.containers.map((c) => [c.name, c.state])).toEqual([["web", "fresh"]]);
  expect(audit.entries.some((e) => e.action === "recover")).toBe(true);
  expect(engine.listCalls).toBe(3); // the cycle's, recovery's, and the cycle's again
});

test("a filtered cycle repairs only leftovers its filter selects", async () => {
  const { engine, updater } = setup();
  const other = engine.addContainer("x", "r.io/app:1", { state: "exited" });
  other.name = oldContainerName("other", other.id, true);
  engine.addContainer("web", "r.io/app:1");
  await updater.run("api", { container: ["web"] });
  expect(other.name).toContain(".svc-old-");
  await updater.run("api", { container: ["other"] });
  expect(engine.byName("other")).toMatchObject({ id: other.id, state: "running" });
});

test("a parked container that still runs (a stop the killed svc sent may be under way) is stopped, started, then renamed back", async () => {
  const { engine, audit, updater } = setup();
  const parked = engine.addContainer("x", "r.io/app:1", {
    state: "running",
    stopTimeout: 6,
    labels: { "svc.stop_signal": "SIGHUP" },
  });
  const name = oldContainerName("web", parked.id, true);
  parked.name = name;
  await updater.recover();
  expect(engine.events).toEqual([`stop:${name}`, `start:${name}`, `rename:${name}->web`]);
  expect(engine.stops).toEqual([{ name, timeoutMs: 6000, signal: "SIGHUP" }]);
  expect(engine.byName("web")).toMatchObject({ id: parked.id, state: "running" });
  expect(audit.entries.map((e) => e.action)).toEqual(["stop", "start", "rename", "recover"]);
});
