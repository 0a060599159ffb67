/** E-mail channel against a real SMTP server (aiosmtpd): plain, STARTTLS, AUTH; failures logged. */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { type Config, type DeepPartial, defaultConfig } from "../../../src/config/index.ts";
import { createNotifications } from "../../../src/notify/index.ts";
import { freePort } from "../../harness.ts";
import { recordingLogger } from "../../support/logger.ts";
import { makePki, removeDir, type SmtpServer, sampleReport, startSmtp, stop, type TestPki, tempDir } from "./peers.ts";

setDefaultTimeout(30_000);

let pki: TestPki;
let plain: SmtpServer;
let starttls: SmtpServer;
const SMTP_USER = "svc-mailer";
const SMTP_PASSWORD = "smtp-Secret-Pa55";

beforeAll(async () => {
  pki = makePki();
  [plain, starttls] = await Promise.all([
    startSmtp(),
    startSmtp({ cert: pki.selfSignedCert, key: pki.selfSignedKey, user: SMTP_USER, password: SMTP_PASSWORD }),
  ]);
}, 30_000);

afterAll(async () => {
  await Promise.all([stop(plain?.proc), stop(starttls?.proc)]);
  for (const dir of [plain?.dir, starttls?.dir, pki?.dir]) removeDir(dir);
});

function emailConfig(email: DeepPartial<Config["notifications"]["email"]>): Config {
  return defaultConfig({ notifications: { email } });
}

async function sendOne(server: SmtpServer, config: Config) {
  const before = server.messages().length;
  const log = recordingLogger();
  const notifications = await createNotifications(config, log, {
    hostname: "pi-garage",
    retryDelayMs: 20,
    timeoutMs: 3000,
    attempts: 2,
  });
  const report = sampleReport();
  notifications.publish(report);
  await notifications.close();
  return { report, log, mails: server.messages().slice(before) };
}

