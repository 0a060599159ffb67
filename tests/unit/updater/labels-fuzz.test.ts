/**
 * Every svc.* and Watchtower label, with random, huge, negative and overflowing values, on
 * containers next to a control container: a cycle never throws, the control is updated as
 * always, and a container whose label svc cannot take is skipped with a reason naming that label
 * (docs/security.md). Seeded, so a failure can be replayed: the seed is in the test's name.
 */
import { expect, test } from "bun:test";
import { defaultConfig, labelName } from "../../../src/config/index.ts";
import { silentLogger } from "../../../src/log/index.ts";
import { Metrics } from "../../../src/metrics/index.ts";
import { createUpdater } from "../../../src/updater/index.ts";
import { POLICY_LABEL_NAMES } from "../../../src/updater/selection/selection.ts";
import { FakeEngine, FakeRegistry, MemoryAudit } from "./fakes.ts";

const ALL_LABELS = [...POLICY_LABEL_NAMES];
const DURATION_LABELS = [labelName("stop_timeout"), labelName("min_image_age"), labelName("hook_timeout")];

/** Values a label can be given: empty, negative, overflowing, huge, hostile patterns, odd text. */
function hostileValues(random: () => number, self: string): string[] {
  const digits = (n: number) => Array.from({ length: n }, () => Math.floor(random() * 10)).join("");
  const text = (n: number) =>
    Array.from({ length: n }, () => String.fromCharCode(1 + Math.floor(random() * 0xd7fe))).join("");
  return [
    "",
    " ",
    "-1",
    `-${digits(30)}`,
    "1e309",
    "NaN",
    "Infinity",
    "0",
    "1ms",
    "25d",
    `${digits(400)}d`,
    `${digits(20)}`,
    "true",
    "false",
    "yes",
    "off",
    "semver:minor",
    "semver:major+pre",
    "regex:(\\d+\\.?)+",
    "regex:(a)\\1",
    `regex:${"(".repeat(500)}`,
    `regex:${"a{1000}".repeat(20)}`,
    "move",
    "report",
    self,
    `${self},${self}`,
    "SIGKILL",
    "SIG\u0000",
    "x".repeat(1 << 20),
    text(64),
    `${text(8)},${text(8)}`,
    JNDI,
    "$(reboot)",
    "\n\n\n",
    ",,,,",
    "none",
  ];
}

/** A hostile label value, as attackers write it. */
const JNDI = "${jndi:ldap://x}";

function mulberry32(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const SEED = Number(process.env.SVC_FUZZ_SEED ?? Date.now() % 1_000_000);

test(`labels fuzz (seed ${SEED}): no cycle throws, a bad label skips only its own container, naming the label`, async () => {
  const random = mulberry32(SEED);
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!;
  for (let round = 0; round < 12; round++) {
    const engine = new FakeEngine();
    const config = defaultConfig({ stop_timeout: 1000, lifecycle_hooks: true, rollback: { startup_timeout: 200 } });
    const updater = createUpdater({
      config,
      engine,
      registry: new FakeRegistry(engine),
      metrics: new Metrics(),
      log: silentLogger,
      audit: new MemoryAudit(),
      timing: { pollMs: 5, stableMs: 10 },
    });
    engine.addImage("r.io/control:1");
    engine.addContainer("control", "r.io/control:1");
    const labelled = new Map<string, Record<string, string>>();
    for (let i = 0; i < 6; i++) {
      const name = `fuzz${i}`;
      const labels: Record<string, string> = {};
      for (let n = 1 + Math.floor(random() * 3); n > 0; n--)
        labels[pick(ALL_LABELS)] = pick(hostileValues(random, name));
      engine.addImage(`r.io/app${i}:1.0.0`);
      engine.addContainer(name, `r.io/app${i}:1.0.0`, { labels });
      engine.publish(`r.io/app${i}:1.0.0`);
      labelled.set(name, labels);
    }
    engine.publish("r.io/control:1");

    const report = await updater.run("api");
    const described = JSON.stringify([...labelled]).slice(0, 2000);
    expect(report, described).not.toBeNull();
    const byName = new Map(report!.containers.map((c) => [c.name, c]));
    expect(byName.get("control")?.state, described).toBe("updated");
    for (const [name, labels] of labelled) {
      const entry = byName.get(name);
      if (entry === undefined) continue; // excluded by its svc.enable / scope label: not in the report at all
      expect(
        ["updated", "fresh", "stale", "skipped"],
        `${name} ${JSON.stringify(labels).slice(0, 500)}: ${entry.reason}`,
      ).toContain(entry.state);
      if (entry.state === "skipped" && entry.reason?.startsWith("label ")) {
        expect(
          Object.keys(labels).some((label) => entry.reason!.includes(label)),
          entry.reason!,
        ).toBe(true);
      }
      // a duration label svc cannot take always skips, naming it
      for (const label of DURATION_LABELS) {
        const value = labels[label];
        if (value === undefined || /^\d+(ms|s|m|h|d)?$/.test(value.trim())) continue;
        expect(entry.state, `${label}=${value.slice(0, 40)}`).toBe("skipped");
        expect(entry.reason).toContain(
          value.length > 4096 ? `label ${label} is ${value.length} characters` : `label ${label}=`,
        );
      }
    }
  }
}, 60_000);

test("known bad label values skip their container with a reason naming the label", async () => {
  const engine = new FakeEngine();
  const config = defaultConfig({ stop_timeout: 1000, lifecycle_hooks: true, rollback: { startup_timeout: 200 } });
  const updater = createUpdater({
    config,
    engine,
    registry: new FakeRegistry(engine),
    metrics: new Metrics(),
    log: silentLogger,
    audit: new MemoryAudit(),
    timing: { pollMs: 5, stableMs: 10 },
  });
  const cases: Record<string, Record<string, string>> = {
    stop: { "svc.stop_timeout": "25d" },
    age: { "svc.min_image_age": `${"9".repeat(400)}d` },
    hook: { "svc.hooks.timeout": "-1", "svc.hooks.pre_update": "true" },
    pattern: { "svc.tag_policy": "regex:(a)\\1" },
  };
  engine.addImage("r.io/app:1.0.0");
  for (const [name, labels] of Object.entries(cases)) engine.addContainer(name, "r.io/app:1.0.0", { labels });
  engine.addContainer("control", "r.io/app:1.0.0");
  engine.publish("r.io/app:1.0.0");
  const report = await updater.run("api");
  const byName = Object.fromEntries(report!.containers.map((c) => [c.name, c]));
  expect(byName.control!.state).toBe("updated");
  for (const [name, labels] of Object.entries(cases)) {
    expect(byName[name]!.state).toBe("skipped");
    expect(byName[name]!.reason).toStartWith(`label ${Object.keys(labels)[0]}=`);
  }
});
