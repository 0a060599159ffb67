/**
 * Home Assistant MQTT discovery against a real mosquitto: what a Home Assistant that connects
 * later finds retained on the broker (one update entity per container, its state), and that a
 * container gone from a full cycle has its entity removed.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { defaultConfig } from "../../../src/config/index.ts";
import { createNotifications } from "../../../src/notify/index.ts";
import { waitUntil } from "../../harness.ts";
import { recordingLogger } from "../../support/logger.ts";
import { type Mosquitto, removeDir, sampleReport, startMosquitto, stop } from "./peers.ts";

let broker: Mosquitto;
beforeAll(async () => {
  broker = await startMosquitto();
}, 30_000);
afterAll(async () => {
  await stop(broker?.proc);
  removeDir(broker?.dir);
}, 30_000);

/**
 * What a client connecting now receives on `topic`: its retained message, or "" when none comes
 * within `seconds` (a retained message comes with the subscription: the wait is for a loaded machine).
 */
async function retained(topic: string, seconds = 10): Promise<string> {
  const proc = Bun.spawn(
    ["mosquitto_sub", "-h", "127.0.0.1", "-p", String(broker.port), "-t", topic, "-C", "1", "-W", String(seconds)],
    { stdout: "pipe", stderr: "ignore" },
  );
  const [out] = await Promise.all([new Response(proc.stdout).text(), proc.exited]);
  return out.trim();
}

/**
 * Until a client connecting finds nothing retained on `topic`: svc's publishes (QoS 0 here, the
 * default) are on their way once flushed, not yet at the broker.
 */
async function cleared(topic: string): Promise<void> {
  await waitUntil(async () => (await retained(topic, 2)) === "", 30_000, `${topic} to hold nothing retained`);
}

async function publish(
  report: ReturnType<typeof sampleReport>,
  dispatcher: Awaited<ReturnType<typeof createNotifications>>,
) {
  dispatcher.publish(report);
  await dispatcher.flush();
}

test("an update entity per container, retained with its state; a container gone from a full cycle is removed", async () => {
  const config = defaultConfig({
    notifications: {
      mqtt: { broker: `mqtt://127.0.0.1:${broker.port}`, topic: "svc/reports", homeassistant_discovery: true },
    },
  });
  const log = recordingLogger();
  const dispatcher = await createNotifications(config, log, { hostname: "nas", retryDelayMs: 10, timeoutMs: 5000 });
  const report = sampleReport();
  await publish(report, dispatcher);

  const web = JSON.parse(await retained("homeassistant/update/svc_nas_web/config"));
  expect(web).toMatchObject({
    name: "web",
    unique_id: "svc_nas_web",
    state_topic: "svc/reports/update/svc_nas_web/state",
    device_class: "firmware",
  });
  expect(web.device.identifiers).toEqual(["svc_nas"]);
  const webState = JSON.parse(await retained(web.state_topic));
  // Home Assistant's tests/components/mqtt/test_update.py, test_json_state_message: the keys of a JSON state
  expect(webState).toEqual({
    installed_version: "444444444444",
    latest_version: "444444444444",
    title: "web on nas",
    release_summary: "updated",
    in_progress: false,
    update_percentage: null,
  });
  // svc's availability topic, retained online while svc is connected (Home Assistant's default payloads)
  expect(web).toMatchObject({
    availability_topic: "svc/reports/svc_nas/availability",
    payload_available: "online",
    payload_not_available: "offline",
  });
  expect(await retained(web.availability_topic)).toBe("online");
  // read-only unless homeassistant_install: no command topic, no buttons
  expect(web.command_topic).toBeUndefined();
  await cleared("homeassistant/button/svc_nas_check/config");
  const dbState = JSON.parse(await retained("svc/reports/update/svc_nas_db/state"));
  expect(dbState.installed_version).not.toBe("");
  expect(await retained("homeassistant/update/svc_nas_cache/config")).not.toBe("");

  // a filtered cycle does not say who is gone; a full one without db does
  await publish(
    sampleReport({ filter: { container: ["web"], image: [] }, containers: [report.containers[0]!] }),
    dispatcher,
  );
  expect(await retained("homeassistant/update/svc_nas_db/config")).not.toBe("");
  await publish(sampleReport({ containers: report.containers.filter((c) => c.name !== "db") }), dispatcher);
  await cleared("homeassistant/update/svc_nas_db/config");
  await cleared("svc/reports/update/svc_nas_db/state");
  expect(await retained("homeassistant/update/svc_nas_web/config")).not.toBe("");
  await dispatcher.close();
  // a goodbye, not the last will: svc says offline itself as it closes
  expect(await retained(web.availability_topic)).toBe("offline");
  expect(log.lines.filter((l) => l.level === "error")).toEqual([]);
}, 60_000);

/** `mosquitto_pub`: a message on `topic`, kept by the broker with `retain`. */
async function send(topic: string, payload: string, retain: boolean): Promise<void> {
  const args = ["mosquitto_pub", "-h", "127.0.0.1", "-p", String(broker.port), "-q", "1", "-t", topic, "-m", payload];
  const proc = Bun.spawn(retain ? [...args, "-r"] : args, { stdout: "ignore", stderr: "pipe" });
  if ((await proc.exited) !== 0) throw new Error(await new Response(proc.stderr).text());
}

// a retained "Roll back db" would roll db back at every start of svc, after its publisher lost its rights
test("a retained command is never done, and svc clears it; a press sent now is done", async () => {
  const check = "svc/reports/command/homeassistant/svc_nas/host/-/check";
  const rollback = "svc/reports/command/homeassistant/svc_nas/container/db/rollback";
  await send(check, "PRESS", true);
  await send(rollback, "PRESS", true);
  expect(await retained(rollback)).toBe("PRESS");
  const config = defaultConfig({
    notifications: {
      mqtt: {
        broker: `mqtt://127.0.0.1:${broker.port}`,
        topic: "svc/reports",
        homeassistant_discovery: true,
        homeassistant_install: true,
      },
    },
  });
  const log = recordingLogger();
  const dispatcher = await createNotifications(config, log, { hostname: "nas", retryDelayMs: 10, timeoutMs: 5000 });
  const runs: unknown[] = [];
  dispatcher.attach({
    runner: {
      run: async (trigger, filter, options) => (runs.push({ trigger, filter, options }), null),
      rollback: async (name) => (runs.push({ rollback: name }), null),
    },
  });
  // this anonymous broker lets svc write the command topics: both are cleared
  await cleared(check);
  await cleared(rollback);
  expect(log.lines.filter((l) => l.message.includes("a retained message"))).toHaveLength(2);
  await send(check, "PRESS", false);
  await waitUntil(() => runs.length > 0, 30_000, "the press sent now to be done");
  expect(runs).toEqual([{ trigger: "api", filter: undefined, options: { dryRun: true } }]);
  await dispatcher.close();
}, 90_000);
