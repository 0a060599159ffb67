/**
 * Delivery of the notification URLs (`notifications.urls`, parsed by the shoutrrr room): each URL
 * is its own channel, retried and logged by the dispatcher like the others, and each request is
 * built as shoutrrr builds it (docs/notifications.md). The chat and push targets get the short
 * summary (CHAT_TEMPLATE, or the user's template) under the subject as title; Pushover and e-mail
 * what their own channels send; generic webhooks the message text, shoutrrr's JSON or their
 * template; mqtt:// URLs go through the MQTT channel's client. The fixed public hosts (Discord,
 * Telegram, Slack, Pushover, Pushbullet) are replaced per service by
 * `notifications.services_base_url`. Answers are read capped and parsed with a schema.
 */
import { z } from "zod";
import { SvcError } from "../../errors.ts";
import type { SessionReport } from "../../updater/types.ts";
import { loadBodyRenderer, truncate, type BodyRenderer, type RenderedReport, type Renderer } from "../render.ts";
import type { Notifier } from "../types.ts";
import type { MqttSettings } from "./mqtt.ts";
import { FIXED_HOSTS, parseNotificationUrl, parseServicesBaseUrl, serviceOf, type BaseUrls, type FixedHostService, type MqttTarget, type NotificationTarget } from "../../shoutrrr/index.ts";
import { encryptPushoverForm, postPushover, pushoverForm } from "./pushover.ts";
import { readBounded } from "../../bounded.ts";

export interface UrlChannelContext {
  urls: readonly string[];
  /** e-mail and Pushover: the report as their own channels render it */
  render: Renderer;
  /** chat targets: the short summary */
  chat: Renderer;
  hostname: string;
  titleTag?: string;
  /** `notifications.services_base_url`, per service */
  bases: BaseUrls;
  timeoutMs: number;
  /** names of the channels already made (`mqtt`, `pushover`): a URL of the same service is `mqtt#2` */
  taken?: readonly string[];
}

/** Limits of the services, in characters. */
const DISCORD_MAX = 2000;
const TELEGRAM_MAX = 4096;
const SLACK_MAX = 3000;

/** `notifications.services_base_url` per service (checked at load; unset: none). */
export function baseUrlsOf(option: string | undefined): BaseUrls {
  if (option === undefined) return {};
  const parsed = parseServicesBaseUrl(option);
  if ("problem" in parsed) throw new SvcError("config", `notifications.services_base_url: ${parsed.problem}`);
  return parsed.bases;
}

/**
 * What goes to a base URL instead of a public host: for each base URL, the services of
 * `urls` whose tokens are sent there (for the line said at start).
 */
export function tokensToBaseUrls(urls: readonly string[], bases: BaseUrls): Array<{ base: string; services: string[] }> {
  const byBase = new Map<string, Set<string>>();
  for (const url of urls) {
    const service = serviceOf(url);
    const base = Object.hasOwn(bases, service) ? bases[service as FixedHostService] : undefined;
    if (base) byBase.set(base, (byBase.get(base) ?? new Set()).add(service));
  }
  return [...byBase].map(([base, services]) => ({ base, services: [...services] }));
}

/** One notifier per URL, named by its service (`discord`, `discord#2` for a second one). */
export async function createUrlNotifiers(context: UrlChannelContext): Promise<Notifier[]> {
  const seen = new Map<string, number>((context.taken ?? []).map((name) => [name, 1]));
  const notifiers: Notifier[] = [];
  for (const [index, url] of context.urls.entries()) {
    const parsed = parseNotificationUrl(url);
    // Checked at load already; a URL reaching here unparsed comes from a caller that skipped loading.
    if ("problem" in parsed) throw new SvcError("config", `notifications.urls entry ${index + 1}: ${parsed.problem}`);
    const service = serviceOf(url);
    const count = (seen.get(service) ?? 0) + 1;
    seen.set(service, count);
    notifiers.push(await createUrlNotifier(count === 1 ? service : `${service}#${count}`, parsed, context));
  }
  return notifiers;
}

