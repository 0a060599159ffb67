/**
 * Notification URLs delivered for real: one loopback receiver stands in for every HTTP service
 * (the fixed hosts of Discord, Telegram, Slack and Pushover reach it through
 * notifications.services_base_url) and checks what each API requires; e-mail goes to the
 * aiosmtpd peer. Nothing leaves the machine.
 */

import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { createDecipheriv, createHmac } from "node:crypto";
import { readFileSync } from "node:fs";
import { gunzipSync } from "node:zlib";
import { type Config, type DeepPartial, defaultConfig } from "../../../src/config/index.ts";
import { createNotifications } from "../../../src/notify/index.ts";
import { freePort } from "../../harness.ts";
import { recordingLogger } from "../../support/logger.ts";
import {
  makePki,
  type Received,
  removeDir,
  SECRETS,
  type SmtpServer,
  sampleReport,
  serviceReceiver,
  startSmtp,
  stop,
  type TestPki,
  tempDir,
  urlsFor,
} from "./peers.ts";

setDefaultTimeout(30_000);

let receiver: ReturnType<typeof serviceReceiver>;
let smtp: SmtpServer;
let starttls: SmtpServer;
let pki: TestPki;

beforeAll(async () => {
  receiver = serviceReceiver();
  pki = makePki();
  [smtp, starttls] = await Promise.all([
    startSmtp(),
    startSmtp({ cert: pki.selfSignedCert, key: pki.selfSignedKey, user: "mailer", password: "SmtpPa55Secret" }),
  ]);
});

afterAll(async () => {
  receiver?.server.stop(true);
  await Promise.all([stop(smtp?.proc), stop(starttls?.proc)]);
  for (const dir of [smtp?.dir, starttls?.dir, pki?.dir]) removeDir(dir);
});

