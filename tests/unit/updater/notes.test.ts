/**
 * What an update brings, in the cycle (cycle/notes.ts), with fakes of the engine, the registry
 * and the source hosts: asked for stale targets only, one session per cycle, the summary in the
 * report, hold_breaking and asking by name.
 */
import { expect, test } from "bun:test";
import { type Config, type DeepPartial, defaultConfig } from "../../../src/config/index.ts";
import { silentLogger } from "../../../src/log/index.ts";
import { Metrics } from "../../../src/metrics/index.ts";
import type { ReleaseNotes, ReleaseNotesService, ReleaseQuery } from "../../../src/releases/index.ts";
import { createUpdater } from "../../../src/updater/index.ts";
import { FakeEngine, FakeRegistry, MemoryAudit } from "./fakes.ts";

const BREAKING: ReleaseNotes = {
  source: "https://github.com/acme/app",
  source_from: "label svc.release_notes",
  from_version: "1.0.0",
  to_version: "2.0.0",
  releases: [
    {
      version: "2.0.0",
      title: "Two",
      published_at: null,
      url: "https://github.com/acme/app/releases/tag/v2.0.0",
      breaking: true,
      notes: "",
      notes_cut: false,
    },
  ],
  more: 0,
  breaking: 1,
  problem: null,
};

function setup(
  overrides: DeepPartial<Config> = {},
  answer: (query: ReleaseQuery) => Promise<ReleaseNotes> = async () => BREAKING,
) {
  const engine = new FakeEngine();
  const registry = new FakeRegistry(engine);
  const asked: ReleaseQuery[] = [];
  let sessions = 0;
  const releases: ReleaseNotesService = {
    session: () => {
      sessions++;
      return { between: (query) => (asked.push(query), answer(query)) };
    },
  };
  const config = defaultConfig({ stop_timeout: 1000, ...overrides, rollback: { startup_timeout: 200 } });
  const updater = createUpdater({
    config,
    engine,
    registry,
    metrics: new Metrics(),
    log: silentLogger,
    audit: new MemoryAudit(),
    timing: { pollMs: 5, stableMs: 20 },
    releases,
  });
  return { engine, updater, asked, sessions: () => sessions };
}

const label = ["svc.release_notes", "https://github.com/acme/app"] as const;

test("asked for stale targets only, in one session per cycle; the report carries the summary", async () => {
  const { engine, updater, asked, sessions } = setup();
  engine.addImage("r.io/app:1");
  engine.addImage("r.io/db:1");
  engine.addContainer("app", "r.io/app:1", { labels: Object.fromEntries([label]) });
  engine.addContainer("db", "r.io/db:1");
  expect((await updater.run("api"))!.containers.every((c) => c.releases === undefined)).toBe(true);
  expect(asked).toEqual([]);
  engine.publish("r.io/app:1");
  const report = await updater.run("api");
  const app = report!.containers.find((c) => c.name === "app")!;
  expect(app).toMatchObject({
    state: "updated",
    releases: { source: BREAKING.source, count: 1, breaking: 1, newest_url: BREAKING.releases[0]!.url, problem: null },
  });
  expect(report!.containers.find((c) => c.name === "db")!.releases).toBeUndefined();
  expect(asked).toHaveLength(1);
  expect(asked[0]!.sources[0]).toEqual({ url: label[1], from: "label svc.release_notes" });
  expect(sessions()).toBe(2);
});

test("hold_breaking: held in a scheduled cycle, a dry run and an update of everything; applied when asked for by name", async () => {
  const { engine, updater } = setup({ hold_breaking: true });
  engine.addImage("r.io/app:1");
  engine.addContainer("app", "r.io/app:1");
  engine.publish("r.io/app:1");
  for (const held of [
    await updater.run("schedule"),
    await updater.run("api"),
    await updater.run("api", { container: ["app"] }, { dryRun: true }),
  ]) {
    expect(held!.containers[0]).toMatchObject({
      state: "held",
      reason: expect.stringContaining("release 2.0.0 (Two) breaks"),
    });
    expect(held!.counts.held).toBe(1);
  }
  expect(engine.events.filter((e) => e.startsWith("pull"))).toEqual([]);
  expect((await updater.run("api", { container: ["app"] }))!.containers[0]!.state).toBe("updated");
});

test("the label holds without the option, and svc.hold_breaking=false lets it through", async () => {
  const { engine, updater } = setup({ hold_breaking: true });
  engine.addImage("r.io/app:1");
  engine.addImage("r.io/web:1");
  engine.addContainer("app", "r.io/app:1", { labels: { "svc.hold_breaking": "false" } });
  engine.addContainer("web", "r.io/web:1");
  engine.publish("r.io/app:1");
  engine.publish("r.io/web:1");
  const report = await updater.run("schedule");
  expect(Object.fromEntries(report!.containers.map((c) => [c.name, c.state]))).toEqual({ app: "updated", web: "held" });
});

test("notes that cannot be read hold nothing and fail nothing", async () => {
  const { engine, updater } = setup({ hold_breaking: true }, async () => {
    throw new Error("the host is on fire");
  });
  engine.addImage("r.io/app:1");
  engine.addContainer("app", "r.io/app:1");
  engine.publish("r.io/app:1");
  const entry = (await updater.run("schedule"))!.containers[0]!;
  expect(entry.state).toBe("updated");
  expect(entry.releases?.problem).toBe("releases not read: the host is on fire");
});

test("a monitor-only container gets its notes and stays stale; release_notes.enabled off asks nothing", async () => {
  const { engine, updater, asked } = setup({ monitor_only: true, hold_breaking: true });
  engine.addImage("r.io/app:1");
  engine.addContainer("app", "r.io/app:1");
  engine.publish("r.io/app:1");
  expect((await updater.run("api"))!.containers[0]).toMatchObject({ state: "stale", releases: { breaking: 1 } });
  const off = setup({ release_notes: { enabled: false } });
  off.engine.addImage("r.io/app:1");
  off.engine.addContainer("app", "r.io/app:1");
  off.engine.publish("r.io/app:1");
  expect((await off.updater.run("api"))!.containers[0]!.releases).toBeUndefined();
  expect(off.asked).toEqual([]);
  expect(asked).toHaveLength(1);
});
