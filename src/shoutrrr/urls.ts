/**
 * Notification URLs (`notifications.urls`): the shoutrrr forms Watchtower users already have
 * (`discord://token@id`, `telegram://token@telegram?chats=...`, ...), each parsed into a target
 * svc delivers itself (the notify room). Pure: no I/O, nothing from the config room, so the
 * schema validates every URL at load with this same parser and a URL that cannot be used stops
 * svc before anything runs, with the part that is wrong named (never the secret in it).
 *
 * Each target knows its secret parts (tokens, passwords, user keys): `notificationUrlSecrets`
 * is the one function that derives them, for the redactor of every output, and
 * `redactNotificationUrl` masks them (with the log room's redactor) in a URL shown to the user
 * (--print-config).
 * docs/notifications.md lists every form.
 */
import { REDACTED } from "../log/redact.ts";
import { CREDENTIAL_NAME, escapings, maskUrl } from "./mask.ts";

export type UrlService =
  | "discord"
  | "telegram"
  | "slack"
  | "gotify"
  | "ntfy"
  | "pushover"
  | "smtp"
  | "teams"
  | "matrix"
  | "generic"
  | "mattermost"
  | "rocketchat"
  | "googlechat"
  | "hangouts"
  | "pushbullet"
  | "bark"
  | "mqtt"
  | "mqtts"
  | "signal";

interface TargetBase {
  /** the secret parts of the URL, as written and decoded */
  secrets: string[];
}

export type NotificationTarget = TargetBase &
  (
    | { service: "discord"; webhookId: string; token: string; username?: string; avatarUrl?: string; threadId?: string }
    | { service: "telegram"; token: string; chats: TelegramChat[]; silent: boolean; preview: boolean }
    | { service: "slack"; webhookPath?: string; botToken?: string; channel?: string; botname?: string; icon?: string; threadTs?: string }
    | { service: "gotify"; endpoint: string; token: string; priority: number; skipTlsVerify: boolean }
    | { service: "ntfy"; endpoint: string; topic: string; username?: string; password?: string; markdown: boolean; headers: Array<[string, string]>; skipTlsVerify: boolean }
    | { service: "pushover"; token: string; userKey: string; devices: string[]; priority?: number }
    | { service: "smtp"; smtp: SmtpTarget }
    | { service: "teams"; endpoint: string }
    | { service: "matrix"; endpoint: string; user?: string; password: string; rooms: string[] }
    | { service: "mattermost" | "rocketchat"; endpoint: string; username?: string; channel?: string; icon?: string }
    | { service: "googlechat"; endpoint: string }
    | { service: "pushbullet"; token: string; targets: string[] }
    | { service: "mqtt"; mqtt: MqttTarget }
    | { service: "signal"; endpoint: string; source: string; recipients: string[]; authorization?: string }
    | { service: "bark"; endpoint: string; deviceKey: string; fields: Record<string, string | number> }
    | ({ service: "generic"; endpoint: string; method: string; contentType?: string; headers: Array<[string, string]> } & GenericBody)
  );

/** An MQTT broker and topic (the fork's `mqtt://` and `mqtts://`), published to by svc's MQTT channel. */
export interface MqttTarget {
  tls: boolean;
  host: string;
  port: number;
  topic: string;
  username?: string;
  password?: string;
  clientId?: string;
  qos: 0 | 1 | 2;
  retained: boolean;
  cleanSession: boolean;
  skipTlsVerify: boolean;
}

/** A Telegram chat (`@channel` or an id) and, after `:`, the topic (message thread) in it. */
export interface TelegramChat {
  chat: string;
  thread?: number;
}

/**
 * What a generic webhook is sent: the message text (no template), shoutrrr's JSON object
 * (`template=json`: the title and message under their keys, and the `$name` extra fields), or a
 * mustache file of svc's (any other template).
 */
export type GenericBody =
  | { body: "text" }
  | { body: "json"; titleKey: string; messageKey: string; extra: Array<[string, string]> }
  | { body: "template"; template: string };

export interface SmtpTarget {
  host: string;
  port: number;
  username?: string;
  password?: string;
  from: string;
  fromName?: string;
  to: string[];
  /** shoutrrr's `auth`: none, plain, login, crammd5 (default plain when a user is given) */
  auth: "none" | "plain" | "login" | "crammd5";
  /** shoutrrr's `encryption`: auto (465 implicit TLS, else STARTTLS when offered), none, explicittls (STARTTLS required), implicittls */
  encryption: "auto" | "none" | "explicittls" | "implicittls";
  useStartTls: boolean;
  /** shoutrrr v0.17's `requirestarttls`: fail when the server does not offer STARTTLS */
  requireStartTls: boolean;
  /** the name svc gives itself in EHLO (`clienthost`) */
  clientHost?: string;
  subject?: string;
  skipTlsVerify: boolean;
}

