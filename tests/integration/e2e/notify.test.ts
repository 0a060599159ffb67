/**
 * Notifications end to end: svc (a real process, configured by a TOML file holding the secrets)
 * runs one API-triggered cycle that updates a container; a webhook receiver, a Pushover-like
 * receiver, a Discord-like receiver (a notification URL), a real mosquitto and an aiosmtpd server
 * each get one message with the report.
 * No secret from the configuration shows up in any message or in svc's output.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Server } from "bun";
import { freePort, sandbox, waitUntil } from "../../harness.ts";
import {
  type Mosquitto,
  makePki,
  payloadOf,
  type SmtpServer,
  type Subscriber,
  startMosquitto,
  startSmtp,
  subscribe,
} from "../notify/peers.ts";
import {
  FAILING_CMD,
  Fixture,
  runSvc,
  type SvcProcess,
  startSvc,
  stopAll,
  stopProcess,
  track,
  waitForPort,
} from "./support.ts";

const fx = new Fixture("e2e-notify");

const SECRETS = {
  apiToken: "api-tok-7d1e55b2c9",
  mqttPassword: "mqtt-pw-91ab3f0e44",
  pushoverToken: "po-app-token-5c2d8e17aa",
  pushoverUser: "po-user-key-e03b7f6612",
  discordToken: "discord-tok-0b9d2c71e4",
};

interface Received {
  headers: Record<string, string>;
  body: string;
}

let webhook: Server<undefined> | undefined;
let pushover: Server<undefined> | undefined;
let discord: Server<undefined> | undefined;
let mosquitto: Mosquitto | undefined;
let smtp: SmtpServer | undefined;
let subscriber: Subscriber | undefined;

afterAll(async () => {
  await stopAll();
  await stopProcess(subscriber?.proc);
  await stopProcess(mosquitto?.proc);
  await stopProcess(smtp?.proc);
  webhook?.stop(true);
  pushover?.stop(true);
  discord?.stop(true);
  fx.cleanup();
}, 120_000);

function receiver(answer: () => Response): { server: Server<undefined>; received: Received[] } {
  const received: Received[] = [];
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      received.push({ headers: Object.fromEntries(request.headers), body: await request.text() });
      return answer();
    },
  });
  return { server, received };
}

describe("one update cycle notifies every channel once", () => {
  const name = fx.name("app");
  const topic = `svc-e2e/${fx.prefix}`;
  let svc: SvcProcess;
  let port: number;
  let report: any;
  let hooks: Received[];
  let pushes: Received[];
  let chats: Received[];
  let mqttMessage: string;

  beforeAll(async () => {
    const hook = receiver(() => new Response(null, { status: 204 }));
    webhook = hook.server;
    hooks = hook.received;
    const push = receiver(() => Response.json({ status: 1, request: "e2e" }));
    pushover = push.server;
    pushes = push.received;
    const chat = receiver(() => new Response(null, { status: 204 }));
    discord = chat.server;
    chats = chat.received;
    mosquitto = await startMosquitto();
    track(mosquitto.proc);
    smtp = await startSmtp();
    track(smtp.proc);
    subscriber = await subscribe(mosquitto, topic, 1);
    track(subscriber.proc);

    const v1 = fx.image("app");
    fx.run("app", v1.ref);
    fx.image("app");

    port = freePort();
    const dir = fx.tempDir("cfg");
    const config = [
      'log_format = "json"',
      'stop_timeout = "1s"',
      "",
      "[http_api]",
      "update = true",
      `token = "${SECRETS.apiToken}"`,
      `port = ${port}`,
      "",
      "[docker]",
      `host = "${sandbox().dockerHost}"`,
      "",
      "[rollback]",
      'startup_timeout = "3s"',
      "",
      "[notifications]",
      `urls = ["discord://${SECRETS.discordToken}@123456789012345678"]`,
      `services_base_url = "http://127.0.0.1:${discord.port}"`,
      "",
      "[notifications.webhook]",
      `url = "http://127.0.0.1:${webhook.port}/hook"`,
      'headers = "X-E2E: yes"',
      "",
      "[notifications.email]",
      'server = "127.0.0.1"',
      `port = ${smtp.port}`,
      'from = "svc@example.test"',
      'to = ["ops@example.test"]',
      "",
      "[notifications.mqtt]",
      `broker = "tcp://127.0.0.1:${mosquitto.port}"`,
      `topic = "${topic}"`,
      "qos = 1",
      'username = "svc"',
      `password = "${SECRETS.mqttPassword}"`,
      "",
      "[notifications.pushover]",
      `token = "${SECRETS.pushoverToken}"`,
      `user_key = "${SECRETS.pushoverUser}"`,
      `api_url = "http://127.0.0.1:${pushover.port}"`,
      "",
    ].join("\n");
    writeFileSync(join(dir, "svc.toml"), config);
    svc = startSvc(["-c", "svc.toml"], { cwd: dir });
    await waitForPort(port, svc);

    const response = await fetch(`http://127.0.0.1:${port}/v1/update`, {
      method: "POST",
      headers: { authorization: `Bearer ${SECRETS.apiToken}`, "content-type": "application/json" },
      body: JSON.stringify({ container: [name] }),
    });
    expect(response.status, svc.describe()).toBe(200);
    report = await response.json();

    const waitFor = (what: string, done: () => boolean) => waitUntil(done, 30_000, what).catch(() => {});
    await Promise.all([
      waitFor("the webhook", () => hooks.length > 0),
      waitFor("the pushover request", () => pushes.length > 0),
      waitFor("the e-mail", () => smtp!.messages().length > 0),
      waitFor("the Discord message", () => chats.length > 0),
    ]);
    let timer: ReturnType<typeof setTimeout> | undefined;
    mqttMessage = await Promise.race([
      subscriber.message,
      new Promise<string>((r) => (timer = setTimeout(() => r(""), 30_000))),
    ]);
    clearTimeout(timer);
  }, 120_000);

  test("the cycle updated the container", () => {
    expect(report.counts.updated, JSON.stringify(report.containers)).toBe(1);
    expect(report.containers[0]).toMatchObject({ name, state: "updated" });
  });

  test("the webhook gets one POST whose JSON body is the API's report, with the configured header", () => {
    expect(hooks, svc.describe()).toHaveLength(1);
    expect(hooks[0]!.headers["content-type"]).toContain("application/json");
    expect(hooks[0]!.headers["x-e2e"]).toBe("yes");
    expect(JSON.parse(hooks[0]!.body)).toEqual(report);
  });

  test("MQTT: the subscriber gets the API's report as JSON", () => {
    const { payload } = payloadOf(mqttMessage);
    expect(payload, `mosquitto_sub got: ${mqttMessage}\n${svc.describe()}`).not.toBe("");
    expect(JSON.parse(payload)).toEqual(report);
  });

  test("e-mail: one message whose subject gives the counts, and whose text names the container", () => {
    const mails = smtp!.messages();
    expect(mails, svc.describe()).toHaveLength(1);
    expect(mails[0]!.subject).toMatch(/1 updated, 0 failed/);
    expect(mails[0]!.rcpt_tos).toEqual(["ops@example.test"]);
    expect(mails[0]!.text ?? mails[0]!.html ?? "").toContain(name);
  });

  test("Pushover: one form POST to /1/messages.json with token, user, title and message", () => {
    expect(pushes, svc.describe()).toHaveLength(1);
    const form = new URLSearchParams(pushes[0]!.body);
    expect(form.get("token")).toBe(SECRETS.pushoverToken);
    expect(form.get("user")).toBe(SECRETS.pushoverUser);
    expect(form.get("title")).toMatch(/1 updated, 0 failed/);
    expect(form.get("message")).toContain(name);
  });

  test("Discord (a notification URL): one message, the title with the counts, a line for the updated container", () => {
    expect(chats, svc.describe()).toHaveLength(1);
    const { content } = JSON.parse(chats[0]!.body);
    expect(content).toMatch(/^\*\*svc on .+: 1 updated, 0 failed\*\*\n/);
    expect(content).toContain(`updated ${name}: `);
  });

  test("no secret of the configuration appears in any message (beyond Pushover's own auth fields) or in svc's output", () => {
    const form = new URLSearchParams(pushes[0]?.body ?? "");
    const texts = [
      ...hooks.map((h) => `${JSON.stringify(h.headers)}\n${h.body}`),
      mqttMessage,
      ...smtp!.messages().map((m) => JSON.stringify(m)),
      `${form.get("title")}\n${form.get("message")}`,
      svc.stdout,
      svc.stderr,
    ];
    for (const secret of Object.values(SECRETS)) {
      for (const text of texts) expect(text).not.toContain(secret);
    }
  });

  test("a cycle with nothing to do sends nothing; a rollback is sent to every channel", async () => {
    const post = async (container: string) => {
      const response = await fetch(`http://127.0.0.1:${port}/v1/update?container=${container}`, {
        method: "POST",
        headers: { authorization: `Bearer ${SECRETS.apiToken}` },
      });
      expect(response.status, svc.describe()).toBe(200);
      return (await response.json()) as any;
    };
    const fresh = await post(name);
    expect(fresh.containers[0]).toMatchObject({ name, state: "fresh" });

    const bad = fx.name("bad");
    fx.run("bad", fx.image("bad").ref);
    fx.image("bad", { changes: [FAILING_CMD] });
    const second = await subscribe(mosquitto!, topic, 1);
    track(second.proc);
    const rolledBack = await post(bad);
    expect(rolledBack.containers[0]).toMatchObject({ name: bad, state: "rolled_back" });

    await waitUntil(
      () => hooks.length >= 2 && pushes.length >= 2 && smtp!.messages().length >= 2,
      30_000,
      "the second notifications",
    ).catch(() => {});
    // the fresh cycle's report was never sent: the second message of each channel is the rollback's
    expect(hooks.map((h) => JSON.parse(h.body).id)).toEqual([report.id, rolledBack.id]);
    expect(JSON.parse(hooks[1]!.body)).toEqual(rolledBack);
    expect(smtp!.messages()[1]?.subject).toMatch(/0 updated, 1 failed/);
    expect(new URLSearchParams(pushes[1]?.body ?? "").get("title")).toMatch(/0 updated, 1 failed/);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const message = await Promise.race([
      second.message,
      new Promise<string>((r) => (timer = setTimeout(() => r(""), 30_000))),
    ]);
    clearTimeout(timer);
    expect(JSON.parse(payloadOf(message).payload).id).toBe(rolledBack.id);
  }, 90_000);

  test("SIGTERM after the cycle: exit 0", async () => {
    svc.signal("SIGTERM");
    expect(await svc.exit(30_000), svc.describe()).toBe(0);
  }, 40_000);
});

describe("e-mail with STARTTLS and a login, the password in a secret file", () => {
  test("run-once sends one authenticated message; the password appears nowhere", async () => {
    const password = "smtp-pw-file-4e19b0";
    const pki = makePki();
    const authSmtp = await startSmtp({ cert: pki.serverCert, key: pki.serverKey, user: "svc-mailer", password });
    track(authSmtp.proc);
    const dir = fx.tempDir("mail");
    writeFileSync(join(dir, "smtp_password"), `${password}\n`);
    const name = fx.name("mailed");
    fx.run("mailed", fx.image("mailed").ref);
    fx.image("mailed");
    writeFileSync(
      join(dir, "svc.toml"),
      [
        "run_once = true",
        'stop_timeout = "1s"',
        `containers = ["${name}"]`,
        "[docker]",
        `host = "${sandbox().dockerHost}"`,
        "[notifications.email]",
        'server = "127.0.0.1"',
        `port = ${authSmtp.port}`,
        'from = "svc@example.test"',
        'to = ["ops@example.test"]',
        'user = "svc-mailer"',
        `password = "${join(dir, "smtp_password")}"`,
        "tls_skip_verify = true",
        "",
      ].join("\n"),
    );
    const run = await runSvc(["-c", "svc.toml", "--log-level", "debug"], { cwd: dir });
    expect(run.code, run.svc.describe()).toBe(0);
    await waitUntil(() => authSmtp.messages().length > 0, 15_000, "the e-mail").catch(() => {});
    const mails = authSmtp.messages();
    expect(mails, run.svc.describe()).toHaveLength(1);
    expect(mails[0]!.login).toBe("svc-mailer");
    expect(mails[0]!.tls).toBe(true);
    expect(mails[0]!.subject).toMatch(/1 updated, 0 failed/);
    expect(JSON.stringify(mails[0])).not.toContain(password);
    expect(run.svc.output).not.toContain(password);
    await stopProcess(authSmtp.proc);
    rmSync(pki.dir, { recursive: true, force: true });
  }, 90_000);
});
