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
import { createRedactor, REDACTED } from "../log/redact.ts";

export type UrlService = "discord" | "telegram" | "slack" | "gotify" | "ntfy" | "pushover" | "smtp" | "teams" | "matrix" | "generic";

interface TargetBase {
  /** the secret parts of the URL, as written and decoded */
  secrets: string[];
}

export type NotificationTarget = TargetBase &
  (
    | { service: "discord"; webhookId: string; token: string; username?: string; avatarUrl?: string }
    | { service: "telegram"; token: string; chats: string[]; silent: boolean; preview: boolean }
    | { service: "slack"; webhookPath?: string; botToken?: string; channel?: string; botname?: string; icon?: string }
    | { service: "gotify"; endpoint: string; token: string; priority?: number }
    | { service: "ntfy"; endpoint: string; topic: string; username?: string; password?: string; priority?: number; tags: string[] }
    | { service: "pushover"; token: string; userKey: string; devices: string[]; priority?: number }
    | { service: "smtp"; smtp: SmtpTarget }
    | { service: "teams"; endpoint: string }
    | { service: "matrix"; endpoint: string; user?: string; password: string; rooms: string[] }
    | { service: "generic"; endpoint: string; method: string; contentType?: string; headers: Array<[string, string]>; template?: string }
  );

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
};

/** Query parameters of shoutrrr's that svc accepts without needing them (looks are svc's own). */
const IGNORED: Readonly<Record<UrlService, readonly string[]>> = {
  discord: ["color", "colordebug", "colorerror", "colorinfo", "colorwarn", "json", "splitlines", "title", "thread_id"],
  telegram: ["parsemode", "title"],
  slack: ["color", "title", "threadts"],
  gotify: ["title", "useheader"],
  ntfy: ["title", "attach", "cache", "click", "delay", "email", "filename", "firebase", "icon", "actions"],
  pushover: ["title"],
  smtp: ["clienthost", "usehtml", "title"],
  teams: ["color", "title"],
  matrix: ["title"],
  generic: ["title", "titlekey", "messagekey"],
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
    return "problem" in parsed ? [url] : parsed.secrets;
  });
}

/** The URL with its secret parts masked, for showing it (a URL that does not parse is masked whole). */
export function redactNotificationUrl(url: string): string {
  const parsed = parseNotificationUrl(url);
  return "problem" in parsed ? REDACTED : createRedactor(parsed.secrets)(url);
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
    if (/^(yes|true|1|on)$/i.test(value)) return true;
    if (/^(no|false|0|off)$/i.test(value)) return false;
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

/** Path segments and query values that look like tokens (long, with a digit), as the webhook's derivation does. */
function tokenLike(parts: readonly string[]): string[] {
  return parts.filter((part) => part.length >= 8 && /\d/.test(part));
}

type Parser = (url: URL, params: Params) => NotificationTarget;

const PARSERS: Record<UrlService, Parser> = {
  discord(url, params) {
    const token = decode(url.username);
    const webhookId = url.hostname;
    if (!token) fail(`discord://: the webhook token is missing before @ (form: ${URL_FORMS.discord})`);
    if (!/^\d+$/.test(webhookId)) fail(`discord://: the webhook id after @ must be digits (form: ${URL_FORMS.discord})`);
    const username = params.get("username");
    const avatarUrl = params.get("avatar", "avatarurl");
    return { service: "discord", webhookId, token, secrets: both(url.username), ...(username ? { username } : {}), ...(avatarUrl ? { avatarUrl } : {}) };
  },

  telegram(url, params) {
    if (!url.username || !url.password) fail(`telegram://: the bot token (123456:ABC...) is missing before @ (form: ${URL_FORMS.telegram})`);
    const token = `${decode(url.username)}:${decode(url.password)}`;
    const chats = params.list("chats", "channels");
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
    const common = { botname: params.get("botname"), icon: params.get("icon") };
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
    const priority = params.integer("priority", -2, 10);
    const endpoint = `${origin(url, params)}${parts.map((p) => `/${encodeURIComponent(p)}`).join("")}`;
    return { service: "gotify", endpoint, token: token!, ...(priority !== undefined ? { priority } : {}), secrets: both(token) };
  },

  ntfy(url, params) {
    requireHost("ntfy", url);
    const parts = segments(url);
    if (parts.length !== 1) fail(`ntfy://: the path must be the topic alone (form: ${URL_FORMS.ntfy})`);
    const scheme = (params.get("scheme") ?? "https").toLowerCase();
    if (scheme !== "http" && scheme !== "https") fail("ntfy://: parameter scheme must be http or https");
    const priority = parseNtfyPriority(params.get("priority"));
    const target: NotificationTarget = { service: "ntfy", endpoint: `${scheme}://${hostPort(url)}`, topic: parts[0]!, tags: params.list("tags"), secrets: both(url.password) };
    if (params.flag("disabletlsverification", false)) fail("ntfy://: disabletlsverification is not supported: give the server a certificate svc trusts, or scheme=http");
    if (url.username) target.username = decode(url.username);
    if (url.password) target.password = decode(url.password);
    if (priority !== undefined) target.priority = priority;
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
    const from = params.get("from", "fromaddress");
    const to = params.list("to", "toaddresses");
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
      useStartTls: params.flag("usestarttls", true),
      skipTlsVerify: params.flag("skiptlsverify", false),
    };
    if (url.username) smtp.username = decode(url.username);
    if (url.password) smtp.password = decode(url.password);
    const fromName = params.get("fromname");
    const subject = params.get("subject");
    if (fromName) smtp.fromName = fromName;
    if (subject) smtp.subject = subject;
    return { service: "smtp", smtp, secrets: both(url.password) };
  },

  teams(url, params) {
    requireHost("teams", url);
    const host = params.get("host");
    if (url.username && host) {
      // shoutrrr's legacy connector form: teams://group@tenant/altId/groupOwner[/extraId]?host=org.webhook.office.com
      const parts = segments(url);
      if (parts.length < 2) fail("teams://: the legacy form needs group@tenant/altId/groupOwner");
      const endpoint = `https://${host}/webhookb2/${decode(url.username)}@${url.hostname}/IncomingWebhook/${parts.join("/")}`;
      return { service: "teams", endpoint, secrets: [...both(url.username), url.hostname, ...parts] };
    }
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
    return { service: "matrix", endpoint: origin(url, params), password, ...(user ? { user } : {}), rooms: params.list("rooms", "room"), secrets: both(url.password) };
  },

  generic(url, params) {
    requireHost("generic", url);
    const target = genericTarget(url, params, origin(url, params));
    return target;
  },
};