/** Why a URL cannot be used: names the part, never echoes a value (it may be a secret). */
class UrlProblem extends Error {}

const fail = (message: string): never => {
  throw new UrlProblem(message);
};

/** The services' forms, shown when a URL does not fit its own. */
export const URL_FORMS: Readonly<Record<UrlService, string>> = {
  discord: "discord://token@webhookid",
  telegram: "telegram://token@telegram?chats=@channel,12345",
  slack: "slack://hook:T000-B000-XXXX@webhook or slack://xoxb:token@channel",
  gotify: "gotify://host[:port][/path]/token",
  ntfy: "ntfy://[user:pass@]host[:port]/topic",
  pushover: "pushover://shoutrrr:token@userkey/?devices=phone",
  smtp: "smtp://[user:pass@]host[:port]/?from=svc@example.com&to=a@example.com,b@example.com",
  teams: "teams+https://<Workflows webhook URL> or teams://<host>/<path>?<query>",
  matrix: "matrix://user:pass@host[:port]/?rooms=!room:host,#alias:host",
  generic: "generic://host[:port]/path or generic+https://host/path",
  mattermost: "mattermost://[username@]host[:port]/token[/channel]",
  rocketchat: "rocketchat://[username@]host[:port]/tokenA/tokenB[/channel]",
  googlechat: "googlechat://chat.googleapis.com/v1/spaces/SPACE/messages?key=KEY&token=TOKEN",
  hangouts: "hangouts://chat.googleapis.com/v1/spaces/SPACE/messages?key=KEY&token=TOKEN",
  pushbullet: "pushbullet://token[/device][/#channel][/email]",
  bark: "bark://:devicekey@host[:port][/path]",
  mqtt: "mqtt://[user:pass@]host[:port]/topic",
  mqtts: "mqtts://[user:pass@]host[:port]/topic",
  signal: "signal://[user:pass@]host[:port]/+source/+recipient[/group.id]",
};

/** Query parameters of shoutrrr's that svc accepts without needing them (looks are svc's own). */
const IGNORED: Readonly<Record<UrlService, readonly string[]>> = {
  discord: ["color", "colordebug", "colorerror", "colorinfo", "colorwarn", "json", "splitlines", "title"],
  telegram: ["parsemode", "title"],
  slack: ["color", "title"],
  gotify: ["title", "useheader", "date"],
  ntfy: ["title"],
  pushover: ["title"],
  smtp: ["usehtml", "timeout"],
  teams: ["color", "title"],
  matrix: ["title"],
  generic: ["title", "titlekey", "messagekey"],
  mattermost: ["title"],
  rocketchat: ["title"],
  googlechat: [],
  hangouts: [],
  pushbullet: ["title"],
  bark: ["title"],
  mqtt: ["title"],
  mqtts: ["title"],
  signal: ["title"],
};

/** Parses one URL; `{ problem }` names the wrong part (shown with the option and entry by the caller). */
export function parseNotificationUrl(text: string): NotificationTarget | { problem: string } {
  try {
    return parseOrThrow(text.trim());
  } catch (error) {
    if (error instanceof UrlProblem) return { problem: error.message };
    throw error;
  }
}

/** Every secret part of these URLs (URLs that do not parse contribute their whole text). */
export function notificationUrlSecrets(urls: readonly string[]): string[] {
  return urls.flatMap((url) => {
    const parsed = parseNotificationUrl(url);
    return "problem" in parsed ? [url] : [...new Set(parsed.secrets.filter(Boolean).flatMap(escapings))];
  });
}

/** The URL with its secret parts masked, for showing it (a URL that does not parse is masked whole). */
export function redactNotificationUrl(url: string): string {
  const parsed = parseNotificationUrl(url);
  return "problem" in parsed ? REDACTED : maskUrl(url, parsed.secrets);
}

/** The service a URL names (its scheme, without `+https`), for channel names in logs. */
export function serviceOf(text: string): string {
  return /^([a-z]+)/i.exec(text.trim())?.[1]?.toLowerCase() ?? "url";
}

function parseOrThrow(text: string): NotificationTarget {
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(text)?.[1]?.toLowerCase();
  if (!scheme) return fail(`is not a URL (expected service://..., e.g. ${URL_FORMS.discord})`);
  const [service, wrapped] = scheme.split("+", 2) as [string, string | undefined];
  if (!Object.hasOwn(URL_FORMS, service)) return fail(`${service}://: not a service svc knows (${Object.keys(URL_FORMS).join(", ")})`);
  const name = service as UrlService;
  if (wrapped !== undefined) {
    if ((name !== "generic" && name !== "teams") || (wrapped !== "http" && wrapped !== "https")) {
      return fail(`${scheme}://: only generic+http(s):// and teams+http(s):// wrap a URL`);
    }
    return name === "generic" ? wrappedGeneric(text, wrapped) : wrappedTeams(text, wrapped);
  }
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return fail(`${name}://: the URL does not parse (form: ${URL_FORMS[name]})`);
  }
  const params = new Params(name, url);
  const target = PARSERS[name](url, params);
  params.rejectUnknown();
  return target;
}

