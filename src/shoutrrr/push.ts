/** The push services' URLs as shoutrrr reads them: Gotify, ntfy, Pushover, Pushbullet, Bark, MQTT. */
import { decodePercent } from "../core/urls.ts";
import { both, fail, hostPort, optional, origin, type Params, requireHost, segments } from "./grammar.ts";
import type { MqttTarget, NotificationTarget } from "./targets.ts";

export function gotify(url: URL, params: Params): NotificationTarget {
  requireHost(params, "gotify", url);
  const parts = segments(url);
  const token = parts.pop();
  if (!token) fail(`gotify://: the application token (last path segment) is missing (form: ${params.form("gotify")})`);
  // shoutrrr's default priority is 0 (Gotify's clients show it without a sound)
  const priority = params.integer("priority", -2, 10) ?? 0;
  const skipTlsVerify = params.flag("insecureskipverify", false);
  const endpoint = `${origin(url, params)}${parts.map((p) => `/${encodeURIComponent(p)}`).join("")}`;
  return { service: "gotify", endpoint, token: token!, priority, skipTlsVerify, secrets: both(token) };
}

export function ntfy(url: URL, params: Params): NotificationTarget {
  requireHost(params, "ntfy", url);
  // shoutrrr publishes to the whole path (`ntfy://host/a/b` is topic `a/b`)
  const topic = segments(url).join("/");
  if (!topic) fail(`ntfy://: the topic (the path) is missing (form: ${params.form("ntfy")})`);
  let scheme = (params.get("scheme") ?? "https").toLowerCase();
  if (scheme !== "http" && scheme !== "https") fail("ntfy://: parameter scheme must be http or https");
  if (params.flag("disabletls", false)) scheme = "http";
  const skipTlsVerify = params.flag("disabletlsverification", false);
  const target: NotificationTarget = {
    service: "ntfy",
    endpoint: `${scheme}://${hostPort(url)}`,
    topic,
    markdown: params.flag("markdown", false),
    headers: ntfyHeaders(params),
    skipTlsVerify,
    secrets: both(url.password),
  };
  if (url.username) target.username = decodePercent(url.username);
  if (url.password) target.password = decodePercent(url.password);
  return target;
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
  if (!Number.isInteger(n) || n < 1 || n > 5)
    fail("ntfy://: parameter priority must be 1-5 or min, low, default, high, max");
  return n;
}

export function pushover(url: URL, params: Params): NotificationTarget {
  const token = decodePercent(url.password);
  const userKey = decodePercent(url.hostname);
  if (!token)
    fail(`pushover://: the application token (after shoutrrr:) is missing (form: ${params.form("pushover")})`);
  if (!userKey) fail(`pushover://: the user key (after @) is missing (form: ${params.form("pushover")})`);
  const priority = params.integer("priority", -2, 2);
  // shoutrrr v0.17's end-to-end encryption: a 256-bit key as 64 hex characters
  const encryptionKey = params.get("encryptionkey", "key") || undefined;
  if (encryptionKey !== undefined && !/^[0-9a-f]{64}$/i.test(encryptionKey))
    fail("pushover://: parameter encryptionkey must be 64 hex characters (a 256-bit key)");
  return {
    service: "pushover",
    token,
    userKey,
    devices: params.list("devices"),
    ...(priority !== undefined ? { priority } : {}),
    ...(encryptionKey ? { encryptionKey } : {}),
    secrets: [...both(url.password), userKey, ...(encryptionKey ? [encryptionKey] : [])],
  };
}

export function pushbullet(url: URL, params: Params): NotificationTarget {
  const token = decodePercent(url.hostname);
  if (token.length !== 34)
    fail(`pushbullet://: the access token (the host) must be 34 characters (form: ${params.form("pushbullet")})`);
  const targets = segments(url);
  if (url.hash.length > 1) targets.push(`#${decodePercent(url.hash.slice(1))}`);
  return { service: "pushbullet", token, targets, secrets: both(token) };
}

export function bark(url: URL, params: Params): NotificationTarget {
  requireHost(params, "bark", url);
  const deviceKey = decodePercent(url.password);
  if (!deviceKey) fail(`bark://: the device key (after :) is missing (form: ${params.form("bark")})`);
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
  return {
    service: "bark",
    endpoint: `${scheme}://${hostPort(url)}${path}/push`,
    deviceKey,
    fields,
    secrets: both(url.password),
  };
}

/** The fork's MQTT service: TLS for mqtts:// unless `disabletls`; ports 1883 and 8883 by default. */
export function mqttTarget(url: URL, params: Params): NotificationTarget {
  const tls = url.protocol === "mqtts:" && !params.flag("disabletls", false);
  const topic = decodePercent(url.pathname.replace(/^\//, ""));
  if (!topic) fail(`mqtt://: the topic (the path) is missing (form: ${params.form("mqtt")})`);
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
    ...optional({
      username: decodePercent(url.username),
      password: decodePercent(url.password),
      clientId: params.get("clientid"),
    }),
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