describe("e-mail channel", () => {
  test("sends from/to/subject with plain text and HTML parts", async () => {
    const config = emailConfig({
      server: "127.0.0.1",
      port: plain.port,
      from: "svc@example.org",
      to: ["ops@example.org", "oncall@example.org"],
    });
    const { log, mails } = await sendOne(plain, config);
    expect(mails).toHaveLength(1);
    const mail = mails[0]!;
    expect(mail.mail_from).toBe("svc@example.org");
    expect(mail.rcpt_tos).toEqual(["ops@example.org", "oncall@example.org"]);
    expect(mail.from).toBe("svc@example.org");
    expect(mail.to).toBe("ops@example.org, oncall@example.org");
    expect(mail.subject).toBe("svc on pi-garage: 1 updated, 1 failed");
    expect(mail.content_type).toBe("multipart/alternative");
    expect(mail.text).toContain("web (127.0.0.1:5000/web:latest): 111111111111 -> 222222222222");
    expect(mail.text).toContain("db (127.0.0.1:5000/db:16): pull failed: manifest unknown");
    expect(mail.html).toContain("<pre");
    expect(mail.html).toContain("web (127.0.0.1:5000/web:latest): 111111111111 -&gt; 222222222222");
    expect(mail.tls).toBe(false);
    expect(log.lines.some((l) => l.message === "notification sent" && l.fields.channel === "email")).toBe(true);
  });

  test("a custom template file is used for the body", async () => {
    const dir = tempDir("tpl");
    const path = `${dir}/report.mustache`;
    await Bun.write(
      path,
      "Host {{host}}: {{counts.updated}} updated{{#updated}} [{{name}}]{{/updated}}. <{{summary}}>\n",
    );
    try {
      const config = defaultConfig({
        notifications: {
          template: path,
          email: { server: "127.0.0.1", port: plain.port, from: "svc@example.org", to: ["ops@example.org"] },
        },
      });
      const { mails } = await sendOne(plain, config);
      expect(mails[0]!.text!.trim()).toBe(
        "Host pi-garage: 1 updated [web]. <3 scanned, 1 updated, 1 failed, 0 rolled back, 0 stale, 0 skipped, 1 fresh>",
      );
      expect(mails[0]!.html).toContain("&lt;3 scanned");
    } finally {
      removeDir(dir);
    }
  });

  test("STARTTLS when offered, then AUTH with user and password (tls_skip_verify for the test certificate)", async () => {
    const config = emailConfig({
      server: "127.0.0.1",
      port: starttls.port,
      from: "svc@example.org",
      to: ["ops@example.org"],
      user: SMTP_USER,
      password: SMTP_PASSWORD,
      tls_skip_verify: true,
    });
    const { log, mails } = await sendOne(starttls, config);
    expect(mails).toHaveLength(1);
    expect(mails[0]!.tls).toBe(true);
    expect(mails[0]!.login).toBe(SMTP_USER);
    expect(log.text()).not.toContain(SMTP_PASSWORD);
  });

  test("port 465 speaks implicit TLS", async () => {
    // 465 is the only port that means implicit TLS; skip quietly when something else holds it.
    let free = true;
    try {
      Bun.listen({ hostname: "127.0.0.1", port: 465, socket: { data() {} } }).stop(true);
    } catch {
      free = false;
    }
    if (!free) return;
    const smtps = await startSmtp({ cert: pki.selfSignedCert, key: pki.selfSignedKey, implicitTls: true, port: 465 });
    try {
      const config = emailConfig({
        server: "127.0.0.1",
        port: 465,
        from: "svc@example.org",
        to: ["ops@example.org"],
        tls_skip_verify: true,
      });
      const { mails, log } = await sendOne(smtps, config);
      expect(log.lines.filter((l) => l.level === "error")).toEqual([]);
      expect(mails).toHaveLength(1);
      expect(mails[0]!.subject).toBe("svc on pi-garage: 1 updated, 1 failed");
    } finally {
      await stop(smtps.proc);
      removeDir(smtps.dir);
    }
  });

  test("an unverifiable server certificate fails without tls_skip_verify, logged, nothing sent", async () => {
    const config = emailConfig({
      server: "127.0.0.1",
      port: starttls.port,
      from: "svc@example.org",
      to: ["ops@example.org"],
      user: SMTP_USER,
      password: SMTP_PASSWORD,
    });
    const { log, mails } = await sendOne(starttls, config);
    expect(mails).toHaveLength(0);
    const failure = log.lines.find((l) => l.level === "error" && l.message === "notification failed");
    expect(failure?.fields).toMatchObject({ channel: "email", attempts: 2 });
    expect(String(failure?.fields.reason)).toMatch(/certif|self.signed|verify/i);
    expect(log.text()).not.toContain(SMTP_PASSWORD);
  });

  test("a wrong password is a logged failure that never shows the password", async () => {
    const wrong = "Wr0ng-Password-xyz";
    const config = emailConfig({
      server: "127.0.0.1",
      port: starttls.port,
      from: "svc@example.org",
      to: ["ops@example.org"],
      user: SMTP_USER,
      password: wrong,
      tls_skip_verify: true,
    });
    const { log, mails } = await sendOne(starttls, config);
    expect(mails).toHaveLength(0);
    const failure = log.lines.find((l) => l.level === "error" && l.message === "notification failed");
    expect(failure?.fields.channel).toBe("email");
    expect(String(failure?.fields.reason)).toMatch(/auth|535/i);
    expect(log.text()).not.toContain(wrong);
  });

  test("a server that is down is logged and publish does not throw", async () => {
    const config = emailConfig({
      server: "127.0.0.1",
      port: freePort(),
      from: "svc@example.org",
      to: ["ops@example.org"],
    });
    const log = recordingLogger();
    const notifications = await createNotifications(config, log, { retryDelayMs: 10, timeoutMs: 2000, attempts: 2 });
    expect(() => notifications.publish(sampleReport())).not.toThrow();
    await notifications.flush();
    const failure = log.lines.find((l) => l.level === "error" && l.message === "notification failed");
    expect(failure?.fields).toMatchObject({ channel: "email", attempts: 2 });
    expect(String(failure?.fields.reason)).toMatch(/ECONNREFUSED|refused/i);
    await notifications.close();
  });

  test("a server that never greets runs into the timeout", async () => {
    const silent = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
    try {
      const config = emailConfig({
        server: "127.0.0.1",
        port: silent.port,
        from: "svc@example.org",
        to: ["ops@example.org"],
      });
      const log = recordingLogger();
      const notifications = await createNotifications(config, log, { retryDelayMs: 10, timeoutMs: 500, attempts: 1 });
      notifications.publish(sampleReport());
      await notifications.close();
      const failure = log.lines.find((l) => l.level === "error" && l.message === "notification failed");
      expect(failure?.fields.channel).toBe("email");
      expect(String(failure?.fields.reason)).toMatch(/time/i);
    } finally {
      silent.stop(true);
    }
  });
});
