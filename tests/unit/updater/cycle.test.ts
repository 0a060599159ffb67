import { describe, expect, test } from "bun:test";
import { type Config, type DeepPartial, defaultConfig } from "../../../src/config/index.ts";
import { silentLogger } from "../../../src/log/index.ts";
import { Metrics } from "../../../src/metrics/index.ts";
import { inMemory, type Remembered } from "../../../src/state/index.ts";
import { MAX_QUEUED } from "../../../src/updater/cycle/runner.ts";
import { createUpdater } from "../../../src/updater/index.ts";
import { DRY_RUN_REASON, type QueuedRequest, type SessionReport } from "../../../src/updater/types.ts";
import { FakeEngine, FakeRegistry, MemoryAudit } from "./fakes.ts";

const DIGEST = `sha256:${"d".repeat(64)}`;

function setup(
  overrides: DeepPartial<Config> = {},
  remembered: { firstSeen?: Remembered; leftImages?: Remembered } = {},
) {
  const engine = new FakeEngine();
  const registry = new FakeRegistry(engine);
  const metrics = new Metrics();
  const audit = new MemoryAudit();
  const published: SessionReport[] = [];
  const config = defaultConfig({
    stop_timeout: 1000,
    ...overrides,
    rollback: { startup_timeout: 200, ...overrides.rollback },
  });
  const updater = createUpdater({
    config,
    engine,
    registry,
    metrics,
    log: silentLogger,
    audit,
    sink: { publish: (report) => published.push(report) },
    timing: { pollMs: 5, stableMs: 20 },
    ...remembered,
  });
  return { engine, registry, metrics, audit, updater, published };
}

function states(report: SessionReport | null): Record<string, string> {
  return Object.fromEntries(report!.containers.map((c) => [c.name, c.state]));
}

