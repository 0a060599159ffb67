/**
 * Home Assistant's Install, end to end (docs/home-assistant.md): svc (a real process) and a
 * client that does what Home Assistant does (reads the discovery under `homeassistant/`,
 * publishes `payload_install` to the entity's `command_topic`, as Home Assistant's
 * tests/components/mqtt/test_update.py, test_run_install_service, shows) on a real mosquitto
 * with the documented password_file and acl_file. The container is updated on the engine, the
 * progress arrives in order, the versions move; the broker restarted meanwhile: svc reconnects
 * and says it is online again; another broker user cannot make svc act.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import mqtt, { type MqttClient } from "mqtt";
import { freePort, inspect, removeContainers, sandbox, waitUntil } from "../../harness.ts";
import { docsAcl } from "../../support/home-assistant.ts";
import { waitForPort as waitForBroker } from "../notify/peers.ts";
import {
  FAILING_CMD,
  Fixture,
  QUICK_STOP_CMD,
  type SvcProcess,
  startSvc,
  stopAll,
  stopProcess,
  track,
  userEnv,
} from "./support.ts";

const fx = new Fixture("e2e-hass");
const TOPIC = `svc-ha-${fx.prefix}`;
const PASSWORDS = { svc: "svc-pw-3c9d1e", homeassistant: "ha-pw-81f0aa", intruder: "in-pw-55e2b1" };

let brokerPort: number;
let brokerConf: string;
let brokerLog: string;
let broker: ReturnType<typeof Bun.spawn> | undefined;
let svc: SvcProcess;
let auditFile: string;
let cfg: string;
/** state_dir's default folder, the same for each svc this file starts (a user's restart) */
let stateHome: string;
let appV1: string;
let badV1: string;
const clients: MqttClient[] = [];

interface Message {
  topic: string;
  payload: string;
}

async function startBroker(): Promise<void> {
  broker = track(Bun.spawn(["mosquitto", "-c", brokerConf], { stdout: "ignore", stderr: Bun.file(brokerLog) }));
  await waitForBroker(brokerPort, "mosquitto", broker, brokerLog);
}

/** A client as Home Assistant is one: it keeps every message it receives. */
async function connect(
  user: keyof typeof PASSWORDS,
  subscriptions: string[],
): Promise<{ client: MqttClient; messages: Message[] }> {
  const client = mqtt.connect({
    host: "127.0.0.1",
    port: brokerPort,
    username: user,
    password: PASSWORDS[user],
    clientId: `${user}-${fx.prefix}`.slice(0, 23),
    reconnectPeriod: 300,
  });
  clients.push(client);
  const messages: Message[] = [];
  client.on("message", (topic, payload) => messages.push({ topic, payload: payload.toString("utf8") }));
  await new Promise<void>((resolve, reject) => {
    client.once("connect", () => resolve());
    client.once("error", reject);
  });
  for (const filter of subscriptions) await client.subscribeAsync(filter, { qos: 1 });
  return { client, messages };
}

const found = (messages: Message[], topic: string) => messages.filter((m) => m.topic === topic);
const last = (messages: Message[], topic: string) => found(messages, topic).at(-1)?.payload;
const auditLines = () =>
  readFileSync(auditFile, "utf8")
    .trim()
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line).fields);

