/** Each service's URL form (shown when a URL does not fit it) and the parameters svc accepts without needing them. */
import type { UrlService } from "./targets.ts";

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
export const IGNORED: Readonly<Record<UrlService, readonly string[]>> = {
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