function oneOf(value: string, name: string, allowed: readonly string[], aliases: Record<string, string>): string {
  const lower = value.toLowerCase();
  const mapped = Object.hasOwn(aliases, lower) ? aliases[lower]! : lower;
  if (!allowed.includes(mapped)) fail(`smtp://: parameter ${name} must be one of ${allowed.join(", ")}`);
  return mapped;
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
 * shoutrrr's generic service: `@Name=value` parameters are request headers, `method`,
 * `contenttype` and `template` its own; every other parameter goes on to the target URL
 * (`_name` for a name svc would take). `template` other than json names a mustache file.
 */
function genericTarget(url: URL, params: Params, base: string): NotificationTarget {
  const headers: Array<[string, string]> = [];
  const forwarded = new URLSearchParams();
  for (const [rawKey, value] of url.searchParams) {
    const key = rawKey.toLowerCase();
    if (rawKey.startsWith("@")) {
      params.get(key);
      headers.push([headerName(rawKey.slice(1)), value]);
    } else if (rawKey.startsWith("$")) {
      fail("generic://: $extra fields belong to shoutrrr's JSON template; svc sends the SessionReport (or a mustache template=...)");
    } else if (!["method", "contenttype", "template", "disabletls", ...IGNORED.generic].includes(key)) {
      params.get(key);
      forwarded.append(rawKey.startsWith("_") ? rawKey.slice(1) : rawKey, value);
    }
  }
  const method = (params.get("method") ?? "POST").toUpperCase();
  if (!["POST", "PUT", "PATCH"].includes(method)) fail("generic://: parameter method must be POST, PUT or PATCH");
  const contentType = params.get("contenttype");
  const template = params.get("template");
  const query = forwarded.toString();
  const endpoint = `${base}${url.pathname === "/" ? "" : url.pathname}${query ? `?${query}` : ""}`;
  const secrets = [...both(url.password), ...headers.map(([, v]) => v), ...tokenLike([...segments(url), ...forwarded.values()])];
  basicAuth(url, headers, secrets);
  return {
    service: "generic",
    endpoint,
    method,
    headers,
    ...(contentType ? { contentType } : {}),
    ...(template && template.toLowerCase() !== "json" ? { template } : {}),
    secrets,
  };
}

/** `acceptLanguage` -> `Accept-Language` (shoutrrr's header keys are camel case). */
function headerName(key: string): string {
  const name = key.replace(/([a-z0-9])([A-Z])/g, "$1-$2").replace(/(^|-)([a-z])/g, (_, dash: string, c: string) => dash + c.toUpperCase());
  if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name)) fail("generic://: a @header name is not a valid header name");
  return name;
}

/** `generic+https://host/path?q=1`: the URL after `generic+` is the target; every parameter goes on to it. */
function wrappedGeneric(text: string, scheme: string): NotificationTarget {
  const url = parseWrapped(text, scheme, "generic");
  const headers: Array<[string, string]> = [];
  const secrets = [...both(url.password), ...tokenLike([...segments(url), ...url.searchParams.values()])];
  basicAuth(url, headers, secrets);
  url.username = "";
  url.password = "";
  return { service: "generic", endpoint: url.toString(), method: "POST", headers, secrets };
}

/** Credentials written into the URL are sent as Basic authorization (fetch does not send them itself). */
function basicAuth(url: URL, headers: Array<[string, string]>, secrets: string[]): void {
  if (!url.username && !url.password) return;
  const basic = Buffer.from(`${decode(url.username)}:${decode(url.password)}`).toString("base64");
  headers.push(["Authorization", `Basic ${basic}`]);
  secrets.push(basic);
}
