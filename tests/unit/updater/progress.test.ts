import { expect, test } from "bun:test";
import { defaultConfig } from "../../../src/config/index.ts";
import { silentLogger } from "../../../src/log/index.ts";
import { Metrics } from "../../../src/metrics/index.ts";
import { createUpdater, type ProgressEvent } from "../../../src/updater/index.ts";
import { FakeEngine, FakeRegistry, MemoryAudit } from "./fakes.ts";

test("a cycle tells each step as it starts, in order, with its session; a throwing listener changes nothing", async () => {
  const engine = new FakeEngine();
  const registry = new FakeRegistry(engine);
  engine.addImage("r.io/app:1");
  engine.addImage("r.io/db:1");
  engine.addContainer("app", "r.io/app:1");
  engine.addContainer("db", "r.io/db:1");
  engine.publish("r.io/db:1");
  const events: ProgressEvent[] = [];
  const updater = createUpdater({
    config: defaultConfig({ stop_timeout: 1000, rollback: { startup_timeout: 200 } }),
    engine,
    registry,
    metrics: new Metrics(),
    log: silentLogger,
    audit: new MemoryAudit(),
    timing: { pollMs: 5, stableMs: 20 },
    progress: (event) => {
      events.push(event);
      throw new Error("a listener that fails");
    },
  });
  const report = await updater.run("api");
  expect(report!.containers.find((c) => c.name === "db")!.state).toBe("updated");
  expect(
    events
      .filter((e) => e.step === "check")
      .map((e) => e.container)
      .sort(),
  ).toEqual(["app", "db"]);
  const steps = events.filter((e) => e.container === "db" && e.step !== "check").map((e) => e.step);
  expect(steps).toEqual(["pull", "rename", "stop", "create", "start", "watch", "remove"]);
  const sessions = new Set(events.map((e) => e.session_id));
  expect(sessions.size).toBe(1);
  expect([...sessions][0]).toMatch(/^[0-9a-f-]{36}$/);
  expect(events.every((e) => e.trigger === "api")).toBe(true);
});
