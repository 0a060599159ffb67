/** Swarm services as targets: selection, check, decisions and report, against a fake manager. */
import { describe, expect, test } from "bun:test";
import { type Config, type DeepPartial, defaultConfig } from "../../../src/config/index.ts";
import type { ServiceSummary, ServiceUpdateStatus, Swarm, SwarmState } from "../../../src/engine/swarm.ts";
import { inMemory } from "../../../src/state/index.ts";
import type { ProtocolContext } from "../../../src/updater/cycle/context.ts";
import { createServiceTargets } from "../../../src/updater/swarm/kind.ts";
import { DRY_RUN_REASON } from "../../../src/updater/types.ts";
import { recordingLogger } from "../../support/logger.ts";
import { FakeEngine, FakeRegistry, MemoryAudit } from "./fakes.ts";

/** A manager whose rollouts end as `outcome` says, at once. */
class FakeSwarm implements Swarm {
  writes: string[] = [];
  stateIs: SwarmState = { active: true, manager: true };
  outcome: ServiceUpdateStatus["state"] = "completed";
  constructor(readonly services: ServiceSummary[]) {}
  async state() {
    return this.stateIs;
  }
  async listServices() {
    return this.services;
  }
  async inspectService(idOrName: string) {
    return this.services.find((s) => s.id === idOrName || s.name === idOrName) ?? null;
  }
  async updateImage(service: ServiceSummary, image: string) {
    this.writes.push(`${service.name} ${image}`);
    // a new description, as the engine's next answer would be (the one read stays as it was)
    const at = this.services.findIndex((x) => x.id === service.id);
    const s = this.services[at]!;
    const pinned = this.outcome === "completed" ? image : s.image;
    this.services[at] = {
      ...s,
      image: pinned,
      version: s.version + 1,
      update: { state: this.outcome, message: this.outcome, startedAt: `t${this.writes.length}` },
    };
  }
  async rollback() {}
  async runningTasks() {
    return [];
  }
}

const digest = (n: number) => `sha256:${String(n).repeat(64)}`;
function service(
  name: string,
  image: string,
  labels: Record<string, string> = {},
  mode = "replicated",
): ServiceSummary {
  return {
    id: `id-${name}`,
    name,
    version: 1,
    image,
    labels,
    mode,
    failureAction: "pause",
    update: null,
    previousImage: null,
    spec: {},
  };
}

function setup(services: ServiceSummary[], config: DeepPartial<Config> = {}) {
  const swarm = new FakeSwarm(services);
  const engine = Object.assign(new FakeEngine(), { swarm });
  const registry = new FakeRegistry(engine);
  const log = recordingLogger();
  const full = defaultConfig(config);
  const rolledBack = inMemory();
  const targets = createServiceTargets({
    config: full,
    engine,
    registry,
    log,
    rolledBack,
    firstSeen: inMemory(),
    skipped: inMemory(),
    concurrency: 4,
    draining: () => false,
  })!;
  const ctx: ProtocolContext = {
    engine,
    config: full,
    log,
    audit: new MemoryAudit(),
    trigger: "api",
    timing: { pollMs: 1, stableMs: 1 },
  };
  const run = async (options: { dryRun?: boolean } = {}) =>
    (await targets.run({ ctx, all: [], filter: {}, options: { dryRun: options.dryRun ?? false } })).report();
  return { swarm, engine, log, rolledBack, run };
}

describe("which services a cycle looks at", () => {
  test("their spec's labels and names select them as a container's would; jobs and digest-only pins are skipped", async () => {
    const { engine, run } = setup(
      [
        service("web", `r/web:1@${digest(1)}`),
        service("off", `r/off:1@${digest(1)}`, { "svc.enable": "false" }),
        service("scoped", `r/web:1@${digest(1)}`, { "svc.scope": "other" }),
        service("disabled", `r/web:1@${digest(1)}`),
        service("job", `r/web:1@${digest(1)}`, {}, "replicatedjob"),
        service("pinned", `r/web@${digest(1)}`),
      ],
      { disable_containers: ["disabled"] },
    );
    engine.remote.set("r/web:1", digest(1));
    const report = await run();
    expect(report.map((r) => [r.name, r.kind, r.state, r.reason])).toEqual([
      ["web", "service", "fresh", null],
      ["job", "service", "skipped", "a Swarm job: svc does not run it again"],
      ["pinned", "service", "skipped", "pinned by digest"],
    ]);
  });

  test("label_enable: only services labelled svc.enable=true", async () => {
    const { engine, run } = setup(
      [
        service("web", `r/web:1@${digest(1)}`),
        service("opted", `r/web:1@${digest(1)}`, { "com.centurylinklabs.watchtower.enable": "true" }),
      ],
      { label_enable: true },
    );
    engine.remote.set("r/web:1", digest(1));
    expect((await run()).map((r) => r.name)).toEqual(["opted"]);
  });

  test("on a worker nothing, said once; outside a swarm nothing, said never", async () => {
    const { swarm, log, run } = setup([service("web", `r/web:1@${digest(1)}`)]);
    swarm.stateIs = { active: true, manager: false };
    expect(await run()).toEqual([]);
    expect(await run()).toEqual([]);
    swarm.stateIs = { active: false, manager: false };
    expect(await run()).toEqual([]);
    expect(log.lines.filter((l) => l.message.includes("Swarm worker")).length).toBe(1);
  });
});