async function createUrlNotifier(name: string, target: NotificationTarget, context: UrlChannelContext): Promise<Notifier> {
  const { timeoutMs } = context;
  const fixed = (service: FixedHostService, publicOrigin: string = FIXED_HOSTS[service]) => context.bases[service] ?? publicOrigin;
  const notifier = (send: (report: SessionReport) => Promise<void>): Notifier => ({ name, send });
  switch (target.service) {
    case "discord": {
      const thread = target.threadId ? `?thread_id=${encodeURIComponent(target.threadId)}` : "";
      const endpoint = `${fixed("discord")}/api/webhooks/${target.webhookId}/${encodeURIComponent(target.token)}${thread}`;
      return notifier(async (report) => {
        const { subject, text } = context.chat(report);
        const body = { content: truncate(`**${subject}**\n${text}`.trim(), DISCORD_MAX), username: target.username, avatar_url: target.avatarUrl };
        await postJson(endpoint, body, timeoutMs);
      });
    }
    case "telegram":
      return telegramNotifier(name, target, `${fixed("telegram")}/bot${target.token}/sendMessage`, context);
    case "slack": {
      const endpoint = target.webhookPath ? `${fixed("slack")}/services/${target.webhookPath}` : `${fixed("slack", "https://slack.com")}/api/chat.postMessage`;
      const headers: Record<string, string> = target.botToken ? { authorization: `Bearer ${target.botToken}` } : {};
      const icon = target.icon ? (/^https?:\/\//.test(target.icon) ? { icon_url: target.icon } : { icon_emoji: target.icon }) : {};
      return notifier(async (report) => {
        const { subject, text } = context.chat(report);
        const body = { channel: target.channel, username: target.botname, ...icon, thread_ts: target.threadTs, text: truncate(`*${slackEscape(subject)}*\n${slackEscape(text)}`.trim(), SLACK_MAX) };
        const answer = await postJson(endpoint, body, timeoutMs, headers);
        // The Web API answers 200 with {"ok": false, "error": ...} when it refuses.
        if (target.botToken) expectOk(answer, "Slack");
      });
    }
    case "gotify":
      return notifier(async (report) => {
        const { subject, text } = context.chat(report);
        const body = JSON.stringify({ title: subject, message: text.trim() || subject, priority: target.priority });
        await request(`${target.endpoint}/message`, { method: "POST", headers: { "x-gotify-key": target.token, "content-type": "application/json" }, body, ...insecure(target.skipTlsVerify) }, timeoutMs);
      });
    case "ntfy": {
      const headers: Record<string, string> = {};
      if (target.username) headers.authorization = `Basic ${Buffer.from(`${target.username}:${target.password ?? ""}`).toString("base64")}`;
      else if (target.password) headers.authorization = `Bearer ${target.password}`;
      // shoutrrr's request: the message as the body of a POST to the topic's path, the rest in headers
      const endpoint = `${target.endpoint}/${target.topic.split("/").map(encodeURIComponent).join("/")}`;
      return notifier(async (report) => {
        const { subject, text } = context.chat(report);
        const sent = new Headers([...target.headers, ...Object.entries(headers)]);
        sent.set("content-type", target.markdown ? "text/markdown" : "text/plain; charset=utf-8");
        sent.set("title", headerText(subject));
        await request(endpoint, { method: "POST", headers: sent, body: text.trim() || subject, ...insecure(target.skipTlsVerify) }, timeoutMs);
      });
    }
    case "pushover": {
      const endpoint = `${fixed("pushover")}/1/messages.json`;
      return notifier(async (report) => {
        const { subject, text } = context.render(report);
        const form = pushoverForm({ token: target.token, user_key: target.userKey }, subject, text);
        if (target.devices.length > 0) form.set("device", target.devices.join(","));
        if (target.priority !== undefined) form.set("priority", String(target.priority));
        if (target.encryptionKey) encryptPushoverForm(form, Buffer.from(target.encryptionKey, "hex"));
        await postPushover(endpoint, form, timeoutMs);
      });
    }
    case "smtp":
      return (await import("./email.ts")).createSmtpUrlNotifier(name, target.smtp, context.render, timeoutMs);
    case "teams":
      return notifier(async (report) => {
        await postJson(target.endpoint, teamsCard(context.chat(report)), timeoutMs);
      });
    case "matrix":
      return matrixNotifier(name, target, context);
    case "mattermost":
    case "rocketchat": {
      const icon = target.icon ? (/^https?:\/\//i.test(target.icon) ? { icon_url: target.icon } : { icon_emoji: target.icon }) : {};
      return notifier(async (report) => {
        const { subject, text } = context.chat(report);
        const extra = target.service === "mattermost" ? icon : {};
        await postJson(target.endpoint, { text: `${subject}\n${text}`.trim(), username: target.username, channel: target.channel, ...extra }, timeoutMs);
      });
    }
    case "googlechat":
      return notifier(async (report) => {
        const { subject, text } = context.chat(report);
        await postJson(target.endpoint, { text: `*${subject}*\n${text}`.trim() }, timeoutMs);
      });
    case "pushbullet": {
      const endpoint = `${fixed("pushbullet")}/v2/pushes`;
      const targets = target.targets.length > 0 ? target.targets : [""];
      return notifier(async (report) => {
        const { subject, text } = context.chat(report);
        // one note per target: a #channel tag, an e-mail address or a device (none: all the account's devices)
        for (const to of targets) {
          const address = to.startsWith("#") ? { channel_tag: to.slice(1) } : to.includes("@") ? { email: to } : to ? { device_iden: to } : {};
          const answer = await postJson(endpoint, { type: "note", title: subject, body: text.trim() || subject, ...address }, timeoutMs, { "access-token": target.token });
          // shoutrrr checks the push it gets back is the note it sent
          if (!PUSHBULLET_PUSH.safeParse(answer).success) throw new SvcError("notify", "Pushbullet answered without the note it was sent");
        }
      });
    }
    case "mqtt":
      return (await import("./mqtt.ts")).createMqttNotifier(mqttSettings(target.mqtt), context.hostname, timeoutMs, {
        name,
        payload: (report) => {
          const { subject, text } = context.chat(report);
          return `${subject}\n${text}`.trim();
        },
        retain: target.mqtt.retained,
        clean: target.mqtt.cleanSession,
      });
    case "signal":
      return notifier(async (report) => {
        const { subject, text } = context.chat(report);
        const headers: Record<string, string> = target.authorization ? { authorization: target.authorization } : {};
        await postJson(target.endpoint, { message: `${subject}\n${text}`.trim(), number: target.source, recipients: target.recipients }, timeoutMs, headers);
      });
    case "bark":
      return notifier(async (report) => {
        const { subject, text } = context.chat(report);
        const answer = BARK_ANSWER.safeParse(await postJson(target.endpoint, { body: text.trim() || subject, device_key: target.deviceKey, title: subject, ...target.fields }, timeoutMs));
        // Bark answers 200 with its own code; anything but 200 there is a refusal
        if (!answer.success || answer.data.code !== 200) throw new SvcError("notify", `Bark refused the message${answer.success ? `: ${answer.data.message.slice(0, 200)}` : ""}`);
      });
    case "generic": {
      const contentType = target.contentType ?? (target.body === "text" ? "text/plain" : "application/json");
      const body: BodyRenderer =
        target.body === "template"
          ? await loadBodyRenderer(target.template, contentType, context.hostname, context.titleTag, `notifications.urls (${name} template)`)
          : (report) => genericBody(target, context.chat(report));
      return notifier(async (report) => {
        const headers = new Headers(target.headers);
        headers.set("content-type", contentType);
        if (!headers.has("accept")) headers.set("accept", contentType);
        // fetch sends no body with GET (shoutrrr's Go client does): a GET only says that something happened
        await request(target.endpoint, { method: target.method, headers, ...(target.method === "GET" ? {} : { body: body(report) }) }, timeoutMs);
      });
    }
  }
}

/** An mqtt:// URL as the MQTT channel's settings (the broker's address rebuilt, TLS by its scheme). */
function mqttSettings(target: MqttTarget): MqttSettings {
  const host = target.host.includes(":") ? `[${target.host}]` : target.host;
  return {
    broker: `${target.tls ? "mqtts" : "mqtt"}://${host}:${target.port}`,
    topic: target.topic,
    qos: target.qos,
    client_id: target.clientId,
    username: target.username,
    password: target.password,
    tls_skip_verify: target.tls && target.skipTlsVerify, // any TLS setting turns TLS on in the channel
    homeassistant_discovery: false,
    discovery_prefix: "homeassistant",
    homeassistant_install: false,
    homeassistant_user: "homeassistant",
  };
}

/**
 * One message per chat (the Bot API's sendMessage). A retry goes only to the chats that have not
 * got this report yet, so one refusing chat does not repeat the message in the others.
 */
function telegramNotifier(name: string, target: Extract<NotificationTarget, { service: "telegram" }>, endpoint: string, context: UrlChannelContext): Notifier {
  const delivered = new WeakMap<SessionReport, Set<string>>();
  return {
    name,
    async send(report) {
      const { subject, text } = context.chat(report);
      const done = delivered.get(report) ?? new Set<string>();
      delivered.set(report, done);
      const failures: string[] = [];
      for (const { chat, thread } of target.chats) {
        const key = `${chat}:${thread ?? ""}`;
        if (done.has(key)) continue;
        const body = { chat_id: chat, message_thread_id: thread, text: truncate(`${subject}\n\n${text}`.trim(), TELEGRAM_MAX), disable_notification: target.silent, link_preview_options: { is_disabled: !target.preview } };
        try {
          expectOk(await postJson(endpoint, body, context.timeoutMs), "Telegram");
          done.add(key);
        } catch (error) {
          failures.push(`chat ${chat}: ${(error as Error).message}`);
        }
      }
      if (failures.length > 0) throw new SvcError("notify", failures.join("; "));
    },
  };
}

/**
 * Matrix's client-server API: log in with the password (or use it as the access token when no
 * user is given), join each room (aliases resolve to ids; joining a joined room changes nothing),
 * then send an m.text message. Without rooms: every room the account has joined. The
 * transaction id is the report's, so a retry cannot post the message twice.
 */
function matrixNotifier(name: string, target: Extract<NotificationTarget, { service: "matrix" }>, context: UrlChannelContext): Notifier {
  const api = `${target.endpoint}/_matrix/client/v3`;
  const { timeoutMs } = context;
  return {
    name,
    async send(report) {
      let token = target.password;
      if (target.user) {
        const login = await postJson(`${api}/login`, { type: "m.login.password", identifier: { type: "m.id.user", user: target.user }, password: target.password }, timeoutMs);
        const answer = MATRIX_LOGIN.safeParse(login);
        if (!answer.success) throw new SvcError("notify", "Matrix login answered without an access token");
        token = answer.data.access_token;
      }
      const auth = { authorization: `Bearer ${token}` };
      let rooms: string[] = [];
      if (target.rooms.length === 0) {
        const joined = MATRIX_JOINED.safeParse(await request(`${api}/joined_rooms`, { method: "GET", headers: auth }, timeoutMs));
        rooms = joined.success ? joined.data.joined_rooms : [];
      } else {
        for (const room of target.rooms) {
          const joined = MATRIX_JOIN.safeParse(await postJson(`${api}/join/${encodeURIComponent(room)}`, {}, timeoutMs, auth));
          rooms.push(joined.success ? joined.data.room_id : room);
        }
      }
      const { subject, text } = context.chat(report);
      for (const [index, room] of rooms.entries()) {
        const url = `${api}/rooms/${encodeURIComponent(room)}/send/m.room.message/svc-${report.id}-${index}`;
        await request(url, { method: "PUT", headers: { ...auth, "content-type": "application/json" }, body: JSON.stringify({ msgtype: "m.text", body: `${subject}\n${text}`.trim() }) }, timeoutMs);
      }
    },
  };
}

/**
 * The generic webhook's body as shoutrrr builds it: the message alone, or (`template=json`) an
 * object of the title and message under their keys and the `$name` extra fields.
 */
function genericBody(target: Extract<NotificationTarget, { service: "generic" }>, { subject, text }: RenderedReport): string {
  const message = text.trim() || subject;
  if (target.body !== "json") return message;
  const fields: Record<string, string> = { [target.titleKey]: subject };
  for (const [name, value] of target.extra) fields[name] = value;
  fields[target.messageKey] = message;
  return JSON.stringify(fields);
}

/** A header value may hold only Latin-1: other text goes as an RFC 2047 word, which ntfy decodes. */
function headerText(text: string): string {
  const line = text.replace(/[\r\n]+/g, " ");
  return /^[\x20-\x7e]*$/.test(line) ? line : `=?UTF-8?B?${Buffer.from(line).toString("base64")}?=`;
}

/** An Adaptive Card, what a Teams Workflows webhook ("post to a channel") expects. */
function teamsCard({ subject, text }: RenderedReport): unknown {
  const lines = text.trim() === "" ? [] : [{ type: "TextBlock", text: text.trim(), wrap: true }];
  return {
    type: "message",
    attachments: [
      {
        contentType: "application/vnd.microsoft.card.adaptive",
        content: { $schema: "http://adaptivecards.io/schemas/adaptive-card.json", type: "AdaptiveCard", version: "1.4", body: [{ type: "TextBlock", text: subject, weight: "Bolder", wrap: true }, ...lines] },
      },
    ],
  };
}

/** Slack's mrkdwn: &, < and > are control characters. */
function slackEscape(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

/** The answers read, each parsed with its schema (what else they hold is not looked at). */
const MATRIX_LOGIN = z.object({ access_token: z.string().min(1).max(4096) });
const MATRIX_JOIN = z.object({ room_id: z.string().min(1).max(1024) });
const MATRIX_JOINED = z.object({ joined_rooms: z.array(z.string().max(1024)).max(10_000) });
const PUSHBULLET_PUSH = z.object({ type: z.literal("note") });
const BARK_ANSWER = z.object({ code: z.number(), message: z.string().max(4096).default("") });
/** Telegram's Bot API and Slack's Web API: `ok`, and why not (`description`, `error`). */
const OK_ANSWER = z.object({ ok: z.boolean(), error: z.string().optional(), description: z.string().optional() });

function expectOk(answer: unknown, service: string): void {
  const parsed = OK_ANSWER.safeParse(answer);
  if (parsed.success && parsed.data.ok) return;
  const reason = parsed.success ? (parsed.data.error ?? parsed.data.description) : undefined;
  throw new SvcError("notify", `${service} refused the message${reason ? `: ${reason.slice(0, 200)}` : ""}`);
}

/** shoutrrr's `insecureskipverify`/`disabletlsverification`: any server certificate is accepted. */
function insecure(skip: boolean): RequestInit {
  return skip ? ({ tls: { rejectUnauthorized: false } } as RequestInit) : {};
}

function postJson(url: string, body: unknown, timeoutMs: number, headers: Record<string, string> = {}): Promise<unknown> {
  return request(url, { method: "POST", headers: { ...headers, "content-type": "application/json" }, body: JSON.stringify(body) }, timeoutMs);
}

/** Sends one request; a status outside 200-299 is a failure. Answers with the JSON body, or null. */
async function request(url: string, init: RequestInit, timeoutMs: number): Promise<unknown> {
  const response = await fetch(url, { ...init, signal: AbortSignal.timeout(timeoutMs), redirect: "manual" });
  const text = await readCapped(response, ANSWER_MAX_BYTES).catch(() => "");
  if (response.status < 200 || response.status > 299) throw new SvcError("notify", `HTTP status ${response.status}`);
  try {
    return text.length > 0 ? JSON.parse(text) : null;
  } catch {
    return null;
  }
}

/** An answer is read only for its "ok", ids and error fields: more than this is not one of those. */
const ANSWER_MAX_BYTES = 64 * 1024;

async function readCapped(response: Response, max: number): Promise<string> {
  const { bytes, overCap } = await readBounded(response, max);
  return overCap ? "" : Buffer.from(bytes).toString("utf8");
}
