/**
 * Coming from Watchtower: its variables and flags, read as svc's own options. Which Watchtower
 * name means which option is declared on the option itself in the schema (`alias`); this file
 * holds what has no counterpart, and reads Watchtower's variables (at startup) and a Watchtower
 * container's variables and arguments (`svc migrate`). docs/migrating-from-watchtower.md is the
 * user's view of the same table.
 */
import type { WatchtowerName } from "./builders.ts";
import { WATCHTOWER_LABEL } from "./labels.ts";
import { envName, OPTIONS, type OptionSpec } from "./options.ts";
import { coerceText, type Layer, type Problem } from "./sources.ts";
import { envRecord, legacyNotificationFlags, legacyNotifications, legacyOptions } from "./watchtower-notify.ts";

/** Watchtower settings svc has no option for, and why. */
export const WATCHTOWER_UNMAPPED: Record<string, { flags: readonly string[]; reason: string }> = {
  WATCHTOWER_REMOVE_VOLUMES: {
    flags: ["--remove-volumes"],
    reason: "svc never removes volumes: an anonymous volume is mounted again by the replacement",
  },
  WATCHTOWER_INCLUDE_STOPPED: {
    flags: ["--include-stopped", "-S"],
    reason: "svc checks stopped containers only with revive_stopped, which also starts them",
  },
  WATCHTOWER_LABEL_TAKE_PRECEDENCE: {
    flags: ["--label-take-precedence"],
    reason: "svc's labels already win over global options (unless global_takes_precedence)",
  },
  WATCHTOWER_NO_RESTART: {
    flags: ["--no-restart"],
    reason: "svc always recreates an updated container; use monitor_only to only be told",
  },
  WATCHTOWER_NO_STARTUP_MESSAGE: { flags: ["--no-startup-message"], reason: "svc sends no startup message" },
  WATCHTOWER_ROLLING_RESTART: {
    flags: ["--rolling-restart"],
    reason:
      "svc updates containers one dependency group at a time and keeps each old container until its replacement passes the rollback checks",
  },
  WATCHTOWER_HTTP_API_PERIODIC_POLLS: {
    flags: ["--http-api-periodic-polls"],
    reason: "with http_api.update on, svc runs poll_interval or schedule cycles too whenever one is set",
  },
  WATCHTOWER_PORCELAIN: {
    flags: ["--porcelain", "-P"],
    reason: "svc --run-once prints its report as JSON log records",
  },
  WATCHTOWER_NOTIFICATIONS: {
    flags: ["--notifications", "-n"],
    reason:
      "read from the environment: its slack, msteams and gotify variables become notifications.urls; e-mail is on when notifications.email.server is set",
  },
  WATCHTOWER_NOTIFICATION_TEMPLATE: {
    flags: ["--notification-template"],
    reason:
      "a Go template is not read: svc's templates are mustache files (notifications.template, docs/notifications.md#templates)",
  },
  WATCHTOWER_NOTIFICATION_REPORT: {
    flags: ["--notification-report"],
    reason: "svc always sends the report of the whole cycle, as Watchtower's report mode",
  },
  WATCHTOWER_NOTIFICATIONS_LEVEL: {
    flags: ["--notifications-level"],
    reason:
      "read from the environment: debug and trace (Watchtower then notified after every session) become notify_on_every_cycle; svc has no level filter, it notifies after every cycle with changes",
  },
  WATCHTOWER_NOTIFICATION_EMAIL_DELAY: {
    flags: ["--notification-email-delay"],
    reason: "use notifications.delay (for every channel)",
  },
  WATCHTOWER_NOTIFICATION_SKIP_TITLE: { flags: ["--notification-skip-title"], reason: "the titles are svc's own" },
  NO_COLOR: { flags: ["--no-color"], reason: "svc writes plain text when not on a terminal (log_format)" },
  TZ: { flags: [], reason: "read by svc too, for schedule" },
};

export interface WatchtowerAlias {
  option: OptionSpec;
  name: WatchtowerName;
}

/** Every Watchtower name the schema declares, in declaration order (later names win). */
export const WATCHTOWER_ALIASES: readonly WatchtowerAlias[] = OPTIONS.flatMap((option) =>
  (option.meta.watchtower ?? []).map((name) => ({ option, name })),
);

const ALIAS_BY_ENV = new Map(WATCHTOWER_ALIASES.map((alias) => [alias.name.env, alias]));

/** Variables read at startup: Watchtower's own and its registry login; the Docker CLI's are not. */
function isWatchtowerVariable(name: string): boolean {
  return name.startsWith("WATCHTOWER_") || name === "REPO_USER" || name === "REPO_PASS";
}

/**
 * One Watchtower value as svc's option value: `convert`ed to svc's syntax, then coerced like
 * any variable. undefined: the value means "leave the option unset".
 */
export function aliasValue(alias: WatchtowerAlias, text: string): { value: unknown } | { problem: string } | undefined {
  const converted = alias.name.convert ? alias.name.convert(text) : text;
  if (converted === undefined) return undefined;
  return coerceText(alias.option, converted);
}

