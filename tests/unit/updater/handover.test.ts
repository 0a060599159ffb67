/**
 * Self-update of a container that publishes ports: the old svc parks itself, creates its
 * replacement and a handover helper; the helper (completeHandover) stops the old one, starts and
 * watches the new one, and keeps it or puts the old one back. Recovery leaves a running handover alone.
 */
import { describe, expect, test } from "bun:test";
import { defaultConfig } from "../../../src/config/index.ts";
import { silentLogger } from "../../../src/log/index.ts";
import { Metrics } from "../../../src/metrics/index.ts";
import { completeHandover, needsHandover } from "../../../src/updater/containers/handover.ts";
import type { ProtocolContext } from "../../../src/updater/cycle/context.ts";
import { createUpdater } from "../../../src/updater/index.ts";
import { handoverContainerName, oldContainerName } from "../../../src/updater/selection/names.ts";
import { type Behaviour, FakeEngine, FakeRegistry, MemoryAudit } from "./fakes.ts";

const PORTS = { "8080/tcp": [{ HostIp: "127.0.0.1", HostPort: "18080" }] };
const config = defaultConfig({ stop_timeout: 1000, rollback: { startup_timeout: 200 } });

function setup(behaviour: Behaviour) {
  const engine = new FakeEngine();
  engine.addImage("r.io/svc:1");
  const me = engine.addContainer("svc", "r.io/svc:1", {
    portBindings: PORTS,
    labels: { "svc.scope": "s1", "com.example": "x" },
  });
  engine.publish("r.io/svc:1", { behaviour });
  const steps: string[] = [];
  const audit = new MemoryAudit();
  const updater = createUpdater({
    config: defaultConfig({ ...config, scope: "s1" }),
    engine,
    registry: new FakeRegistry(engine),
    metrics: new Metrics(),
    log: silentLogger,
    audit,
    selfContainerId: me.id,
    timing: { pollMs: 5, stableMs: 20 },
    selfHandover: { release: async () => void steps.push("release"), reclaim: async () => void steps.push("reclaim") },
  });
  return { engine, me, steps, updater, audit };
}

const ctxOf = (engine: FakeEngine, audit = new MemoryAudit()): ProtocolContext => ({
  engine,
  config,
  log: silentLogger,
  audit,
  trigger: "self_update",
  timing: { pollMs: 5, stableMs: 20 },
});

/** Runs the old svc's cycle; returns what the helper would be started with. */
async function handedOver(behaviour: Behaviour, drain = true) {
  const s = setup(behaviour);
  const report = await s.updater.run("api");
  const helper = s.engine.helpers[0]!;
  if (drain) await s.updater.drain(); // the helper's stop: SIGTERM, the service drains
  const [, oldId, newId, name] = helper.cmd;
  // the engine removes the helper once it has finished (AutoRemove)
  const helperExits = () => void s.engine.containers.delete(helper.id);
  return {
    ...s,
    report,
    helper,
    helperExits,
    job: { oldId: oldId!, newId: newId!, name: name!, stopTimeoutMs: 1000, settleMs: 0 },
  };
}

describe("needsHandover", () => {
  test("only published ports off the host network need a helper", () => {
    const inspect = (host: object) => ({ HostConfig: host }) as any;
    expect(needsHandover(inspect({ NetworkMode: "bridge", PortBindings: PORTS }))).toBe(true);
    expect(needsHandover(inspect({ NetworkMode: "host", PortBindings: PORTS }))).toBe(false);
    expect(needsHandover(inspect({ NetworkMode: "bridge", PortBindings: {} }))).toBe(false);
    expect(needsHandover(inspect({ NetworkMode: "bridge", PortBindings: { "8080/tcp": null } }))).toBe(false);
  });
});

