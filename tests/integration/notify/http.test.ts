/** Webhook and Pushover channels against real local HTTP(S) receivers (Bun.serve). */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { readFileSync } from "node:fs";
import type { Server } from "bun";
import { type Config, type DeepPartial, defaultConfig } from "../../../src/config/index.ts";
import { createNotifications } from "../../../src/notify/index.ts";
import { freePort } from "../../harness.ts";
import { recordingLogger } from "../../support/logger.ts";
import { makePki, removeDir, sampleReport, type TestPki } from "./peers.ts";

setDefaultTimeout(30_000);

interface Received {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: string;
}

let pki: TestPki;
const received: Received[] = [];
let receiver: Server<undefined>;
let tlsReceiver: Server<undefined>;
/** what the receiver answers next, by path */
const answers = new Map<string, () => Response | Promise<Response>>();

async function handle(request: Request): Promise<Response> {
  const url = new URL(request.url);
  received.push({
    method: request.method,
    path: url.pathname,
    headers: Object.fromEntries(request.headers),
    body: await request.text(),
  });
  const answer = answers.get(url.pathname);
  return answer ? answer() : new Response("ok");
}

beforeAll(() => {
  pki = makePki();
  receiver = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: handle });
  tlsReceiver = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    tls: { cert: readFileSync(pki.selfSignedCert, "utf8"), key: readFileSync(pki.selfSignedKey, "utf8") },
    fetch: handle,
  });
});

afterAll(() => {
  receiver?.stop(true);
  tlsReceiver?.stop(true);
  removeDir(pki?.dir);
});

function requestsTo(path: string): Received[] {
  return received.filter((r) => r.path === path);
}

async function publishOnce(notifications: Partial<DeepPartial<Config["notifications"]>>, attempts = 2) {
  const log = recordingLogger();
  const dispatcher = await createNotifications(defaultConfig({ notifications }), log, {
    hostname: "nas",
    retryDelayMs: 10,
    timeoutMs: 2000,
    attempts,
  });
  const report = sampleReport();
  expect(() => dispatcher.publish(report)).not.toThrow();
  await dispatcher.close();
  return { report, log, failure: log.lines.find((l) => l.level === "error" && l.message === "notification failed") };
}

describe("webhook channel", () => {
  test("POSTs the report JSON with the content type and the extra headers", async () => {
    const path = `/hook/${crypto.randomUUID()}`;
    const { report, log } = await publishOnce({
      webhook: {
        url: `http://127.0.0.1:${receiver.port}${path}`,
        headers: "X-Api-Key: k3y-Secret-1, X-Source: svc:test",
      },
    });
    const [request] = requestsTo(path);
    expect(request?.method).toBe("POST");
    expect(request?.headers["content-type"]).toBe("application/json");
    expect(request?.headers["x-api-key"]).toBe("k3y-Secret-1");
    expect(request?.headers["x-source"]).toBe("svc:test");
    expect(JSON.parse(request!.body)).toEqual(report);
    expect(requestsTo(path)).toHaveLength(1);
    expect(log.lines.some((l) => l.message === "notification sent" && l.fields.channel === "webhook")).toBe(true);
    expect(log.text()).not.toContain("k3y-Secret-1");
  });

  test("a non-2xx answer is a failure, retried, then logged with the status", async () => {
    const path = `/hook/${crypto.randomUUID()}`;
    answers.set(path, () => new Response("nope", { status: 503 }));
    const { failure } = await publishOnce({ webhook: { url: `http://127.0.0.1:${receiver.port}${path}` } }, 3);
    expect(requestsTo(path)).toHaveLength(3);
    expect(failure?.fields).toMatchObject({ channel: "webhook", attempts: 3 });
    expect(String(failure?.fields.reason)).toContain("503");
  });

  test("a failed try followed by a 2xx is a success", async () => {
    const path = `/hook/${crypto.randomUUID()}`;
    let calls = 0;
    answers.set(path, () => new Response(null, { status: ++calls === 1 ? 500 : 204 }));
    const { log, failure } = await publishOnce({ webhook: { url: `http://127.0.0.1:${receiver.port}${path}` } }, 3);
    expect(failure).toBeUndefined();
    expect(requestsTo(path)).toHaveLength(2);
    expect(log.lines.filter((l) => l.message === "notification failed, retrying")).toHaveLength(1);
  });

  test("a receiver that is down is logged, publish does not throw", async () => {
    const { failure, log } = await publishOnce({
      webhook: { url: `http://127.0.0.1:${freePort()}/hook/token-in-path-xyz` },
    });
    expect(failure?.fields.channel).toBe("webhook");
    expect(String(failure?.fields.reason)).not.toBe("");
    expect(log.text()).not.toContain("token-in-path-xyz");
  });

  test("a receiver slower than the timeout is a logged failure", async () => {
    const path = `/hook/${crypto.randomUUID()}`;
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    answers.set(path, async () => {
      await held;
      return new Response("late");
    });
    try {
      const { failure } = await publishOnce({
        webhook: { url: `http://127.0.0.1:${receiver.port}${path}`, timeout: 200 },
      });
      expect(failure?.fields.channel).toBe("webhook");
      expect(String(failure?.fields.reason)).toMatch(/time|abort/i);
    } finally {
      release();
    }
  });

  test("a self-signed HTTPS receiver is refused without tls_skip_verify", async () => {
    const path = `/hook/${crypto.randomUUID()}`;
    const { failure } = await publishOnce({ webhook: { url: `https://127.0.0.1:${tlsReceiver.port}${path}` } });
    expect(requestsTo(path)).toHaveLength(0);
    expect(failure?.fields.channel).toBe("webhook");
    expect(String(failure?.fields.reason)).toMatch(/certif|self.signed|verify/i);
  });

  test("tls_skip_verify accepts the self-signed HTTPS receiver", async () => {
    const path = `/hook/${crypto.randomUUID()}`;
    const { failure, report } = await publishOnce({
      webhook: { url: `https://127.0.0.1:${tlsReceiver.port}${path}`, tls_skip_verify: true },
    });
    expect(failure).toBeUndefined();
    expect(JSON.parse(requestsTo(path)[0]!.body)).toEqual(report);
  });
});

