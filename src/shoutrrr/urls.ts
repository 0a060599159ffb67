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
import { fail, Params, type Parser, parseWrapped, UrlProblem, type WrappedParser } from "./grammar.ts";
import { escapings, maskUrl } from "./mask.ts";
import { SERVICES, type UrlService } from "./services.ts";
import type { NotificationTarget } from "./targets.ts";

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
  if (!scheme) return fail(`is not a URL (expected service://..., e.g. ${SERVICES.discord.form})`);
  const [name, wrapped] = scheme.split("+", 2) as [string, string | undefined];
  if (!Object.hasOwn(SERVICES, name))
    return fail(`${name}://: not a service svc knows (${Object.keys(SERVICES).join(", ")})`);
  const service: { parse: Parser; wrap?: WrappedParser; form: string } = SERVICES[name as UrlService];
  if (wrapped !== undefined) {
    if (!service.wrap || (wrapped !== "http" && wrapped !== "https")) {
      return fail(`${scheme}://: only generic+http(s):// and teams+http(s):// wrap a URL`);
    }
    const url = parseWrapped(text, wrapped, name);
    return service.wrap(url, wrapped, new Params(name, url, SERVICES));
  }
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return fail(`${name}://: the URL does not parse (form: ${service.form})`);
  }
  const params = new Params(name, url, SERVICES);
  const target = service.parse(url, params);
  params.rejectUnknown();
  return target;
}
