import { describe, expect, test } from "bun:test";
import { type Config, type DeepPartial, defaultConfig, REDACTED } from "../../../src/config/index.ts";
import { isSvcError } from "../../../src/core/errors.ts";
import { createNotifications, type Notifier } from "../../../src/notify/index.ts";
import type { SessionReport } from "../../../src/updater/types.ts";
import { waitUntil } from "../../harness.ts";
import { recordingLogger } from "../../support/logger.ts";
import { sampleReport } from "./fixtures.ts";

/** A channel of our own port that records what it got and fails as told. */
function fakeChannel(name: string, behaviour: (attempt: number) => void | Promise<void> = () => {}) {
  const sent: SessionReport[] = [];
  let attempts = 0;
  const notifier: Notifier & { sent: SessionReport[]; attempts(): number; closed: boolean } = {
    name,
    sent,
    closed: false,
    attempts: () => attempts,
    async send(report) {
      attempts++;
      await behaviour(attempts);
      sent.push(report);
    },
    async close() {
      notifier.closed = true;
    },
  };
  return notifier;
}

const config = (notifications: DeepPartial<Config["notifications"]> = {}) => defaultConfig({ notifications });

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error("expected a rejection");
}

describe("dispatcher", () => {
  test("publish returns before anything is sent; flush waits for the send", async () => {
    const channel = fakeChannel("fake");
    const dispatcher = await createNotifications(config(), recordingLogger(), { notifiers: [channel] });
    const report = sampleReport();
    dispatcher.publish(report);
    expect(channel.sent).toHaveLength(0);
    await dispatcher.flush();
    expect(channel.sent).toEqual([report]);
    await dispatcher.close();
    expect(channel.closed).toBe(true);
  });

  test("the report sent is a copy: later changes by the caller do not leak in", async () => {
    const channel = fakeChannel("fake");
    const dispatcher = await createNotifications(config({ delay: 20 }), recordingLogger(), { notifiers: [channel] });
    const report = sampleReport();
    dispatcher.publish(report);
    report.counts.updated = 99;
    await dispatcher.close();
    expect(channel.sent[0]!.counts.updated).toBe(1);
  });

  test("nothing is sent for a quiet cycle", async () => {
    const channel = fakeChannel("fake");
    const log = recordingLogger();
    const dispatcher = await createNotifications(config(), log, { notifiers: [channel] });
    const quiet = sampleReport({
      containers: [],
      counts: {
        scanned: 0,
        updated: 0,
        failed: 0,
        skipped: 0,
        fresh: 0,
        stale: 0,
        pending: 0,
        rolled_back: 0,
        held: 0,
      },
    });
    dispatcher.publish(quiet);
    await dispatcher.close();
    expect(channel.attempts()).toBe(0);
    expect(log.lines.some((l) => l.level === "debug" && l.message === "no notification for this cycle")).toBe(true);
  });

  test("the delay is waited before sending", async () => {
    const channel = fakeChannel("fake");
    const dispatcher = await createNotifications(config({ delay: 50 }), recordingLogger(), { notifiers: [channel] });
    dispatcher.publish(sampleReport());
    await Bun.sleep(0);
    expect(channel.attempts()).toBe(0);
    await dispatcher.flush();
    expect(channel.sent).toHaveLength(1);
    await dispatcher.close();
  });

  test("close sends what waits for a long delay at once, then drops later reports", async () => {
    const channel = fakeChannel("fake");
    const log = recordingLogger();
    const dispatcher = await createNotifications(config({ delay: 3_600_000 }), log, { notifiers: [channel] });
    dispatcher.publish(sampleReport());
    await dispatcher.close();
    expect(channel.sent).toHaveLength(1);
    dispatcher.publish(sampleReport());
    await dispatcher.flush();
    expect(channel.sent).toHaveLength(1);
    expect(log.lines.some((l) => l.message === "notification dropped: shutting down")).toBe(true);
  });

  test("a hung channel does not hold up the next cycle's report or the other channels", async () => {
    let release!: () => void;
    const hung = new Promise<void>((resolve) => (release = resolve));
    const slow = fakeChannel("slow", (attempt) => (attempt === 1 ? hung : undefined));
    const fast = fakeChannel("fast");
    const dispatcher = await createNotifications(config(), recordingLogger(), { notifiers: [slow, fast] });
    const first = sampleReport();
    const second = sampleReport();
    dispatcher.publish(first);
    dispatcher.publish(second);
    // both reports reach the fast channel while the slow one still hangs on the first
    await waitUntil(() => fast.sent.length === 2, 5000, "both reports on the fast channel");
    expect(fast.sent.map((r) => r.id)).toEqual([first.id, second.id]);
    expect(slow.sent.map((r) => r.id)).toEqual([second.id]);
    release();
    await dispatcher.close();
    expect(slow.sent.map((r) => r.id).sort()).toEqual([first.id, second.id].sort());
  });

  test("a failing channel is retried a bounded number of times, each try logged, never thrown", async () => {
    const broken = fakeChannel("broken", () => {
      throw new Error("connection refused");
    });
    const log = recordingLogger();
    const dispatcher = await createNotifications(config(), log, { notifiers: [broken], attempts: 3, retryDelayMs: 1 });
    expect(() => dispatcher.publish(sampleReport())).not.toThrow();
    await dispatcher.close();
    expect(broken.attempts()).toBe(3);
    expect(log.lines.filter((l) => l.level === "warn" && l.message === "notification failed, retrying")).toHaveLength(
      2,
    );
    const final = log.lines.filter((l) => l.level === "error");
    expect(final).toHaveLength(1);
    expect(final[0]!.fields).toMatchObject({ channel: "broken", attempts: 3, reason: "connection refused" });
    expect(final[0]!.target).toBe("svc::notify");
  });

  test("a channel that throws synchronously is handled like any failure", async () => {
    const log = recordingLogger();
    const sync: Notifier = {
      name: "sync",
      send() {
        throw new Error("sync boom");
      },
    };
    const dispatcher = await createNotifications(config(), log, { notifiers: [sync], attempts: 1 });
    expect(() => dispatcher.publish(sampleReport())).not.toThrow();
    await dispatcher.close();
    expect(log.lines.find((l) => l.level === "error")?.fields.reason).toBe("sync boom");
  });

  test("a failure that recovers on retry is a success", async () => {
    const flaky = fakeChannel("flaky", (attempt) => {
      if (attempt === 1) throw new Error("temporary");
    });
    const log = recordingLogger();
    const dispatcher = await createNotifications(config(), log, { notifiers: [flaky], retryDelayMs: 1 });
    dispatcher.publish(sampleReport());
    await dispatcher.close();
    expect(flaky.sent).toHaveLength(1);
    expect(log.lines.filter((l) => l.level === "error")).toHaveLength(0);
    expect(log.lines.find((l) => l.message === "notification sent")?.fields).toMatchObject({
      channel: "flaky",
      attempt: 2,
    });
  });

  test("no secret ever reaches a log line, even when an error message echoes it", async () => {
    const secrets = {
      email: "mail-Pa55word!",
      mqtt: "mqtt-Pa55word!",
      token: "pushoverTokenAbc123",
      user: "pushoverUserXyz789",
      header: "Bearer hdr-s3cret-value",
      hookToken: "T0KEN-in-the-path",
      brokerUrl: "url-Pa55word",
    };
    const leaky = fakeChannel("leaky", () => {
      throw new Error(
        `failed with ${Object.values(secrets).join(" and ")} at https://hooks.example.org/services/${secrets.hookToken}`,
      );
    });
    const log = recordingLogger();
    const dispatcher = await createNotifications(
      config({
        webhook: {
          url: `https://hooks.example.org/services/${secrets.hookToken}`,
          headers: `Authorization: ${secrets.header}`,
        },
        email: {
          server: "smtp.example.org",
          from: "a@example.org",
          to: ["b@example.org"],
          user: "me",
          password: secrets.email,
        },
        mqtt: { broker: `mqtt://me:${secrets.brokerUrl}@broker.example.org`, topic: "t", password: secrets.mqtt },
        pushover: { token: secrets.token, user_key: secrets.user },
      }),
      log,
      { notifiers: [leaky], attempts: 2, retryDelayMs: 1 },
    );
    dispatcher.publish(sampleReport());
    await dispatcher.close();
    const text = log.text();
    expect(log.lines.filter((l) => l.level === "error")).toHaveLength(1);
    for (const secret of Object.values(secrets)) expect(text).not.toContain(secret);
    expect(text).toContain(REDACTED);
  });

  test("only channels whose required setting is set are created", async () => {
    const none = await createNotifications(config(), recordingLogger());
    expect(none.channels).toEqual([]);
    none.publish(sampleReport());
    await none.close();

    const some = await createNotifications(
      config({ webhook: { url: "http://127.0.0.1:9/x" }, pushover: { token: "tok", user_key: "usr" } }),
      recordingLogger(),
    );
    expect(some.channels).toEqual(["webhook", "pushover"]);
    await some.close();
  });

  test("a channel missing a required companion setting is a config error", async () => {
    const cases: DeepPartial<Config["notifications"]>[] = [
      { email: { server: "smtp.example.org", to: ["a@example.org"] } },
      { email: { server: "smtp.example.org", from: "a@example.org" } },
      { mqtt: { broker: "mqtt://b" } },
      { mqtt: { broker: "mqtt://b", topic: "t", tls_ca_cert: "/nonexistent/ca.pem" } },
      { pushover: { token: "tok" } },
      { webhook: { url: "not a url" } },
      { webhook: { url: "http://127.0.0.1/x", headers: "no colon here" } },
    ];
    for (const notifications of cases) {
      const error = await rejection(createNotifications(config(notifications), recordingLogger()));
      expect(isSvcError(error) && error.kind).toBe("config");
    }
  });

  test("a broken template is a startup error at creation, not at the first report", async () => {
    const path = `${process.env.TMPDIR ?? "/tmp"}/svc-notify-broken-${crypto.randomUUID()}.mustache`;
    await Bun.write(path, "{{#failed}}unclosed");
    try {
      const error = await rejection(createNotifications(config({ template: path }), recordingLogger()));
      expect(isSvcError(error) && error.kind).toBe("startup");
    } finally {
      await Bun.file(path).delete();
    }
  });
});