async function publishOnce(notifications: DeepPartial<Config["notifications"]>, attempts = 2, report = sampleReport()) {
  const log = recordingLogger();
  const config = defaultConfig({ notifications: { services_base_url: receiver.base, ...notifications } });
  const dispatcher = await createNotifications(config, log, {
    hostname: "nas",
    retryDelayMs: 10,
    timeoutMs: 3000,
    attempts,
  });
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
    expect(channels).toEqual([
      "discord",
      "telegram",
      "slack",
      "slack#2",
      "gotify",
      "ntfy",
      "pushover",
      "teams",
      "matrix",
      "generic",
    ]);
    const got = since(mark);
    const to = (test: (r: Received) => boolean) => got.filter(test);
    const title = "svc on nas: 1 updated, 1 failed";
    const line = "updated web: 127.0.0.1:5000/web:latest (111111111111 -> 222222222222)";

    const [discord] = to((r) => r.path === `/api/webhooks/123456789012345678/${SECRETS.discord}`);
    expect(jsonOf(discord)).toEqual({
      content: `**${title}**\n${line}\nfailed db (127.0.0.1:5000/db:16): pull failed: manifest unknown`,
      username: "svc",
      allowed_mentions: { parse: [] },
    });

    const telegram = to((r) => r.path === `/bot${SECRETS.telegramBot}/sendMessage`).map(jsonOf);
    expect(telegram.map((m) => m.chat_id)).toEqual(["@svc_news", "12345"]);
    expect(telegram[0].text).toStartWith(`${title}\n\n${line}`);

    expect(jsonOf(to((r) => r.path === `/services/T0001/B0002/${SECRETS.slackHook}`)[0])).toMatchObject({
      username: "svc",
      text: `*${title}*\n${line.replace("->", "-&gt;")}\nfailed db (127.0.0.1:5000/db:16): pull failed: manifest unknown`,
    });
    const [bot] = to((r) => r.path === "/api/chat.postMessage");
    expect(bot?.headers.authorization).toBe(`Bearer xoxb-${SECRETS.slackBot}`);
    expect(jsonOf(bot)).toMatchObject({ channel: "C001CH4NN3L" });

    const [gotify] = to((r) => r.path === "/gotify/message");
    expect(gotify?.headers["x-gotify-key"]).toBe(SECRETS.gotify);
    expect(jsonOf(gotify)).toMatchObject({ title, priority: 0 });
    expect(jsonOf(gotify).message).toStartWith(line);

    const [ntfy] = to((r) => r.path === "/ntfy/svc-alerts");
    expect(ntfy?.headers.authorization).toBe(`Basic ${Buffer.from(`svc:${SECRETS.ntfy}`).toString("base64")}`);
    expect(ntfy?.headers).toMatchObject({ title, tags: "whale", "content-type": "text/plain; charset=utf-8" });
    expect(ntfy?.body).toStartWith(line);

    const pushover = new URLSearchParams(to((r) => r.path === "/1/messages.json")[0]?.body);
    expect([pushover.get("token"), pushover.get("user"), pushover.get("device"), pushover.get("title")]).toEqual([
      SECRETS.pushoverToken,
      SECRETS.pushoverUser,
      "phone",
      title,
    ]);
    expect(pushover.get("message")).toContain("web (127.0.0.1:5000/web:latest): 111111111111 -> 222222222222");

    const [teams] = to((r) => r.path.startsWith("/workflows/"));
    expect(teams?.query.get("sig")).toBe(SECRETS.teams);
    expect(jsonOf(teams).attachments[0].content.body[0]).toMatchObject({ type: "TextBlock", text: title });

    expect(jsonOf(to((r) => r.path === "/_matrix/client/v3/login")[0])).toMatchObject({
      identifier: { user: "bot" },
      password: SECRETS.matrix,
    });
    expect(to((r) => r.path === `/_matrix/client/v3/join/${encodeURIComponent("#ops:lan")}`)).toHaveLength(1);
    const [matrix] = to((r) => r.path.startsWith("/_matrix/client/v3/rooms/"));
    expect(matrix?.method).toBe("PUT");
    expect(matrix?.path).toBe(
      `/_matrix/client/v3/rooms/${encodeURIComponent("!joined:lan")}/send/m.room.message/svc-${report.id}-0`,
    );
    expect(jsonOf(matrix).body).toStartWith(`${title}\n${line}`);

    const [generic] = to((r) => r.path === "/generic/hook");
    expect(generic?.headers["x-api-key"]).toBe(SECRETS.generic);
    expect(generic?.headers["content-type"]).toBe("text/plain");
    expect(generic?.body).toStartWith(line);

    expect(log.lines.filter((l) => l.message === "notification sent")).toHaveLength(10);
    for (const secret of Object.values(SECRETS)) expect(log.text()).not.toContain(secret);
  });

  test("shoutrrr's meanings: a Telegram topic, Matrix room names, ntfy's nested topic and headers, Discord's thread, Slack's thread", async () => {
    const mark = receiver.received.length;
    const at = `127.0.0.1:${receiver.server.port}`;
    await publishOnce({
      urls: [
        `telegram://${SECRETS.telegramBot}@telegram?chats=-100123:10,@news&preview=n&notification=y`,
        `matrix://bot:${SECRETS.matrix}@${at}/?rooms=room1&disabletls=yes`,
        `ntfy://${at}/ntfy/a/b?disabletls=yes&delay=30m&email=ops@lan&markdown=yes&priority=max&cache=no`,
        `discord://${SECRETS.discord}@123456789012345678?thread_id=987654321`,
        `slack://hook:T0001-B0002-${SECRETS.slackHook}@webhook?username=svc&icon_emoji=:whale:&thread_ts=1234.5678`,
      ],
    });
    const got = since(mark);
    const telegram = got.filter((r) => r.path.endsWith("/sendMessage")).map(jsonOf);
    expect(
      telegram.map((m) => [m.chat_id, m.message_thread_id, m.disable_notification, m.link_preview_options]),
    ).toEqual([
      ["-100123", 10, false, { is_disabled: true }],
      ["@news", undefined, false, { is_disabled: true }],
    ]);
    expect(
      got
        .filter((r) => r.path.startsWith("/_matrix/client/v3/join/"))
        .map((r) => decodeURIComponent(r.path.split("/").pop()!)),
    ).toEqual(["#room1"]);
    const [ntfy] = got.filter((r) => r.path === "/ntfy/a/b");
    expect(ntfy?.headers).toMatchObject({
      delay: "30m",
      email: "ops@lan",
      priority: "5",
      cache: "no",
      "content-type": "text/markdown",
    });
    const [discord] = got.filter((r) => r.path.startsWith("/api/webhooks/"));
    expect(discord?.query.get("thread_id")).toBe("987654321");
    expect(jsonOf(got.find((r) => r.path.startsWith("/services/")))).toMatchObject({
      username: "svc",
      icon_emoji: ":whale:",
      thread_ts: "1234.5678",
    });
  });

  test("generic: shoutrrr's JSON with template=json, its keys and $extra fields, @headers, method; generic+http alike", async () => {
    const mark = receiver.received.length;
    const at = `127.0.0.1:${receiver.server.port}`;
    await publishOnce({
      urls: [
        `generic://${at}/generic/json?disabletls=yes&template=json&titlekey=subject&messagekey=text&$source=svc&method=PUT`,
        `generic+http://${at}/generic/bearer?@Authorization=Bearer%20${SECRETS.generic}&room=7`,
      ],
    });
    const got = since(mark);
    const json = got.find((r) => r.path === "/generic/json");
    expect(json?.method).toBe("PUT");
    expect(json?.headers["content-type"]).toBe("application/json");
    const body = jsonOf(json);
    expect(Object.keys(body).sort()).toEqual(["source", "subject", "text"]);
    expect(body).toMatchObject({ subject: "svc on nas: 1 updated, 1 failed", source: "svc" });
    const bearer = got.find((r) => r.path === "/generic/bearer");
    expect(bearer?.headers.authorization).toBe(`Bearer ${SECRETS.generic}`);
    expect([...bearer!.query.keys()]).toEqual(["room"]);
  });

  test("the services shoutrrr has and svc added: Mattermost, Pushbullet, Bark, Signal", async () => {
    const mark = receiver.received.length;
    const at = `127.0.0.1:${receiver.server.port}`;
    const pushbulletToken = "o.PushbulletSecretToken0123456789a";
    const { log } = await publishOnce({
      urls: [
        `mattermost://svc@${at}/MattermostSecret123/ops?disabletls=yes&icon=whale`,
        `pushbullet://${pushbulletToken}/phone/%23news/me@lan`,
        `bark://:BarkDeviceSecret@${at}/bark?scheme=http&sound=bell&badge=2`,
        `signal://${at}/+1234567890/+0987654321/group.abc/def=?disabletls=yes&token=SignalTokenSecret`,
      ],
    });
    const got = since(mark);
    const [mattermost] = got.filter((r) => r.path === "/hooks/MattermostSecret123");
    expect(jsonOf(mattermost)).toMatchObject({ username: "svc", channel: "ops", icon_emoji: "whale" });
    expect(jsonOf(mattermost).text).toStartWith("svc on nas: 1 updated, 1 failed\n");
    const pushes = got.filter((r) => r.path === "/v2/pushes");
    expect(pushes.map((r) => r.headers["access-token"])).toEqual([pushbulletToken, pushbulletToken, pushbulletToken]);
    expect(pushes.map((r) => jsonOf(r))).toMatchObject([
      { type: "note", device_iden: "phone" },
      { channel_tag: "news" },
      { email: "me@lan" },
    ]);
    expect(jsonOf(got.find((r) => r.path === "/bark/push"))).toMatchObject({
      device_key: "BarkDeviceSecret",
      title: "svc on nas: 1 updated, 1 failed",
      sound: "bell",
      badge: 2,
    });
    const [signal] = got.filter((r) => r.path === "/v2/send");
    expect(signal?.headers.authorization).toBe("Bearer SignalTokenSecret");
    expect(jsonOf(signal)).toMatchObject({ number: "+1234567890", recipients: ["+0987654321", "group.abc/def="] });
    for (const secret of [
      "SignalTokenSecret",
      "MattermostSecret123",
      "GKeySecret",
      "GTokSecret",
      pushbulletToken,
      "BarkDeviceSecret",
    ])
      expect(log.text()).not.toContain(secret);
  });

  test("a self-signed ntfy or Gotify server: refused, unless disabletlsverification / insecureskipverify", async () => {
    const secure = serviceReceiver({
      cert: readFileSync(pki.selfSignedCert, "utf8"),
      key: readFileSync(pki.selfSignedKey, "utf8"),
    });
    try {
      const at = `127.0.0.1:${secure.server.port}`;
      const refused = await publishOnce({ urls: [`ntfy://${at}/ntfy/t`, `gotify://${at}/g/${SECRETS.gotify}`] }, 1);
      expect(refused.log.lines.filter((l) => l.message === "notification failed")).toHaveLength(2);
      expect(secure.received).toHaveLength(0);
      await publishOnce(
        {
          urls: [
            `ntfy://${at}/ntfy/t?disabletlsverification=yes`,
            `gotify://${at}/g/${SECRETS.gotify}?insecureskipverify=yes`,
          ],
        },
        1,
      );
      expect(secure.received.map((r) => r.path).sort()).toEqual(["/g/message", "/ntfy/t"]);
    } finally {
      secure.server.stop(true);
    }
  });

  test("services_base_url per service: each service's token goes to its own base, and a line at start says which", async () => {
    const other = serviceReceiver();
    try {
      const mark = receiver.received.length;
      const urls = urlsFor(receiver.server.port!);
      const { log } = await publishOnce({
        services_base_url: `discord=${receiver.base}, telegram=${other.base}`,
        urls: [urls.discord, urls.telegram],
      });
      expect(since(mark).map((r) => r.path)).toEqual([`/api/webhooks/123456789012345678/${SECRETS.discord}`]);
      expect(other.received.map((r) => r.path)).toEqual([
        `/bot${SECRETS.telegramBot}/sendMessage`,
        `/bot${SECRETS.telegramBot}/sendMessage`,
      ]);
      const said = log.lines
        .filter((l) => String(l.message).includes("notifications.services_base_url"))
        .map((l) => l.message);
      expect(said).toEqual([
        `the tokens of discord go to ${receiver.base} (notifications.services_base_url), not to their public hosts`,
        `the tokens of telegram go to ${other.base} (notifications.services_base_url), not to their public hosts`,
      ]);
    } finally {
      other.server.stop(true);
    }
  });

  test("Bark's refusal inside a 200 answer is a failure, as shoutrrr reads it", async () => {
    const { log } = await publishOnce(
      { urls: [`bark://:RefusedDevice@127.0.0.1:${receiver.server.port}/bark?scheme=http`] },
      1,
    );
    expect(String(log.lines.find((l) => l.message === "notification failed")?.fields.reason)).toContain(
      "Bark refused the message: failed to push",
    );
  });

  test("pushover:// with encryptionkey: title and message end-to-end encrypted as Pushover's apps decrypt them", async () => {
    const key = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    const mark = receiver.received.length;
    const { log } = await publishOnce({
      urls: [`pushover://shoutrrr:${SECRETS.pushoverToken}@${SECRETS.pushoverUser}/?encryptionkey=${key}`],
    });
    const form = new URLSearchParams(since(mark).find((r) => r.path === "/1/messages.json")?.body);
    expect(form.get("encrypted")).toBe("1");
    const decrypt = (field: string) => {
      const payload = Buffer.from(form.get(field)!, "base64");
      const [iv, ciphertext, mac] = [
        payload.subarray(0, 16),
        payload.subarray(16, payload.length - 32),
        payload.subarray(payload.length - 32),
      ];
      const keyBytes = Buffer.from(key, "hex");
      expect(createHmac("sha256", keyBytes).update(iv).update(ciphertext).digest().equals(mac)).toBe(true);
      const decipher = createDecipheriv("aes-256-cbc", keyBytes, iv);
      return gunzipSync(Buffer.concat([decipher.update(ciphertext), decipher.final()])).toString("utf8");
    };
    expect(decrypt("title")).toBe("svc on nas: 1 updated, 1 failed");
    expect(decrypt("message")).toContain("web (127.0.0.1:5000/web:latest): 111111111111 -> 222222222222");
    expect(form.get("message")).not.toContain("web");
    expect(log.text()).not.toContain(key);
  });

  test("the https-only services (Rocket.Chat, Google Chat) to a TLS stand-in", async () => {
    const secure = serviceReceiver({
      cert: readFileSync(pki.selfSignedCert, "utf8"),
      key: readFileSync(pki.selfSignedKey, "utf8"),
    });
    // Those URLs have no option to accept a self-signed certificate: this test alone trusts any
    // (Bun reads the variable at each request), and puts it back at once.
    process.env.NODE_TLS_REJECT_UNAUTHORIZED = "0";
    try {
      const at = `127.0.0.1:${secure.server.port}`;
      await publishOnce({
        urls: [
          `rocketchat://svc@${at}/RocketTokenA/RocketTokenB2Secret/ops`,
          `rocketchat://${at}/RocketTokenA/RocketTokenB2Secret/@alice`,
          `googlechat://${at}/v1/spaces/FOO/messages?key=GKeySecret&token=GTokSecret`,
        ],
      });
    } finally {
      delete process.env.NODE_TLS_REJECT_UNAUTHORIZED;
      secure.server.stop(true);
    }
    const rocket = secure.received.filter((r) => r.path === "/hooks/RocketTokenA/RocketTokenB2Secret").map(jsonOf);
    expect(rocket.map((b) => [b.username, b.channel])).toEqual([
      ["svc", "#ops"],
      [undefined, "@alice"],
    ]);
    expect(rocket[0].text).toStartWith("svc on nas: 1 updated, 1 failed\n");
    const [chat] = secure.received.filter((r) => r.path === "/v1/spaces/FOO/messages");
    expect([chat?.query.get("key"), chat?.query.get("token")]).toEqual(["GKeySecret", "GTokSecret"]);
    expect(jsonOf(chat).text).toStartWith("*svc on nas: 1 updated, 1 failed*\n");
  });

  test("a Telegram chat that refuses is retried alone; the others got the message once", async () => {
    const mark = receiver.received.length;
    const { log } = await publishOnce(
      { urls: [`telegram://${SECRETS.telegramBot}@telegram?chats=111,-100404,222`] },
      2,
    );
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
    const { log } = await publishOnce({
      urls: [urls.discord, `gotify://127.0.0.1:${freePort()}/${SECRETS.gotify}?disabletls=yes`, urls.ntfy],
    });
    const got = since(mark);
    expect(got.filter((r) => r.path.startsWith("/api/webhooks/"))).toHaveLength(1);
    expect(got.filter((r) => r.path === "/ntfy/svc-alerts")).toHaveLength(1);
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
      await publishOnce({
        template: `${dir}/chat.mustache`,
        title_tag: "prod",
        urls: [
          urlsFor(port).discord,
          `generic://127.0.0.1:${port}/generic/tpl?disabletls=yes&template=${dir}/hook.mustache`,
        ],
      });
      const got = since(mark);
      expect(jsonOf(got.find((r) => r.path.startsWith("/api/webhooks/"))).content).toBe(
        "**[prod] svc on nas: 1 updated, 1 failed**\nnas [web]",
      );
      expect(jsonOf(got.find((r) => r.path === "/generic/tpl"))).toEqual({
        text: "[prod] svc on nas: 1 updated, 1 failed",
        n: 1,
      });
    } finally {
      removeDir(dir);
    }
  });
});