/**
 * WATCHTOWER_* variables (and REPO_USER/REPO_PASS) as a layer below svc's own SVC_* variables,
 * each with a notice naming svc's own; unknown ones are warnings, never errors (users copy whole
 * env files).
 */
export function watchtowerEnvLayer(
  env: Record<string, string | undefined>,
  problems: Problem[],
  warnings: string[],
): Layer {
  const layer: Layer = new Map();
  const legacy = legacyNotifications(env);
  for (const [name, text] of Object.entries(env)) {
    if (!isWatchtowerVariable(name) || text === undefined) continue;
    if (legacy.consumed.has(name)) continue;
    const alias = ALIAS_BY_ENV.get(name);
    if (!alias) {
      const unmapped = WATCHTOWER_UNMAPPED[name];
      warnings.push(
        unmapped
          ? `${name}: no svc counterpart (${unmapped.reason}); ignored`
          : `${name}: not a Watchtower setting svc knows; ignored`,
      );
      continue;
    }
    const result = aliasValue(alias, text);
    if (result === undefined) continue;
    if ("problem" in result) {
      problems.push(`${name}: ${result.problem}`);
      continue;
    }
    warnings.push(`${name}: read as ${alias.option.key}; svc's own variable is ${alias.option.env}`);
    layer.set(alias.option.key, { value: result.value, origin: { source: "env", name } });
  }
  problems.push(...legacy.problems);
  warnings.push(...legacy.unmapped.map((line) => `${line}; ignored`));
  for (const { key, value, from } of legacyOptions(legacy, layer.get("notifications.urls")?.value)) {
    warnings.push(`${from}: read as ${key}; svc's own variable is ${envName(key)}`);
    layer.set(key, { value, origin: { source: "env", name: from } });
  }
  return layer;
}

// ---- Watchtower flags given to svc ----

/** Watchtower's short flags that are svc's own flags with another meaning, and what Watchtower meant. */
export const WATCHTOWER_CLASHES: Readonly<Record<string, string>> = { "-c": "--cleanup" };

/** What to say about a flag svc does not take, whether the next argument is its value, and the option it means. */
export interface FlagAdvice {
  text: string;
  takesValue: boolean;
  option?: string;
}

/**
 * What to use instead of a Watchtower flag svc does not accept (svc takes only its own flags:
 * one name per option, written as in the TOML file); undefined when it is not Watchtower's.
 */
export function watchtowerFlagAdvice(flag: string): FlagAdvice | undefined {
  const alias = ALIAS_BY_FLAG.get(flag);
  if (alias && alias.option.flag !== flag) {
    const seconds =
      alias.option.meta.kind === "duration" ? " (a number alone is seconds, as in Watchtower; or 5m, 6h)" : "";
    // its value (`--interval 300`) belongs to it, not to the container names
    const takesValue = alias.option.meta.kind !== "boolean" && alias.name.switch !== true;
    return {
      text: `Watchtower's ${flag} is svc's ${svcFlagFor(alias)}${seconds}`,
      takesValue,
      option: alias.option.key,
    };
  }
  const unmapped = UNMAPPED_BY_FLAG.get(flag);
  if (unmapped) return { text: `Watchtower's ${flag} has no svc counterpart: ${unmapped.reason}`, takesValue: false };
  return undefined;
}

/** `--poll-interval`, or `--log-level debug` for a Watchtower switch that sets a value. */
export function svcFlagFor(alias: WatchtowerAlias): string {
  const value = alias.name.switch ? alias.name.convert?.("true") : undefined;
  return value === undefined ? alias.option.flag : `${alias.option.flag} ${value}`;
}

// ---- svc migrate: a Watchtower container's settings as svc's ----

/**
 * The steps from a running Watchtower to a running svc, said at the end of `svc migrate` (with the
 * container and the file it wrote) and in docs/migrating-from-watchtower.md (with placeholders).
 */
export function switchOverSteps(watchtower: string, file: string): string[] {
  return [
    "Switching over, in this order:",
    `  1. Check the file (nothing is touched): svc --config ${file} --run-once --dry-run`,
    `  2. Stop and remove Watchtower (two updaters on one engine race): docker stop ${watchtower} && docker rm ${watchtower}`,
    "     (in a compose project: delete its service, then docker compose up -d --remove-orphans)",
    "  3. Start svc with the file, one of:",
    `     binary:  svc --config ${file}   (or install.sh --systemd, the file as /etc/svc/svc.toml)`,
    `     image:   chown 65532 ${file}, then docs/install.md's docker run line or docs/compose.yaml, with`,
    `              -v "$PWD/${file}:/svc.toml:ro" and without SVC_POLL_INTERVAL (the file says when)`,
    "  4. Check the first cycle: svc's last start line says when it comes (next check at ...);",
    `     svc --config ${file} --run-once runs one now.`,
  ];
}

