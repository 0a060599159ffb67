/**
 * Notification URLs (`notifications.urls`): the shoutrrr forms Watchtower users already have
 * (`discord://token@id`, `telegram://token@telegram?chats=...`, ...), each parsed into a target
 * svc delivers itself (the notify room). Pure: no I/O, nothing from the config room, so the
 * schema validates every URL at load with this same parser and a URL that cannot be used stops
 * svc before anything runs, with the part that is wrong named (never the secret in it).
 *
 * Each target knows its secret parts (tokens, passwords, user keys): `notificationUrlSecrets`
 * is the one function that derives them (in each escaping), for the redactor of every output, and
 * `redactNotificationUrl` rebuilds a URL shown to the user (--print-config) with them masked
 * (mask.ts). docs/notifications.md lists every form.
 */
import { REDACTED } from "../log/redact.ts";
import {
  discord,
  googleChat,
  matrix,
  mattermost,
  rocketchat,
  signal,
  slack,
  teams,
  telegram,
  wrappedTeams,
} from "./chat.ts";
import { URL_FORMS } from "./forms.ts";
import { generic, wrappedGeneric } from "./generic.ts";
import { fail, Params, type Parser, UrlProblem } from "./grammar.ts";
import { escapings, maskUrl } from "./mask.ts";
import { bark, gotify, mqttTarget, ntfy, pushbullet, pushover } from "./push.ts";
import { smtp } from "./smtp.ts";
import type { NotificationTarget, UrlService } from "./targets.ts";

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
  if (!Object.hasOwn(URL_FORMS, service))
    return fail(`${service}://: not a service svc knows (${Object.keys(URL_FORMS).join(", ")})`);
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

const PARSERS: Record<UrlService, Parser> = {
  discord,
  telegram,
  slack,
  gotify,
  ntfy,
  pushover,
  smtp,
  teams,
  matrix,
  mattermost,
  rocketchat,
  googlechat: googleChat,
  hangouts: googleChat,
  pushbullet,
  bark,
  signal,
  mqtt: mqttTarget,
  mqtts: mqttTarget,
  generic,
};
