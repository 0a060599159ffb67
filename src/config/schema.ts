/**
 * THE single source of truth for configuration: one declaration whose leaves carry everything
 * else derives from: the meaning (docs, sample, --help), the default as an operator writes it,
 * an example for options unset by default, whether the value is a secret, and the zod schema
 * that validates the value. The TOML key is the path in the declaration; the flag and env name
 * derive from it (`a.b_c` -> `--a-b-c`, `SVC_A_B_C`); the sample table is the parent path.
 *
 * A leaf builds its zod schema the first time it is needed. svc validates only the options a
 * user set (each against its own schema, so a problem names its source), and building all 71
 * schemas took more time at every start than the rest of loading the configuration.
 */
import { isIP } from "node:net";
import { Cron } from "croner";
import { z } from "zod";
import { FIXED_HOSTS, parseNotificationUrl, parseServicesBaseUrl } from "../shoutrrr/index.ts";
import { formatDuration, parseDuration, parseSize, parseTagPolicy } from "./values.ts";
import { parseDigestPeriod, parseWindows } from "./window.ts";

// The configuration is parsed once per start: zod's JIT (code generated with `new Function` on
// the first parse of each object schema) costs that start a few milliseconds and never pays back.
z.config({ jitless: true });

export type TomlValue = string | number | boolean | string[] | Record<string, string>[];

export type OptionKind = "boolean" | "integer" | "string" | "path" | "url" | "duration" | "cron" | "enum" | "list" | "credentials" | "tables";

export interface OptionMeta {
  kind: OptionKind;
  /** One line: docs, sample comment and --help. */
  description: string;
  /** The default as written in TOML; absent = unset by default. */
  default?: TomlValue;
  /** Shown instead of the literal default where it is not one (docker.host). */
  defaultText?: string;
  /** Example value for the sample when the option is unset by default. */
  example?: TomlValue;
  secret?: boolean;
  values?: readonly string[];
  min?: number;
  max?: number;
  /** How Watchtower names this option (docs/migrating-from-watchtower.md). */
  watchtower?: readonly WatchtowerName[];
  /** How this option relates to others: checked at load, written into every description. */
  rules?: OptionRules;
  /** A list whose entries are separated by whitespace in env and flags (URLs contain commas). */
  spaceSeparated?: boolean;
  /** An array of tables (kind "credentials" or "tables"): the fields of each table, and which hold secrets. */
  fields?: readonly string[];
  secretFields?: readonly string[];
}

export type ChannelName = "webhook" | "email" | "mqtt" | "pushover";
const CHANNEL_TITLES: Record<ChannelName, string> = { webhook: "webhook", email: "e-mail", mqtt: "MQTT", pushover: "Pushover" };

export interface OptionRules {
  /** TOML keys required once this option is set (a boolean: once it is true) */
  requires?: readonly string[];
  /** TOML keys that may not be set together with this one (a boolean counts when true) */
  exclusiveWith?: readonly string[];
  /** the notification channel this option turns on when it is set */
  enables?: ChannelName;
  /** a file svc reads at startup: it must exist and be readable */
  readable?: boolean;
}

/**
 * A Watchtower variable and its flags that mean this option. `convert` writes Watchtower's value
 * in svc's syntax where the two differ; undefined means "leave the option unset".
 */
export interface WatchtowerName {
  env: string;
  flags: readonly string[];
  convert?: (text: string) => string | undefined;
  /** a flag without a value in Watchtower (--debug), although svc's option is not a boolean */
  switch?: boolean;
}

/** One option of the declaration: its metadata, and how to build the schema of its value. */
export interface Leaf<S extends z.ZodType = z.ZodType> {
  readonly kind: "leaf";
  readonly meta: OptionMeta;
  readonly build: () => S;
}

/** A TOML table of the declaration. */
export interface Table<Shape extends Record<string, Node> = Record<string, Node>> {
  readonly kind: "table";
  /** Heading of the group in the sample and docs. */
  readonly title: string;
  readonly shape: Shape;
}

type Node = Leaf | Table;

function leaf<S extends z.ZodType>(meta: OptionMeta, build: () => S): Leaf<S> {
  return { kind: "leaf", meta, build };
}

function table<const Shape extends Record<string, Node>>(title: string, shape: Shape): Table<Shape> {
  return { kind: "table", title, shape };
}

// ---- leaf builders: each returns a leaf with its OptionMeta and the builder of its schema ----

/** `node`, also known to Watchtower users by `names`. */
function alias<L extends Leaf>(node: L, ...names: WatchtowerName[]): L {
  return { ...node, meta: { ...node.meta, watchtower: names } };
}

/** `node` with its rules towards other options. */
function ruled<L extends Leaf>(node: L, rules: OptionRules): L {
  return { ...node, meta: { ...node.meta, rules: { ...node.meta.rules, ...rules } } };
}

/** A file read at startup. */
function file(description: string, example: string) {
  return ruled(path(description, example), { readable: true });
}

const wt = (env: string, flags: string[], convert?: WatchtowerName["convert"]): WatchtowerName => ({ env, flags, ...(convert ? { convert } : {}) });
/** A Watchtower on/off switch that sets svc's option to `value` when on. */
const wtSwitch = (env: string, flags: string[], value: string): WatchtowerName => ({
  env,
  flags,
  switch: true,
  convert: (text) => (/^(true|1|t|yes)$/i.test(text.trim()) ? value : undefined),
});

function bool(def: boolean, description: string) {
  return leaf({ kind: "boolean", description, default: def }, () => z.boolean().default(def));
}

function rangeCheck(min: number, max: number) {
  return (n: number) => Number.isInteger(n) && n >= min && n <= max;
}