/** What `svc migrate` read from a Watchtower container. */
export interface WatchtowerSettings {
  /** "NAME=value" entries */
  env: readonly string[];
  /** Watchtower's command-line arguments */
  args: readonly string[];
  labels: Readonly<Record<string, string>>;
}

/**
 * Where Watchtower's schedule went: in Watchtower it said when containers were checked and
 * restarted alike; in svc it says when they are checked, and update_window when they may restart.
 */
export function scheduleNote(values: ReadonlyMap<string, unknown>): string {
  const when = values.has("schedule")
    ? `schedule = ${JSON.stringify(values.get("schedule"))}`
    : values.get("run_once") === true
      ? "run_once"
      : "poll_interval";
  return `Watchtower's schedule is now ${when}: when svc checks for newer images. Watchtower restarted containers at the same moments; svc does too, unless update_window says when restarts may happen (docs/windows.md).`;
}

export interface Migration {
  /** svc option key -> value, in svc's types */
  values: Map<string, unknown>;
  /** every setting that could not be carried over, with the reason */
  unmapped: string[];
}

const ALIAS_BY_FLAG = new Map(
  WATCHTOWER_ALIASES.flatMap((alias) => alias.name.flags.map((flag) => [flag, alias] as const)),
);
const UNMAPPED_BY_FLAG = new Map(
  Object.entries(WATCHTOWER_UNMAPPED).flatMap(([env, entry]) =>
    entry.flags.map((flag) => [flag, { env, ...entry }] as const),
  ),
);
/** Variables of the image or the system, not settings of Watchtower's. */
const NOT_SETTINGS = /^(PATH|HOME|HOSTNAME|TERM|container|APP_VERSION)$/;

/** Watchtower polls every 24 hours when told nothing else. */
const WATCHTOWER_DEFAULT_POLL = "24h";

/**
 * Watchtower's settings as svc's: flags win over variables (as in Watchtower), each value in svc's
 * types; arguments that are not flags are container names.
 */
export function migrateWatchtower(settings: WatchtowerSettings): Migration {
  const values = new Map<string, unknown>();
  const unmapped: string[] = [];
  const apply = (alias: WatchtowerAlias, text: string, as: string) => {
    const result = aliasValue(alias, text);
    if (result === undefined) return;
    if ("problem" in result) unmapped.push(`${as}: ${result.problem}`);
    else values.set(alias.option.key, result.value);
  };

  const legacyFlags = legacyNotificationFlags(settings.args);
  const legacy = legacyNotifications({ ...envRecord(settings.env), ...legacyFlags.env });
  for (const entry of settings.env) {
    const eq = entry.indexOf("=");
    const [name, text] = eq < 0 ? [entry, ""] : [entry.slice(0, eq), entry.slice(eq + 1)];
    if (legacy.consumed.has(name)) continue;
    const alias = ALIAS_BY_ENV.get(name);
    if (alias) apply(alias, text, name);
    else if (WATCHTOWER_UNMAPPED[name]) unmapped.push(`${name}: ${WATCHTOWER_UNMAPPED[name]!.reason}`);
    else if (name.startsWith("WATCHTOWER_")) unmapped.push(`${name}: not a Watchtower setting svc knows`);
    else if (!NOT_SETTINGS.test(name))
      unmapped.push(`${name}: not a Watchtower setting; set it in svc's environment if svc needs it`);
  }

  unmapped.push(...legacy.unmapped, ...legacy.problems);

  const containers: string[] = [];
  const args = legacyFlags.rest;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (!arg.startsWith("-")) {
      containers.push(arg);
      continue;
    }
    const eq = arg.indexOf("=");
    const flag = eq < 0 ? arg : arg.slice(0, eq);
    const inline = eq < 0 ? undefined : arg.slice(eq + 1);
    const alias = ALIAS_BY_FLAG.get(flag);
    if (!alias) {
      const known = UNMAPPED_BY_FLAG.get(flag);
      unmapped.push(known ? `${flag}: ${known.reason}` : `${flag}: not a Watchtower flag svc knows`);
      continue;
    }
    const isSwitch = alias.option.meta.kind === "boolean" || alias.name.switch === true;
    const text = inline ?? (isSwitch ? "true" : args[++i]);
    if (text === undefined) unmapped.push(`${flag}: needs a value`);
    else apply(alias, text, flag);
  }
  if (containers.length > 0) values.set("containers", containers);
  // after the flags: the older settings' URLs come after those of --notification-url too
  for (const { key, value } of legacyOptions(legacy, values.get("notifications.urls"))) values.set(key, value);

  for (const [label, value] of Object.entries(settings.labels)) {
    if (label.startsWith(`${WATCHTOWER_LABEL}.`)) {
      unmapped.push(
        `label ${label}=${value} on the Watchtower container itself: not a setting (svc reads such labels on the containers it updates)`,
      );
    }
  }
  if (!values.has("poll_interval") && !values.has("schedule") && values.get("run_once") !== true)
    values.set("poll_interval", WATCHTOWER_DEFAULT_POLL);
  return { values, unmapped };
}