describe("checking", () => {
  test("fresh and stale, one registry check per (reference, image), report and metrics", async () => {
    const { engine, registry, updater, metrics, published } = setup();
    engine.addImage("r.io/app:1", { digest: DIGEST });
    engine.addImage("r.io/db:1");
    engine.addContainer("a1", "r.io/app:1");
    engine.addContainer("a2", "r.io/app:1");
    engine.addContainer("db", "r.io/db:1");
    engine.publish("r.io/db:1");
    const report = await updater.run("api");
    expect(states(report)).toEqual({ a1: "fresh", a2: "fresh", db: "updated" });
    expect(registry.checks.filter((c) => c === "r.io/app:1").length).toBe(1);
    expect(report!.containers.find((c) => c.name === "a1")!.old_digest).toBe(DIGEST);
    // the pull is made at the digest the check found, not at whatever the tag names by then
    const db = report!.containers.find((c) => c.name === "db")!;
    expect(db.new_digest).toMatch(/^sha256:/);
    expect(engine.pulledDigests).toEqual([db.new_digest]);
    expect(report!.counts).toMatchObject({ scanned: 3, updated: 1, fresh: 2, failed: 0 });
    expect(metrics.snapshot()).toEqual({
      svc_scans_total: 1,
      svc_scans_skipped: 0,
      svc_containers_scanned: 3,
      svc_containers_updated: 1,
      svc_containers_failed: 0,
    });
    expect(published).toHaveLength(1);
    expect(engine.listCalls).toBe(1);
  });

  test("a cycle over fresh containers costs one list, one image list, no inspect, one check per image", async () => {
    const { engine, registry, updater } = setup();
    engine.addImage("r.io/app:1");
    engine.addImage("r.io/db:1");
    for (let i = 0; i < 10; i++)
      engine.addContainer(`app${i}`, i % 2 ? "r.io/app:1" : "r.io/db:1", { links: i > 0 ? [`/app${i - 1}:/x`] : [] });
    const report = await updater.run("api");
    expect(report!.counts.fresh).toBe(10);
    expect(engine.listCalls).toBe(1);
    expect(engine.inspectCalls).toBe(0);
    expect(registry.checks.sort()).toEqual(["r.io/app:1", "r.io/db:1"]);
  });

  test("pinned, malformed, registry error and created-from-id are skipped with reasons", async () => {
    const { engine, registry, updater } = setup();
    engine.addImage("r.io/app:1");
    const pinned = engine.addContainer("pinned", "r.io/app:1");
    pinned.image = `r.io/app@sha256:${"a".repeat(64)}`;
    const bad = engine.addContainer("bad", "r.io/app:1");
    bad.image = "Bad//Ref";
    const byId = engine.addContainer("byid", "r.io/app:1");
    byId.image = byId.imageId;
    engine.addImage("r.io/down:1");
    engine.addContainer("down", "r.io/down:1");
    registry.errors.set("r.io/down:1", "registry r.io answered 503");
    const report = await updater.run("api");
    const reasons = Object.fromEntries(report!.containers.map((c) => [c.name, [c.state, c.reason]]));
    expect(reasons.pinned).toEqual(["skipped", "pinned by digest"]);
    expect(reasons.bad![0]).toBe("skipped");
    expect(reasons.bad![1]).toContain("invalid image reference");
    expect(reasons.byid![0]).toBe("skipped");
    expect(reasons.down).toEqual(["skipped", "registry r.io answered 503"]);
  });

  test("monitor_only (global or label) reports stale and changes nothing; the gauge shows what is pending", async () => {
    const { engine, updater, metrics } = setup({ monitor_only: true });
    engine.addImage("r.io/app:1");
    engine.addContainer("app", "r.io/app:1");
    engine.addContainer("opt", "r.io/app:1", { labels: { "svc.monitor_only": "false" } });
    engine.publish("r.io/app:1");
    const report = await updater.run("api");
    expect(states(report)).toEqual({ app: "stale", opt: "updated" });
    expect(engine.events.some((e) => e.includes(":app"))).toBe(false);
    expect(metrics.availability()).toEqual({ app: 1, opt: 0 });
  });

  test("a dry run decides everything and changes nothing: no pull, no engine change, no metrics, no report published", async () => {
    const { engine, updater, metrics, published, audit } = setup();
    engine.addImage("r.io/app:1");
    engine.addImage("r.io/db:1");
    engine.addContainer("app", "r.io/app:1");
    engine.addContainer("db", "r.io/db:1");
    engine.addContainer("watched", "r.io/app:1", { labels: { "svc.monitor_only": "true" } });
    engine.publish("r.io/app:1");
    const report = await updater.run("api", {}, { dryRun: true });
    expect(states(report)).toEqual({ app: "stale", db: "fresh", watched: "stale" });
    expect(report!.containers.find((c) => c.name === "app")!.reason).toBe(DRY_RUN_REASON);
    expect(report!.containers.find((c) => c.name === "watched")!.reason).not.toBe(DRY_RUN_REASON);
    expect(report!.dry_run).toBe(true);
    expect(engine.pulls).toEqual([]);
    expect(engine.events).toEqual([]);
    expect(audit.entries).toEqual([]);
    expect(metrics.snapshot().svc_scans_total).toBe(0);
    expect(published).toEqual([]);
    // the same cycle for real: the report says no dry run, and app is updated
    const real = await updater.run("api");
    expect(states(real)).toEqual({ app: "updated", db: "fresh", watched: "stale" });
    expect(real!.dry_run).toBeUndefined();
  });

  test("the dry_run option makes every cycle a dry run unless the caller says otherwise", async () => {
    const { engine, updater } = setup({ dry_run: true });
    engine.addImage("r.io/app:1");
    engine.addContainer("app", "r.io/app:1");
    engine.publish("r.io/app:1");
    expect((await updater.run("schedule"))!.dry_run).toBe(true);
    expect(engine.pulls).toEqual([]);
    expect(states(await updater.run("api", {}, { dryRun: false }))).toEqual({ app: "updated" });
  });

  test("min_image_age: a newer image waits, stale with the time it becomes eligible, then is applied; a label that is not a duration skips", async () => {
    const firstSeen = inMemory();
    const { engine, updater } = setup({ min_image_age: 3_600_000 }, { firstSeen });
    engine.addImage("r.io/app:1");
    engine.addContainer("app", "r.io/app:1");
    engine.addContainer("odd", "r.io/app:1", { labels: { "svc.min_image_age": "later" } });
    engine.publish("r.io/app:1");
    const waiting = await updater.run("api");
    expect(states(waiting)).toEqual({ app: "stale", odd: "skipped" });
    const app = waiting!.containers.find((c) => c.name === "app")!;
    expect(app.reason).toMatch(
      /^newer image sha256:\S+ first seen \S+; applied once it is 1h old, from \S+ \(min_image_age\)$/,
    );
    expect(waiting!.containers.find((c) => c.name === "odd")!.reason).toContain(
      'svc.min_image_age="later" is not a duration',
    );
    expect(engine.pulls).toEqual([]);
    // the same digest, seen two hours ago: old enough
    const [digest] = firstSeen.get("app")!.split(" ");
    firstSeen.set("app", `${digest} ${new Date(Date.now() - 7_200_000).toISOString()}`);
    expect(states(await updater.run("api"))).toEqual({ app: "updated", odd: "skipped" });
  });

  test("snooze: a newer image is found and held until the snooze ends; a dry run remembers when it was first seen, without min_image_age", async () => {
    const firstSeen = inMemory();
    const { engine, updater } = setup({}, { firstSeen });
    engine.addImage("r.io/app:1");
    engine.addContainer("app", "r.io/app:1");
    engine.publish("r.io/app:1");
    expect(await updater.snooze("app", 3_600_000)).toEqual({
      container: "app",
      until: expect.stringMatching(/^\d{4}-/),
    });
    const held = await updater.run("api");
    expect(states(held)).toEqual({ app: "stale" });
    expect(held!.containers[0]!.reason).toMatch(/^updates snoozed until \S+ \(POST \/v1\/snooze\)$/);
    expect(engine.pulls).toEqual([]);
    expect(firstSeen.get("app")).toMatch(/^sha256:\S+ \S+ -$/);
    await expect(updater.snooze("nobody", 1000)).rejects.toMatchObject({ kind: "not_found" });
    expect(await updater.snooze("app", 0)).toEqual({ container: "app", until: null });
    expect(states(await updater.run("api"))).toEqual({ app: "updated" });
  });

  test("skip: the newer digest a dry run finds is not applied, a newer one is; an unknown container is 404, a fresh one has nothing to skip", async () => {
    const { engine, updater } = setup();
    engine.addImage("r.io/app:1");
    engine.addContainer("app", "r.io/app:1");
    engine.addImage("r.io/db:1");
    engine.addContainer("db", "r.io/db:1");
    engine.publish("r.io/app:1");
    const skipped = await updater.skip("app");
    expect(skipped!.digest).toMatch(/^sha256:/);
    const report = await updater.run("api");
    expect(states(report)).toEqual({ app: "skipped", db: "fresh" });
    expect(report!.containers.find((c) => c.name === "app")!.reason).toBe(
      `${skipped!.digest} was skipped on request (POST /v1/skip); waiting for a newer image`,
    );
    expect(engine.pulls).toEqual([]);
    await expect(updater.skip("nope")).rejects.toMatchObject({ kind: "not_found" });
    await expect(updater.skip("db")).rejects.toMatchObject({ kind: "bad_request" });
    await expect(updater.skip("app", { digest: "latest" })).rejects.toMatchObject({ kind: "bad_request" });
    engine.publish("r.io/app:1");
    expect(states(await updater.run("api"))).toEqual({ app: "updated", db: "fresh" });
  });

  test("lifecycle hooks: pre_check and post_check run around the cycle, pre_update before anything stops, post_update in the new container", async () => {
    const { engine, updater, audit } = setup({ lifecycle_hooks: true });
    engine.addImage("r.io/app:1");
    const hooks = {
      "svc.hooks.pre_check": "pc",
      "svc.hooks.pre_update": "pu",
      "svc.hooks.post_update": "po",
      "svc.hooks.post_check": "pk",
    };
    engine.addContainer("app", "r.io/app:1", { labels: hooks });
    engine.publish("r.io/app:1");
    expect(states(await updater.run("api"))).toEqual({ app: "updated" });
    const steps = engine.events
      .filter((e) => /^(exec|stop|start):/.test(e))
      .map((e) => e.replace(/\.svc-old-.*$/, " (parked)"));
    expect(steps).toEqual([
      "exec:app:pc",
      "exec:app:pu",
      "stop:app (parked)",
      "start:app",
      "exec:app:po",
      "exec:app:pk",
    ]);
    expect(audit.entries.map((e) => e.action).filter((a) => a.includes("_"))).toEqual([
      "pre_check",
      "pre_update",
      "post_update",
      "post_check",
    ]);
  });

  test("a failing pre_update skips the update with the reason and stops nothing; a failing pre_check is only logged", async () => {
    const { engine, updater, audit } = setup({ lifecycle_hooks: true });
    engine.addImage("r.io/app:1");
    engine.addContainer("app", "r.io/app:1", {
      labels: { "com.centurylinklabs.watchtower.lifecycle.pre-update": "/backup.sh", "svc.hooks.pre_check": "false" },
    });
    engine.publish("r.io/app:1");
    engine.execResult = (_name, command) => ({ exitCode: command === "/backup.sh" ? 4 : 1, output: "disk full\n" });
    const report = await updater.run("api");
    expect(states(report)).toEqual({ app: "skipped" });
    expect(report!.containers[0]!.reason).toBe("pre_update hook failed: exited with 4: disk full");
    expect(engine.events.some((e) => e.startsWith("stop:"))).toBe(false);
    expect(audit.entries.find((e) => e.action === "pre_update")?.error).toBe("exited with 4: disk full");
  });

  test("a failing post_update rolls the update back; hooks off (the default), or a dry run, run none", async () => {
    const { engine, updater } = setup({ lifecycle_hooks: true });
    engine.addImage("r.io/app:1");
    engine.addContainer("app", "r.io/app:1", { labels: { "svc.hooks.post_update": "check" } });
    engine.publish("r.io/app:1");
    engine.execResult = () => ({ exitCode: 2, output: "" });
    const report = await updater.run("api");
    expect(states(report)).toEqual({ app: "rolled_back" });
    expect(report!.containers[0]!.reason).toStartWith("post_update hook failed: exited with 2");
    const before = engine.events.length;
    await updater.run("api", {}, { dryRun: true });
    expect(engine.events.slice(before).some((e) => e.startsWith("exec:"))).toBe(false);

    const off = setup();
    off.engine.addImage("r.io/app:1");
    off.engine.addContainer("app", "r.io/app:1", { labels: { "svc.hooks.post_update": "check" } });
    off.engine.publish("r.io/app:1");
    off.engine.execResult = () => ({ exitCode: 2, output: "" });
    expect(states(await off.updater.run("api"))).toEqual({ app: "updated" });
    expect(off.engine.events.some((e) => e.startsWith("exec:"))).toBe(false);
  });

  test("rollback on request: the container goes back to the image it ran before svc's last update, which it then skips", async () => {
    const { engine, updater } = setup({ monitor_only: false });
    const v1 = engine.addImage("r.io/app:1");
    engine.addContainer("app", "r.io/app:1");
    await expect(updater.rollback("app")).rejects.toMatchObject({ kind: "not_found" });
    engine.publish("r.io/app:1");
    expect(states(await updater.run("api"))).toEqual({ app: "updated" });
    const newer = engine.byName("app")!.imageId;
    const back = await updater.rollback("app");
    expect(back).toEqual({
      container: "app",
      from_image_id: newer,
      to_image_id: v1.id,
      state: "updated",
      reason: null,
    });
    expect(engine.byName("app")!.imageId).toBe(v1.id);
    expect(engine.events).toContain("tag:r.io/app:1");
    // the next cycle finds the image it left in the registry, and leaves it
    const after = await updater.run("api");
    expect(states(after)).toEqual({ app: "skipped" });
    expect(after!.containers[0]!.reason).toMatch(
      /^sha256:[0-9a-f]{64} was left by a rollback \(POST \/v1\/rollback\); waiting for a newer image$/,
    );
    await expect(updater.rollback("nope")).rejects.toMatchObject({ kind: "not_found" });
  });

  test("no_pull compares the local image for the tag, without the registry", async () => {
    const { engine, registry, updater } = setup({ no_pull: true });
    engine.addImage("r.io/app:1");
    engine.addContainer("app", "r.io/app:1");
    engine.addContainer("same", "r.io/app:1");
    const newer = engine.addImage("r.io/app:1");
    engine.byName("same")!.imageId = newer.id;
    const report = await updater.run("api");
    expect(states(report)).toEqual({ app: "updated", same: "fresh" });
    expect(registry.checks).toEqual([]);
    expect(engine.pulls).toEqual([]);
    expect(engine.byName("app")!.imageId).toBe(newer.id);
  });
});