function int(def: number, description: string, min: number, max: number) {
  return leaf({ kind: "integer", description, default: def, min, max }, () =>
    z
      .number()
      .refine(rangeCheck(min, max), { error: `must be an integer between ${min} and ${max}` })
      .default(def),
  );
}

const nonEmpty = () => z.string().min(1, { error: "must not be empty (leave the option out to keep it unset)" });

function str(description: string, example: string, extra: { secret?: boolean } = {}) {
  return leaf({ kind: "string", description, example, ...extra }, () => nonEmpty().optional());
}

function path(description: string, example: string) {
  return leaf({ kind: "path", description, example }, () => nonEmpty().optional());
}

/** The one path whose default depends on who runs svc: the loader fills it in (defaultStateDir). */
function stateDir(description: string) {
  return leaf({ kind: "path", description, defaultText: STATE_DIR_DEFAULT_TEXT, example: "/var/lib/svc" }, () => nonEmpty().optional());
}

export const STATE_DIR_DEFAULT_TEXT = "$XDG_STATE_HOME/svc when XDG_STATE_HOME is set, else /var/lib/svc as root, else ~/.local/state/svc";

/** Where decisions persist when state_dir is not set: STATE_DIR_DEFAULT_TEXT, for this process. */
export function defaultStateDir(env: Record<string, string | undefined>, uid: number | undefined = process.getuid?.()): string {
  const xdg = env.XDG_STATE_HOME?.trim();
  if (xdg && xdg.startsWith("/")) return `${xdg.replace(/\/+$/, "")}/svc`;
  if (uid === 0) return "/var/lib/svc";
  const home = env.HOME?.trim();
  return `${home && home.startsWith("/") ? home.replace(/\/+$/, "") : ""}/.local/state/svc`;
}

function choice<const V extends readonly [string, ...string[]]>(values: V, def: V[number], description: string) {
  return leaf({ kind: "enum", description, default: def, values }, () => z.enum(values, { error: `must be one of ${values.join(", ")}` }).default(def as never));
}

/** A bound as operators write it: whole days in days, else the shortest duration. */
export function formatBound(ms: number): string {
  return ms % DAY === 0 ? `${ms / DAY}d` : formatDuration(ms);
}

function durationSchema(minMs: number, maxMs: number) {
  return z.union([z.string(), z.number()]).transform((value, ctx) => {
    const ms = parseDuration(value);
    if (ms === undefined) {
      ctx.issues.push({ code: "custom", input: value, message: 'is not a duration (examples: "30s", "5m", "1h30m", "250ms", or plain seconds)' });
      return z.NEVER;
    }
    if (ms < minMs) {
      ctx.issues.push({ code: "custom", input: value, message: "must be greater than zero" });
      return z.NEVER;
    }
    if (ms > maxMs) {
      ctx.issues.push({ code: "custom", input: value, message: `must be at most ${formatBound(maxMs)}` });
      return z.NEVER;
    }
    return ms;
  });
}

/** Every duration has an upper bound (docs/security.md): what a timer or a comparison can hold, and what makes sense. */
function duration(def: string, description: string, bounds: { min?: number; max: number }) {
  const min = bounds.min ?? 0;
  return leaf({ kind: "duration", description, default: def, min, max: bounds.max }, () => durationSchema(min, bounds.max).default(parseDuration(def)!));
}

function optionalDuration(description: string, example: string, bounds: { min?: number; max: number }) {
  const min = bounds.min ?? 0;
  return leaf({ kind: "duration", description, example, min, max: bounds.max }, () => durationSchema(min, bounds.max).optional());
}

function cronCheck(expression: string): string | undefined {
  const text = expression.trim();
  const fields = text.split(/\s+/).length;
  if (!text.startsWith("@") && fields !== 5 && fields !== 6) return `must have 5 or 6 fields (has ${fields})`;
  try {
    new Cron(text, { paused: true }).stop();
    return undefined;
  } catch (error) {
    return `is not a valid cron expression: ${error instanceof Error ? error.message : String(error)}`;
  }
}

function cron(description: string, example: string) {
  return leaf({ kind: "cron", description, example }, () =>
    z
      .string()
      .superRefine((value, ctx) => {
        const problem = cronCheck(value);
        if (problem) ctx.addIssue({ code: "custom", message: problem });
      })
      .optional(),
  );
}

/** A tag policy (values.ts): stored as written, checked here so a bad one stops the start (exit 2). */
function tagPolicy(description: string) {
  return leaf({ kind: "string", description, default: "off", example: "semver:minor" }, () =>
    z
      .string()
      .superRefine((value, ctx) => {
        const parsed = parseTagPolicy(value);
        if ("problem" in parsed) ctx.addIssue({ code: "custom", message: parsed.problem });
      })
      .default("off"),
  );
}

/** A text read at load by `parse` (a window, a digest period): a problem stops the start (exit 2), naming the value. */
function parsedText(description: string, example: string, parse: (text: string) => object | { problem: string }) {
  return leaf({ kind: "string", description, example }, () =>
    z
      .string()
      .superRefine((value, ctx) => {
        const parsed = parse(value);
        if ("problem" in parsed) ctx.addIssue({ code: "custom", message: `${JSON.stringify(value.slice(0, 200))}: ${parsed.problem}` });
      })
      .optional(),
  );
}

/** A size with its default (`1GiB`): kept as written, read with parseSize where it is used. */
function size(def: string, description: string) {
  return leaf({ kind: "string", description, default: def }, () =>
    z
      .string()
      .refine((value) => parseSize(value) !== undefined, { error: 'is not a size (examples: "512MiB", "1GiB", "2g", or plain bytes)' })
      .default(def),
  );
}

