/**
 * Every service a notification URL may name, declared once: its form (shown when a URL does not
 * fit it), the query parameters of shoutrrr's it accepts without needing them (looks are svc's
 * own), the fixed public host of those whose API lives at one (`notifications.services_base_url`
 * replaces it), and its parser. The order is the one svc lists them in.
 */
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
import { generic, wrappedGeneric } from "./generic.ts";
import type { Grammar, Parser, WrappedParser } from "./grammar.ts";
import { bark, gotify, mqttTarget, ntfy, pushbullet, pushover } from "./push.ts";
import { smtp } from "./smtp.ts";

interface Service {
  readonly form: string;
  readonly ignored: readonly string[];
  readonly fixedHost?: string;
  readonly parse: Parser;
  /** a `service+http(s)://` URL wraps the target URL (only generic and teams) */
  readonly wrap?: WrappedParser;
}

export const SERVICES = {
  discord: {
    form: "discord://token@webhookid",
    ignored: ["color", "colordebug", "colorerror", "colorinfo", "colorwarn", "json", "splitlines", "title"],
    fixedHost: "https://discord.com",
    parse: discord,
  },
  telegram: {
    form: "telegram://token@telegram?chats=@channel,12345",
    ignored: ["parsemode", "title"],
    fixedHost: "https://api.telegram.org",
    parse: telegram,
  },
  slack: {
    form: "slack://hook:T000-B000-XXXX@webhook or slack://xoxb:token@channel",
    ignored: ["color", "title"],
    fixedHost: "https://hooks.slack.com",
    parse: slack,
  },
  gotify: { form: "gotify://host[:port][/path]/token", ignored: ["title", "useheader", "date"], parse: gotify },
  ntfy: { form: "ntfy://[user:pass@]host[:port]/topic", ignored: ["title"], parse: ntfy },
  pushover: {
    form: "pushover://shoutrrr:token@userkey/?devices=phone",
    ignored: ["title"],
    fixedHost: "https://api.pushover.net",
    parse: pushover,
  },
  smtp: {
    form: "smtp://[user:pass@]host[:port]/?from=svc@example.com&to=a@example.com,b@example.com",
    ignored: ["usehtml", "timeout"],
    parse: smtp,
  },
  teams: {
    form: "teams+https://<Workflows webhook URL> or teams://<host>/<path>?<query>",
    ignored: ["color", "title"],
    parse: teams,
    wrap: wrappedTeams,
  },
  matrix: { form: "matrix://user:pass@host[:port]/?rooms=!room:host,#alias:host", ignored: ["title"], parse: matrix },
  generic: {
    form: "generic://host[:port]/path or generic+https://host/path",
    ignored: ["title", "titlekey", "messagekey"],
    parse: generic,
    wrap: wrappedGeneric,
  },
  mattermost: { form: "mattermost://[username@]host[:port]/token[/channel]", ignored: ["title"], parse: mattermost },
  rocketchat: {
    form: "rocketchat://[username@]host[:port]/tokenA/tokenB[/channel]",
    ignored: ["title"],
    parse: rocketchat,
  },
  googlechat: {
    form: "googlechat://chat.googleapis.com/v1/spaces/SPACE/messages?key=KEY&token=TOKEN",
    ignored: [],
    parse: googleChat,
  },
  hangouts: {
    form: "hangouts://chat.googleapis.com/v1/spaces/SPACE/messages?key=KEY&token=TOKEN",
    ignored: [],
    parse: googleChat,
  },
  pushbullet: {
    form: "pushbullet://token[/device][/#channel][/email]",
    ignored: ["title"],
    fixedHost: "https://api.pushbullet.com",
    parse: pushbullet,
  },
  bark: { form: "bark://:devicekey@host[:port][/path]", ignored: ["title"], parse: bark },
  mqtt: { form: "mqtt://[user:pass@]host[:port]/topic", ignored: ["title"], parse: mqttTarget },
  mqtts: { form: "mqtts://[user:pass@]host[:port]/topic", ignored: ["title"], parse: mqttTarget },
  signal: {
    form: "signal://[user:pass@]host[:port]/+source/+recipient[/group.id]",
    ignored: ["title"],
    parse: signal,
  },
} as const satisfies Record<string, Service> & Grammar;

export type UrlService = keyof typeof SERVICES;

/** The services whose API lives at a fixed public host. */
export type FixedHostService = {
  [S in UrlService]: (typeof SERVICES)[S] extends { fixedHost: string } ? S : never;
}[UrlService];

/** Each fixed-host service's public host. */
export const FIXED_HOSTS = Object.fromEntries(
  Object.entries(SERVICES).flatMap(([name, service]) => ("fixedHost" in service ? [[name, service.fixedHost]] : [])),
) as Readonly<Record<FixedHostService, string>>;