/** Query parameters, keys case-insensitive as in shoutrrr; each one read is marked as known. */
class Params {
  private readonly values = new Map<string, string>();
  private readonly read = new Set<string>();
  constructor(
    private readonly service: UrlService,
    url: URL,
  ) {
    for (const [key, value] of url.searchParams) this.values.set(key.toLowerCase(), value);
    for (const key of IGNORED[service]) this.read.add(key);
  }

  get(...names: string[]): string | undefined {
    for (const name of names) {
      this.read.add(name);
      if (this.values.has(name)) return this.values.get(name);
    }
    return undefined;
  }

  list(...names: string[]): string[] {
    return (this.get(...names) ?? "")
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean);
  }

  flag(name: string, fallback: boolean): boolean {
    const value = this.get(name);
    if (value === undefined) return fallback;
    if (/^(yes|y|true|1|on)$/i.test(value)) return true;
    if (/^(no|n|false|0|off)$/i.test(value)) return false;
    return fail(`${this.service}://: parameter ${name} must be yes or no`);
  }

  integer(name: string, min: number, max: number): number | undefined {
    const value = this.get(name);
    if (value === undefined) return undefined;
    const n = Number(value);
    if (!Number.isInteger(n) || n < min || n > max) return fail(`${this.service}://: parameter ${name} must be an integer from ${min} to ${max}`);
    return n;
  }

  /** Every parameter name given (lower case). */
  keys(): string[] {
    return [...this.values.keys()];
  }

  rejectUnknown(): void {
    const unknown = this.keys().filter((key) => !this.read.has(key));
    if (unknown.length > 0) fail(`${this.service}://: unknown parameter${unknown.length > 1 ? "s" : ""} ${unknown.join(", ")} (form: ${URL_FORMS[this.service]})`);
  }
}

function decode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** A secret as written in the URL and as decoded: logs may show either. */
function both(...values: Array<string | undefined>): string[] {
  return values.flatMap((v) => (v ? [v, decode(v)] : []));
}

/** Path segments, decoded, without empty ones. */
function segments(url: URL): string[] {
  return url.pathname.split("/").filter(Boolean).map(decode);
}

function hostPort(url: URL): string {
  return url.port ? `${url.hostname}:${url.port}` : url.hostname;
}

function requireHost(service: UrlService, url: URL): void {
  if (!url.hostname) fail(`${service}://: the host is missing (form: ${URL_FORMS[service]})`);
}

/** `https://host[:port]` unless `disabletls=yes`. */
function origin(url: URL, params: Params, option = "disabletls"): string {
  return `${params.flag(option, false) ? "http" : "https"}://${hostPort(url)}`;
}

/** Path segments and query values that look like tokens (long with a digit, or very long), as the webhook's derivation does. */
function tokenLike(parts: readonly string[]): string[] {
  return parts.filter((part) => (part.length >= 8 && /\d/.test(part)) || part.length >= 16);
}

type Parser = (url: URL, params: Params) => NotificationTarget;