/** A channel's digest (docs/windows.md): one message per period instead of one per cycle. */
function digestOptions(which = "") {
  return {
    digest: parsedText(
      `Instead of a message per cycle${which}, one digest per period ("daily HH:MM" or "weekly DAY HH:MM", time zone from TZ): what was applied, what failed or rolled back, what is pending or stale and when it lands`,
      "daily 08:00",
      parseDigestPeriod,
    ),
    immediate_on_failure: bool(true, "With digest: a failure or a rollback is still told at once"),
  };
}

function list(description: string, example: string[], extra: { secret?: boolean } = {}) {
  // a name never holds a space or a comma: "a b" in one entry is two names written as one
  return leaf({ kind: "list", description, default: [], example, ...extra }, () =>
    z.array(z.string().min(1, { error: "must not contain empty names" }).regex(/^[^\s,]+$/, { error: "one name per entry: a name holds no space or comma" })).default([]),
  );
}

/** IP addresses, each checked at load. */
function addresses(description: string, example: string[]) {
  return leaf({ kind: "list", description, default: [], example }, () =>
    z.array(z.string().refine((value) => isIP(value) !== 0, { error: 'must be an IP address such as "127.0.0.1" or "::1"' })).default([]),
  );
}

/** Notification URLs, each parsed at load by the parser delivery uses (src/notify/urls.ts). */
function notificationUrls(description: string, example: string[]) {
  return leaf({ kind: "list", description, default: [], example, spaceSeparated: true }, () =>
    z
      .array(z.string())
      .superRefine((urls, ctx) => {
        for (const [index, url] of urls.entries()) {
          const parsed = parseNotificationUrl(url);
          if ("problem" in parsed) ctx.addIssue({ code: "custom", path: [index], message: parsed.problem });
        }
      })
      .default([]),
  );
}

/** Where the fixed-host services are sent instead: one URL, or service=URL pairs (docs/notifications.md). */
function servicesBaseUrl() {
  const description = `Base URL used instead of the public API of ${Object.keys(FIXED_HOSTS).join(", ")} URLs (a relay), or service=URL pairs; http only to this machine`;
  return leaf({ kind: "url", description, example: "https://relay.example.com" }, () =>
    z
      .string()
      .superRefine((value, ctx) => {
        const parsed = parseServicesBaseUrl(value);
        if ("problem" in parsed) ctx.addIssue({ code: "custom", message: parsed.problem });
      })
      .optional(),
  );
}

function urlSchema(schemes: readonly string[]) {
  return z.string().refine((value) => schemes.some((scheme) => value.startsWith(`${scheme}://`) && value.length > scheme.length + 3), {
    error: `must be a URL starting with ${schemes.map((s) => `${s}://`).join(", ")}`,
  });
}

function url(description: string, schemes: readonly string[], def: string, defaultText?: string) {
  return leaf({ kind: "url", description, default: def, ...(defaultText ? { defaultText } : {}) }, () => urlSchema(schemes).default(def));
}

function optionalUrl(description: string, schemes: readonly string[], example: string) {
  return leaf({ kind: "url", description, example }, () => urlSchema(schemes).optional());
}

function credentials(meta: OptionMeta) {
  return leaf(meta, () =>
    z
      .array(
        z.strictObject({
          host: z.string().min(1, { error: "must not be empty" }),
          username: nonEmpty().optional(),
          password: nonEmpty().optional(),
        }),
      )
      .default([]),
  );
}

/** `[[release_notes.sources]]`: an image repository and the repository its releases are published in. */
function releaseSources(description: string) {
  const example = [{ image: "nginx", source: "https://github.com/nginx/nginx" }];
  return leaf({ kind: "tables", description, default: [], example, fields: ["image", "source"] }, () =>
    z
      .array(
        z.strictObject({
          image: z.string().min(1, { error: "must not be empty" }).max(512),
          source: z.url({ protocol: /^https?$/, error: "must be an http:// or https:// URL" }),
        }),
      )
      .default([]),
  );
}

/** Other svc instances the dashboard shows beside this one (docs/dashboard.md). */
const PEER_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const hasUserInfo = (url: string): boolean => {
  const parsed = URL.parse(url);
  return parsed !== null && (parsed.username !== "" || parsed.password !== "");
};
function peers(description: string) {
  const fields = ["name", "url", "token", "ca_cert"] as const;
  const example = [{ name: "nas", url: "https://nas.lan:8080", token: "/run/secrets/nas_token" }];
  return leaf({ kind: "tables", description, default: [], example, secret: true, fields, secretFields: ["token"] }, () =>
    z
      .array(
        z.strictObject({
          name: z.string().regex(PEER_NAME, { error: "must be 1-64 letters, digits, dots, dashes or underscores" }),
          // the token goes in `token`: a user name or password in the URL would be printed and logged with it
          url: z.url({ protocol: /^https?$/, error: "must be an http:// or https:// URL" }).refine((url) => !hasUserInfo(url), {
            error: "must not hold a user name or password (https://user:password@host): give the peer's API token in token",
          }),
          token: nonEmpty(),
          ca_cert: nonEmpty().optional(),
        }),
      )
      .refine((list) => new Set(list.map((peer) => peer.name)).size === list.length, { error: "peer names must be distinct" })
      .default([]),
  );
}

const SECOND = 1_000;
const HOUR = 3_600_000;
const DAY = 24 * HOUR;

// ---- the schema ----

