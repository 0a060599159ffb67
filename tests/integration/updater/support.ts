/**
 * Shared setup of the updater's integration tests: the real engine and registry of the sandbox,
 * an updater scoped to the test's own containers, and helpers to make containers and images.
 */

import type { Subprocess } from "bun";
import type { ComposeFiles } from "../../../src/compose/index.ts";
import { type Config, type DeepPartial, defaultConfig } from "../../../src/config/index.ts";
import type { DataGuard } from "../../../src/dataguard/index.ts";
import { createDockerEngine } from "../../../src/engine/index.ts";
import type { Engine } from "../../../src/engine/port.ts";
import type { GitStep } from "../../../src/git/index.ts";
import type { AuditEntry, AuditLog } from "../../../src/log/index.ts";
import { type Logger, silentLogger } from "../../../src/log/index.ts";
import { Metrics } from "../../../src/metrics/index.ts";
import { createRegistry } from "../../../src/registry/index.ts";
import type { ReleaseNotesService } from "../../../src/releases/index.ts";
import { createUpdater, type ProgressListener, type Updater } from "../../../src/updater/index.ts";
import type { SessionReport } from "../../../src/updater/types.ts";
import { docker, inspect, sandbox } from "../../harness.ts";
import { EngineFixture } from "../../support/fixture.ts";

export class MemoryAudit implements AuditLog {
  entries: AuditEntry[] = [];
  record(entry: AuditEntry): void {
    this.entries.push(entry);
  }
}

export interface Harness {
  config: Config;
  engine: Engine;
  updater: Updater;
  metrics: Metrics;
  audit: MemoryAudit;
  published: SessionReport[];
}

/**
 * Every container these tests make carries this scope, and every updater here uses it: other
 * rooms' svc instances share the engine, and an instance without a scope (or with another one)
 * must never recover or restart what these tests are in the middle of updating.
 */
export const TEST_SCOPE = "svc-updater-tests";

/** Test defaults: short stop and startup timeouts, every cycle scoped by the caller's `containers`. */
export async function makeUpdater(
  overrides: DeepPartial<Config> & { containers: string[] },
  extra: {
    selfContainerId?: string;
    progress?: ProgressListener;
    log?: Logger;
    releases?: ReleaseNotesService;
    compose?: ComposeFiles;
    git?: GitStep;
    guard?: (engine: Engine, config: Config) => DataGuard;
  } = {},
): Promise<Harness> {
  const config = defaultConfig({
    scope: TEST_SCOPE,
    ...overrides,
    stop_timeout: overrides.stop_timeout ?? 1000,
    docker: { host: sandbox().dockerHost, ...overrides.docker },
    rollback: { startup_timeout: 3000, ...overrides.rollback },
  });
  const engine = await createDockerEngine(config.docker, silentLogger);
  const registry = createRegistry(config, silentLogger);
  const metrics = new Metrics();
  const audit = new MemoryAudit();
  const published: SessionReport[] = [];
  const updater = createUpdater({
    config,
    engine,
    registry,
    metrics,
    log: extra.log ?? silentLogger,
    audit,
    sink: { publish: (report) => published.push(report) },
    selfContainerId: extra.selfContainerId,
    progress: extra.progress,
    releases: extra.releases,
    compose: extra.compose,
    git: extra.git,
    guard: extra.guard?.(engine, config),
    timing: { pollMs: 200, stableMs: 1000 },
  });
  return { config, engine, updater, metrics, audit, published };
}

/** A family of names for one test file: containers, images and networks all start with it. */
/** The engine fixture of the updater tests: every container in the tests' scope. */
export class Fixture extends EngineFixture {
  constructor() {
    super("upd", { labels: { "svc.scope": TEST_SCOPE } });
  }

  override cleanup(): void {
    // a recording whose test failed before stopping it
    for (const proc of liveRecordings) proc.kill();
    liveRecordings.clear();
    super.cleanup();
  }
}

export function entryOf(report: SessionReport | null, name: string) {
  const entry = report?.containers.find((c) => c.name === name);
  if (!entry) throw new Error(`${name} is not in the report: ${JSON.stringify(report?.containers.map((c) => c.name))}`);
  return entry;
}

/** Asserts a container's state, showing its whole report entry when it differs. */
export function expectState(report: SessionReport | null, name: string, state: string) {
  const entry = entryOf(report, name);
  if (entry.state !== state) throw new Error(`${name}: expected ${state}, got ${JSON.stringify(entry, null, 1)}`);
  return entry;
}

export function names(report: SessionReport | null): string[] {
  return (report?.containers ?? []).map((c) => c.name).sort();
}

export { containersByPrefix } from "../../harness.ts";

/** `docker events` processes of recordings not stopped yet (their test failed first). */
const liveRecordings = new Set<Subprocess>();

/**
 * Records the engine's container events from now on, through a live `docker events` stream: the
 * engine keeps only its last 256 events (of every kind) for a later `--since` query, so a
 * query after the fact can miss events on a busy engine. `stop` ends the recording and returns
 * the wanted events in order, as `action:name` (`kill(signal):name` for kills).
 */
export function recordEvents(containerNames: string[], actions: string[]): { stop(): Promise<string[]> } {
  const since = Date.now();
  const proc = Bun.spawn(
    [
      "docker",
      "-H",
      sandbox().dockerHost,
      "events",
      "--since",
      String(Math.floor(since / 1000) - 1),
      "--format",
      "{{json .}}",
      "--filter",
      "type=container",
    ],
    {
      env: { ...process.env, DOCKER_CONFIG: sandbox().dockerConfig },
      stdout: "pipe",
      stderr: "ignore",
    },
  );
  liveRecordings.add(proc);
  const output = new Response(proc.stdout).text();
  const wanted = new Set(containerNames);
  return {
    async stop() {
      await Bun.sleep(500); // the last events are on their way through the stream
      proc.kill();
      liveRecordings.delete(proc);
      const out = await output;
      return out
        .split("\n")
        .filter(Boolean)
        .map(
          (line) =>
            JSON.parse(line) as { Action: string; Actor: { Attributes: Record<string, string> }; timeNano: number },
        )
        .filter((event) => event.timeNano / 1e6 >= since)
        .filter((event) => actions.includes(event.Action) && wanted.has(baseName(event.Actor.Attributes.name ?? "")))
        .sort((a, b) => a.timeNano - b.timeNano)
        .map(
          (event) =>
            `${event.Action}${event.Action === "kill" ? `(${event.Actor.Attributes.signal})` : ""}:${baseName(event.Actor.Attributes.name!)}`,
        );
    },
  };
}

/** A parked old container's events carry its parked name: map it back to the original. */
function baseName(name: string): string {
  return name.replace(/\.svc-old-[0-9a-f]{12}-(running|stopped)$/, "");
}

export { docker, inspect };