beforeAll(async () => {
  const dir = fx.tempDir("broker");
  brokerPort = freePort();
  brokerConf = join(dir, "mosquitto.conf");
  brokerLog = join(dir, "mosquitto.log");
  const passwords = join(dir, "passwords");
  writeFileSync(passwords, "");
  for (const [user, password] of Object.entries(PASSWORDS))
    Bun.spawnSync(["mosquitto_passwd", "-b", passwords, user, password]);
  const acl = join(dir, "acl");
  writeFileSync(acl, docsAcl(TOPIC));
  // mosquitto started as root drops to its own user: it must be able to read these files
  chmodSync(dir, 0o755);
  for (const file of [passwords, acl]) chmodSync(file, 0o644);
  writeFileSync(
    brokerConf,
    [
      `listener ${brokerPort} 127.0.0.1`,
      "allow_anonymous false",
      `password_file ${passwords}`,
      `acl_file ${acl}`,
      "persistence false",
      "log_type all",
      "",
    ].join("\n"),
  );
  await startBroker();

  const v1 = fx.image("app", { changes: [QUICK_STOP_CMD, "LABEL org.opencontainers.image.version=1.0.0"] });
  fx.run("app", v1.ref);
  fx.image("app", { changes: [QUICK_STOP_CMD, "LABEL org.opencontainers.image.version=1.1.0"] });
  // a second container whose newer image fails to start: its Install is rolled back
  appV1 = v1.id;
  const bad1 = fx.image("bad", { changes: [QUICK_STOP_CMD, "LABEL org.opencontainers.image.version=2.0.0"] });
  fx.run("bad", bad1.ref);
  badV1 = bad1.id;
  fx.image("bad", { changes: [FAILING_CMD, "LABEL org.opencontainers.image.version=2.1.0"] });

  cfg = fx.tempDir("cfg");
  stateHome = fx.tempDir("state");
  auditFile = join(cfg, "audit.log");
  const config = [
    'log_format = "json"',
    'stop_timeout = "1s"',
    `audit_log = "${auditFile}"`,
    'poll_interval = "24h"', // only Home Assistant's presses run cycles here
    `containers = ["${fx.name("app")}", "${fx.name("bad")}"]`,
    "[docker]",
    `host = "${sandbox().dockerHost}"`,
    "[rollback]",
    'startup_timeout = "3s"',
    "[notifications]",
    'hostname = "nas"',
    "[notifications.mqtt]",
    `broker = "mqtt://127.0.0.1:${brokerPort}"`,
    `topic = "${TOPIC}"`,
    "qos = 1",
    'username = "svc"',
    `password = "${PASSWORDS.svc}"`,
    "homeassistant_discovery = true",
    "homeassistant_install = true",
    "",
  ].join("\n");
  writeFileSync(join(cfg, "svc.toml"), config);
  svc = startSvc(["-c", "svc.toml"], { cwd: cfg, env: userEnv({ XDG_STATE_HOME: stateHome }) });
}, 120_000);

afterAll(async () => {
  for (const client of clients) client.end(true);
  await stopAll();
  await stopProcess(broker);
  fx.cleanup();
}, 120_000);