describe("pushover channel", () => {
  const TOKEN = "azGDORePK8gMaC0QOYAMyEEuzJnyUi";
  const USER = "uQiRzpo4DXghDmr9QzzfQu27cmVRsG";

  test("form-POSTs token, user, title, message and priority to {api_url}/1/messages.json", async () => {
    const base = `/po-${crypto.randomUUID()}`;
    const path = `${base}/1/messages.json`;
    answers.set(path, () => Response.json({ status: 1, request: "647d2300-702c-4b38-8b2f-d56326ae460b" }));
    const { log, failure } = await publishOnce({
      pushover: { token: TOKEN, user_key: USER, api_url: `http://127.0.0.1:${receiver.port}${base}/` },
    });
    expect(failure).toBeUndefined();
    const [request] = requestsTo(path);
    expect(request?.method).toBe("POST");
    expect(request?.headers["content-type"]).toStartWith("application/x-www-form-urlencoded");
    const form = new URLSearchParams(request!.body);
    expect(form.get("token")).toBe(TOKEN);
    expect(form.get("user")).toBe(USER);
    expect(form.get("title")).toBe("svc on nas: 1 updated, 1 failed");
    expect(form.get("priority")).toBe("0");
    expect(form.get("message")).toContain("web (127.0.0.1:5000/web:latest): 111111111111 -> 222222222222");
    expect(log.text()).not.toContain(TOKEN);
    expect(log.text()).not.toContain(USER);
  });

  test("a long report is cut to Pushover's limits", async () => {
    const base = `/po-${crypto.randomUUID()}`;
    const path = `${base}/1/messages.json`;
    answers.set(path, () => Response.json({ status: 1 }));
    const many = sampleReport();
    many.containers = Array.from({ length: 60 }, (_, i) => ({ ...many.containers[0]!, name: `service-number-${i}` }));
    many.counts.updated = 60;
    const log = recordingLogger();
    const dispatcher = await createNotifications(
      defaultConfig({
        notifications: {
          pushover: { token: TOKEN, user_key: USER, api_url: `http://127.0.0.1:${receiver.port}${base}` },
        },
      }),
      log,
      { hostname: "h".repeat(300), attempts: 1 },
    );
    dispatcher.publish(many);
    await dispatcher.close();
    const form = new URLSearchParams(requestsTo(path)[0]!.body);
    expect(Array.from(form.get("title")!).length).toBeLessThanOrEqual(250);
    expect(Array.from(form.get("message")!).length).toBeLessThanOrEqual(1024);
    expect(form.get("message")).toEndWith("…");
    expect(form.get("message")).toContain("service-number-0 ");
  });

  test("an error answer (status 0) is a logged failure without the token", async () => {
    const base = `/po-${crypto.randomUUID()}`;
    const path = `${base}/1/messages.json`;
    answers.set(path, () =>
      Response.json({ token: "invalid", errors: ["application token is invalid"], status: 0 }, { status: 400 }),
    );
    const { log, failure } = await publishOnce({
      pushover: { token: TOKEN, user_key: USER, api_url: `http://127.0.0.1:${receiver.port}${base}` },
    });
    expect(failure?.fields.channel).toBe("pushover");
    expect(String(failure?.fields.reason)).toContain("application token is invalid");
    expect(requestsTo(path)).toHaveLength(2);
    expect(log.text()).not.toContain(TOKEN);
  });

  test("an API that is down is logged and publish does not throw", async () => {
    const { failure } = await publishOnce({
      pushover: { token: TOKEN, user_key: USER, api_url: `http://127.0.0.1:${freePort()}` },
    });
    expect(failure?.fields.channel).toBe("pushover");
  });
});

describe("every channel at once", () => {
  test("one failing channel does not keep the others from sending", async () => {
    const path = `/hook/${crypto.randomUUID()}`;
    const base = `/po-${crypto.randomUUID()}`;
    answers.set(`${base}/1/messages.json`, () => Response.json({ status: 1 }));
    const log = recordingLogger();
    const dispatcher = await createNotifications(
      defaultConfig({
        notifications: {
          webhook: { url: `http://127.0.0.1:${receiver.port}${path}` },
          pushover: {
            token: "tok-abc-123",
            user_key: "usr-abc-123",
            api_url: `http://127.0.0.1:${receiver.port}${base}`,
          },
          mqtt: { broker: `mqtt://127.0.0.1:${freePort()}`, topic: "svc/x" },
        },
      }),
      log,
      { attempts: 2, retryDelayMs: 10, timeoutMs: 2000 },
    );
    expect(dispatcher.channels).toEqual(["webhook", "mqtt", "pushover"]);
    dispatcher.publish(sampleReport());
    await dispatcher.close();
    expect(requestsTo(path)).toHaveLength(1);
    expect(requestsTo(`${base}/1/messages.json`)).toHaveLength(1);
    const failures = log.lines.filter((l) => l.level === "error");
    expect(failures.map((l) => l.fields.channel)).toEqual(["mqtt"]);
  });
});