/**
 * What an image's logs, a registry or a release may say, in every service's markup: mentions
 * (Discord, Slack, Mattermost/Rocket.Chat, Google Chat, Matrix), masked links, images and Slack's
 * links. Each service's documented payload is the oracle: Discord's `allowed_mentions` and its
 * Markdown's backslash escapes; Slack's "Escaping text" (`&amp;`, `&lt;`, `&gt;`); Mattermost's and
 * Rocket.Chat's Markdown with Slack's `<url|text>`; Google Chat's `<users/all>` and `<url|text>`;
 * Telegram's sendMessage without `parse_mode` (plain text); ntfy's `Markdown` header; Gotify's
 * message without `extras` (plain text).
 */
describe("text from outside is inert in every service (docs/notifications.md)", () => {
  const HOSTILE =
    "@everyone @here <@&123456> <@987654> @channel @all @room <!channel> <users/all> [click](https://evil.example/x) ![](https://evil.example/pixel.png) <https://evil.example|docs> see https://plain.example/ok";
  const hostileReport = () => {
    const report = sampleReport();
    report.containers[1] = { ...report.containers[1]!, name: "db", state: "rolled_back", reason: HOSTILE };
    return report;
  };
  /** a mention as each service reads one: `@word` starting a word, or in angle brackets */
  const MENTION = /(^|[^\p{L}\p{N}_.+-])@(everyone|here|channel|all|room)\b/u;
  /** a Markdown link or image: `[text](` not preceded by a backslash on either bracket */
  const MARKDOWN_LINK = /(^|[^\\])\[[^\]]*(?<!\\)\]\(/;
  const inertIn = (text: string) => {
    expect(text).toContain("https://plain.example/ok");
    expect(text).not.toMatch(MENTION);
    expect(text).not.toMatch(MARKDOWN_LINK);
    expect(text).not.toMatch(/(?<!\\)<(@|!|users\/|https?:)/);
    return text;
  };

  test("Discord, Telegram, Slack, Gotify, ntfy (plain and Markdown), Teams, Matrix, Mattermost, Signal", async () => {
    const mark = receiver.received.length;
    const port = receiver.server.port!;
    const at = `127.0.0.1:${port}`;
    const urls = urlsFor(port);
    await publishOnce(
      {
        urls: [
          urls.discord,
          urls.telegram,
          urls.slackHook,
          urls.gotify,
          urls.ntfy,
          `ntfy://${at}/ntfy/md?scheme=http&markdown=yes`,
          urls.teams,
          urls.matrix,
          `mattermost://svc@${at}/MattermostSecret123/ops?disabletls=yes`,
          `signal://${at}/+1234567890/+0987654321?disabletls=yes`,
        ],
      },
      2,
      hostileReport(),
    );
    const got = since(mark);
    const one = (path: string) => got.find((r) => r.path === path);

    const discord = jsonOf(one(`/api/webhooks/123456789012345678/${SECRETS.discord}`));
    expect(discord.allowed_mentions).toEqual({ parse: [] });
    expect(inertIn(discord.content)).toContain("\\<@&123456> \\<@\u200b987654>");
    expect(discord.content).toContain("!\\[\\](https://evil.example/pixel.png)");

    const telegram = jsonOf(one(`/bot${SECRETS.telegramBot}/sendMessage`));
    expect(telegram.parse_mode).toBeUndefined();
    expect(telegram.text).toContain("https://plain.example/ok");
    expect(telegram.text).not.toMatch(MENTION);

    const slack = jsonOf(one(`/services/T0001/B0002/${SECRETS.slackHook}`));
    // Slack's mrkdwn has no Markdown links: its links and mentions all open with `<`
    expect(slack.text).not.toMatch(MENTION);
    expect(slack.text).not.toContain("<");
    expect(slack.text).toContain("&lt;!channel&gt; &lt;users/all&gt; [click](https://evil.example/x)");

    const gotify = jsonOf(one("/gotify/message"));
    expect(gotify.extras).toBeUndefined(); // Gotify shows the message as plain text
    const ntfyPlain = one("/ntfy/svc-alerts")!;
    expect(ntfyPlain.headers["content-type"]).toBe("text/plain; charset=utf-8");
    expect(ntfyPlain.headers.markdown).toBeUndefined();
    const ntfyMarkdown = one("/ntfy/md")!;
    expect(ntfyMarkdown.headers["content-type"]).toBe("text/markdown");
    inertIn(ntfyMarkdown.body);

    const teams = jsonOf(got.find((r) => r.path.startsWith("/workflows/")));
    inertIn(teams.attachments[0].content.body[1].text);

    const matrix = got.find((r) => r.path.includes("/send/m.room.message/"));
    expect(jsonOf(matrix).body).not.toMatch(MENTION);
    expect(jsonOf(matrix).format).toBeUndefined();

    inertIn(jsonOf(one("/hooks/MattermostSecret123")).text);
    expect(jsonOf(one("/v2/send")).message).not.toMatch(MENTION);
  });

  test("Rocket.Chat and Google Chat (https only) to a TLS stand-in", async () => {
    const secure = serviceReceiver({
      cert: readFileSync(pki.selfSignedCert, "utf8"),
      key: readFileSync(pki.selfSignedKey, "utf8"),
    });
    process.env.NODE_TLS_REJECT_UNAUTHORIZED = "0";
    try {
      const at = `127.0.0.1:${secure.server.port}`;
      await publishOnce(
        {
          urls: [
            `rocketchat://svc@${at}/RocketTokenA/RocketTokenB2Secret/ops`,
            `googlechat://${at}/v1/spaces/FOO/messages?key=GKeySecret&token=GTokSecret`,
          ],
        },
        2,
        hostileReport(),
      );
    } finally {
      delete process.env.NODE_TLS_REJECT_UNAUTHORIZED;
      secure.server.stop(true);
    }
    inertIn(jsonOf(secure.received.find((r) => r.path === "/hooks/RocketTokenA/RocketTokenB2Secret")).text);
    const chat = jsonOf(secure.received.find((r) => r.path === "/v1/spaces/FOO/messages")).text;
    expect(inertIn(chat)).not.toContain("<users/all>");
  });
});