export const CONFIG = table("General options", {
  log_level: alias(
    choice(["trace", "debug", "info", "warn", "error"], "info", "Log verbosity"),
    wt("WATCHTOWER_LOG_LEVEL", ["--log-level"], (t) => t.trim().toLowerCase().replace(/^(panic|fatal)$/, "error")),
    wtSwitch("WATCHTOWER_DEBUG", ["--debug", "-d"], "debug"),
    wtSwitch("WATCHTOWER_TRACE", ["--trace"], "trace"),
  ),
  log_format: alias(choice(["auto", "json", "logfmt", "pretty"], "auto", "Log output format; auto is pretty on a terminal and json when piped"), wt("WATCHTOWER_LOG_FORMAT", ["--log-format", "-l"], (t) => t.trim().toLowerCase())),
  audit_log: path("Append-only NDJSON audit log of every change made to the engine", "/var/log/svc/audit.log"),
  log_access_to_stdout: bool(false, "Also print access-log events to stdout"),
  log_audit_to_stdout: bool(false, "Also print audit-log events to stdout"),
  poll_interval: ruled(alias(optionalDuration("Time between update checks", "6h", { min: 1, max: 366 * DAY }), wt("WATCHTOWER_POLL_INTERVAL", ["--interval", "-i"])), { exclusiveWith: ["schedule", "run_once"] }),
  schedule: ruled(alias(cron("Cron update schedule (5 or 6 fields, time zone from TZ)", "0 0 4 * * *"), wt("WATCHTOWER_SCHEDULE", ["--schedule", "-s"])), { exclusiveWith: ["poll_interval", "run_once"] }),
  run_once: ruled(alias(bool(false, "Run one update cycle and exit (no HTTP API)"), wt("WATCHTOWER_RUN_ONCE", ["--run-once", "-R"])), { exclusiveWith: ["poll_interval", "schedule"] }),
  update_on_start: bool(false, "Also run a cycle right after start"),
  state_dir: stateDir("Folder for the decisions that must survive a restart (digests rolled back or skipped, stale digests already announced, when each newer digest was first seen, the images svc rollback and cleanup_delay need), in state.json, created for svc's user only; when it cannot be written, svc says so at start and keeps them in memory"),
  history_size: int(100, "Session reports kept for the history (GET /v1/history, the dashboard), in history.json under state_dir when set, else in memory (0: none)", 0, 10000),
  peers: peers("Other svc instances the dashboard shows beside this one, each reached through its API with its own token (name, url, token or a path to a file holding it, ca_cert for a private CA)"),
  peer_timeout: duration("2s", "How long the dashboard waits for a peer before showing it unreachable with its last known state", { min: 1, max: HOUR }),
  dry_run: bool(false, "Decide everything and change nothing: each cycle reports what it would update (no pull, stop or restart, no notification, no metrics)"),
  registry_username: alias(str("Global registry user, or a path to a file holding it; with the password, sent (by svc and by the engine) only to a registry that asks for credentials, and to its token service only when that is on the registry's own site", "/run/secrets/registry_username", { secret: true }), wt("REPO_USER", [])),
  registry_password: alias(str("Global registry password, or a path to a file holding it", "/run/secrets/registry_password", { secret: true }), wt("REPO_PASS", [])),
  registry_credentials: credentials({
    kind: "credentials",
    fields: ["host", "username", "password"],
    secretFields: ["username", "password"],
    description: "Per-registry credentials (host, username, password); an entry without username and password forces anonymous access",
    default: [],
    example: [{ host: "ghcr.io", username: "me", password: "/run/secrets/ghcr_token" }],
    secret: true,
  }),
  insecure_registries: list("Registry hosts (host[:port]) spoken to over plain HTTP besides loopback ones", ["registry.lan:5000"]),
  registry_concurrency: int(8, "Registry checks run at the same time", 1, 64),
  registry_timeout: duration("30s", "Timeout of one registry request", { min: 1, max: HOUR }),
  head_warn_strategy: alias(
    choice(["auto", "always", "never"], "auto", "Logging of a failed manifest HEAD request: auto, always (warn) or never (debug)"),
    wt("WATCHTOWER_WARN_ON_HEAD_FAILURE", ["--warn-on-head-failure"]),
  ),
  label_enable: alias(bool(false, "Opt-in mode: update only containers labelled svc.enable=true"), wt("WATCHTOWER_LABEL_ENABLE", ["--label-enable"])),
  scope: alias(
    str("Only containers whose svc.scope label equals this (unset: containers without a scope label)", "production"),
    wt("WATCHTOWER_SCOPE", ["--scope"], (t) => (t.trim() === "none" ? undefined : t)),
  ),
  disable_containers: alias(list("Container names always excluded", ["database"]), wt("WATCHTOWER_DISABLE_CONTAINERS", ["--disable-containers", "-x"], (t) => t.trim().split(/[\s,]+/).join(","))),
  containers: list("When non-empty, only these containers are updated (also given as arguments)", ["web", "worker"]),
  include_restarting: alias(bool(false, "Include containers in the restarting state"), wt("WATCHTOWER_INCLUDE_RESTARTING", ["--include-restarting"])),
  global_takes_precedence: bool(false, "Global settings override per-container svc.* labels"),
  revive_stopped: alias(bool(false, "Also start stopped (exited, created) containers when a newer image is found"), wt("WATCHTOWER_REVIVE_STOPPED", ["--revive-stopped"])),
  monitor_only: alias(bool(false, "Detect stale images but never restart containers"), wt("WATCHTOWER_MONITOR_ONLY", ["--monitor-only"])),
  no_pull: alias(bool(false, "Do not pull; use the locally cached image"), wt("WATCHTOWER_NO_PULL", ["--no-pull"])),
  cleanup: alias(bool(false, "Remove the old image after a successful update"), wt("WATCHTOWER_CLEANUP", ["--cleanup", "-c"])),
  cleanup_delay: duration("0s", "With cleanup: keep the old image this long after the update that left it (so svc rollback can go back to it), then remove it in a later cycle", { max: 366 * DAY }),
  cleanup_keep: int(0, "With cleanup: keep the images the last this-many updates of each container left, however old (0: cleanup_delay alone decides)", 0, 100),
  stop_timeout: alias(duration("10s", "Wait for a graceful stop before a forced kill (label svc.stop_timeout)", { max: HOUR }), wt("WATCHTOWER_TIMEOUT", ["--stop-timeout"])),
  lifecycle_hooks: alias(bool(false, "Run the lifecycle hooks containers' labels set (svc.hooks.*, or Watchtower's lifecycle labels); off by default, as in Watchtower, since images bring labels with them"), wt("WATCHTOWER_LIFECYCLE_HOOKS", ["--enable-lifecycle-hooks"])),
  hook_timeout: duration("60s", "Time a lifecycle hook may run before it counts as failed (label svc.hooks.timeout)", { min: 1, max: DAY }),
  tag_policy: tagPolicy("Move containers to newer version tags (label svc.tag_policy; docs/policies.md): off, semver:patch|minor|major (+pre: pre-releases too), or regex[(natural|lexical|semver)]:<pattern> matching whole tags"),
  service_update_timeout: duration("10m", "Swarm services (docs/swarm.md): wait this long for Swarm's rolling update of a service to complete, roll back or pause; past it the service is reported failed (rolled back when it has no failure action of its own and rollback.on_timeout is set)", { min: 1, max: DAY }),
  update_window: parsedText(
    'When updates may be applied (docs/windows.md): "[DAYS ]HH:MM-HH:MM" in the time zone from TZ, several separated by ";" ("Sat,Sun 02:00-05:00; Wed 22:00-23:00"), crossing midnight allowed; outside it a stale target is pending (label svc.update_window narrows it); checking goes on at every cycle, and an update asked for by name applies at once',
    "Sat,Sun 02:00-05:00",
    parseWindows,
  ),
  pre_pull: bool(true, "With update_window: pull a newer image as soon as it is found, outside the window, so the window holds only the stop and the start"),
  data_guard: choice(
    ["off", "volumes", "all"],
    "off",
    "Copy a container's data with each update and put it back when the update is rolled back (docs/data-guard.md): off, volumes (the named and anonymous volumes it mounts read-write) or all (bind mounts too); label svc.data_guard",
  ),
  data_guard_max_size: size("1GiB", "With data_guard: the most one container's copy may take (all its guarded mounts together); above it, or when data_guard_dir lacks the room, data_guard_over decides"),
  data_guard_over: choice(["hold", "skip"], "hold", "With data_guard: a copy over data_guard_max_size or the room left: hold (the update waits, the reason gives the numbers) or skip (update without a copy, said in the report)"),
  data_guard_dir: path("Folder for data_guard's copies (default: data-guard under state_dir); a copy leaves at least 10% of its filesystem (at most 1 GiB) free", "/var/lib/svc/data-guard"),
  data_guard_keep: duration("7d", "With data_guard: keep a container's copy this long after its new version started (svc rollback NAME --with-data goes back to it), or until its next update", { min: 1, max: 366 * DAY }),
  min_image_age: duration("0s", "Apply a newer image only once it is this old, counted from the later of when svc first saw the digest and the image's creation time (label svc.min_image_age); until then the container is stale, with the time it becomes eligible", { max: 366 * DAY }),

  hold_breaking: bool(false, "Hold an update whose release notes say it breaks (a new major version, BREAKING in the notes: docs/release-notes.md) until it is asked for by name (the dashboard's Update, POST /v1/update naming it); label svc.hold_breaking"),

  release_notes: table("Release notes between the running and the newer version (docs/release-notes.md)", {
    enabled: bool(true, "Read the releases between the running and the newer version of each stale target from its source repository (GitHub, GitLab, Gitea/Forgejo)"),
    github_api_url: url("GitHub API base URL", ["http", "https"], "https://api.github.com"),
    github_token: str("GitHub token (60 requests an hour without one), or a path to a file holding it", "/run/secrets/github_token", { secret: true }),
    gitlab_api_url: url("GitLab API base URL (a self-hosted GitLab: its /api/v4; its host's repositories are then read there)", ["http", "https"], "https://gitlab.com/api/v4"),
    gitlab_token: str("GitLab token, or a path to a file holding it", "/run/secrets/gitlab_token", { secret: true }),
    gitea_api_url: url("Gitea/Forgejo API base URL (a self-hosted one: its /api/v1; its host's repositories are then read there)", ["http", "https"], "https://codeberg.org/api/v1"),
    gitea_token: str("Gitea/Forgejo token, or a path to a file holding it", "/run/secrets/gitea_token", { secret: true }),
    timeout: duration("10s", "Timeout of one request to a source host", { min: 1, max: HOUR }),
    cache_for: duration("5m", "A repository's releases read less than this long ago are used without asking its host again (0s: a conditional request every cycle)", { max: DAY }),
    max_releases: int(50, "Releases shown per target; the rest are counted", 1, 500),
    sources: releaseSources("Source repositories of images without an org.opencontainers.image.source label (image, source: a repository URL)"),
  }),

  http_api: table("HTTP API options", {
    update: alias(bool(false, "Enable the actions: POST /v1/update, /v1/check, /v1/skip, /v1/snooze, /v1/rollback, and the dashboard's buttons (docs/api.md)"), wt("WATCHTOWER_HTTP_API_UPDATE", ["--http-api-update"])),
    metrics: alias(bool(false, "Enable GET /v1/metrics"), wt("WATCHTOWER_HTTP_API_METRICS", ["--http-api-metrics"])),
    token: alias(str("Bearer token for authenticated endpoints, or a path to a file holding it", "/run/secrets/svc_token", { secret: true }), wt("WATCHTOWER_HTTP_API_TOKEN", ["--http-api-token"])),
    port: int(8080, "Listening port", 1, 65535),
    address: leaf({ kind: "string", description: "Listening address: 0.0.0.0 every IPv4 address, :: every address, 127.0.0.1 this machine only (docs/security.md)", default: "0.0.0.0" }, () =>
      z
        .string()
        .refine((value) => isIP(value) !== 0, { error: 'must be an IP address such as "0.0.0.0", "127.0.0.1" or "::"' })
        .default("0.0.0.0"),
    ),
    metrics_no_auth: bool(false, "Serve metrics without a token"),
    access_log: path("Access log file (NDJSON, one entry per request)", "/var/log/svc/access.log"),
    ui: bool(false, "Serve the dashboard at / (docs/dashboard.md): a page that signs in with the token; read-only unless update is on"),
    viewer_tokens: list("Read-only tokens (docs/dashboard.md, roles): they see everything the API shows and change nothing (403 on every action); each a token or a path to a file holding it", ["/run/secrets/svc_viewer_token"], { secret: true }),
    trusted_proxy_header: ruled(
      str("Header an identity proxy (Authelia, Authentik, oauth2-proxy) sets to the signed-in user's name; read only on requests from http_api.trusted_proxies (docs/dashboard.md, roles)", "Remote-User"),
      { requires: ["http_api.trusted_proxies"] },
    ),
    trusted_proxies: addresses("The addresses of the identity proxy whose trusted_proxy_header is believed; from any other address the header is ignored", ["127.0.0.1"]),
    trusted_proxy_role: choice(["viewer", "admin"] as const, "viewer", "What a user signed in by the trusted proxy may do: viewer (see everything, change nothing) or admin (everything the token may)"),
  }),

  docker: table("Container engine options", {
    host: alias(url("Engine socket or TCP address", ["unix", "tcp", "http", "https"], "unix:///var/run/docker.sock", "DOCKER_HOST, else unix:///var/run/docker.sock"), wt("DOCKER_HOST", ["--host", "-H"])),
    tls_verify: ruled(alias(bool(false, "Verify TLS certificates for TCP connections"), wt("DOCKER_TLS_VERIFY", ["--tlsverify"])), {
      requires: ["docker.tls_ca_cert", "docker.tls_cert", "docker.tls_key"],
    }),
    tls_ca_cert: file("CA certificate", "/etc/svc/tls/ca.pem"),
    tls_cert: file("Client certificate", "/etc/svc/tls/cert.pem"),
    tls_key: file("Client key", "/etc/svc/tls/key.pem"),
    config: path("Folder of the Docker CLI's config.json (registry logins, credential helpers); DOCKER_CONFIG, else ~/.docker", "/root/.docker"),
    api_version: alias(
      leaf({ kind: "string", description: "Override the negotiated engine API version (major.minor)", example: "1.41" }, () =>
        nonEmpty()
          .regex(/^\d+\.\d+$/, { error: 'must look like "1.41"' })
          .optional(),
      ),
      wt("DOCKER_API_VERSION", ["--api-version", "-a"]),
    ),
  }),

  rollback: table("Rollback options", {
    on_exit_code: bool(true, "Roll back if the new container exits with a non-zero code"),
    on_healthcheck: bool(true, "Roll back if the new container's healthcheck reports unhealthy"),
    on_timeout: bool(true, "Roll back if the container is not running (healthy) within startup_timeout"),
    startup_timeout: duration("30s", "Wait for the new container to become healthy before rolling back", { min: 1, max: DAY }),
  }),

  notifications: table("Notification options", {
    delay: alias(duration("0s", "Delay between cycle completion and dispatch", { max: DAY }), wt("WATCHTOWER_NOTIFICATIONS_DELAY", ["--notifications-delay"])),
    template: file("Template file (mustache) for the reports of e-mail, Pushover and the chat services among notifications.urls (docs/notifications.md, \"Templates\")", "/etc/svc/report.mustache"),
    notify_on_every_cycle: bool(false, "Notify after every cycle regardless of outcome"),
    urls: alias(
      notificationUrls(
        "Notification URLs in shoutrrr's forms (discord, telegram, slack, gotify, ntfy, pushover, smtp, teams, matrix, generic: docs/notifications.md), each its own channel; separated by spaces in env and flags",
        ["discord://token@123456789012345678", "ntfy://ntfy.sh/svc-alerts"],
      ),
      wt("WATCHTOWER_NOTIFICATION_URL", ["--notification-url"]),
    ),
    urls_digest: digestOptions(" to each notification URL").digest,
    urls_immediate_on_failure: digestOptions().immediate_on_failure,
    services_base_url: servicesBaseUrl(),
    hostname: alias(str("Host name shown in notification titles and reports (default: the machine's)", "nas"), wt("WATCHTOWER_NOTIFICATIONS_HOSTNAME", ["--notifications-hostname"])),
    title_tag: alias(
      str("Tag shown as [tag] before every notification title and e-mail subject", "prod"),
      wt("WATCHTOWER_NOTIFICATION_TITLE_TAG", ["--notification-title-tag"]),
      wt("WATCHTOWER_NOTIFICATION_EMAIL_SUBJECTTAG", ["--notification-email-subjecttag"]),
    ),
    webhook: table("Webhook channel", {
      url: ruled(optionalUrl("Endpoint receiving the report by HTTP POST", ["http", "https"], "https://hooks.example.com/svc"), { enables: "webhook" }),
      headers: str("Extra request headers as comma-separated Key: Value pairs", "X-Source: svc, X-Env: prod"),
      template: file("Body template (mustache) instead of the SessionReport JSON; values are JSON-escaped when content_type is JSON (docs/notifications.md)", "/etc/svc/ntfy.mustache"),
      content_type: leaf({ kind: "string", description: "Content-Type of the body (with template); JSON types (application/json, +json) escape values for JSON", default: "application/json" }, () =>
        nonEmpty()
          .regex(/^[\w.+-]+\/[\w.+-]+(\s*;.*)?$/, { error: 'must be a media type like "application/json"' })
          .default("application/json"),
      ),
      tls_skip_verify: bool(false, "Skip TLS verification"),
      timeout: duration("10s", "Timeout of the webhook request", { min: 1, max: HOUR }),
      ...digestOptions(),
    }),
    email: table("E-mail channel", {
      server: ruled(alias(str("SMTP host", "smtp.example.com"), wt("WATCHTOWER_NOTIFICATION_EMAIL_SERVER", ["--notification-email-server"])), {
        enables: "email",
        requires: ["notifications.email.from", "notifications.email.to"],
      }),
      port: alias(int(587, "SMTP port", 1, 65535), wt("WATCHTOWER_NOTIFICATION_EMAIL_SERVER_PORT", ["--notification-email-server-port"])),
      from: alias(str("Sender address", "svc@example.com"), wt("WATCHTOWER_NOTIFICATION_EMAIL_FROM", ["--notification-email-from"])),
      to: alias(list("Recipient addresses", ["ops@example.com"]), wt("WATCHTOWER_NOTIFICATION_EMAIL_TO", ["--notification-email-to"])),
      user: alias(str("SMTP user", "svc"), wt("WATCHTOWER_NOTIFICATION_EMAIL_SERVER_USER", ["--notification-email-server-user"])),
      password: alias(
        str("SMTP password, or a path to a file holding it", "/run/secrets/smtp_password", { secret: true }),
        wt("WATCHTOWER_NOTIFICATION_EMAIL_SERVER_PASSWORD", ["--notification-email-server-password"]),
      ),
      tls_skip_verify: alias(bool(false, "Skip TLS verification"), wt("WATCHTOWER_NOTIFICATION_EMAIL_SERVER_TLS_SKIP_VERIFY", ["--notification-email-server-tls-skip-verify"])),
      ...digestOptions(),
    }),
    mqtt: table("MQTT channel", {
      broker: ruled(optionalUrl("Broker address (tcp:// or mqtt:// plain, mqtts:// or ssl:// TLS)", ["tcp", "mqtt", "mqtts", "ssl"], "mqtt://broker.lan:1883"), {
        enables: "mqtt",
        requires: ["notifications.mqtt.topic"],
      }),
      topic: str("Topic for reports", "svc/reports"),
      qos: leaf({ kind: "integer", description: "0 at most once, 1 at least once, 2 exactly once", default: 0, min: 0, max: 2 }, () =>
        z
          .number()
          .refine(rangeCheck(0, 2), { error: "must be 0, 1 or 2" })
          .transform((n) => n as 0 | 1 | 2)
          .default(0),
      ),
      client_id: str("Client ID (generated when unset)", "svc-host1"),
      username: str("Broker user", "svc"),
      password: str("Broker password, or a path to a file holding it", "/run/secrets/mqtt_password", { secret: true }),
      tls_skip_verify: bool(false, "Skip certificate verification"),
      tls_ca_cert: file("CA certificate (PEM)", "/etc/svc/mqtt/ca.pem"),
      tls_cert: file("Client certificate for mutual TLS (PEM)", "/etc/svc/mqtt/cert.pem"),
      tls_key: file("Client key for mutual TLS (PEM)", "/etc/svc/mqtt/key.pem"),
      homeassistant_discovery: bool(false, "Also publish Home Assistant MQTT discovery: an update entity per container (docs/notifications.md)"),
      discovery_prefix: leaf({ kind: "string", description: "Home Assistant's discovery prefix", default: "homeassistant" }, () => nonEmpty().default("homeassistant")),
      ...digestOptions(),
    }),
    pushover: table("Pushover channel", {
      token: ruled(str("Application token, or a path to a file holding it", "/run/secrets/pushover_token", { secret: true }), {
        enables: "pushover",
        requires: ["notifications.pushover.user_key"],
      }),
      user_key: str("User or group key, or a path to a file holding it", "/run/secrets/pushover_user", { secret: true }),
      api_url: url("Pushover API base URL (tests point it at a local server)", ["http", "https"], "https://api.pushover.net"),
      ...digestOptions(),
    }),
  }),
});

