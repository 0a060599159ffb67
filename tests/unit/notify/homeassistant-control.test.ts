/**
 * Home Assistant's commands as svc takes them (docs/home-assistant.md): who may press, what a press
 * does, the rate limit, what is ignored and logged. The broker is a recording stand-in for the
 * connection (the real one: tests/integration/e2e/homeassistant.test.ts); the updater a recording
 * runner, the clock given.
 */
import { expect, test } from "bun:test";
import type { AuditEntry } from "../../../src/log/index.ts";
import type { BrokerConnection, MessageHandler } from "../../../src/notify/channels/broker.ts";
import { HomeAssistantDiscovery } from "../../../src/notify/channels/homeassistant.ts";
import { HomeAssistantBridge, PRESS_INTERVAL_MS } from "../../../src/notify/channels/homeassistant-control.ts";
import { recordingLogger } from "../../support/logger.ts";
import { sampleReport } from "./fixtures.ts";

function setUp(options: { attached?: boolean } = {}) {
  const handlers: [string, MessageHandler][] = [];
  const published: { topic: string; payload: string }[] = [];
  const broker: BrokerConnection = {
    connected: true,
    publish: async (topic, payload) => void published.push({ topic, payload }),
    subscribe: (filter, handler) => void handlers.push([filter, handler]),
    onConnect: () => {},
    close: async () => {},
  };
  const discovery = new HomeAssistantDiscovery({
    prefix: "homeassistant",
    reportTopic: "svc/reports",
    hostname: "nas",
    commandUser: "homeassistant",
  });
  const log = recordingLogger();
  let now = 1_000_000;
  const bridge = new HomeAssistantBridge(
    broker,
    discovery,
    "nas",
    { qos: 1, commandUser: "homeassistant" },
    log,
    () => now,
  );
  const runs: unknown[] = [];
  const audit: AuditEntry[] = [];
  const attach = () =>
    bridge.attach({
      runner: {
        run: async (trigger, filter, options) => (runs.push({ trigger, filter, options }), null),
        rollback: async (name) => (runs.push({ rollback: name }), null),
      },
      audit: { record: (entry) => void audit.push(entry) },
    });
  if (options.attached !== false) attach();
  const press = async (topic: string, payload: string) => {
    for (const [, handler] of handlers) handler(topic, Buffer.from(payload), { retained: false });
    await Bun.sleep(0);
  };
  return {
    bridge,
    published,
    log,
    runs,
    audit,
    press,
    attach,
    tick: (ms: number) => (now += ms),
    subscribed: handlers.map(([f]) => f),
  };
}

const INSTALL_WEB = "svc/reports/command/homeassistant/svc_nas/container/web/install";

test("Install is POST /v1/update naming the target; Check now is POST /v1/check; Roll back is POST /v1/rollback", async () => {
  const t = setUp();
  expect(t.subscribed).toEqual(["svc/reports/command/+/svc_nas/#"]);
  await t.bridge.observe(sampleReport());
  await t.press(INSTALL_WEB, "install");
  await t.press("svc/reports/command/homeassistant/svc_nas/host/-/check", "PRESS");
  await t.press("svc/reports/command/homeassistant/svc_nas/container/web/rollback", "PRESS");
  expect(t.runs).toEqual([
    { trigger: "api", filter: { container: ["web"] }, options: { queue: true } },
    { trigger: "api", filter: undefined, options: { dryRun: true } },
    { rollback: "web" },
  ]);
  expect(t.audit.map((a) => [a.actor, a.trigger, a.request, a.container])).toEqual([
    ["mqtt:homeassistant", "mqtt", "mqtt install", "web"],
    ["mqtt:homeassistant", "mqtt", "mqtt check", undefined],
    ["mqtt:homeassistant", "mqtt", "mqtt rollback", "web"],
  ]);
});

test("a press while svc still starts (Check now is announced before recovery ends) is done once svc is ready", async () => {
  const t = setUp({ attached: false });
  await t.press("svc/reports/command/homeassistant/svc_nas/host/-/check", "PRESS");
  expect(t.runs).toEqual([]);
  expect(t.log.lines.some((l) => l.message === "home assistant command waits: svc is still starting")).toBe(true);
  t.attach();
  await Bun.sleep(0);
  expect(t.runs).toEqual([{ trigger: "api", filter: undefined, options: { dryRun: true } }]);
  expect(t.audit.map((a) => a.request)).toEqual(["mqtt check"]);
});

test(`a second press of the same within ${PRESS_INTERVAL_MS / 1000} s is ignored and logged; later it is done`, async () => {
  const t = setUp();
  await t.bridge.observe(sampleReport());
  await t.press(INSTALL_WEB, "install");
  await t.press(INSTALL_WEB, "install");
  expect(t.runs).toHaveLength(1);
  expect(t.log.lines.some((l) => l.message === "home assistant command ignored: pressed too often")).toBe(true);
  t.tick(PRESS_INTERVAL_MS);
  await t.press(INSTALL_WEB, "install");
  expect(t.runs).toHaveLength(2);
});

test("ignored and logged, never done: another user level, a payload that is not the entity's, a target svc does not manage", async () => {
  const t = setUp();
  await t.bridge.observe(sampleReport());
  await t.press("svc/reports/command/intruder/svc_nas/container/web/install", "install");
  await t.press(INSTALL_WEB, "PRESS");
  await t.press("svc/reports/command/homeassistant/svc_nas/container/elsewhere/install", "install");
  await t.press("svc/reports/command/homeassistant/svc_nas/service/web/install", "install");
  expect(t.runs).toEqual([]);
  expect(t.audit).toEqual([]);
  const ignored = t.log.lines.filter((l) => l.level === "warn").map((l) => l.message);
  expect(ignored).toEqual([
    "home assistant command ignored: not from the configured user",
    "home assistant command ignored: not a command svc knows",
    "home assistant command ignored: svc does not manage this target",
    "home assistant command ignored: svc does not manage this target",
  ]);
});

test("a press while a cycle runs: the entity leaves in_progress (the runner answered null)", async () => {
  const t = setUp();
  await t.bridge.observe(sampleReport());
  await t.press(INSTALL_WEB, "install");
  await Bun.sleep(0);
  const states = t.published
    .filter((m) => m.topic === "svc/reports/update/svc_nas_web/state")
    .map((m) => JSON.parse(m.payload));
  expect(states.slice(-2).map((s) => [s.in_progress, s.update_percentage])).toEqual([
    [true, 0],
    [false, null],
  ]);
});
