/**
 * Notification URLs delivered for real: one loopback receiver stands in for every HTTP service
 * (the fixed hosts of Discord, Telegram, Slack and Pushover reach it through
 * notifications.services_base_url) and checks what each API requires; e-mail goes to the
 * aiosmtpd peer. Nothing leaves the machine.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { defaultConfig, type Config, type DeepPartial } from "../../../src/config/index.ts";
import { createNotifications } from "../../../src/notify/index.ts";
import { freePort } from "../../harness.ts";
import { makePki, removeDir, sampleReport, SECRETS, serviceReceiver, startSmtp, stop, tempDir, urlsFor, type Received, type SmtpServer, type TestPki } from "./peers.ts";
import { recordingLogger } from "../../support/logger.ts";

setDefaultTimeout(30_000);

let receiver: ReturnType<typeof serviceReceiver>;
let smtp: SmtpServer;
let starttls: SmtpServer;
let pki: TestPki;

beforeAll(async () => {
  receiver = serviceReceiver();
  pki = makePki();
  [smtp, starttls] = await Promise.all([startSmtp(), startSmtp({ cert: pki.selfSignedCert, key: pki.selfSignedKey, user: "mailer", password: "SmtpPa55Secret" })]);
});

afterAll(async () => {
  receiver?.server.stop(true);
  await Promise.all([stop(smtp?.proc), stop(starttls?.proc)]);
  for (const dir of [smtp?.dir, starttls?.dir, pki?.dir]) removeDir(dir);
});

async function publishOnce(notifications: DeepPartial<Config["notifications"]>, attempts = 2) {
  const log = recordingLogger();
  const config = defaultConfig({ notifications: { services_base_url: receiver.base, ...notifications } });
  const dispatcher = await createNotifications(config, log, { hostname: "nas", retryDelayMs: 10, timeoutMs: 3000, attempts });
  const report = sampleReport();
  dispatcher.publish(report);
  await dispatcher.close();
  return { report, log, channels: dispatcher.channels };
}

const since = (mark: number) => receiver.received.slice(mark);
const jsonOf = (request: Received | undefined) => JSON.parse(request?.body ?? "null");

describe("each notification URL form, delivered", () => {
  test("one report reaches every target in its own API's form; no secret is logged", async () => {
    const mark = receiver.received.length;
    const urls = urlsFor(receiver.server.port!);
    const { report, log, channels } = await publishOnce({ urls: Object.values(urls) });
    expect(channels).toEqual(["discord", "telegram", "slack", "slack#2", "gotify", "ntfy", "pushover", "teams", "matrix", "generic"]);
    const got = since(mark);
    const to = (test: (r: Received) => boolean) => got.filter(test);
    const title = "svc on nas: 1 updated, 1 failed";
    const line = "updated web: 127.0.0.1:5000/web:latest (111111111111 -> 222222222222)";

    const [discord] = to((r) => r.path === `/api/webhooks/123456789012345678/${SECRETS.discord}`);
    expect(jsonOf(discord)).toEqual({ content: `**${title}**\n${line}\nfailed db (127.0.0.1:5000/db:16): pull failed: manifest unknown`, username: "svc" });

    const telegram = to((r) => r.path === `/bot${SECRETS.telegramBot}/sendMessage`).map(jsonOf);
    expect(telegram.map((m) => m.chat_id)).toEqual(["@svc_news", "12345"]);
    expect(telegram[0].text).toStartWith(`${title}\n\n${line}`);

    expect(jsonOf(to((r) => r.path === `/services/T0001/B0002/${SECRETS.slackHook}`)[0])).toMatchObject({ username: "svc", text: `*${title}*\n${line.replace("->", "-&gt;")}\nfailed db (127.0.0.1:5000/db:16): pull failed: manifest unknown` });
    const [bot] = to((r) => r.path === "/api/chat.postMessage");
    expect(bot?.headers.authorization).toBe(`Bearer xoxb-${SECRETS.slackBot}`);
    expect(jsonOf(bot)).toMatchObject({ channel: "C001CH4NN3L" });

    const [gotify] = to((r) => r.path === "/gotify/message");
    expect(gotify?.headers["x-gotify-key"]).toBe(SECRETS.gotify);
    expect(jsonOf(gotify)).toMatchObject({ title, priority: 5 });
    expect(jsonOf(gotify).message).toStartWith(line);

    const [ntfy] = to((r) => r.path === "/");
    expect(ntfy?.headers.authorization).toBe(`Basic ${Buffer.from(`svc:${SECRETS.ntfy}`).toString("base64")}`);
    expect(jsonOf(ntfy)).toMatchObject({ topic: "svc-alerts", title, tags: ["whale"] });

    const pushover = new URLSearchParams(to((r) => r.path === "/1/messages.json")[0]?.body);
    expect([pushover.get("token"), pushover.get("user"), pushover.get("device"), pushover.get("title")]).toEqual([SECRETS.pushoverToken, SECRETS.pushoverUser, "phone", title]);
    expect(pushover.get("message")).toContain("web (127.0.0.1:5000/web:latest): 111111111111 -> 222222222222");

    const [teams] = to((r) => r.path.startsWith("/workflows/"));
    expect(teams?.query.get("sig")).toBe(SECRETS.teams);
    expect(jsonOf(teams).attachments[0].content.body[0]).toMatchObject({ type: "TextBlock", text: title });

    expect(jsonOf(to((r) => r.path === "/_matrix/client/v3/login")[0])).toMatchObject({ identifier: { user: "bot" }, password: SECRETS.matrix });
    expect(to((r) => r.path === `/_matrix/client/v3/join/${encodeURIComponent("#ops:lan")}`)).toHaveLength(1);
    const [matrix] = to((r) => r.path.startsWith("/_matrix/client/v3/rooms/"));
    expect(matrix?.method).toBe("PUT");
    expect(matrix?.path).toBe(`/_matrix/client/v3/rooms/${encodeURIComponent("!joined:lan")}/send/m.room.message/svc-${report.id}-0`);
    expect(jsonOf(matrix).body).toStartWith(`${title}\n${line}`);

    const [generic] = to((r) => r.path === "/generic/hook");
    expect(generic?.headers["x-api-key"]).toBe(SECRETS.generic);
    expect(jsonOf(generic)).toEqual(report);

    expect(log.lines.filter((l) => l.message === "notification sent")).toHaveLength(10);
    for (const secret of Object.values(SECRETS)) expect(log.text()).not.toContain(secret);
  });

  test("a Telegram chat that refuses is retried alone; the others got the message once", async () => {
    const mark = receiver.received.length;
    const { log } = await publishOnce({ urls: [`telegram://${SECRETS.telegramBot}@telegram?chats=111,-100404,222`] }, 2);
    const chats = since(mark).map((r) => jsonOf(r).chat_id);
    expect(chats).toEqual(["111", "-100404", "222", "-100404"]);
    const failure = log.lines.find((l) => l.level === "error" && l.message === "notification failed");
    expect(String(failure?.fields.reason)).toContain("chat -100404: HTTP status 400");
    expect(log.text()).not.toContain(SECRETS.telegramBot.split(":")[1]!);
  });

  test("one receiver down: the others still get the report, the failure is logged without its secret", async () => {
    const mark = receiver.received.length;
    const port = receiver.server.port!;
    const urls = urlsFor(port);
    const { log } = await publishOnce({ urls: [urls.discord, `gotify://127.0.0.1:${freePort()}/${SECRETS.gotify}?disabletls=yes`, urls.ntfy] });
    const got = since(mark);
    expect(got.filter((r) => r.path.startsWith("/api/webhooks/"))).toHaveLength(1);
    expect(got.filter((r) => r.path === "/")).toHaveLength(1);
    const failure = log.lines.find((l) => l.level === "error" && l.message === "notification failed");
    expect(failure?.fields).toMatchObject({ channel: "gotify", attempts: 2 });
    for (const secret of Object.values(SECRETS)) expect(log.text()).not.toContain(secret);
  });

  test("templates: notifications.template replaces the chat summary; a generic URL's template replaces the report JSON", async () => {
    const dir = tempDir("url-tpl");
    await Bun.write(`${dir}/chat.mustache`, "{{host}} {{#updated}}[{{name}}]{{/updated}}");
    await Bun.write(`${dir}/hook.mustache`, '{"text": "{{subject}}", "n": {{counts.updated}}}');
    try {
      const mark = receiver.received.length;
      const port = receiver.server.port!;
      await publishOnce({ template: `${dir}/chat.mustache`, title_tag: "prod", urls: [urlsFor(port).discord, `generic://127.0.0.1:${port}/generic/tpl?disabletls=yes&template=${dir}/hook.mustache`] });
      const got = since(mark);
      expect(jsonOf(got.find((r) => r.path.startsWith("/api/webhooks/"))).content).toBe("**[prod] svc on nas: 1 updated, 1 failed**\nnas [web]");
      expect(jsonOf(got.find((r) => r.path === "/generic/tpl"))).toEqual({ text: "[prod] svc on nas: 1 updated, 1 failed", n: 1 });
    } finally {
      removeDir(dir);
    }
  });
});

describe("smtp:// to the SMTP peer", () => {
  test("plain, with from, fromname, several recipients and shoutrrr's subject", async () => {
    const before = smtp.messages().length;
    const { log } = await publishOnce({ urls: [`smtp://127.0.0.1:${smtp.port}/?from=svc@lan&fromname=svc&to=ops@lan,oncall@lan&subject=Updates&usestarttls=no`] });
    const [mail] = smtp.messages().slice(before);
    expect(mail).toMatchObject({ mail_from: "svc@lan", rcpt_tos: ["ops@lan", "oncall@lan"], subject: "Updates", tls: false });
    expect(mail?.from).toContain("svc@lan");
    expect(mail?.text).toContain("web (127.0.0.1:5000/web:latest): 111111111111 -> 222222222222");
    expect(log.lines.some((l) => l.message === "notification sent" && l.fields.channel === "smtp")).toBe(true);
  });

  test("encryption=explicittls with auth=plain: STARTTLS then AUTH; a wrong password is logged without it", async () => {
    const before = starttls.messages().length;
    const url = (password: string) => `smtp://mailer:${password}@127.0.0.1:${starttls.port}/?from=svc@lan&to=ops@lan&auth=Plain&encryption=ExplicitTLS&skiptlsverify=yes`;
    await publishOnce({ urls: [url("SmtpPa55Secret")] });
    expect(starttls.messages().slice(before)).toMatchObject([{ tls: true, login: "mailer", subject: "svc on nas: 1 updated, 1 failed" }]);
    const { log } = await publishOnce({ urls: [url("WrongPa55Secret")] }, 1);
    expect(log.lines.find((l) => l.message === "notification failed")?.fields.channel).toBe("smtp");
    expect(log.text()).not.toContain("WrongPa55Secret");
  });
});