/** The value of a node: a leaf's parsed value, a table's object (options unset by default are optional keys). */
type ValueOf<N> = N extends Leaf<infer S> ? z.output<S> : N extends Table<infer Shape> ? TableValue<Shape> : never;
type OptionalKeys<Shape> = { [K in keyof Shape]: undefined extends ValueOf<Shape[K]> ? K : never }[keyof Shape];
type TableValue<Shape> = Simplify<{ [K in Exclude<keyof Shape, OptionalKeys<Shape>>]: ValueOf<Shape[K]> } & { [K in OptionalKeys<Shape>]?: ValueOf<Shape[K]> }>;
type Simplify<T> = { [K in keyof T]: T[K] } & {};

export type Config = ValueOf<typeof CONFIG>;
export type LogLevel = Config["log_level"];
export type LogFormat = Config["log_format"];
export type RegistryCredential = Config["registry_credentials"][number];

// ---- walking the declaration ----

export interface OptionSpec {
  /** TOML key, dotted: "http_api.port" */
  key: string;
  path: string[];
  /** Table the option lives in ("" for top level). */
  table: string;
  flag: string;
  env: string;
  meta: OptionMeta;
  /** the zod schema of the value, built on first use */
  readonly schema: z.ZodType;
}

export interface TableSpec {
  key: string;
  title: string;
  options: OptionSpec[];
}

