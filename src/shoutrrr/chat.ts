/** The chat services' URLs as shoutrrr reads them: Discord, Telegram, Slack, Teams, Matrix, Mattermost, Rocket.Chat, Google Chat, Signal. */
import { decodePercent } from "../core/urls.ts";
import { both, fail, hostPort, optional, origin, type Params, requireHost, segments, tokenLike } from "./grammar.ts";
import type { NotificationTarget, TelegramChat } from "./targets.ts";

export function discord(url: URL, params: Params): NotificationTarget {
  const token = decodePercent(url.username);
  const webhookId = url.hostname;
  if (!token) fail(`discord://: the webhook token is missing before @ (form: ${params.form("discord")})`);
  if (!webhookId) fail(`discord://: the webhook id after @ is missing (form: ${params.form("discord")})`);
  // shoutrrr: `/raw` sends the message as the JSON payload itself; svc always sends its summary as content
  if (!["", "/", "/raw"].includes(url.pathname))
    fail(`discord://: the path may only be /raw (form: ${params.form("discord")})`);
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
}

export function telegram(url: URL, params: Params): NotificationTarget {
  if (!url.username || !url.password)
    fail(`telegram://: the bot token (123456:ABC...) is missing before @ (form: ${params.form("telegram")})`);
  const token = `${decodePercent(url.username)}:${decodePercent(url.password)}`;
  const chats = params.list("chats", "channels").map(telegramChat);
  if (chats.length === 0) fail(`telegram://: parameter chats is missing (form: ${params.form("telegram")})`);
  return {
    service: "telegram",
    token,
    chats,
    silent: !params.flag("notification", true),
    preview: params.flag("preview", true),
    secrets: [token, ...both(url.password), `${url.username}:${url.password}`],
  };
}

/** `123` -> chat 123; `-100123:10` -> chat -100123, topic 10 (shoutrrr's chat:thread). */
function telegramChat(text: string): TelegramChat {
  const colon = text.indexOf(":");
  if (colon < 0) return { chat: text };
  const thread = text.slice(colon + 1);
  // shoutrrr sends a non-numeric thread nowhere; the chat before the colon is used alone
  return /^\d+$/.test(thread) ? { chat: text.slice(0, colon), thread: Number(thread) } : { chat: text.slice(0, colon) };
}

export function slack(url: URL, params: Params): NotificationTarget {
  const kind = decodePercent(url.username);
  const token = decodePercent(url.password);
  const threadTs = params.get("thread_ts");
  const common = {
    botname: params.get("botname", "username"),
    icon: params.get("icon", "icon_emoji", "icon_url"),
    ...(threadTs ? { threadTs } : {}),
  };
  if (kind === "hook") {
    const parts = token.split(/[-/]/).filter(Boolean);
    if (parts.length !== 3)
      fail(
        "slack://: the webhook token after hook: must be three parts, T000-B000-XXXX (from https://hooks.slack.com/services/T000/B000/XXXX)",
      );
    const channel = params.get("channel");
    return {
      service: "slack",
      webhookPath: parts.join("/"),
      ...common,
      ...(channel ? { channel } : {}),
      secrets: [...both(url.password), parts.join("/"), parts[2]!],
    };
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
    const botname = common.botname ?? (url.username ? decodePercent(url.username) : undefined);
    return {
      service: "slack",
      webhookPath: legacy.join("/"),
      ...common,
      botname,
      secrets: [legacy.join("/"), legacy[2]!],
    };
  }
  return fail(`slack://: the token must start with hook: (webhook) or xoxb: (bot) (form: ${params.form("slack")})`);
}

export function teams(url: URL, params: Params): NotificationTarget {
  const host = params.get("host");
  params.get("title", "color");
  if (!url.hostname && !url.username && host) return workflowTeams(host);
  requireHost(params, "teams", url);
  if (url.username) return connectorTeams(url, host);
  // The Workflows webhook with https:// replaced by teams://: every part of it is kept, its
  // query (api-version, sp, sv, sig) included.
  for (const key of params.keys()) params.get(key);
  const endpoint = new URL(`https://${hostPort(url)}${url.pathname}${url.search}`);
  return { service: "teams", endpoint: endpoint.toString(), secrets: teamsSecrets(endpoint) };
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
    [group = "", tenant = ""] = decodePercent(url.username).split("@");
    rest = [decodePercent(url.password), url.hostname];
  } else {
    [group, tenant, rest] = [decodePercent(url.username), url.hostname, segments(url)];
  }
  if (!group || !tenant || rest.length < 2)
    fail("teams://: the connector form is group@tenant/altId/groupOwner (or use the Workflows webhook URL)");
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
  if (endpoint.protocol !== "https:" && endpoint.protocol !== "http:")
    fail("teams://: parameter host must be an http(s) URL");
  return { service: "teams", endpoint: endpoint.toString(), secrets: teamsSecrets(endpoint) };
}