describe("a newer digest", () => {
  test("is written pinned (repo:tag@digest) and reported updated, old and new digests named", async () => {
    const { engine, swarm, run } = setup([service("web", `r/web:1@${digest(1)}`)]);
    engine.remote.set("r/web:1", digest(2));
    const [entry] = await run();
    expect(swarm.writes).toEqual([`web r/web:1@${digest(2)}`]);
    expect(entry).toMatchObject({
      kind: "service",
      image: "r/web:1",
      state: "updated",
      old_digest: digest(1),
      new_digest: digest(2),
      new_image_id: digest(2),
    });
  });

  test("monitor-only (label) and a dry run: stale, nothing written", async () => {
    const { engine, swarm, run } = setup([
      service("web", `r/web:1@${digest(1)}`, { "svc.monitor_only": "true" }),
      service("api", `r/web:1@${digest(1)}`),
    ]);
    engine.remote.set("r/web:1", digest(2));
    const report = await run({ dryRun: true });
    expect(report.map((r) => [r.name, r.state, r.reason])).toEqual([
      ["web", "stale", null],
      ["api", "stale", DRY_RUN_REASON],
    ]);
    expect(swarm.writes).toEqual([]);
  });

  test("rolled back by Swarm: reported, remembered, and skipped by the next cycle", async () => {
    const { engine, swarm, rolledBack, run } = setup([service("web", `r/web:1@${digest(1)}`)]);
    engine.remote.set("r/web:1", digest(2));
    swarm.outcome = "rollback_completed";
    expect((await run())[0]).toMatchObject({
      state: "rolled_back",
      reason: "rolled back by Swarm: rollback_completed",
    });
    expect(rolledBack.get("web")).toBe(digest(2));
    expect((await run())[0]).toMatchObject({
      state: "skipped",
      reason: `${digest(2)} was rolled back before; waiting for a newer image`,
    });
    expect(swarm.writes.length).toBe(1);
  });
});

describe("an update window (docs/windows.md)", () => {
  test("a stale service outside its window is pending and its spec is not written; its label narrows the host's window", async () => {
    // the window opens an hour from now, whatever the time zone
    const hhmm = (at: Date) => `${String(at.getHours()).padStart(2, "0")}:${String(at.getMinutes()).padStart(2, "0")}`;
    const later = new Date(Date.now() + 3_600_000);
    const closed = `${hhmm(later)}-${hhmm(new Date(later.getTime() + 3_600_000))}`;
    const { swarm, engine, run } = setup(
      [service("web", `r/web:1@${digest(1)}`), service("api", `r/web:1@${digest(1)}`, { "svc.update_window": closed })],
      { update_window: "00:00-24:00" },
    );
    engine.remote.set("r/web:1", digest(2));
    const report = (await run()).sort((a, b) => a.name.localeCompare(b.name));
    expect(report.map((r) => [r.name, r.state])).toEqual([
      ["api", "pending"],
      ["web", "updated"],
    ]);
    expect(report[0]!.applies_at).toBe(new Date(Math.floor(later.getTime() / 60_000) * 60_000).toISOString());
    expect(swarm.writes).toEqual([`web r/web:1@${digest(2)}`]);
  });
});

describe("what a service's update brings", () => {
  test("both images' labels from the registry (the images live on the nodes); hold_breaking holds it, nothing written", async () => {
    const { engine, swarm } = setup([]);
    swarm.services.push(service("web", `r/web:1@${digest(1)}`));
    engine.remote.set("r/web:1", digest(2));
    const registry = new FakeRegistry(engine);
    const source = "https://github.com/acme/web";
    registry.labelsOf.set(digest(1), {
      "org.opencontainers.image.source": source,
      "org.opencontainers.image.version": "1.4.0",
    });
    registry.labelsOf.set(digest(2), {
      "org.opencontainers.image.source": source,
      "org.opencontainers.image.version": "2.0.0",
    });
    const config = defaultConfig({ hold_breaking: true });
    const log = recordingLogger();
    const targets = createServiceTargets({
      config,
      engine,
      registry,
      log,
      rolledBack: inMemory(),
      firstSeen: inMemory(),
      skipped: inMemory(),
      concurrency: 4,
      draining: () => false,
    })!;
    const asked: unknown[] = [];
    const releases = {
      between: async (query: { from: string | null; to: string | null }) => {
        asked.push(query);
        const release = {
          version: "2.0.0",
          title: "2.0.0",
          published_at: null,
          url: null,
          breaking: true,
          notes: "",
          notes_cut: false,
        };
        return {
          source,
          source_from: "the newer image's org.opencontainers.image.source",
          from_version: query.from,
          to_version: query.to,
          releases: [release],
          more: 0,
          breaking: 1,
          problem: null,
        };
      },
    };
    const ctx: ProtocolContext = {
      engine,
      config,
      log,
      audit: new MemoryAudit(),
      trigger: "schedule",
      timing: { pollMs: 1, stableMs: 1 },
    };
    const [entry] = (await targets.run({ ctx, all: [], filter: {}, options: { dryRun: false }, releases })).report();
    expect(asked).toEqual([
      {
        sources: [
          { url: source, from: "the newer image's org.opencontainers.image.source" },
          { url: source, from: "the running image's org.opencontainers.image.source" },
        ],
        from: "1.4.0",
        to: "2.0.0",
      },
    ]);
    expect(entry).toMatchObject({
      kind: "service",
      state: "held",
      releases: { from_version: "1.4.0", to_version: "2.0.0", breaking: 1 },
    });
    expect(swarm.writes).toEqual([]);
  });
});