test("a report's texts reach the channels without svc's secrets (a hook's output may quote them)", async () => {
  const channel = fakeChannel("fake");
  const settings = defaultConfig({
    http_api: { token: "api-token-0042" },
    notifications: { webhook: { url: "https://h.example/x", headers: "Authorization: Bearer hdr-secret-77" } },
  });
  const dispatcher = await createNotifications(settings, recordingLogger(), { notifiers: [channel] });
  const report = sampleReport();
  report.containers[0]!.reason = "pre_update hook failed: exited with 1: hdr-secret-77 api-token-0042";
  dispatcher.publish(report);
  await dispatcher.flush();
  expect(channel.sent[0]!.containers[0]!.reason).toBe(`pre_update hook failed: exited with 1: ${REDACTED} ${REDACTED}`);
  expect(report.containers[0]!.reason).toContain("hdr-secret-77");
});

test("a notification URL of a service that also has its own channel gets a name of its own (mqtt#2, pushover#2)", async () => {
  const dispatcher = await createNotifications(
    config({
      pushover: { token: "azGDORePK8gMaC0QOYAMyEEuzJnyUi", user_key: "uQiRzpo4DXghDmr9QzzfQu27cmVRsG" },
      mqtt: { broker: "mqtt://127.0.0.1:1", topic: "svc/reports" },
      urls: [
        "pushover://shoutrrr:azGDORePK8gMaC0QOYAMyEEuzJnyUi@uQiRzpo4DXghDmr9QzzfQu27cmVRsG",
        "mqtt://127.0.0.1:1/svc/url",
        "mqtt://127.0.0.1:1/svc/other",
      ],
    }),
    recordingLogger(),
  );
  expect(dispatcher.channels).toEqual(["mqtt", "pushover", "pushover#2", "mqtt#2", "mqtt#3"]);
  await dispatcher.close();
});