export function wrappedTeams(url: URL): NotificationTarget {
  return { service: "teams", endpoint: url.toString(), secrets: teamsSecrets(url) };
}

/** The Workflows URL carries its credential in the `sig` query value (and ids in its path). */
function teamsSecrets(endpoint: URL): string[] {
  const sig = endpoint.searchParams.get("sig") ?? undefined;
  return [...both(sig), ...tokenLike([...segments(endpoint), ...endpoint.searchParams.values()])];
}

export function matrix(url: URL, params: Params): NotificationTarget {
  requireHost(params, "matrix", url);
  const password = decodePercent(url.password);
  if (!password) fail(`matrix://: the password (or access token) is missing (form: ${params.form("matrix")})`);
  const user = url.username ? decodePercent(url.username) : undefined;
  return {
    service: "matrix",
    endpoint: origin(url, params),
    password,
    ...(user ? { user } : {}),
    rooms: params.list("rooms", "room").map(matrixRoom),
    secrets: both(url.password),
  };
}

/** shoutrrr's rooms: a name without `#` or `!` is an alias (`room1` -> `#room1`). */
function matrixRoom(room: string): string {
  return room.startsWith("#") || room.startsWith("!") ? room : `#${room}`;
}

export function mattermost(url: URL, params: Params): NotificationTarget {
  requireHost(params, "mattermost", url);
  const [token, channel, ...rest] = segments(url);
  if (!token || rest.length > 0)
    fail(
      `mattermost://: the path must be the webhook token, then the channel if any (form: ${params.form("mattermost")})`,
    );
  const icon = params.get("icon", "icon_emoji", "icon_url");
  const endpoint = `${origin(url, params)}/hooks/${encodeURIComponent(token!)}`;
  return {
    service: "mattermost",
    endpoint,
    ...optional({ username: decodePercent(url.username), channel, icon }),
    secrets: both(token),
  };
}

export function rocketchat(url: URL, params: Params): NotificationTarget {
  requireHost(params, "rocketchat", url);
  const parts = url.pathname.split("/").slice(1).map(decodePercent);
  const [tokenA, tokenB, channel] = parts;
  if (!tokenA || !tokenB)
    fail(`rocketchat://: the path must be tokenA/tokenB, then the channel if any (form: ${params.form("rocketchat")})`);
  // shoutrrr: a channel without @ is a #channel (written as a fragment, or bare)
  const named = url.hash
    ? `#${decodePercent(url.hash.slice(1))}`
    : channel
      ? channel.startsWith("@") || channel.startsWith("#")
        ? channel
        : `#${channel}`
      : undefined;
  const endpoint = `https://${hostPort(url)}/hooks/${encodeURIComponent(tokenA!)}/${encodeURIComponent(tokenB!)}`;
  return {
    service: "rocketchat",
    endpoint,
    ...optional({ username: decodePercent(url.username), channel: named }),
    secrets: [...both(tokenA, tokenB), `${tokenA}/${tokenB}`],
  };
}

/** Google Chat's incoming webhook, as written in the space's settings with https:// replaced. */
export function googleChat(url: URL, params: Params): NotificationTarget {
  requireHost(params, "googlechat", url);
  const key = params.get("key");
  const token = params.get("token");
  if (!key || !token) fail(`googlechat://: parameters key and token are missing (form: ${params.form("googlechat")})`);
  const query = new URLSearchParams({ key: key!, token: token! });
  return {
    service: "googlechat",
    endpoint: `https://${hostPort(url)}${url.pathname}?${query}`,
    secrets: both(key, token),
  };
}

export function signal(url: URL, params: Params): NotificationTarget {
  requireHost(params, "signal", url);
  const [source, ...rest] = url.pathname.split("/").filter(Boolean).map(decodePercent);
  if (!source || rest.length === 0)
    fail(`signal://: the path must be the source number, then the recipients (form: ${params.form("signal")})`);
  if (!SIGNAL_PHONE.test(source!)) fail("signal://: the source must be a phone number (+country code)");
  const recipients = signalRecipients(rest);
  const token = params.get("token", "apikey");
  const user = decodePercent(url.username);
  const password = decodePercent(url.password);
  const authorization = token
    ? `Bearer ${token}`
    : user
      ? `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`
      : undefined;
  // shoutrrr's signal-cli-rest-api answers on 8080 by default, over https unless disabletls
  const endpoint = `${origin(url, params)}${url.port ? "" : ":8080"}/v2/send`;
  const secrets = [...both(url.password, token), ...(authorization && !token ? [authorization.slice(6)] : [])];
  return {
    service: "signal",
    endpoint,
    source: source!,
    recipients,
    ...(authorization ? { authorization } : {}),
    secrets,
  };
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
    if (!SIGNAL_PHONE.test(recipient) && !SIGNAL_GROUP.test(recipient))
      fail("signal://: each recipient must be a phone number (+country code) or a group.id");
  }
  return recipients;
}