export function flagName(key: string): string {
  return `--${key.replace(/[._]/g, "-")}`;
}

export function envName(key: string): string {
  return `SVC_${key.replace(/\./g, "_").toUpperCase()}`;
}

function optionSpec(node: Leaf, path: string[], table: string): OptionSpec {
  const key = path.join(".");
  let schema: z.ZodType | undefined;
  return {
    key,
    path,
    table,
    flag: flagName(key),
    env: envName(key),
    meta: node.meta,
    get schema() {
      return (schema ??= node.build());
    },
  };
}

function walk(node: Table, path: string[], tables: TableSpec[]): void {
  const key = path.join(".");
  const own: TableSpec = { key, title: node.title, options: [] };
  tables.push(own);
  for (const [name, child] of Object.entries(node.shape)) {
    const childPath = [...path, name];
    if (child.kind === "table") walk(child, childPath, tables);
    else own.options.push(optionSpec(child, childPath, key));
  }
}

function collectTables(): TableSpec[] {
  const tables: TableSpec[] = [];
  walk(CONFIG, [], tables);
  return tables;
}

/** Tables in declaration order (top level first), each with its options. */
export const TABLES: readonly TableSpec[] = collectTables();
/** Every option, in declaration order. */
export const OPTIONS: readonly OptionSpec[] = TABLES.flatMap((t) => t.options);
export const OPTION_BY_KEY: ReadonlyMap<string, OptionSpec> = new Map(OPTIONS.map((o) => [o.key, o]));
export const TABLE_KEYS: ReadonlySet<string> = new Set(TABLES.map((t) => t.key).filter(Boolean));

