/**
 * Watchtower's older notification settings: `WATCHTOWER_NOTIFICATIONS=email slack msteams gotify`
 * names the services, each set by variables of its own. Those of Slack, Teams and Gotify become
 * notification URLs (notifications.urls) beside WATCHTOWER_NOTIFICATION_URL's, as Watchtower
 * itself turns them into shoutrrr URLs; e-mail's variables are the e-mail channel's own options
 * (schema aliases). Read at startup and by `svc migrate` (docs/migrating-from-watchtower.md).
 */

export interface LegacyNotifications {
  /** notification URLs made from the variables */
  urls: string[];
  /** WATCHTOWER_NOTIFICATIONS_LEVEL debug or trace: Watchtower then notified after every session */
  everyCycle: boolean;
  /** the variables read here, whatever became of them */
  consumed: ReadonlySet<string>;
  /** what was read but cannot be carried, "NAME: reason" */
  unmapped: string[];
  /** values that cannot be used, "NAME: problem" (never the value: hooks hold tokens) */
  problems: string[];
}

const V = "WATCHTOWER_NOTIFICATION_";
const LIST = "WATCHTOWER_NOTIFICATIONS";
const LEVEL = "WATCHTOWER_NOTIFICATIONS_LEVEL";

/** Each service's variables, as Watchtower names them. */
const SERVICE_VARIABLES = {
  slack: [
    `${V}SLACK_HOOK_URL`,
    `${V}SLACK_IDENTIFIER`,
    `${V}SLACK_CHANNEL`,
    `${V}SLACK_ICON_EMOJI`,
    `${V}SLACK_ICON_URL`,
  ],
  msteams: [`${V}MSTEAMS_HOOK`, `${V}MSTEAMS_USE_LOG_DATA`],
  gotify: [`${V}GOTIFY_URL`, `${V}GOTIFY_TOKEN`, `${V}GOTIFY_TLS_SKIP_VERIFY`],
} as const;

type Env = Readonly<Record<string, string | undefined>>;
type Made = { url: string } | { problem: string };

/** The legacy notification settings in `env` as notification URLs. */
export function legacyNotifications(env: Env): LegacyNotifications {
  const consumed = new Set<string>(
    [LIST, LEVEL, ...Object.values(SERVICE_VARIABLES).flat()].filter((name) => env[name] !== undefined),
  );
  const result: LegacyNotifications = { urls: [], everyCycle: false, consumed, unmapped: [], problems: [] };
  readLevel(env[LEVEL], result);
  const types = (env.WATCHTOWER_NOTIFICATIONS ?? "")
    .split(/[\s,]+/)
    .map((t) => t.trim().toLowerCase())
    .filter(Boolean);
  for (const type of types) {
    // e-mail: its variables are options of their own; shoutrrr: WATCHTOWER_NOTIFICATION_URL
    if (type === "email" || type === "shoutrrr") continue;
    if (!Object.hasOwn(SERVICE_VARIABLES, type)) {
      result.unmapped.push(
        `${LIST}: ${type} is not a notification type Watchtower has (email, slack, msteams, gotify, shoutrrr)`,
      );
      continue;
    }
    const made = MAKERS[type as keyof typeof SERVICE_VARIABLES](env, result.unmapped);
    if ("url" in made) result.urls.push(made.url);
    else result.problems.push(made.problem);
  }
  for (const [type, names] of Object.entries(SERVICE_VARIABLES)) {
    if (types.includes(type)) continue;
    for (const name of names)
      if (env[name] !== undefined)
        result.unmapped.push(`${name}: ${type} is not in ${LIST}, so Watchtower did not use it either`);
  }
  return result;
}

/** Watchtower's flags for the variables read here; the switches take no value. */
const FLAGS: Readonly<Record<string, { env: string; switch?: boolean }>> = {
  "--notifications": { env: LIST },
  "-n": { env: LIST },
  "--notifications-level": { env: LEVEL },
  "--notification-slack-hook-url": { env: `${V}SLACK_HOOK_URL` },
  "--notification-slack-identifier": { env: `${V}SLACK_IDENTIFIER` },
  "--notification-slack-channel": { env: `${V}SLACK_CHANNEL` },
  "--notification-slack-icon-emoji": { env: `${V}SLACK_ICON_EMOJI` },
  "--notification-slack-icon-url": { env: `${V}SLACK_ICON_URL` },
  "--notification-msteams-hook": { env: `${V}MSTEAMS_HOOK` },
  "--notification-msteams-data": { env: `${V}MSTEAMS_USE_LOG_DATA`, switch: true },
  "--notification-gotify-url": { env: `${V}GOTIFY_URL` },
  "--notification-gotify-token": { env: `${V}GOTIFY_TOKEN` },
  "--notification-gotify-tls-skip-verify": { env: `${V}GOTIFY_TLS_SKIP_VERIFY`, switch: true },
};

/**
 * The same settings given as Watchtower's flags, as the variables they stand for (a flag wins
 * over its variable, as in Watchtower), and the other arguments. `--notifications` may be
 * repeated (a list), and so may `--notification-url`: its values are joined into one.
 */
export function legacyNotificationFlags(args: readonly string[]): { env: Record<string, string>; rest: string[] } {
  const env: Record<string, string> = {};
  const rest: string[] = [];
  const urls: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    const eq = arg.indexOf("=");
    const flag = arg.startsWith("-") && eq >= 0 ? arg.slice(0, eq) : arg;
    const spec = FLAGS[flag];
    if (flag === "--notification-url" || spec) {
      const value = eq >= 0 && arg.startsWith("-") ? arg.slice(eq + 1) : spec?.switch ? "true" : args[++i];
      if (value === undefined) rest.push(arg);
      else if (!spec) urls.push(value);
      else env[spec.env] = spec.env === LIST && env[LIST] ? `${env[LIST]} ${value}` : value;
      continue;
    }
    rest.push(arg);
  }
  if (urls.length > 0) rest.push(`--notification-url=${urls.join(" ")}`);
  return { env, rest };
}

