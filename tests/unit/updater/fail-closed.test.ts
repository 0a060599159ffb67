/**
 * A check the replacement relies on that cannot run holds the update with the reason
 * (updater/containers/replace.ts; docs/security.md): an engine error is never taken for "nothing
 * lost" or for an image without defaults. The fake engine answers as the engine does when it
 * fails (an error thrown), not with an empty answer.
 */
import { expect, test } from "bun:test";
import { defaultConfig } from "../../../src/config/index.ts";
import { SvcError } from "../../../src/core/errors.ts";
import type { ContainerInspect, ImageInspect } from "../../../src/engine/port.ts";
import { silentLogger } from "../../../src/log/index.ts";
import { Metrics } from "../../../src/metrics/index.ts";
import { createUpdater } from "../../../src/updater/index.ts";
import { FakeEngine, FakeRegistry, MemoryAudit } from "./fakes.ts";

/** An engine whose answers to the replacement's checks fail as an engine outage does. */
class FailingChecks extends FakeEngine {
  failSettingsCheck = false;
  /** image ids whose inspect fails once the new image is pulled (as the replacement reads the old one) */
  failImages = new Set<string>();

  override async settingsBeyondApi(old: ContainerInspect): Promise<string[]> {
    if (this.failSettingsCheck) throw new SvcError("engine", "inspect container: socket hang up");
    return super.settingsBeyondApi(old);
  }

  override async inspectImage(reference: string): Promise<ImageInspect | null> {
    if (this.failImages.has(reference) && this.pulls.length > 0)
      throw new SvcError("engine", `inspect image ${reference}: 500 Internal Server Error`);
    return super.inspectImage(reference);
  }
}

function setup() {
  const engine = new FailingChecks();
  const registry = new FakeRegistry(engine);
  const updater = createUpdater({
    config: defaultConfig({ stop_timeout: 1000, rollback: { startup_timeout: 200 } }),
    engine,
    registry,
    metrics: new Metrics(),
    log: silentLogger,
    audit: new MemoryAudit(),
    sink: { publish: () => {} },
    timing: { pollMs: 5, stableMs: 20 },
  });
  return { engine, updater };
}

test("the check of what a replacement would lose cannot run: held with the reason, the container untouched", async () => {
  const { engine, updater } = setup();
  engine.addImage("r.io/app:1");
  const before = engine.addContainer("app", "r.io/app:1");
  engine.publish("r.io/app:1");
  engine.failSettingsCheck = true;
  const report = await updater.run("api");
  const entry = report!.containers.find((c) => c.name === "app")!;
  expect(entry.state).toBe("held");
  expect(entry.reason).toContain("svc could not check what a replacement would lose");
  expect(entry.reason).toContain("socket hang up");
  expect(engine.events.filter((e) => e.startsWith("stop:") || e.startsWith("create:"))).toEqual([]);
  expect(engine.containers.get(before.id)?.state).toBe("running");
});

test("the old image cannot be read (an engine error, not a 404): held, its defaults never taken as the user's settings", async () => {
  const { engine, updater } = setup();
  const old = engine.addImage("r.io/app:1");
  const before = engine.addContainer("app", "r.io/app:1");
  engine.publish("r.io/app:1");
  engine.failImages.add(old.id);
  const report = await updater.run("api");
  const entry = report!.containers.find((c) => c.name === "app")!;
  expect(entry.state).toBe("held");
  expect(entry.reason).toContain("svc could not read its old image");
  expect(entry.reason).toContain("500 Internal Server Error");
  expect(engine.events.filter((e) => e.startsWith("stop:") || e.startsWith("create:"))).toEqual([]);
  expect(engine.containers.get(before.id)?.state).toBe("running");
});