/**
 * `text` read as option `key` reads it, with its forms and bounds: the labels that stand for an
 * option (svc.stop_timeout, svc.hooks.timeout...) are held to the same schema.
 */
export function readAsOption(key: string, text: string): { value: unknown } | { problem: string } {
  const parsed = OPTION_BY_KEY.get(key)!.schema.safeParse(text);
  return parsed.success ? { value: parsed.data } : { problem: parsed.error.issues[0]?.message ?? "is not valid" };
}

/** The option that turns each notification channel on. */
export const CHANNEL_SWITCHES: Readonly<Record<ChannelName, OptionSpec>> = Object.fromEntries(
  OPTIONS.filter((o) => o.meta.rules?.enables).map((o) => [o.meta.rules!.enables!, o]),
) as Record<ChannelName, OptionSpec>;

/**
 * The description every form shows (sample, docs, --help): the option's meaning, then its rules
 * towards other options, said from this option's side.
 */
export function describeOption(option: OptionSpec): string {
  const rules = option.meta.rules ?? {};
  const name = (key: string) => key.split(".").pop()!;
  const and = (keys: readonly string[]) => {
    const names = keys.map(name);
    return names.length < 2 ? names.join("") : `${names.slice(0, -1).join(", ")} and ${names.at(-1)}`;
  };
  const parts = [option.meta.description];
  if (rules.enables) parts.push(`enables the ${CHANNEL_TITLES[rules.enables]} channel`);
  if (rules.exclusiveWith) parts.push(`exclusive with ${and(rules.exclusiveWith)}`);
  if (rules.requires) parts.push(`${option.meta.kind === "boolean" ? "when true, needs" : "needs"} ${and(rules.requires)}`);
  for (const other of OPTIONS) {
    if (!other.meta.rules?.requires?.includes(option.key)) continue;
    parts.push(other.meta.kind === "boolean" ? `required when ${name(other.key)} is true` : `required with ${name(other.key)}`);
  }
  return parts.join("; ");
}