const PARSERS: Record<UrlService, Parser> = {
  discord(url, params) {
    const token = decode(url.username);
    const webhookId = url.hostname;
    if (!token) fail(`discord://: the webhook token is missing before @ (form: ${URL_FORMS.discord})`);
    if (!webhookId) fail(`discord://: the webhook id after @ is missing (form: ${URL_FORMS.discord})`);
    // shoutrrr: `/raw` sends the message as the JSON payload itself; svc always sends its summary as content
    if (!["", "/", "/raw"].includes(url.pathname)) fail(`discord://: the path may only be /raw (form: ${URL_FORMS.discord})`);
    const username = params.get("username");
    const avatarUrl = params.get("avatar", "avatarurl");
    const threadId = params.get("thread_id")?.trim();
    return {
      service: "discord",
      webhookId,
      token,
      secrets: both(url.username),
      ...(username ? { username } : {}),
      ...(avatarUrl ? { avatarUrl } : {}),
      ...(threadId ? { threadId } : {}),
    };
  },

  telegram(url, params) {
    if (!url.username || !url.password) fail(`telegram://: the bot token (123456:ABC...) is missing before @ (form: ${URL_FORMS.telegram})`);
    const token = `${decode(url.username)}:${decode(url.password)}`;
    const chats = params.list("chats", "channels").map(telegramChat);
    if (chats.length === 0) fail(`telegram://: parameter chats is missing (form: ${URL_FORMS.telegram})`);
    return {
      service: "telegram",
      token,
      chats,
      silent: !params.flag("notification", true),
      preview: params.flag("preview", true),
      secrets: [token, ...both(url.password), `${url.username}:${url.password}`],
    };
  },

  slack(url, params) {
    const kind = decode(url.username);
    const token = decode(url.password);
    const threadTs = params.get("thread_ts");
    const common = { botname: params.get("botname", "username"), icon: params.get("icon", "icon_emoji", "icon_url"), ...(threadTs ? { threadTs } : {}) };
    if (kind === "hook") {
      const parts = token.split(/[-/]/).filter(Boolean);
      if (parts.length !== 3) fail("slack://: the webhook token after hook: must be three parts, T000-B000-XXXX (from https://hooks.slack.com/services/T000/B000/XXXX)");
      const channel = params.get("channel");
      return { service: "slack", webhookPath: parts.join("/"), ...common, ...(channel ? { channel } : {}), secrets: [...both(url.password), parts.join("/"), parts[2]!] };
    }
    if (kind === "xoxb" || kind === "xoxp") {
      if (!token) fail("slack://: the bot token after xoxb: is missing");
      const channel = url.hostname;
      if (!channel) fail("slack://: the channel (after @) is missing");
      const botToken = `${kind}-${token}`;
      return { service: "slack", botToken, channel, ...common, secrets: [botToken, ...both(url.password)] };
    }
    // shoutrrr's first form, still in older Watchtower setups: slack://[botname@]T000/B000/XXXX
    const legacy = [url.hostname, ...segments(url)];
    if (!url.password && legacy.length === 3 && legacy.every(Boolean)) {
      const botname = common.botname ?? (url.username ? decode(url.username) : undefined);
      return { service: "slack", webhookPath: legacy.join("/"), ...common, botname, secrets: [legacy.join("/"), legacy[2]!] };
    }
    return fail(`slack://: the token must start with hook: (webhook) or xoxb: (bot) (form: ${URL_FORMS.slack})`);
  },

  gotify(url, params) {
    requireHost("gotify", url);
    const parts = segments(url);
    const token = parts.pop();
    if (!token) fail(`gotify://: the application token (last path segment) is missing (form: ${URL_FORMS.gotify})`);
    // shoutrrr's default priority is 0 (Gotify's clients show it without a sound)
    const priority = params.integer("priority", -2, 10) ?? 0;
    const skipTlsVerify = params.flag("insecureskipverify", false);
    const endpoint = `${origin(url, params)}${parts.map((p) => `/${encodeURIComponent(p)}`).join("")}`;
    return { service: "gotify", endpoint, token: token!, priority, skipTlsVerify, secrets: both(token) };
  },

  ntfy(url, params) {
    requireHost("ntfy", url);
    // shoutrrr publishes to the whole path (`ntfy://host/a/b` is topic `a/b`)
    const topic = segments(url).join("/");
    if (!topic) fail(`ntfy://: the topic (the path) is missing (form: ${URL_FORMS.ntfy})`);
    let scheme = (params.get("scheme") ?? "https").toLowerCase();
    if (scheme !== "http" && scheme !== "https") fail("ntfy://: parameter scheme must be http or https");
    if (params.flag("disabletls", false)) scheme = "http";
    const skipTlsVerify = params.flag("disabletlsverification", false);
    const target: NotificationTarget = { service: "ntfy", endpoint: `${scheme}://${hostPort(url)}`, topic, markdown: params.flag("markdown", false), headers: ntfyHeaders(params), skipTlsVerify, secrets: both(url.password) };
    if (url.username) target.username = decode(url.username);
    if (url.password) target.password = decode(url.password);
    return target;
  },

  pushover(url, params) {
    const token = decode(url.password);
    const userKey = decode(url.hostname);
    if (!token) fail(`pushover://: the application token (after shoutrrr:) is missing (form: ${URL_FORMS.pushover})`);
    if (!userKey) fail(`pushover://: the user key (after @) is missing (form: ${URL_FORMS.pushover})`);
    const priority = params.integer("priority", -2, 2);
    return { service: "pushover", token, userKey, devices: params.list("devices"), ...(priority !== undefined ? { priority } : {}), secrets: [...both(url.password), userKey] };
  },

  smtp(url, params) {
    requireHost("smtp", url);
    // A query decodes `+` to a space; shoutrrr puts it back (sender+tag@example.com), as does svc.
    const from = params.get("from", "fromaddress")?.replaceAll(" ", "+");
    const to = params.list("to", "toaddresses").map((address) => address.replaceAll(" ", "+"));
    if (!from) fail(`smtp://: parameter from is missing (form: ${URL_FORMS.smtp})`);
    if (to.length === 0) fail(`smtp://: parameter to is missing (form: ${URL_FORMS.smtp})`);
    const auth = oneOf(params.get("auth") ?? (url.username ? "plain" : "none"), "auth", ["none", "plain", "login", "crammd5"], { unknown: "plain", oauth2: "" });
    const encryption = oneOf(params.get("encryption") ?? "auto", "encryption", ["auto", "none", "explicittls", "implicittls"], {});
    const smtp: SmtpTarget = {
      host: url.hostname.replace(/^\[(.*)\]$/, "$1"),
      port: url.port ? Number(url.port) : 25,
      from: from!,
      to,
      auth: auth as SmtpTarget["auth"],
      encryption: encryption as SmtpTarget["encryption"],
      useStartTls: params.flag("usestarttls", true) && params.flag("starttls", true),
      requireStartTls: params.flag("requirestarttls", false),
      skipTlsVerify: params.flag("skiptlsverify", false),
    };
    if (url.username) smtp.username = decode(url.username);
    if (url.password) smtp.password = decode(url.password);
    const fromName = params.get("fromname");
    const subject = params.get("subject", "title");
    const clientHost = params.get("clienthost");
    if (clientHost) smtp.clientHost = clientHost;
    if (fromName) smtp.fromName = fromName;
    if (subject) smtp.subject = subject;
    return { service: "smtp", smtp, secrets: both(url.password) };
  },

  teams(url, params) {
    const host = params.get("host");
    params.get("title", "color");
    if (!url.hostname && !url.username && host) return workflowTeams(host);
    requireHost("teams", url);
    if (url.username) return connectorTeams(url, host);
    // The Workflows webhook with https:// replaced by teams://: every part of it is kept, its
    // query (api-version, sp, sv, sig) included.
    for (const key of params.keys()) params.get(key);
    const endpoint = new URL(`https://${hostPort(url)}${url.pathname}${url.search}`);
    return { service: "teams", endpoint: endpoint.toString(), secrets: teamsSecrets(endpoint) };
  },

  matrix(url, params) {
    requireHost("matrix", url);
    const password = decode(url.password);
    if (!password) fail(`matrix://: the password (or access token) is missing (form: ${URL_FORMS.matrix})`);
    const user = url.username ? decode(url.username) : undefined;
    return { service: "matrix", endpoint: origin(url, params), password, ...(user ? { user } : {}), rooms: params.list("rooms", "room").map(matrixRoom), secrets: both(url.password) };
  },

  mattermost(url, params) {
    requireHost("mattermost", url);
    const [token, channel, ...rest] = segments(url);
    if (!token || rest.length > 0) fail(`mattermost://: the path must be the webhook token, then the channel if any (form: ${URL_FORMS.mattermost})`);
    const icon = params.get("icon", "icon_emoji", "icon_url");
    const endpoint = `${origin(url, params)}/hooks/${encodeURIComponent(token!)}`;
    return { service: "mattermost", endpoint, ...optional({ username: decode(url.username), channel, icon }), secrets: both(token) };
  },

  rocketchat(url) {
    requireHost("rocketchat", url);
    const parts = url.pathname.split("/").slice(1).map(decode);
    const [tokenA, tokenB, channel] = parts;
    if (!tokenA || !tokenB) fail(`rocketchat://: the path must be tokenA/tokenB, then the channel if any (form: ${URL_FORMS.rocketchat})`);
    // shoutrrr: a channel without @ is a #channel (written as a fragment, or bare)
    const named = url.hash ? `#${decode(url.hash.slice(1))}` : channel ? (channel.startsWith("@") || channel.startsWith("#") ? channel : `#${channel}`) : undefined;
    const endpoint = `https://${hostPort(url)}/hooks/${encodeURIComponent(tokenA!)}/${encodeURIComponent(tokenB!)}`;
    return { service: "rocketchat", endpoint, ...optional({ username: decode(url.username), channel: named }), secrets: [...both(tokenA, tokenB), `${tokenA}/${tokenB}`] };
  },

  googlechat: googleChat,
  hangouts: googleChat,

  pushbullet(url) {
    const token = decode(url.hostname);
    if (token.length !== 34) fail(`pushbullet://: the access token (the host) must be 34 characters (form: ${URL_FORMS.pushbullet})`);
    const targets = segments(url);
    if (url.hash.length > 1) targets.push(`#${decode(url.hash.slice(1))}`);
    return { service: "pushbullet", token, targets, secrets: both(token) };
  },

  bark(url, params) {
    requireHost("bark", url);
    const deviceKey = decode(url.password);
    if (!deviceKey) fail(`bark://: the device key (after :) is missing (form: ${URL_FORMS.bark})`);
    let scheme = (params.get("scheme") ?? "https").toLowerCase();
    if (scheme !== "http" && scheme !== "https") fail("bark://: parameter scheme must be http or https");
    if (params.flag("disabletls", false)) scheme = "http";
    const path = url.pathname.replace(/\/+$/, "");
    const fields: Record<string, string | number> = {};
    for (const name of ["sound", "icon", "group", "url", "category", "copy"]) {
      const value = params.get(name);
      if (value) fields[name] = value;
    }
    const badge = params.integer("badge", 0, 1_000_000);
    if (badge) fields.badge = badge;
    return { service: "bark", endpoint: `${scheme}://${hostPort(url)}${path}/push`, deviceKey, fields, secrets: both(url.password) };
  },

  signal(url, params) {
    requireHost("signal", url);
    const [source, ...rest] = url.pathname.split("/").filter(Boolean).map(decode);
    if (!source || rest.length === 0) fail(`signal://: the path must be the source number, then the recipients (form: ${URL_FORMS.signal})`);
    if (!SIGNAL_PHONE.test(source!)) fail("signal://: the source must be a phone number (+country code)");
    const recipients = signalRecipients(rest);
    const token = params.get("token", "apikey");
    const user = decode(url.username);
    const password = decode(url.password);
    const authorization = token ? `Bearer ${token}` : user ? `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}` : undefined;
    // shoutrrr's signal-cli-rest-api answers on 8080 by default, over https unless disabletls
    const endpoint = `${origin(url, params)}${url.port ? "" : ":8080"}/v2/send`;
    const secrets = [...both(url.password, token), ...(authorization && !token ? [authorization.slice(6)] : [])];
    return { service: "signal", endpoint, source: source!, recipients, ...(authorization ? { authorization } : {}), secrets };
  },

  mqtt: mqttTarget,
  mqtts: mqttTarget,

  generic(url, params) {
    requireHost("generic", url);
    const target = genericTarget(url, params, origin(url, params));
    return target;
  },
};

