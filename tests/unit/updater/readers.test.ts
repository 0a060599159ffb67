/**
 * Readers and the schedule (docs/api.md): concurrent readers share one dry run, a recent one is
 * reused, and a scheduled cycle asked for while a dry run (or "Check now") runs waits and runs
 * next, where it used to be dropped.
 */
import { expect, test } from "bun:test";
import { defaultConfig } from "../../../src/config/index.ts";
import { silentLogger } from "../../../src/log/index.ts";
import { Metrics } from "../../../src/metrics/index.ts";
import { createUpdater } from "../../../src/updater/index.ts";
import { FakeEngine, FakeRegistry, MemoryAudit } from "./fakes.ts";

function setup() {
  const engine = new FakeEngine();
  engine.addImage("r.io/app:1");
  engine.addContainer("app", "r.io/app:1");
  const metrics = new Metrics();
  const config = defaultConfig({ stop_timeout: 1000, rollback: { startup_timeout: 200 } });
  const updater = createUpdater({
    config,
    engine,
    registry: new FakeRegistry(engine),
    metrics,
    log: silentLogger,
    audit: new MemoryAudit(),
    timing: { pollMs: 5, stableMs: 10 },
  });
  let open = () => {};
  engine.gate = new Promise<void>((resolve) => (open = resolve));
  return { engine, metrics, updater, open: () => (open(), (engine.gate = undefined)) };
}

test("eight readers at once share one dry run; a reader right after gets the same overview", async () => {
  const { engine, updater, open } = setup();
  const readers = Array.from({ length: 8 }, () => updater.overview());
  open();
  const answers = await Promise.all(readers);
  expect(answers.every((a) => a !== null && a.containers[0]?.name === "app")).toBe(true);
  expect(new Set(answers.map((a) => a!.checked_at)).size).toBe(1);
  expect(engine.listCalls).toBe(1);
  expect(await updater.overview()).toBe(answers[0]!);
  expect(engine.listCalls).toBe(1);
});

test("a scheduled cycle asked for during a dry run runs after it; a request that is not scheduled is still skipped", async () => {
  const { engine, metrics, updater, open } = setup();
  const reading = updater.overview();
  const scheduled = updater.run("schedule");
  const joined = updater.run("schedule");
  const checkNow = updater.run("api");
  engine.publish("r.io/app:1");
  open();
  expect((await reading)?.containers[0]?.state).toBe("stale");
  const report = await scheduled;
  expect(report?.trigger).toBe("schedule");
  expect(report?.containers.find((c) => c.name === "app")?.state).toBe("updated");
  expect(await joined).toBeNull();
  expect(await checkNow).toBeNull();
  expect(metrics.snapshot()).toMatchObject({ svc_scans_total: 1, svc_scans_skipped: 2 });
  // the real cycle changed the container: the next reader gets a new dry run
  const after = await updater.overview();
  expect(after?.containers[0]?.state).toBe("fresh");
});

test("while a cycle that acts runs, a reader is answered null (409) at once, and no dry run starts", async () => {
  const { engine, updater, open } = setup();
  const acting = updater.run("api");
  expect(await updater.overview()).toBeNull();
  expect(engine.listCalls).toBe(1);
  open();
  expect((await acting)?.trigger).toBe("api");
  expect((await updater.overview())?.containers[0]?.name).toBe("app");
});

test("a check asked for now (fresh: the page's Cache-Control: no-cache) is not answered from a recent overview", async () => {
  const { engine, updater, open } = setup();
  open();
  const first = await updater.overview();
  expect(await updater.overview()).toBe(first!);
  const fresh = await updater.overview(undefined, { fresh: true });
  expect(fresh).not.toBe(first!);
  expect(engine.listCalls).toBe(2);
});

test("a reader with another filter during a reader's dry run waits for it, then gets its own overview (not 409)", async () => {
  const { engine, updater, open } = setup();
  engine.addContainer("db", "r.io/app:1");
  const everything = updater.overview(undefined, { fresh: true });
  const onlyDb = updater.overview({ container: ["db"] });
  open();
  expect((await everything)?.containers.map((c) => c.name).sort()).toEqual(["app", "db"]);
  expect((await onlyDb)?.containers.map((c) => c.name)).toEqual(["db"]);
  expect(engine.listCalls).toBe(2);
});