describe("Home Assistant presses Install", () => {
  const name = fx.name("app");
  const id = `svc_nas_${name.replace(/[^A-Za-z0-9_-]/g, "_")}`;
  let ha: { client: MqttClient; messages: Message[] };

  test("svc is online and announces Check now before any cycle; pressing it brings the entities", async () => {
    ha = await connect("homeassistant", ["homeassistant/#", `${TOPIC}/#`]);
    // the press may come while svc still starts (it waits for svc to be ready); a loaded machine's room
    const wait = (what: string, done: () => boolean) => waitUntil(done, 90_000, `${what}\n${svc.describe()}`);
    await wait("svc online", () => last(ha.messages, `${TOPIC}/svc_nas/availability`) === "online");
    await wait(
      "the Check now button",
      () => found(ha.messages, "homeassistant/button/svc_nas_check/config").length > 0,
    );
    const check = JSON.parse(last(ha.messages, "homeassistant/button/svc_nas_check/config")!);
    await ha.client.publishAsync(check.command_topic, check.payload_press, { qos: 1 });
    await wait(
      "the update entity",
      () =>
        found(ha.messages, `homeassistant/update/${id}/config`).length > 0 &&
        found(ha.messages, `${TOPIC}/update/${id}/state`).length > 0,
    );
    const state = JSON.parse(last(ha.messages, `${TOPIC}/update/${id}/state`)!);
    expect(state).toMatchObject({
      installed_version: "1.0.0",
      latest_version: "1.1.0",
      title: `${name} on nas`,
      in_progress: false,
      update_percentage: null,
    });
  }, 200_000);

  test("another broker user cannot make svc act: the broker denies it (the documented ACL)", async () => {
    const config = JSON.parse(last(ha.messages, `homeassistant/update/${id}/config`)!);
    const intruder = await connect("intruder", []);
    await intruder.client.publishAsync(config.command_topic, "install", { qos: 1 });
    await intruder.client.publishAsync(
      config.command_topic.replace("/command/homeassistant/", "/command/intruder/"),
      "install",
      { qos: 1 },
    );
    await waitUntil(
      () => (readFileSync(brokerLog, "utf8").match(/Denied PUBLISH from intruder/g) ?? []).length >= 2,
      15_000,
      "the broker's denials",
    );
    expect(auditLines().filter((line) => line.action === "request")).toEqual(
      [{ action: "request", trigger: "mqtt", actor: "mqtt:homeassistant", request: "mqtt check" }].map(
        expect.objectContaining,
      ),
    );
  }, 120_000);

  test("Install: progress in order, the container on the new image, the versions moved, one audit line with the broker user", async () => {
    const config = JSON.parse(last(ha.messages, `homeassistant/update/${id}/config`)!);
    expect(config).toMatchObject({ payload_install: "install", availability_topic: `${TOPIC}/svc_nas/availability` });
    const before = inspect(name).Image;
    const from = ha.messages.length;
    await ha.client.publishAsync(config.command_topic, config.payload_install, { qos: 1 });
    const states = () =>
      ha.messages
        .slice(from)
        .filter((m) => m.topic === `${TOPIC}/update/${id}/state`)
        .map((m) => JSON.parse(m.payload));
    await waitUntil(
      () => states().some((s) => s.in_progress === false && s.installed_version === "1.1.0"),
      60_000,
      `the new version\n${svc.describe()}`,
    );
    const seen = states();
    const percentages = seen.filter((s) => s.in_progress).map((s) => s.update_percentage);
    expect(percentages[0]).toBe(0);
    expect(percentages).toEqual([...percentages].sort((a, b) => a - b));
    // each step as it starts (docs/home-assistant.md): pull, park, stop, create, start, watch
    expect(percentages).toEqual([0, 10, 30, 40, 50, 60, 80]);
    expect(seen.at(-1)).toMatchObject({
      installed_version: "1.1.0",
      latest_version: "1.1.0",
      in_progress: false,
      update_percentage: null,
    });
    expect(inspect(name).Image).not.toBe(before);
    const requests = auditLines().filter((line) => line.action === "request");
    expect(requests.at(-1)).toMatchObject({
      trigger: "mqtt",
      actor: "mqtt:homeassistant",
      container: name,
      request: "mqtt install",
    });
    expect(auditLines().some((line) => line.action === "pull" && line.container === name)).toBe(true);
  }, 90_000);

  test("a newer image that fails: Install rolls back, and the entity says so", async () => {
    const bad = fx.name("bad");
    const badId = `svc_nas_${bad.replace(/[^A-Za-z0-9_-]/g, "_")}`;
    const config = JSON.parse(last(ha.messages, `homeassistant/update/${badId}/config`)!);
    const from = ha.messages.length;
    await ha.client.publishAsync(config.command_topic, config.payload_install, { qos: 1 });
    const states = () =>
      ha.messages
        .slice(from)
        .filter((m) => m.topic === `${TOPIC}/update/${badId}/state`)
        .map((m) => JSON.parse(m.payload));
    await waitUntil(
      () => states().some((s) => s.in_progress === false && /rolled back/.test(s.release_summary)),
      60_000,
      `the rollback
${svc.describe()}`,
    );
    expect(states().at(-1)).toMatchObject({
      installed_version: "2.0.0",
      latest_version: "2.1.0",
      in_progress: false,
      update_percentage: null,
    });
    expect(states().at(-1).release_summary).toMatch(/^rolled back: /);
    expect(inspect(bad).Image).toBe(badV1);
  }, 90_000);

  test("Roll back: the container goes back to the image it ran before the Install", async () => {
    const config = JSON.parse(last(ha.messages, `homeassistant/button/${id}_rollback/config`)!);
    expect(config).toMatchObject({ payload_press: "PRESS" });
    await ha.client.publishAsync(config.command_topic, config.payload_press, { qos: 1 });
    // while the rollback runs, the container is parked under another name for a moment
    const imageNow = () => {
      try {
        return inspect(name).Image;
      } catch {
        return null;
      }
    };
    await waitUntil(
      () => imageNow() === appV1,
      60_000,
      `the rollback of ${name}
${svc.describe()}`,
    );
    await waitUntil(
      () =>
        auditLines().some(
          (line) => line.request === "mqtt rollback" && line.container === name && line.actor === "mqtt:homeassistant",
        ),
      15_000,
      "the audit line",
    );
  }, 90_000);

  test("a command for a container svc does not manage is ignored and logged", async () => {
    const config = JSON.parse(last(ha.messages, `homeassistant/update/${id}/config`)!);
    await ha.client.publishAsync(config.command_topic.replace(`/${name}/install`, "/not-managed/install"), "install", {
      qos: 1,
    });
    await waitUntil(
      () =>
        svc
          .records()
          .some(
            (r) =>
              r.message === "home assistant command ignored: svc does not manage this target" &&
              r.fields?.target === "not-managed",
          ),
      15_000,
      svc.describe(),
    );
  }, 120_000);

  test("the broker restarted: svc reconnects and says it is online again; gone without a goodbye, its last will says offline", async () => {
    await stopProcess(broker);
    const from = ha.messages.length;
    await startBroker();
    // the broker kept nothing (persistence false): an online now is svc's own, published again
    await waitUntil(
      () => ha.messages.slice(from).some((m) => m.topic === `${TOPIC}/svc_nas/availability` && m.payload === "online"),
      90_000,
      `svc online again\n${svc.describe()}`,
    );
    await waitUntil(
      () => ha.messages.slice(from).some((m) => m.topic === `homeassistant/update/${id}/config`),
      30_000,
      "the entity again",
    );
    const said = svc.records().map((r) => r.message);
    expect(said).toContain("MQTT broker connection lost; reconnecting");
    expect(said).toContain("MQTT broker connection back");
    const killedAt = ha.messages.length;
    svc.signal("SIGKILL");
    await waitUntil(
      () =>
        ha.messages.slice(killedAt).some((m) => m.topic === `${TOPIC}/svc_nas/availability` && m.payload === "offline"),
      90_000,
      "the last will",
    );
  }, 200_000);

  test("a container removed while svc was stopped: the next svc's first full cycle removes its entity (state_dir keeps what was announced)", async () => {
    const bad = `svc_nas_${fx.name("bad").replace(/[^A-Za-z0-9_-]/g, "_")}`;
    expect(last(ha.messages, `homeassistant/update/${bad}/config`)).not.toBe("");
    removeContainers(fx.name("bad"));
    const from = ha.messages.length;
    svc = startSvc(["-c", "svc.toml"], { cwd: cfg, env: userEnv({ XDG_STATE_HOME: stateHome }) });
    const wait = (what: string, done: () => boolean) => waitUntil(done, 90_000, `${what}\n${svc.describe()}`);
    await wait("svc online", () => last(ha.messages.slice(from), `${TOPIC}/svc_nas/availability`) === "online");
    const check = JSON.parse(last(ha.messages, "homeassistant/button/svc_nas_check/config")!);
    await ha.client.publishAsync(check.command_topic, check.payload_press, { qos: 1 });
    // an empty retained message is Home Assistant's removal of a discovered entity
    await wait("the removed container's entity cleared", () =>
      [
        `homeassistant/update/${bad}/config`,
        `homeassistant/button/${bad}_rollback/config`,
        `${TOPIC}/update/${bad}/state`,
      ].every((topic) => last(ha.messages.slice(from), topic) === ""),
    );
    expect(last(ha.messages.slice(from), `homeassistant/update/${id}/config`)).toContain(`"unique_id":"${id}"`);
  }, 200_000);
});