describe("smtp:// to the SMTP peer", () => {
  test("plain, with from, fromname, several recipients and shoutrrr's subject", async () => {
    const before = smtp.messages().length;
    const { log } = await publishOnce({
      urls: [
        `smtp://127.0.0.1:${smtp.port}/?from=svc@lan&fromname=svc&to=ops@lan,oncall@lan&subject=Updates&usestarttls=no`,
      ],
    });
    const [mail] = smtp.messages().slice(before);
    expect(mail).toMatchObject({
      mail_from: "svc@lan",
      rcpt_tos: ["ops@lan", "oncall@lan"],
      subject: "Updates",
      tls: false,
    });
    expect(mail?.from).toContain("svc@lan");
    expect(mail?.text).toContain("web (127.0.0.1:5000/web:latest): 111111111111 -> 222222222222");
    expect(log.lines.some((l) => l.message === "notification sent" && l.fields.channel === "smtp")).toBe(true);
  });

  test("a + in the from and to addresses stays a +, as shoutrrr reads it", async () => {
    const before = smtp.messages().length;
    await publishOnce({
      urls: [`smtp://127.0.0.1:${smtp.port}/?from=me+svc@lan&to=ops+updates@lan,b@lan&usestarttls=no`],
    });
    const [mail] = smtp.messages().slice(before);
    expect(mail).toMatchObject({ mail_from: "me+svc@lan", rcpt_tos: ["ops+updates@lan", "b@lan"] });
  });

  test("clienthost names svc in EHLO; requirestarttls=yes refuses a server without STARTTLS", async () => {
    const before = smtp.messages().length;
    await publishOnce({ urls: [`smtp://127.0.0.1:${smtp.port}/?from=svc@lan&to=ops@lan&clienthost=svc.example.com`] });
    expect(smtp.messages().slice(before)).toMatchObject([{ helo: "svc.example.com" }]);
    const { log } = await publishOnce(
      { urls: [`smtp://127.0.0.1:${smtp.port}/?from=svc@lan&to=ops@lan&requirestarttls=yes`] },
      1,
    );
    expect(log.lines.find((l) => l.message === "notification failed")?.fields.channel).toBe("smtp");
    expect(smtp.messages().length).toBe(before + 1);
  });

  test("encryption=explicittls with auth=plain: STARTTLS then AUTH; a wrong password is logged without it", async () => {
    const before = starttls.messages().length;
    const url = (password: string) =>
      `smtp://mailer:${password}@127.0.0.1:${starttls.port}/?from=svc@lan&to=ops@lan&auth=Plain&encryption=ExplicitTLS&skiptlsverify=yes`;
    await publishOnce({ urls: [url("SmtpPa55Secret")] });
    expect(starttls.messages().slice(before)).toMatchObject([
      { tls: true, login: "mailer", subject: "svc on nas: 1 updated, 1 failed" },
    ]);
    const { log } = await publishOnce({ urls: [url("WrongPa55Secret")] }, 1);
    expect(log.lines.find((l) => l.message === "notification failed")?.fields.channel).toBe("smtp");
    expect(log.text()).not.toContain("WrongPa55Secret");
  });
});