/** `123` -> chat 123; `-100123:10` -> chat -100123, topic 10 (shoutrrr's chat:thread). */
function telegramChat(text: string): TelegramChat {
  const colon = text.indexOf(":");
  if (colon < 0) return { chat: text };
  const thread = text.slice(colon + 1);
  // shoutrrr sends a non-numeric thread nowhere; the chat before the colon is used alone
  return /^\d+$/.test(thread) ? { chat: text.slice(0, colon), thread: Number(thread) } : { chat: text.slice(0, colon) };
}

/** shoutrrr's rooms: a name without `#` or `!` is an alias (`room1` -> `#room1`). */
function matrixRoom(room: string): string {
  return room.startsWith("#") || room.startsWith("!") ? room : `#${room}`;
}

const SIGNAL_PHONE = /^\+?[0-9\s)(+-]+$/;
const SIGNAL_GROUP = /^group\.[a-zA-Z0-9_+/=-]+$/;

/** Phone numbers and group ids (a group id may hold `/`, so its later segments are joined back). */
function signalRecipients(parts: readonly string[]): string[] {
  const recipients: string[] = [];
  let group: string | undefined;
  for (const part of parts) {
    if (part.startsWith("group.")) {
      if (group) recipients.push(group);
      group = part;
    } else if (group !== undefined && !part.startsWith("+")) {
      group += `/${part}`;
    } else {
      if (group) recipients.push(group);
      group = undefined;
      recipients.push(part);
    }
  }
  if (group) recipients.push(group);
  for (const recipient of recipients) {
    if (!SIGNAL_PHONE.test(recipient) && !SIGNAL_GROUP.test(recipient)) fail("signal://: each recipient must be a phone number (+country code) or a group.id");
  }
  return recipients;
}

