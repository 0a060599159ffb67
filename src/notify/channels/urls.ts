/**
 * Delivery of the notification URLs (`notifications.urls`, parsed by the shoutrrr room): each URL
 * is its own channel, retried and logged by the dispatcher like the others, and each request is
 * built as shoutrrr builds it (docs/notifications.md). The chat and push targets get the short
 * summary (CHAT_TEMPLATE, or the user's template) under the subject as title; Pushover and e-mail
 * what their own channels send; generic webhooks the message text, shoutrrr's JSON or their
 * template; mqtt:// URLs go through the MQTT channel's client. The fixed public hosts (Discord,
 * Telegram, Slack, Pushover, Pushbullet) are replaced per service by
 * `notifications.services_base_url`. Answers are read capped and parsed with a schema.
 *
 * One file per family of services beside the grammar's (src/shoutrrr/): urls/chat.ts, push.ts,
 * smtp.ts, generic.ts, with what they share in urls/context.ts and urls/http.ts.
 */
import { SvcError } from "../../core/errors.ts";
import {
  type BaseUrls,
  type FixedHostService,
  type NotificationTarget,
  parseNotificationUrl,
  parseServicesBaseUrl,
  serviceOf,
} from "../../shoutrrr/index.ts";
import type { Notifier } from "../types.ts";
import { discord, googleChat, matrix, mattermostOrRocketChat, signal, slack, teams, telegram } from "./urls/chat.ts";
import type { Delivery, TargetService, UrlChannelContext } from "./urls/context.ts";
import { generic } from "./urls/generic.ts";
import { bark, gotify, mqtt, ntfy, pushbullet, pushover } from "./urls/push.ts";
import { smtp } from "./urls/smtp.ts";

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
export function tokensToBaseUrls(
  urls: readonly string[],
  bases: BaseUrls,
): Array<{ base: string; services: string[] }> {
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

/** Each service's delivery, by family as the shoutrrr room parses them (its type holds every service to one). */
const DELIVERIES: { [S in TargetService]: Delivery<S> } = {
  // chat.ts
  discord,
  telegram,
  slack,
  teams,
  matrix,
  mattermost: mattermostOrRocketChat,
  rocketchat: mattermostOrRocketChat,
  googlechat: googleChat,
  signal,
  // push.ts
  gotify,
  ntfy,
  pushover,
  pushbullet,
  bark,
  mqtt,
  smtp,
  generic,
};

function createUrlNotifier(
  name: string,
  target: NotificationTarget,
  context: UrlChannelContext,
): Notifier | Promise<Notifier> {
  // the entry of the target's own service: TypeScript cannot follow the key to the value's type
  const deliver = DELIVERIES[target.service] as Delivery<TargetService>;
  return deliver(name, target, context);
}