describe("the update protocol", () => {
  test("pull for the old image's platform with auth, stop with the container's signal and timeout, rename, create, start, remove old", async () => {
    const { engine, updater, audit } = setup();
    engine.addImage("r.io/app:1");
    const old = engine.addContainer("app", "r.io/app:1", {
      stopSignal: "SIGQUIT",
      stopTimeout: 7,
      labels: { "svc.stop_timeout": "3s", "svc.stop_signal": "SIGHUP" },
    });
    engine.publish("r.io/app:1");
    const report = await updater.run("schedule");
    const entry = report!.containers[0]!;
    expect(entry.state).toBe("updated");
    expect(entry.id).not.toBe(old.id);
    expect(entry.new_image_id).toBe(engine.byName("app")!.imageId);
    expect(engine.pulls[0]).toEqual({
      reference: "r.io/app:1",
      platform: { os: "linux", architecture: "arm", variant: "v7" },
      auth: { serveraddress: "r.io", username: "u" },
    });
    expect(engine.stops[0]).toEqual({
      name: `app.svc-old-${old.id.slice(0, 12)}-running`,
      timeoutMs: 7000,
      signal: "SIGHUP",
    });
    expect(engine.events).toEqual([
      "pull:r.io/app:1",
      `rename:app->app.svc-old-${old.id.slice(0, 12)}-running`,
      `stop:app.svc-old-${old.id.slice(0, 12)}-running`,
      "create:app",
      "start:app",
      `remove:app.svc-old-${old.id.slice(0, 12)}-running`,
    ]);
    expect(engine.containers.size).toBe(1);
    expect(audit.entries.map((e) => e.action)).toEqual(["pull", "rename", "stop", "create", "start", "remove"]);
    expect(
      audit.entries.every((e) => e.trigger === "schedule" && e.session_id === report!.id && e.container === "app"),
    ).toBe(true);
    // each entry names the container it touched: the create entry the new one, known only after
    expect(audit.entries.map((e) => e.container_id)).toEqual([old.id, old.id, old.id, entry.id, entry.id, old.id]);
  });

  test("containers sharing an image share one pull", async () => {
    const { engine, updater } = setup();
    engine.addImage("r.io/app:1");
    for (const name of ["a", "b", "c", "d", "e"]) engine.addContainer(name, "r.io/app:1");
    engine.publish("r.io/app:1");
    const report = await updater.run("api");
    expect(report!.counts.updated).toBe(5);
    expect(engine.pulls).toHaveLength(1);
  });

  test("stop timeout: label, else the global option", async () => {
    const { engine, updater } = setup({ stop_timeout: 4000 });
    engine.addImage("r.io/app:1");
    engine.addContainer("labelled", "r.io/app:1", { labels: { "svc.stop_timeout": "2s" } });
    engine.addContainer("plain", "r.io/app:1");
    engine.publish("r.io/app:1");
    await updater.run("api");
    const timeouts = Object.fromEntries(engine.stops.map((s) => [s.name.split(".")[0], s.timeoutMs]));
    expect(timeouts).toEqual({ labelled: 2000, plain: 4000 });
  });

  for (const [behaviour, reason] of [
    ["exit1", "exited with code 1"],
    ["unhealthy", "healthcheck reported unhealthy"],
    ["starting", "not healthy within the startup timeout"],
    ["restart-loop", "restart loop"],
  ] as const) {
    test(`rollback when the new container is ${behaviour}`, async () => {
      const { engine, updater, audit, metrics } = setup();
      engine.addImage("r.io/app:1");
      const old = engine.addContainer("app", "r.io/app:1");
      engine.publish("r.io/app:1", { behaviour });
      const report = await updater.run("api");
      const entry = report!.containers[0]!;
      expect(entry.state).toBe("rolled_back");
      expect(entry.reason).toContain(reason);
      expect(entry.reason).toContain("boom: config invalid");
      expect(entry.id).toBe(old.id);
      const back = engine.byName("app")!;
      expect(back.id).toBe(old.id);
      expect(back.state).toBe("running");
      expect(engine.containers.size).toBe(1);
      expect(audit.entries.some((e) => e.action === "rollback")).toBe(true);
      expect(metrics.snapshot().svc_containers_failed).toBe(1);
    });
  }

  test("a rollback starts the old container while it is still parked, then gives it its name back", async () => {
    const { engine, updater } = setup();
    engine.addImage("r.io/app:1");
    const old = engine.addContainer("app", "r.io/app:1");
    engine.publish("r.io/app:1", { behaviour: "exit1" });
    await updater.run("api");
    const parked = `app.svc-old-${old.id.slice(0, 12)}-running`;
    const restoring = engine.events.slice(engine.events.indexOf("remove:app"));
    expect(restoring).toEqual(["remove:app", `start:${parked}`, `rename:${parked}->app`]);
  });

  test("an old container that cannot be started again stays parked, for the next cycle to restore", async () => {
    const { engine, updater } = setup();
    engine.addImage("r.io/app:1");
    const old = engine.addContainer("app", "r.io/app:1");
    engine.publish("r.io/app:1", { behaviour: "exit1" });
    const parked = `app.svc-old-${old.id.slice(0, 12)}-running`;
    engine.failures.add(`start:${parked}`);
    const report = await updater.run("api");
    expect(report!.containers[0]!.reason).toContain(`stays parked as ${parked}`);
    expect(old.name).toBe(parked);
    expect(old.state).toBe("exited");
    // the next cycle finds the marker and restores it (the failed digest is not retried)
    await updater.run("api");
    expect(engine.byName("app")).toMatchObject({ id: old.id, state: "running" });
  });

  test("an engine away for part of the watch: the watch goes on, the update passes", async () => {
    // a startup timeout well past the 60 ms away: on a loaded machine the timer that brings the
    // engine back may fire late, and the test is about the outage, not the timeout
    const { engine, updater } = setup({ rollback: { startup_timeout: 5_000 } });
    engine.addImage("r.io/app:1");
    engine.addContainer("app", "r.io/app:1");
    engine.publish("r.io/app:1");
    engine.onStart = () => {
      engine.unreachable = true;
      setTimeout(() => (engine.unreachable = false), 60);
    };
    const report = await updater.run("api");
    expect(states(report)).toEqual({ app: "updated" });
  });

  test("an engine away for the whole watch is not blamed on the image: failed, and the next cycle updates to it", async () => {
    const { engine, updater, metrics } = setup();
    engine.addImage("r.io/app:1");
    const old = engine.addContainer("app", "r.io/app:1");
    engine.publish("r.io/app:1");
    engine.onStart = () => {
      engine.onStart = undefined;
      engine.unreachable = true; // until the watch (startup_timeout 200 ms) has ended
    };
    const first = (await updater.run("api"))!.containers[0]!;
    engine.unreachable = false;
    expect(first.state).toBe("failed");
    expect(first.reason).toContain("the engine could not tell how the new container fared");
    expect(metrics.snapshot().svc_containers_failed).toBe(1);
    await Bun.sleep(150);
    // the engine is back: the leftovers are repaired and the same digest is tried again
    const second = (await updater.run("api"))!.containers[0]!;
    expect(second.state).toBe("updated");
    expect(engine.containers.has(old.id)).toBe(false);
  });

  test("a new container that exits after an engine outage is not blamed on the image either", async () => {
    // a watch long enough for the engine's return however late the timer fires at load
    const { engine, updater } = setup({ rollback: { startup_timeout: 30_000 } });
    engine.addImage("r.io/app:1");
    engine.addContainer("app", "r.io/app:1");
    engine.publish("r.io/app:1");
    engine.onStart = (c) => {
      engine.onStart = undefined;
      engine.unreachable = true;
      setTimeout(() => {
        // a restarting engine stops its containers on the way down
        c.state = "exited";
        c.exitCode = 143;
        engine.unreachable = false;
      }, 40);
    };
    const first = (await updater.run("api"))!.containers[0]!;
    expect(first.state).toBe("failed");
    expect(first.reason).toContain("exited with code 143, after the engine was unreachable during the watch");
    expect(states(await updater.run("api"))).toEqual({ app: "updated" });
  });

  test("an old container that cannot be started again after a bad image: failed, not rolled_back; the digest is not retried", async () => {
    const { engine, updater } = setup();
    engine.addImage("r.io/app:1");
    const old = engine.addContainer("app", "r.io/app:1");
    engine.publish("r.io/app:1", { behaviour: "exit1" });
    engine.failures.add(`start:app.svc-old-${old.id.slice(0, 12)}-running`);
    const first = (await updater.run("api"))!.containers[0]!;
    expect(first.state).toBe("failed");
    expect(first.reason).toContain("exited with code 1");
    expect(first.reason).toContain("starting the old container");
    const second = (await updater.run("api"))!.containers[0]!;
    expect(second.state).toBe("skipped");
    expect(engine.byName("app")).toMatchObject({ id: old.id, state: "running" });
  });

  test("a rollback check that is off does not roll back", async () => {
    const { engine, updater } = setup({ rollback: { on_healthcheck: false, on_timeout: false } });
    engine.addImage("r.io/app:1");
    engine.addContainer("app", "r.io/app:1");
    engine.publish("r.io/app:1", { behaviour: "unhealthy" });
    expect(states(await updater.run("api"))).toEqual({ app: "updated" });
  });

  test("a rolled-back digest is not retried; a newer one is", async () => {
    const { engine, updater } = setup();
    engine.addImage("r.io/app:1");
    engine.addContainer("app", "r.io/app:1");
    engine.publish("r.io/app:1", { behaviour: "exit1" });
    expect(states(await updater.run("api"))).toEqual({ app: "rolled_back" });
    const second = await updater.run("api");
    expect(second!.containers[0]!.state).toBe("skipped");
    expect(second!.containers[0]!.reason).toContain("rolled back before");
    engine.publish("r.io/app:1");
    expect(states(await updater.run("api"))).toEqual({ app: "updated" });
  });

  for (const step of ["pull", "rename", "stop", "create", "start"] as const) {
    test(`a failing ${step} is "failed" and the old container keeps its name and runs`, async () => {
      const { engine, updater } = setup();
      engine.addImage("r.io/app:1");
      const old = engine.addContainer("app", "r.io/app:1");
      engine.publish("r.io/app:1");
      const oldName = `app.svc-old-${old.id.slice(0, 12)}-running`;
      engine.failures.add(step === "pull" ? "pull:r.io/app:1" : step === "stop" ? `stop:${oldName}` : `${step}:app`);
      const report = await updater.run("api");
      expect(report!.containers[0]!.state).toBe("failed");
      expect(report!.containers[0]!.reason).toContain(`injected ${step} failure`);
      // the step that failed is the one named
      if (step === "rename" || step === "stop")
        expect(report!.containers[0]!.reason).toStartWith(
          `${step === "rename" ? "renaming" : "stopping"} the old container failed: `,
        );
      expect(engine.byName("app")!.id).toBe(old.id);
      expect(engine.byName("app")!.state).toBe("running");
      expect(engine.containers.size).toBe(1);
    });
  }

  test("revive_stopped starts a stopped container on its new image; a rollback leaves the old one stopped", async () => {
    const { engine, updater } = setup({ revive_stopped: true });
    engine.addImage("r.io/app:1");
    engine.addImage("r.io/bad:1");
    engine.addContainer("app", "r.io/app:1", { state: "exited" });
    engine.addContainer("bad", "r.io/bad:1", { state: "exited" });
    engine.publish("r.io/app:1");
    engine.publish("r.io/bad:1", { behaviour: "exit1" });
    const report = await updater.run("api");
    expect(states(report)).toEqual({ app: "updated", bad: "rolled_back" });
    expect(engine.byName("app")!.state).toBe("running");
    expect(engine.byName("bad")!.state).toBe("exited");
  });
});