/** The fork's MQTT service: TLS for mqtts:// unless `disabletls`; ports 1883 and 8883 by default. */
function mqttTarget(url: URL, params: Params): NotificationTarget {
  const tls = url.protocol === "mqtts:" && !params.flag("disabletls", false);
  const topic = decode(url.pathname.replace(/^\//, ""));
  if (!topic) fail(`mqtt://: the topic (the path) is missing (form: ${URL_FORMS.mqtt})`);
  if (/[#+]/.test(topic)) fail("mqtt://: the topic must not hold the wildcards # or +");
  const qos = mqttQos(params.get("qos"));
  const mqtt: MqttTarget = {
    tls,
    host: (url.hostname || "localhost").replace(/^\[(.*)\]$/, "$1"),
    port: url.port ? Number(url.port) : url.protocol === "mqtts:" ? 8883 : 1883,
    topic,
    qos: qos as 0 | 1 | 2,
    retained: params.flag("retained", false),
    cleanSession: params.flag("cleansession", true),
    skipTlsVerify: params.flag("disabletlsverification", false),
    ...optional({ username: decode(url.username), password: decode(url.password), clientId: params.get("clientid") }),
  };
  return { service: "mqtt", mqtt, secrets: both(url.password) };
}

/** shoutrrr's QoS enum: 0-2, or AtMostOnce, AtLeastOnce, ExactlyOnce. */
function mqttQos(value: string | undefined): 0 | 1 | 2 {
  if (value === undefined) return 0;
  const names: Record<string, 0 | 1 | 2> = { "0": 0, "1": 1, "2": 2, atmostonce: 0, atleastonce: 1, exactlyonce: 2 };
  const qos = names[value.toLowerCase()];
  return qos ?? fail("mqtt://: parameter qos must be 0, 1, 2, AtMostOnce, AtLeastOnce or ExactlyOnce");
}

/** Google Chat's incoming webhook, as written in the space's settings with https:// replaced. */
function googleChat(url: URL, params: Params): NotificationTarget {
  requireHost("googlechat", url);
  const key = params.get("key");
  const token = params.get("token");
  if (!key || !token) fail(`googlechat://: parameters key and token are missing (form: ${URL_FORMS.googlechat})`);
  const query = new URLSearchParams({ key: key!, token: token! });
  return { service: "googlechat", endpoint: `https://${hostPort(url)}${url.pathname}?${query}`, secrets: both(key, token) };
}

/** The fields of `values` that are given (not empty). */
function optional<T extends Record<string, string | undefined>>(values: T): Partial<T> {
  return Object.fromEntries(Object.entries(values).filter(([, v]) => v !== undefined && v !== "")) as Partial<T>;
}

function oneOf(value: string, name: string, allowed: readonly string[], aliases: Record<string, string>): string {
  const lower = value.toLowerCase();
  const mapped = Object.hasOwn(aliases, lower) ? aliases[lower]! : lower;
  if (!allowed.includes(mapped)) fail(`smtp://: parameter ${name} must be one of ${allowed.join(", ")}`);
  return mapped;
}

/** ntfy's publishing headers, as shoutrrr sets them (only those given; cache and firebase when off). */
function ntfyHeaders(params: Params): Array<[string, string]> {
  const headers: Array<[string, string]> = [];
  const add = (name: string, value: string | undefined) => value && headers.push([name, value]);
  const priority = parseNtfyPriority(params.get("priority"));
  add("Priority", priority === undefined ? undefined : String(priority));
  add("Tags", params.list("tags").join(","));
  add("Delay", params.get("delay", "at", "in"));
  add("Actions", params.get("actions"));
  add("Click", params.get("click"));
  add("Attach", params.get("attach"));
  add("X-Icon", params.get("icon"));
  add("Filename", params.get("filename"));
  add("Email", params.get("email"));
  if (!params.flag("cache", true)) headers.push(["Cache", "no"]);
  if (!params.flag("firebase", true)) headers.push(["Firebase", "no"]);
  return headers;
}

function parseNtfyPriority(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const names: Record<string, number> = { min: 1, low: 2, default: 3, high: 4, max: 5, urgent: 5 };
  const n = Object.hasOwn(names, value.toLowerCase()) ? names[value.toLowerCase()]! : Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 5) fail("ntfy://: parameter priority must be 1-5 or min, low, default, high, max");
  return n;
}

/** The Workflows URL carries its credential in the `sig` query value (and ids in its path). */
function teamsSecrets(endpoint: URL): string[] {
  const sig = endpoint.searchParams.get("sig") ?? undefined;
  return [...both(sig), ...tokenLike([...segments(endpoint), ...endpoint.searchParams.values()])];
}

/**
 * shoutrrr v0.8's connector form (Office 365 connectors, retired by Microsoft but still in
 * Watchtower setups): `teams://group@tenant/altId/groupOwner[/extraId]`, or the older
 * `teams://group%40tenant:altId@groupOwner`; posted to outlook.office.com/webhook/... unless
 * `host=` names the organisation's webhook host (then /webhookb2/...).
 */
function connectorTeams(url: URL, host = "outlook.office.com"): NotificationTarget {
  let group: string;
  let tenant: string;
  let rest: string[];
  if (url.password) {
    [group = "", tenant = ""] = decode(url.username).split("@");
    rest = [decode(url.password), url.hostname];
  } else {
    [group, tenant, rest] = [decode(url.username), url.hostname, segments(url)];
  }
  if (!group || !tenant || rest.length < 2) fail("teams://: the connector form is group@tenant/altId/groupOwner (or use the Workflows webhook URL)");
  const path = host === "outlook.office.com" ? "webhook" : "webhookb2";
  const endpoint = `https://${host}/${path}/${group}@${tenant}/IncomingWebhook/${rest.join("/")}`;
  return { service: "teams", endpoint, secrets: [group, tenant, ...rest] };
}

/** The maintained fork's form: `teams://?host=<the Workflows URL, query-encoded>`. */
function workflowTeams(host: string): NotificationTarget {
  let endpoint: URL;
  try {
    endpoint = new URL(host);
  } catch {
    return fail("teams://: parameter host must be the Workflows webhook URL (https://...), query-encoded");
  }
  if (endpoint.protocol !== "https:" && endpoint.protocol !== "http:") fail("teams://: parameter host must be an http(s) URL");
  return { service: "teams", endpoint: endpoint.toString(), secrets: teamsSecrets(endpoint) };
}

function wrappedTeams(text: string, scheme: string): NotificationTarget {
  const url = parseWrapped(text, scheme, "teams");
  return { service: "teams", endpoint: url.toString(), secrets: teamsSecrets(url) };
}

function parseWrapped(text: string, scheme: string, service: UrlService): URL {
  try {
    const url = new URL(`${scheme}://${text.slice(text.indexOf("://") + 3)}`);
    if (!url.hostname) throw new Error("no host");
    return url;
  } catch {
    return fail(`${service}+${scheme}://: the wrapped URL does not parse`);
  }
}

/**
 * shoutrrr's generic service, `generic://host/path` (https unless `disabletls`) and
 * `generic+http(s)://host/path` alike: `@Name=value` parameters are request headers, `$name=value`
 * extra fields of the JSON body, `method`, `contenttype`, `template`, `title`, `titlekey`,
 * `messagekey` and `disabletls` its own; every other parameter goes on to the target URL (`_name`
 * for a name of its own). `template=json` is shoutrrr's JSON object; another template names a
 * mustache file of svc's.
 */
function genericTarget(url: URL, params: Params, base: string): NotificationTarget {
  const headers: Array<[string, string]> = [];
  const extra: Array<[string, string]> = [];
  const forwarded = new URLSearchParams();
  for (const [rawKey, value] of url.searchParams) {
    const key = rawKey.toLowerCase();
    if (rawKey.startsWith("@")) {
      params.get(key);
      headers.push([headerName(rawKey.slice(1)), value]);
    } else if (rawKey.startsWith("$")) {
      params.get(key);
      extra.push([rawKey.slice(1), value]);
    } else if (!GENERIC_OWN.includes(key)) {
      params.get(key);
      forwarded.append(rawKey.startsWith("_") ? rawKey.slice(1) : rawKey, value);
    }
  }
  const method = (params.get("method") ?? "POST").toUpperCase();
  if (!["POST", "PUT", "PATCH", "GET", "DELETE"].includes(method)) fail("generic://: parameter method must be POST, PUT, PATCH, GET or DELETE");
  const contentType = params.get("contenttype");
  const query = forwarded.toString();
  const endpoint = `${base}${url.pathname === "/" ? "" : url.pathname}${query ? `?${query}` : ""}`;
  const named = [...extra, ...forwarded].filter(([name]) => CREDENTIAL_NAME.test(name)).map(([, v]) => v);
  const secrets = [...both(url.password), ...headers.filter(([name, v]) => CREDENTIAL_NAME.test(name) || tokenLike([v]).length > 0).flatMap(([, v]) => [v, ...credentialOf(v)]), ...both(...named), ...tokenLike([...segments(url), ...forwarded.values()])];
  basicAuth(url, headers, secrets);
  return { service: "generic", endpoint, method, headers, ...(contentType ? { contentType } : {}), ...genericBody(params, extra), secrets };
}

/** The generic service's own parameters (everything else goes on to the target URL). */
const GENERIC_OWN = ["method", "contenttype", "template", "disabletls", "title", "titlekey", "messagekey"];


/** `Bearer abc` -> `abc`: the credential of a header value that starts with a scheme. */
function credentialOf(value: string): string[] {
  const match = /^[A-Za-z][A-Za-z0-9._-]{0,31}\s+(\S.*)$/.exec(value);
  return match ? [match[1]!] : [];
}

function genericBody(params: Params, extra: Array<[string, string]>): GenericBody {
  const template = params.get("template");
  if (template === undefined || template === "") return { body: "text" };
  if (template.toLowerCase() === "json") return { body: "json", titleKey: params.get("titlekey") || "title", messageKey: params.get("messagekey") || "message", extra };
  return { body: "template", template };
}

/** `acceptLanguage` -> `Accept-Language` (shoutrrr's header keys are camel case). */
function headerName(key: string): string {
  const name = key.replace(/([a-z0-9])([A-Z])/g, "$1-$2").replace(/(^|-)([a-z])/g, (_, dash: string, c: string) => dash + c.toUpperCase());
  if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name)) fail("generic://: a @header name is not a valid header name");
  return name;
}

/** `generic+https://host/path?q=1`: the URL after `generic+` is the target, read as generic:// is. */
function wrappedGeneric(text: string, scheme: string): NotificationTarget {
  const url = parseWrapped(text, scheme, "generic");
  const params = new Params("generic", url);
  params.get("disabletls"); // the wrapped scheme says it
  const target = genericTarget(url, params, `${scheme}://${hostPort(url)}`);
  params.rejectUnknown();
  return target;
}

/** Credentials written into the URL are sent as Basic authorization (fetch does not send them itself). */
function basicAuth(url: URL, headers: Array<[string, string]>, secrets: string[]): void {
  if (!url.username && !url.password) return;
  const basic = Buffer.from(`${decode(url.username)}:${decode(url.password)}`).toString("base64");
  headers.push(["Authorization", `Basic ${basic}`]);
  secrets.push(basic);
}