describe("self-update with published ports", () => {
  test("the old svc parks itself (still running), creates the replacement unstarted and starts a helper", async () => {
    const { engine, me, steps, report, helper, job } = await handedOver("ok");
    expect(report!.containers.find((c) => c.name === "svc")?.state).toBe("updated");
    expect(steps).toEqual([]); // keeps serving until the helper stops it
    expect(engine.containers.get(me.id)).toMatchObject({
      name: oldContainerName("svc", me.id, true),
      state: "running",
    });
    expect(engine.byName("svc")).toMatchObject({ id: job.newId, state: "created" });
    expect(job.oldId).toBe(me.id);
    expect(helper).toMatchObject({
      name: handoverContainerName("svc", job.newId),
      image: "r.io/svc:1",
      labels: { "svc.scope": "s1" },
    });
    expect(engine.events.slice(-2)).toEqual([`helper:${helper.name}`, `start-helper:${helper.name}`]);
    expect(engine.containers.get(helper.id)!.state).toBe("running");
  });

  test("the helper stops the old svc, starts the new one and removes the old one once it passes", async () => {
    const { engine, me, job, helperExits } = await handedOver("ok");
    const audit = new MemoryAudit();
    const outcome = await completeHandover(ctxOf(engine, audit), job);
    helperExits();
    expect(outcome.kind).toBe("replaced");
    expect(engine.containers.has(me.id)).toBe(false);
    expect(engine.byName("svc")).toMatchObject({ id: job.newId, state: "running" });
    expect(engine.containers.size).toBe(1);
    expect(audit.entries.map((e) => `${e.action}:${e.trigger}`)).toEqual([
      "stop:self_update",
      "start:self_update",
      "remove:self_update",
    ]);
  });

  test("a failing replacement is removed and the old svc runs again under its name", async () => {
    const { engine, me, job, helperExits } = await handedOver("exit1");
    const audit = new MemoryAudit();
    const outcome = await completeHandover(ctxOf(engine, audit), job);
    helperExits();
    expect(outcome.kind).toBe("rolled_back");
    expect(engine.containers.size).toBe(1);
    expect(engine.byName("svc")).toMatchObject({ id: me.id, state: "running" });
    expect(audit.entries.map((e) => e.action)).toEqual(["stop", "start", "rollback", "remove", "start", "rename"]);
  });

  test("a replacement that cannot be started: the old svc is back", async () => {
    const { engine, me, job, helperExits } = await handedOver("ok");
    engine.failures.add("start:svc");
    const outcome = await completeHandover(ctxOf(engine), job);
    helperExits();
    expect(outcome.kind).toBe("failed");
    expect(engine.containers.size).toBe(1);
    expect(engine.byName("svc")).toMatchObject({ id: me.id, state: "running" });
  });

  test("a helper that cannot be created: the replacement is removed, the old svc keeps its name", async () => {
    const s = setup("ok");
    // fail the helper's create: its name is only known once the replacement exists
    const createHelper = s.engine.createHelper.bind(s.engine);
    s.engine.createHelper = async () => {
      throw new Error("no space left");
    };
    const report = await s.updater.run("api");
    s.engine.createHelper = createHelper;
    expect(report!.containers.find((c) => c.name === "svc")?.state).toBe("failed");
    expect(s.engine.containers.size).toBe(1);
    expect(s.engine.byName("svc")).toMatchObject({ id: s.me.id, state: "running" });
  });
});

describe("recovery and handover containers", () => {
  function recoverySetup(helperState: "running" | "exited") {
    const engine = new FakeEngine();
    engine.addImage("r.io/svc:1");
    const old = engine.addContainer("x", "r.io/svc:1", { state: "exited" });
    old.name = oldContainerName("svc", old.id, true);
    const fresh = engine.addContainer("svc", "r.io/svc:1", { state: "running" });
    const helper = engine.addContainer(handoverContainerName("svc", fresh.id), "r.io/svc:1", { state: helperState });
    const updater = createUpdater({
      config,
      engine,
      registry: new FakeRegistry(engine),
      metrics: new Metrics(),
      log: silentLogger,
      audit: new MemoryAudit(),
      selfContainerId: fresh.id,
      timing: { pollMs: 5, stableMs: 20 },
    });
    return { engine, old, fresh, helper, updater };
  }

  test("while a handover runs, the new svc leaves its parked predecessor to it", async () => {
    const { engine, old, helper, updater } = recoverySetup("running");
    await updater.recover();
    expect(engine.containers.get(old.id)).toMatchObject({
      state: "exited",
      name: oldContainerName("svc", old.id, true),
    });
    expect(engine.containers.has(helper.id)).toBe(true);
  });

  test("a handover container that is not running is removed and the leftover repaired", async () => {
    const { engine, old, helper, fresh, updater } = recoverySetup("exited");
    await updater.recover();
    expect(engine.containers.has(helper.id)).toBe(false);
    expect(engine.containers.has(old.id)).toBe(false);
    expect(engine.byName("svc")!.id).toBe(fresh.id);
  });
});

describe("a helper that dies before taking over", () => {
  test("the old svc removes the replacement and takes its name back", async () => {
    const { engine, me, job, helperExits } = await handedOver("ok", false);
    expect(engine.byName("svc")!.id).toBe(job.newId);
    helperExits();
    for (let i = 0; i < 80 && engine.byName("svc")?.id !== me.id; i++) await Bun.sleep(25);
    expect(engine.byName("svc")).toMatchObject({ id: me.id, state: "running" });
    expect(engine.containers.has(job.newId)).toBe(false);
    expect(engine.containers.size).toBe(1);
  });
});

describe("svc restarted while parked by its own interrupted update", () => {
  test("it removes the replacement that never started and takes its name back, without stopping itself", async () => {
    const engine = new FakeEngine();
    engine.addImage("r.io/svc:1");
    const me = engine.addContainer("x", "r.io/svc:1", { state: "running", portBindings: PORTS });
    me.name = oldContainerName("svc", me.id, true);
    const made = engine.addContainer("svc", "r.io/svc:1", { state: "created" });
    const updater = createUpdater({
      config,
      engine,
      registry: new FakeRegistry(engine),
      metrics: new Metrics(),
      log: silentLogger,
      audit: new MemoryAudit(),
      selfContainerId: me.id,
      timing: { pollMs: 5, stableMs: 20 },
    });
    await updater.recover();
    expect(engine.containers.has(made.id)).toBe(false);
    expect(engine.byName("svc")).toMatchObject({ id: me.id, state: "running" });
    expect(engine.events.some((e) => e.startsWith("stop:"))).toBe(false);
  });
});