/** A container's "NAME=value" entries by name. */
export function envRecord(entries: readonly string[]): Record<string, string> {
  return Object.fromEntries(
    entries.map((entry) =>
      entry.includes("=") ? [entry.slice(0, entry.indexOf("=")), entry.slice(entry.indexOf("=") + 1)] : [entry, ""],
    ),
  );
}

/**
 * The options these settings set, each with the variable it is read from: the URLs after those
 * already given (`existingUrls`, from WATCHTOWER_NOTIFICATION_URL).
 */
export function legacyOptions(
  legacy: LegacyNotifications,
  existingUrls: unknown,
): Array<{ key: string; value: unknown; from: string }> {
  const options: Array<{ key: string; value: unknown; from: string }> = [];
  if (legacy.urls.length > 0)
    options.push({
      key: "notifications.urls",
      value: [...(Array.isArray(existingUrls) ? (existingUrls as string[]) : []), ...legacy.urls],
      from: LIST,
    });
  if (legacy.everyCycle) options.push({ key: "notifications.notify_on_every_cycle", value: true, from: LEVEL });
  return options;
}

/**
 * Watchtower's level filters log lines: at debug or trace every session has some, so it notified
 * after every one. svc's report has no levels: it notifies after a cycle with changes.
 */
function readLevel(text: string | undefined, result: LegacyNotifications): void {
  const level = text?.trim().toLowerCase();
  if (level === undefined || level === "" || level === "info") return;
  if (level === "debug" || level === "trace") result.everyCycle = true;
  else
    result.unmapped.push(
      `${LEVEL}: svc has no level filter: it notifies after every cycle with an update, a failure or a rollback`,
    );
}

const query = (params: Record<string, string | undefined>) => {
  const search = new URLSearchParams(Object.entries(params).filter((e): e is [string, string] => Boolean(e[1])));
  return search.size > 0 ? `?${search}` : "";
};

function parseHttp(name: string, text: string | undefined): URL | { problem: string } {
  if (!text) return { problem: `${name}: is required by the notification type` };
  try {
    const url = new URL(text.trim());
    if (url.protocol === "http:" || url.protocol === "https:") return url;
  } catch {
    // reported below
  }
  return { problem: `${name}: is not an http(s) URL` };
}

const MAKERS: Record<keyof typeof SERVICE_VARIABLES, (env: Env, unmapped: string[]) => Made> = {
  slack(env) {
    const hook = parseHttp(`${V}SLACK_HOOK_URL`, env[`${V}SLACK_HOOK_URL`]);
    if (!(hook instanceof URL)) return hook;
    const parts = hook.pathname.split("/").filter(Boolean);
    const botname = env[`${V}SLACK_IDENTIFIER`];
    if (hook.hostname === "hooks.slack.com" && parts[0] === "services" && parts.length === 4) {
      const icon = env[`${V}SLACK_ICON_EMOJI`] || env[`${V}SLACK_ICON_URL`];
      return {
        url: `slack://hook:${parts.slice(1).join("-")}@webhook${query({ botname, channel: env[`${V}SLACK_CHANNEL`], icon })}`,
      };
    }
    // Discord's Slack-compatible endpoint (…/api/webhooks/ID/TOKEN/slack), a common Watchtower setup.
    if (
      /^(discord|discordapp)\.com$/.test(hook.hostname) &&
      parts[0] === "api" &&
      parts[1] === "webhooks" &&
      parts.length >= 4
    ) {
      return { url: `discord://${parts[3]}@${parts[2]}${query({ username: botname })}` };
    }
    return {
      problem: `${V}SLACK_HOOK_URL: not a hooks.slack.com or Discord webhook; for another Slack-compatible service use notifications.webhook with the Slack recipe (docs/notifications.md)`,
    };
  },

  msteams(env, unmapped) {
    const hook = parseHttp(`${V}MSTEAMS_HOOK`, env[`${V}MSTEAMS_HOOK`]);
    if (!(hook instanceof URL)) return hook;
    if (env[`${V}MSTEAMS_USE_LOG_DATA`] !== undefined)
      unmapped.push(`${V}MSTEAMS_USE_LOG_DATA: svc's Teams card lists the containers of the report, not log lines`);
    return { url: `teams+${hook.toString()}` };
  },

  gotify(env) {
    const server = parseHttp(`${V}GOTIFY_URL`, env[`${V}GOTIFY_URL`]);
    if (!(server instanceof URL)) return server;
    const token = env[`${V}GOTIFY_TOKEN`]?.trim();
    if (!token) return { problem: `${V}GOTIFY_TOKEN: is required with ${V}GOTIFY_URL` };
    // As Watchtower did: any certificate accepted (shoutrrr's insecureskipverify)
    const skipVerify = /^(true|1|yes)$/i.test(env[`${V}GOTIFY_TLS_SKIP_VERIFY`] ?? "");
    const path = server.pathname.replace(/\/+$/, "");
    const options = server.protocol === "http:" ? "?disabletls=yes" : skipVerify ? "?insecureskipverify=yes" : "";
    return { url: `gotify://${server.host}${path}/${encodeURIComponent(token)}${options}` };
  },
};