describe("ordering", () => {
  test("dependents stopped first and started last; restarted dependents keep their own state", async () => {
    const { engine, updater } = setup();
    engine.addImage("r.io/db:1");
    engine.addImage("r.io/web:1");
    engine.addImage("r.io/proxy:1");
    engine.addContainer("db", "r.io/db:1");
    engine.addContainer("web", "r.io/web:1", { links: ["/db:/web/db"] });
    engine.addContainer("proxy", "r.io/proxy:1", { labels: { "svc.depends_on": "web" } });
    engine.publish("r.io/db:1");
    const report = await updater.run("api");
    expect(states(report)).toEqual({ db: "updated", proxy: "fresh", web: "fresh" });
    expect(report!.containers.find((c) => c.name === "web")!.reason).toBe("restarted for dependency");
    const order = engine.events
      .filter((e) => e.startsWith("stop:") || e.startsWith("start:"))
      .map((e) => e.replace(/\.svc-old-.*/, ""));
    expect(order).toEqual(["stop:proxy", "stop:web", "stop:db", "start:db", "start:web", "start:proxy"]);
  });

  test("both a dependency and its dependent stale: dependent parked first, dependency created first", async () => {
    const { engine, updater } = setup();
    engine.addImage("r.io/db:1");
    engine.addImage("r.io/web:1");
    engine.addContainer("db", "r.io/db:1");
    engine.addContainer("web", "r.io/web:1", { labels: { "svc.depends_on": "db" } });
    engine.publish("r.io/db:1");
    engine.publish("r.io/web:1");
    const report = await updater.run("api");
    expect(states(report)).toEqual({ db: "updated", web: "updated" });
    const order = engine.events.filter((e) => /^(stop|create):/.test(e)).map((e) => e.replace(/\.svc-old-.*/, ""));
    expect(order).toEqual(["stop:web", "stop:db", "create:db", "create:web"]);
  });

  test("a network_mode container: dependent is recreated on the new host's name, even outside the selection", async () => {
    const { engine, updater } = setup({ containers: ["host"] });
    engine.addImage("r.io/host:1");
    engine.addImage("r.io/side:1");
    const host = engine.addContainer("host", "r.io/host:1");
    const side = engine.addContainer("side", "r.io/side:1", { networkMode: `container:${host.id}` });
    engine.publish("r.io/host:1");
    const report = await updater.run("api");
    expect(states(report)).toEqual({ host: "updated" });
    expect(engine.events).toContain("create:side(net=host)");
    const newSide = engine.byName("side")!;
    expect(newSide.id).not.toBe(side.id);
    expect(newSide.imageId).toBe(side.imageId);
    expect(newSide.state).toBe("running");
    expect(engine.containers.size).toBe(2);
  });

  test("outside this instance's reach only a network_mode dependent is followed", async () => {
    const { engine, updater } = setup({ containers: ["host"] });
    engine.addImage("r.io/host:1");
    engine.addImage("r.io/other:1");
    const host = engine.addContainer("host", "r.io/host:1");
    engine.addContainer("mine", "r.io/other:1", { labels: { "svc.depends_on": "host" } });
    engine.addContainer("theirs", "r.io/other:1", { labels: { "svc.depends_on": "host", "svc.scope": "blue" } });
    engine.addContainer("disabled", "r.io/other:1", {
      links: ["/host:/disabled/host"],
      labels: { "svc.enable": "false" },
    });
    engine.addContainer("sidecar", "r.io/other:1", {
      networkMode: `container:${host.id}`,
      labels: { "svc.scope": "blue" },
    });
    engine.publish("r.io/host:1");
    expect(states(await updater.run("api"))).toEqual({ host: "updated" });
    const touched = new Set(engine.events.map((e) => e.split(":")[1]!.replace(/\.svc-old-.*|\(.*/, "")));
    expect(touched.has("mine")).toBe(true);
    expect(touched.has("sidecar")).toBe(true);
    expect(touched.has("theirs")).toBe(false);
    expect(touched.has("disabled")).toBe(false);
  });

  test("a dependency cycle skips its members with the cycle named; others still update", async () => {
    const { engine, updater } = setup();
    engine.addImage("r.io/app:1");
    engine.addContainer("a", "r.io/app:1", { labels: { "svc.depends_on": "b" } });
    engine.addContainer("b", "r.io/app:1", { labels: { "svc.depends_on": "a" } });
    engine.addContainer("c", "r.io/app:1");
    engine.publish("r.io/app:1");
    const report = await updater.run("api");
    expect(states(report)).toEqual({ a: "skipped", b: "skipped", c: "updated" });
    expect(report!.containers[0]!.reason).toBe("dependency cycle: a -> b -> a");
  });
});

describe("one cycle at a time", () => {
  test("a second run while busy resolves null at once and is counted as skipped", async () => {
    const { engine, updater, metrics } = setup();
    let open!: () => void;
    engine.gate = new Promise((resolve) => (open = resolve));
    const first = updater.run("schedule");
    expect(updater.busy).toBe(true);
    expect(await updater.run("api")).toBeNull();
    expect(metrics.snapshot().svc_scans_skipped).toBe(1);
    open();
    expect(await first).not.toBeNull();
    expect(updater.busy).toBe(false);
    expect(metrics.snapshot().svc_scans_total).toBe(1);
  });

  test("a request that asks to be queued (an Install in Home Assistant) waits for the cycle under way and runs after it", async () => {
    const { engine, updater, metrics } = setup();
    engine.addImage("r.io/app:1");
    engine.addContainer("app", "r.io/app:1");
    engine.publish("r.io/app:1");
    let open!: () => void;
    engine.gate = new Promise((resolve) => (open = resolve));
    const first = updater.run("schedule", { container: ["nothing-else"] });
    const queued = updater.run("api", { container: ["app"] }, { queue: true });
    expect(updater.busy).toBe(true);
    open();
    expect(await first).not.toBeNull();
    const report = await queued;
    expect(report?.trigger).toBe("api");
    expect(states(report)).toEqual({ app: "updated" });
    expect(metrics.snapshot().svc_scans_skipped).toBe(0);
    expect(updater.busy).toBe(false);
  });

  test("queued requests are listed until they start, told as queued; the same one again joins it; 16 wait at most", async () => {
    const { engine, updater, metrics } = setup();
    engine.addImage("r.io/app:1");
    engine.addContainer("app", "r.io/app:1");
    engine.publish("r.io/app:1");
    let open!: () => void;
    engine.gate = new Promise((resolve) => (open = resolve));
    const first = updater.run("schedule", { container: ["nothing-else"] });
    const told: QueuedRequest[] = [];
    const onQueued = (entry: QueuedRequest) => void told.push(entry);
    const queued = updater.run("api", { container: ["app", "db"] }, { queue: true, onQueued });
    // the same names in another order: the same request, joined
    const again = updater.run("api", { container: ["db", "app"] }, { queue: true, onQueued });
    expect(told).toHaveLength(2);
    expect(told[1]).toEqual(told[0]!);
    expect(told[0]).toMatchObject({ trigger: "api", filter: { container: ["app", "db"], image: [] } });
    expect(updater.queuedRequests()).toEqual([told[0]!]);
    const others = Array.from({ length: MAX_QUEUED - 1 }, (_, i) =>
      updater.run("api", { container: [`other-${i}`] }, { queue: true }),
    );
    expect(updater.queuedRequests()).toHaveLength(MAX_QUEUED);
    // one more than the bound is refused as any request while a cycle runs
    expect(await updater.run("api", { container: ["one-too-many"] }, { queue: true, onQueued })).toBeNull();
    expect(told).toHaveLength(2);
    expect(metrics.snapshot().svc_scans_skipped).toBe(1);
    open();
    await first;
    const report = await queued;
    expect(await again).toBe(report);
    expect(states(report)).toEqual({ app: "updated" });
    await Promise.all(others);
    expect(updater.queuedRequests()).toEqual([]);
    expect(metrics.snapshot().svc_scans_total).toBe(2 + MAX_QUEUED - 1);
  });

  test("an unreachable engine rejects the cycle with an engine error; the next cycle works", async () => {
    const { engine, updater, metrics } = setup();
    engine.unreachable = true;
    await expect(updater.run("api")).rejects.toMatchObject({ kind: "engine" });
    expect(updater.busy).toBe(false);
    engine.unreachable = false;
    expect(await updater.run("api")).not.toBeNull();
    expect(metrics.snapshot().svc_scans_total).toBe(1);
  });

  test("drain waits for the running cycle; later runs resolve null", async () => {
    const { engine, updater } = setup();
    engine.addImage("r.io/app:1");
    engine.addContainer("app", "r.io/app:1");
    engine.publish("r.io/app:1");
    let open!: () => void;
    engine.gate = new Promise((resolve) => (open = resolve));
    const first = updater.run("schedule");
    const drained = updater.drain();
    open();
    await drained;
    const report = await first;
    expect(report!.containers[0]!.state).toBe("skipped");
    expect(report!.containers[0]!.reason).toBe("svc is shutting down");
    expect(await updater.run("api")).toBeNull();
  });
});

test("cleanup removes the old image once no container uses it", async () => {
  const { engine, updater, audit } = setup({ cleanup: true });
  const oldImage = engine.addImage("r.io/app:1");
  engine.addImage("r.io/keep:1");
  engine.addContainer("app", "r.io/app:1");
  engine.publish("r.io/app:1");
  await updater.run("api");
  expect(engine.images.has(oldImage.id)).toBe(false);
  expect(audit.entries.filter((e) => e.action === "image_remove").map((e) => e.image)).toEqual([oldImage.id]);
});

test("cleanup_delay: the old image stays for svc rollback, and a later cycle removes it once the delay is over", async () => {
  const leftImages = inMemory();
  const { engine, updater } = setup({ cleanup: true, cleanup_delay: 3_600_000 }, { leftImages });
  const oldImage = engine.addImage("r.io/app:1");
  engine.addContainer("app", "r.io/app:1");
  engine.publish("r.io/app:1");
  expect(states(await updater.run("api"))).toEqual({ app: "updated" });
  expect(engine.images.has(oldImage.id)).toBe(true);
  const [[imageId, left]] = leftImages.entries() as [[string, string]];
  expect(imageId).toBe(oldImage.id);
  await updater.run("api");
  expect(engine.images.has(oldImage.id)).toBe(true);
  leftImages.set(imageId, `${left.split(" ")[0]} ${new Date(Date.now() - 3_700_000).toISOString()}`);
  await updater.run("api");
  expect(engine.images.has(oldImage.id)).toBe(false);
  expect(leftImages.entries()).toEqual([]);
});

test("cleanup_keep: the images the last N updates of a container left stay, whatever cleanup_delay says; older ones go", async () => {
  const leftImages = inMemory();
  const { engine, updater } = setup({ cleanup: true, cleanup_keep: 2 }, { leftImages });
  const first = engine.addImage("r.io/app:1");
  engine.addContainer("app", "r.io/app:1");
  const ids = [first.id];
  for (let i = 0; i < 3; i++) {
    engine.publish("r.io/app:1");
    expect(states(await updater.run("api"))).toEqual({ app: "updated" });
    ids.push(engine.byName("app")!.imageId);
    // each update is a little later than the one before
    await Bun.sleep(5);
  }
  // three images left behind: the oldest went, the last two stay
  expect(ids.slice(0, 3).map((id) => engine.images.has(id))).toEqual([false, true, true]);
  expect(
    leftImages
      .entries()
      .map(([id]) => id)
      .sort(),
  ).toEqual(ids.slice(1, 3).sort());
});

describe("self-update", () => {
  function selfSetup(behaviour: "ok" | "exit1") {
    const engine = new FakeEngine();
    engine.addImage("r.io/svc:1");
    engine.addImage("r.io/app:1");
    const me = engine.addContainer("svc", "r.io/svc:1");
    engine.addContainer("app", "r.io/app:1");
    engine.publish("r.io/svc:1", { behaviour });
    engine.publish("r.io/app:1");
    const steps: string[] = [];
    const config = defaultConfig({ stop_timeout: 1000, rollback: { startup_timeout: 200 } });
    const updater = createUpdater({
      config,
      engine,
      registry: new FakeRegistry(engine),
      metrics: new Metrics(),
      log: silentLogger,
      audit: new MemoryAudit(),
      selfContainerId: me.id,
      timing: { pollMs: 5, stableMs: 20 },
      selfHandover: {
        release: async () => void steps.push("release"),
        reclaim: async () => void steps.push("reclaim"),
      },
    });
    return { engine, me, steps, updater };
  }

  test("svc's own container last, never stopped by the update itself; the port is released before its replacement starts", async () => {
    const { engine, me, steps, updater } = selfSetup("ok");
    const report = await updater.run("api");
    expect(states(report)).toEqual({ app: "updated", svc: "updated" });
    const svcEvents = engine.events
      .filter((e) => /^\w+:(svc|r\.io\/svc)/.test(e))
      .map((e) => e.replace(/\.svc-old-.*/, ""));
    expect(svcEvents).toEqual(["pull:r.io/svc:1", "rename:svc->svc", "create:svc", "start:svc"]);
    expect(engine.events.indexOf("create:svc")).toBeGreaterThan(engine.events.indexOf("create:app"));
    expect(steps).toEqual(["release"]);
    // the old instance stops its own container a moment after the cycle
    for (let i = 0; i < 40 && engine.containers.get(me.id)!.state === "running"; i++) await Bun.sleep(25);
    expect(engine.containers.get(me.id)!.state).toBe("exited");
  });

  test("a failing replacement is rolled back and the port reclaimed", async () => {
    const { engine, me, steps, updater } = selfSetup("exit1");
    expect(states(await updater.run("api"))).toEqual({ app: "updated", svc: "rolled_back" });
    expect(steps).toEqual(["release", "reclaim"]);
    await Bun.sleep(200);
    expect(engine.byName("svc")).toMatchObject({ id: me.id, state: "running" });
  });
});

describe("tag policies", () => {
  function versions(engine: FakeEngine, tags: string[]) {
    for (const tag of tags) engine.publish(`r.io/app:${tag}`);
  }

  test("a container moves to the highest tag its policy allows: one tags listing, the new reference pulled and run, old and new reference reported", async () => {
    const { engine, registry, updater, published } = setup({ tag_policy: "semver:minor" });
    const old = engine.addImage("r.io/app:1.2.0");
    engine.remote.set("r.io/app:1.2.0", old.id);
    engine.addContainer("app", "r.io/app:1.2.0");
    engine.addContainer("pinned", "r.io/app:1.2.0", { labels: { "svc.tag_policy": "off" } });
    versions(engine, ["1.2.1", "1.3.0", "1.4.0-rc.1", "2.0.0", "latest"]);
    const report = await updater.run("api");
    expect(states(report)).toEqual({ app: "updated", pinned: "fresh" });
    const app = report!.containers.find((c) => c.name === "app")!;
    expect(app).toMatchObject({ image: "r.io/app:1.2.0", new_image: "r.io/app:1.3.0", old_image_id: old.id });
    expect(engine.byName("app")!.image).toBe("r.io/app:1.3.0");
    expect(engine.pulls.map((p) => p.reference)).toEqual(["r.io/app:1.3.0"]);
    expect(registry.tagLists).toEqual(["r.io/app:1.2.0"]);
    expect(published[0]!.containers.find((c) => c.name === "app")!.new_image).toBe("r.io/app:1.3.0");
    // on the new tag there is nothing newer within the minor level
    expect(states(await updater.run("api"))).toEqual({ app: "fresh", pinned: "fresh" });
  });

  test("a tag without an image for our platform is passed over for the next best", async () => {
    const { engine, registry, updater } = setup({ tag_policy: "semver:patch" });
    const old = engine.addImage("r.io/app:1.2.0");
    engine.remote.set("r.io/app:1.2.0", old.id);
    engine.addContainer("app", "r.io/app:1.2.0");
    versions(engine, ["1.2.1", "1.2.2"]);
    registry.otherPlatform.add("r.io/app:1.2.2");
    const report = await updater.run("api");
    expect(report!.containers[0]).toMatchObject({ state: "updated", new_image: "r.io/app:1.2.1" });
  });

  test("a compose-managed container is only reported, unless labelled to move; its own tag still updates", async () => {
    const { engine, updater } = setup({ tag_policy: "semver:major" });
    const old = engine.addImage("r.io/app:1.2.0");
    engine.remote.set("r.io/app:1.2.0", old.id);
    engine.addContainer("web", "r.io/app:1.2.0", { labels: { "com.docker.compose.project": "p" } });
    versions(engine, ["2.0.0"]);
    const first = await updater.run("api");
    expect(first!.containers[0]).toMatchObject({
      state: "stale",
      new_image: "r.io/app:2.0.0",
      reason:
        "newer tag 2.0.0 available; the compose file names 1.2.0 (label svc.tag_policy.compose=move to follow tags)",
    });
    expect(engine.pulls).toEqual([]);
    engine.publish("r.io/app:1.2.0");
    const own = await updater.run("api");
    expect(own!.containers[0]).toMatchObject({ state: "updated", new_image: null });
    expect(engine.byName("web")!.image).toBe("r.io/app:1.2.0");

    engine.byName("web")!.labels["svc.tag_policy.compose"] = "move";
    const moved = await updater.run("api");
    expect(moved!.containers[0]).toMatchObject({ state: "updated", new_image: "r.io/app:2.0.0" });
  });

  test("a bad policy label skips that container with the reason; a dry run reports the move without making it", async () => {
    const { engine, updater } = setup();
    const old = engine.addImage("r.io/app:1.2.0");
    engine.remote.set("r.io/app:1.2.0", old.id);
    engine.addContainer("bad", "r.io/app:1.2.0", { labels: { "svc.tag_policy": "semver:latest" } });
    engine.addContainer("app", "r.io/app:1.2.0", { labels: { "svc.tag_policy": "regex:1\\.(\\d+)\\.0" } });
    versions(engine, ["1.9.0", "1.10.0", "1.10.1"]);
    const dry = await updater.run("api", {}, { dryRun: true });
    expect(dry!.containers.find((c) => c.name === "bad")!.reason).toStartWith(
      'label svc.tag_policy="semver:latest" is not a tag policy',
    );
    expect(dry!.containers.find((c) => c.name === "app")).toMatchObject({
      state: "stale",
      new_image: "r.io/app:1.10.0",
      reason: DRY_RUN_REASON,
    });
    expect(engine.pulls).toEqual([]);
  });

  test("skip a tag: that reference is skipped whatever its digest; svc rollback puts the old reference back", async () => {
    const { engine, updater } = setup({ tag_policy: "semver:minor" });
    const old = engine.addImage("r.io/app:1.2.0");
    engine.remote.set("r.io/app:1.2.0", old.id);
    engine.addContainer("app", "r.io/app:1.2.0");
    versions(engine, ["1.3.0"]);
    expect(await updater.skip("app", { tag: "1.3.0" })).toEqual({ container: "app", image: "r.io/app:1.3.0" });
    const skipped = await updater.run("api");
    expect(skipped!.containers[0]).toMatchObject({
      state: "skipped",
      reason: "r.io/app:1.3.0 was skipped on request (POST /v1/skip); waiting for a newer image",
    });
    versions(engine, ["1.4.0"]);
    expect((await updater.run("api"))!.containers[0]).toMatchObject({ state: "updated", new_image: "r.io/app:1.4.0" });

    const back = await updater.rollback("app");
    expect(back).toMatchObject({ container: "app", to_image_id: old.id, state: "updated" });
    expect(engine.byName("app")!.image).toBe("r.io/app:1.2.0");
    expect(engine.byName("app")!.imageId).toBe(old.id);
    // the tag it left is not taken again by itself
    expect((await updater.run("api"))!.containers[0]!.state).toBe("skipped");
  });

  test("min_image_age counts from the later of first seen and the image's creation time (a forged future date only delays)", async () => {
    const firstSeen = inMemory();
    const { engine, registry, updater } = setup({ min_image_age: 60_000 }, { firstSeen });
    engine.addImage("r.io/app:1");
    engine.addContainer("app", "r.io/app:1");
    const newer = engine.publish("r.io/app:1");
    const digest = `sha256:${newer.id.slice(7)}`;
    const future = new Date(Date.now() + 3_600_000);
    registry.createdAt.set(digest, future);
    const held = await updater.run("api");
    expect(held!.containers[0]!.reason).toBe(
      `newer image ${digest} created ${future.toISOString()} (after svc first saw it); applied once it is 1m old, from ${new Date(future.getTime() + 60_000).toISOString()} (min_image_age)`,
    );
    // first seen long ago: only the creation time holds it now
    firstSeen.set("app", `${digest} ${new Date(Date.now() - 7_200_000).toISOString()} ${future.toISOString()}`);
    expect((await updater.run("api"))!.containers[0]!.state).toBe("stale");
    firstSeen.set(
      "app",
      `${digest} ${new Date(Date.now() - 7_200_000).toISOString()} ${new Date(Date.now() - 7_200_000).toISOString()}`,
    );
    expect((await updater.run("api"))!.containers[0]!.state).toBe("updated");
  });
});
