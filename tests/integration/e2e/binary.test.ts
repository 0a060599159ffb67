/**
 * The compiled single binary, as users download and run it: `bun build.ts --outdir TMP`, then
 * TMP/svc does a whole run-once update with every notification channel (nodemailer, mqtt and the
 * Pushover/webhook fetches must all survive bundling), and serves the API.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { freePort, inspect, waitUntil } from "../../harness.ts";
import {
  type Mosquitto,
  payloadOf,
  type SmtpServer,
  type Subscriber,
  startMosquitto,
  startSmtp,
  subscribe,
} from "../notify/peers.ts";
import {
  baseFlags,
  Fixture,
  portOpen,
  REPO_ROOT,
  receiver,
  runSvc,
  startSvc,
  stopAll,
  stopReceivers,
  track,
  waitForPort,
} from "./support.ts";

const fx = new Fixture("e2e-bin");
let mosquitto: Mosquitto | undefined;
let smtp: SmtpServer | undefined;
let subscriber: Subscriber | undefined;
let binary: string;

afterAll(async () => {
  await stopAll();
  stopReceivers();
  fx.cleanup();
}, 120_000);

beforeAll(() => {
  const outdir = fx.tempDir("dist");
  const build = Bun.spawnSync(["bun", "build.ts", "--outdir", outdir], {
    cwd: REPO_ROOT,
    stdout: "pipe",
    stderr: "pipe",
  });
  if (build.exitCode !== 0) throw new Error(`bun build.ts failed: ${build.stderr.toString()}`);
  binary = join(outdir, "svc");
}, 120_000);

describe("the compiled binary", () => {
  test("run-once updates a container and notifies webhook, e-mail, MQTT and Pushover", async () => {
    const hook = receiver(() => new Response(null, { status: 204 }));
    const push = receiver(() => Response.json({ status: 1, request: "bin" }));
    mosquitto = await startMosquitto();
    track(mosquitto.proc);
    smtp = await startSmtp();
    track(smtp.proc);
    const topic = `svc-e2e/${fx.prefix}`;
    subscriber = await subscribe(mosquitto, topic, 0);
    track(subscriber.proc);

    const name = fx.name("app");
    fx.run("app", fx.image("app").ref);
    const v2 = fx.image("app");
    const run = await runSvc(
      [
        ...baseFlags(),
        "--run-once",
        "--notifications-webhook-url",
        `http://127.0.0.1:${hook.server.port}/`,
        "--notifications-email-server",
        "127.0.0.1",
        "--notifications-email-port",
        String(smtp.port),
        "--notifications-email-from",
        "svc@example.test",
        "--notifications-email-to",
        "ops@example.test",
        "--notifications-mqtt-broker",
        `mqtt://127.0.0.1:${mosquitto.port}`,
        "--notifications-mqtt-topic",
        topic,
        "--notifications-pushover-token",
        "bin-po-token-31c9",
        "--notifications-pushover-user-key",
        "bin-po-user-8d20",
        "--notifications-pushover-api-url",
        `http://127.0.0.1:${push.server.port}`,
        name,
      ],
      { command: [binary] },
    );
    expect(run.code, run.svc.describe()).toBe(0);
    expect(inspect(name).Image).toBe(v2.id);
    // run-once flushes notifications before it exits
    expect(hook.bodies, run.svc.describe()).toHaveLength(1);
    const report = JSON.parse(hook.bodies[0]!);
    expect(report.containers[0]).toMatchObject({ name, state: "updated" });
    expect(push.bodies).toHaveLength(1);
    expect(new URLSearchParams(push.bodies[0]!).get("title")).toMatch(/1 updated, 0 failed/);
    await waitUntil(() => smtp!.messages().length > 0, 10_000, "the e-mail").catch(() => {});
    expect(smtp.messages()).toHaveLength(1);
    expect(smtp.messages()[0]!.subject).toMatch(/1 updated, 0 failed/);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const message = await Promise.race([
      subscriber.message,
      new Promise<string>((r) => (timer = setTimeout(() => r(""), 15_000))),
    ]);
    clearTimeout(timer);
    expect(JSON.parse(payloadOf(message).payload)).toEqual(report);
    expect(run.svc.output).not.toContain("bin-po-token-31c9");
  }, 120_000);

  test("API mode: update, metrics, health, SIGTERM", async () => {
    const name = fx.name("api");
    fx.run("api", fx.image("api").ref);
    const v2 = fx.image("api");
    const port = freePort();
    const token = "bin-api-token-5a77";
    const flags = [
      ...baseFlags(),
      "--http-api-update",
      "--http-api-metrics",
      "--http-api-token",
      token,
      "--http-api-port",
      String(port),
    ];
    const svc = startSvc(flags, { command: [binary] });
    await waitForPort(port, svc);
    const response = await fetch(`http://127.0.0.1:${port}/v1/update`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ container: name }),
    });
    expect(response.status, svc.describe()).toBe(200);
    const report = (await response.json()) as any;
    expect(report.containers.map((c: any) => [c.name, c.state])).toEqual([[name, "updated"]]);
    expect(inspect(name).Image).toBe(v2.id);
    const metrics = await fetch(`http://127.0.0.1:${port}/v1/metrics`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(await metrics.text()).toMatch(/^svc_containers_updated 1$/m);
    expect((await fetch(`http://127.0.0.1:${port}/v1/health`)).status).toBe(200);
    // as the image's HEALTHCHECK runs it: same configuration as the service
    const check = await runSvc(["healthcheck", ...flags], { command: [binary] });
    expect(check.code, check.svc.describe()).toBe(0);
    svc.signal("SIGTERM");
    expect(await svc.exit(30_000), svc.describe()).toBe(0);
    expect(await portOpen(port)).toBe(false);
  }, 120_000);
});