/**
 * An option's value when it is not set, from its metadata alone (no schema is built). A test
 * holds it equal to what the option's schema gives for a missing value.
 */
export function defaultValue(option: OptionSpec): unknown {
  const { meta } = option;
  if (meta.default === undefined) return undefined;
  if (meta.kind === "duration") return parseDuration(meta.default as string);
  return Array.isArray(meta.default) ? structuredClone(meta.default) : meta.default;
}

/**
 * The configuration from the parsed values of the options that were set (by key); every other
 * option takes its default. Options unset by default are left out, as zod leaves them out.
 */
export function assembleConfig(values: ReadonlyMap<string, unknown>): Config {
  const config: Record<string, unknown> = {};
  for (const table of TABLES) if (table.key) setAt(config, table.key.split("."), {});
  for (const option of OPTIONS) {
    const value = values.has(option.key) ? values.get(option.key) : defaultValue(option);
    if (value !== undefined) setAt(config, option.path, value);
  }
  return config as Config;
}

function setAt(target: Record<string, unknown>, path: readonly string[], value: unknown): void {
  let node = target;
  for (const part of path.slice(0, -1)) node = (node[part] ??= {}) as Record<string, unknown>;
  node[path[path.length - 1]!] = value;
}

/** The whole declaration as one zod schema (built on each call: for tests and tools, never at start). */
export function buildConfigSchema(): z.ZodType<Config> {
  const build = (node: Table): z.ZodType =>
    z.strictObject(Object.fromEntries(Object.entries(node.shape).map(([name, child]) => [name, child.kind === "table" ? build(child) : child.build()]))).prefault({});
  return build(CONFIG) as z.ZodType<Config>;
}

/** A human label for an option's type, for docs and error messages. */
export function typeLabel(meta: OptionMeta): string {
  switch (meta.kind) {
    case "boolean":
      return "boolean";
    case "integer":
      return `integer (${meta.min}-${meta.max})`;
    case "enum":
      return `one of ${meta.values!.join(", ")}`;
    case "duration":
      return `duration (at most ${formatBound(meta.max!)})`;
    case "cron":
      return "cron expression";
    case "list":
      return "array of strings";
    case "credentials":
    case "tables":
      return `array of tables (${meta.fields?.join(", ")})`;
    case "path":
      return "string (file path)";
    case "url":
      return "string (URL)";
    default:
      return meta.secret ? "string or path to a secret file" : "string";
  }
}
