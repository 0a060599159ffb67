/**
 * Links to the page (docs/notifications.md, "Links to the page"): with http_api.public_url, the
 * message each channel delivers to a real peer carries the row's URL of each stale, held or
 * failed target: the webhook's JSON (and its digest), an e-mail through aiosmtpd, MQTT through
 * mosquitto, Pushover and a Discord URL through loopback receivers. Without the option, none.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import type { Server } from "bun";
import { type Config, type DeepPartial, defaultConfig } from "../../../src/config/index.ts";
import { createNotifications } from "../../../src/notify/index.ts";
import type { SessionReport } from "../../../src/updater/types.ts";
import { waitUntil } from "../../harness.ts";
import { recordingLogger } from "../../support/logger.ts";
import {
  type Mosquitto,
  payloadOf,
  removeDir,
  type SmtpServer,
  sampleReport,
  startMosquitto,
  startSmtp,
  stop,
  subscribe,
} from "./peers.ts";

const PUBLIC = "https://svc.example.lan/";
let mosquitto: Mosquitto;
let smtp: SmtpServer;
let receiver: Server<undefined>;
const received: { path: string; body: string }[] = [];

beforeAll(async () => {
  [mosquitto, smtp] = await Promise.all([startMosquitto(), startSmtp()]);
  receiver = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: async (request) => {
      const path = new URL(request.url).pathname;
      received.push({ path, body: await request.text() });
      return path.startsWith("/1/messages")
        ? Response.json({ status: 1, request: "r" })
        : new Response(null, { status: 204 });
    },
  });
}, 30_000);
afterAll(async () => {
  receiver?.stop(true);
  await Promise.all([stop(mosquitto?.proc), stop(smtp?.proc)]);
  removeDir(mosquitto?.dir);
  removeDir(smtp?.dir);
}, 30_000);

/** web updated, db failed, cache fresh (the sample), and a stale, a held and a stale Swarm service. */
function report(): SessionReport {
  const base = sampleReport();
  const like = base.containers[0]!;
  base.containers.push(
    { ...like, name: "api", state: "stale", reason: null },
    { ...like, name: "worker", state: "held", reason: "release 2.0 breaks: held by hold_breaking" },
    { ...like, name: "proxy", kind: "service", state: "stale", reason: null },
  );
  return base;
}

const ROWS = {
  db: "https://svc.example.lan/#container=db",
  api: "https://svc.example.lan/#container=api",
  worker: "https://svc.example.lan/#container=worker",
  proxy: "https://svc.example.lan/#service=proxy",
};

function config(notifications: DeepPartial<Config["notifications"]>, publicUrl: string | null = PUBLIC): Config {
  return defaultConfig({
    http_api: publicUrl ? { public_url: publicUrl } : {},
    notifications: { notify_on_every_cycle: true, ...notifications },
  });
}

test("every channel's message carries the row of each stale, held or failed target, and no other", async () => {
  const topic = `svc/links/${crypto.randomUUID()}`;
  const subscriber = await subscribe(mosquitto, topic, 1);
  const base = `http://127.0.0.1:${receiver.port}`;
  const log = recordingLogger();
  const dispatcher = await createNotifications(
    config({
      webhook: { url: `${base}/hook` },
      email: { server: "127.0.0.1", port: smtp.port, from: "svc@example.test", to: ["ops@example.test"] },
      mqtt: { broker: `mqtt://127.0.0.1:${mosquitto.port}`, topic, qos: 1 },
      pushover: { token: "po-token", user_key: "po-user", api_url: base },
      urls: ["discord://discord-token@123456789012345678"],
      services_base_url: base,
    }),
    log,
    { hostname: "nas", retryDelayMs: 10, timeoutMs: 5000 },
  );
  dispatcher.publish(report());
  await dispatcher.flush();
  await waitUntil(() => smtp.messages().length > 0, 60_000, "the e-mail");
  const mqttOutput = await Promise.race([subscriber.message, Bun.sleep(60_000).then(() => "")]);
  await dispatcher.close();
  await stop(subscriber.proc);

  const hook = JSON.parse(received.find((r) => r.path === "/hook")!.body) as SessionReport;
  const pageUrls = Object.fromEntries(hook.containers.map((c) => [c.name, c.page_url]));
  // the updated and the fresh need no one: no link
  expect(pageUrls).toEqual({
    web: undefined,
    db: ROWS.db,
    cache: undefined,
    api: ROWS.api,
    worker: ROWS.worker,
    proxy: ROWS.proxy,
  });
  const fromMqtt = JSON.parse(payloadOf(mqttOutput).payload) as SessionReport;
  expect(fromMqtt.containers.map((c) => c.page_url)).toEqual(hook.containers.map((c) => c.page_url));

  const texts = {
    email: smtp.messages()[0]!.text!,
    pushover: new URLSearchParams(received.find((r) => r.path.startsWith("/1/messages"))!.body).get("message")!,
    discord: JSON.parse(received.find((r) => r.path.startsWith("/api/webhooks/"))!.body).content as string,
  };
  for (const [channel, text] of Object.entries(texts)) {
    for (const [name, url] of Object.entries(ROWS)) {
      // each on the target's own line
      expect(
        text.split("\n").some((line) => line.includes(name) && line.includes(url)),
        `${channel}: ${name}\n${text}`,
      ).toBe(true);
    }
    expect(text, channel).not.toContain("#container=web");
  }
  expect(log.lines.filter((l) => l.level === "error")).toEqual([]);
}, 180_000);

test("a digest keeps the links", async () => {
  const before = received.length;
  const dispatcher = await createNotifications(
    config({
      webhook: { url: `http://127.0.0.1:${receiver.port}/digest`, digest: "daily 03:00", immediate_on_failure: false },
    }),
    recordingLogger(),
    { hostname: "nas" },
  );
  dispatcher.publish(report());
  // closing sends what a restart would lose: this period's digest
  await dispatcher.close();
  const digest = JSON.parse(received.slice(before).find((r) => r.path === "/digest")!.body) as SessionReport;
  expect(digest.containers.find((c) => c.name === "db")?.page_url).toBe(ROWS.db);
  expect(digest.containers.find((c) => c.name === "worker")?.page_url).toBe(ROWS.worker);
});

test("without http_api.public_url: no link anywhere", async () => {
  const before = received.length;
  const dispatcher = await createNotifications(
    config({ webhook: { url: `http://127.0.0.1:${receiver.port}/plain` } }, null),
    recordingLogger(),
    { hostname: "nas" },
  );
  dispatcher.publish(report());
  await dispatcher.close();
  expect(received.slice(before).find((r) => r.path === "/plain")!.body).not.toContain("page_url");
});
