/**
 * The builders of the option declaration (schema.ts): the types of a leaf and a table, and one
 * helper per kind of option that returns a leaf with its metadata (meaning, default, example,
 * secret, bounds, Watchtower names, rules) and the builder of the zod schema of its value.
 * schema.ts declares the options with them; options.ts walks the declaration.
 *
 * A leaf builds its zod schema the first time it is needed (see schema.ts).
 */
import { isIP } from "node:net";
import { Cron } from "croner";
import { z } from "zod";
import { decodePercent, maskUserInfo } from "../core/urls.ts";
import { REDACTED } from "../log/redact.ts";
import { FIXED_HOSTS, parseNotificationUrl, parseServicesBaseUrl } from "../shoutrrr/index.ts";
import { formatDuration, parseDuration, parseSize, parseTagPolicy } from "./values.ts";
import { parseDigestPeriod } from "./window.ts";

// The configuration is parsed once per start: zod's JIT (code generated with `new Function` on
// the first parse of each object schema) costs that start a few milliseconds and never pays back.
z.config({ jitless: true });

export const HOUR = 3_600_000;
export const DAY = 24 * HOUR;

export type TomlValue = string | number | boolean | string[] | Record<string, string>[];

export type OptionKind =
  | "boolean"
  | "integer"
  | "string"
  | "path"
  | "url"
  | "duration"
  | "cron"
  | "enum"
  | "list"
  | "credentials"
  | "tables";

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
  /** A value that is not secret but may hold a secret part: how a refusal shows it (git_remote's user name masked). */
  shown?: (value: string) => string;
  values?: readonly string[];
  min?: number;
  max?: number;
  /** How Watchtower names this option (docs/migrating-from-watchtower.md). */
  watchtower?: readonly WatchtowerName[];
  /** The container label that overrides this option for one container (labels.ts). */
  label?: LabelSpec;
  /** How this option relates to others: checked at load, written into every description. */
  rules?: OptionRules;
  /** A list whose entries are separated by whitespace in env and flags (URLs contain commas). */
  spaceSeparated?: boolean;
  /** An array of tables (kind "credentials" or "tables"): the fields of each table, and which hold secrets. */
  fields?: readonly string[];
  secretFields?: readonly string[];
}

/** The notification channels with a table of their own (beside the URLs), each by the title it is told by. */
export const CHANNEL_TITLES = { webhook: "webhook", email: "e-mail", mqtt: "MQTT", pushover: "Pushover" } as const;

export type ChannelName = keyof typeof CHANNEL_TITLES;

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

/** A container label svc reads (or writes), and Watchtower's label of the same meaning. */
export interface LabelSpec {
  readonly name: string;
  readonly watchtower?: string;
  /** what the label does to its option, when it cannot set any value (a window it can only narrow) */
  readonly only?: "narrows" | "shortens";
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

export type Node = Leaf | Table;

export function leaf<S extends z.ZodType>(meta: OptionMeta, build: () => S): Leaf<S> {
  return { kind: "leaf", meta, build };
}

export function table<const Shape extends Record<string, Node>>(title: string, shape: Shape): Table<Shape> {
  return { kind: "table", title, shape };
}

/** `node`, also known to Watchtower users by `names`. */
export function alias<L extends Leaf>(node: L, ...names: WatchtowerName[]): L {
  return { ...node, meta: { ...node.meta, watchtower: names } };
}

/** `node`, overridden for one container by the label `name` (and Watchtower's label of the same meaning). */
export function labelled<L extends Leaf>(
  node: L,
  name: string,
  more: Omit<LabelSpec, "name"> = {},
): L & { meta: { label: LabelSpec } } {
  return { ...node, meta: { ...node.meta, label: { name, ...more } } };
}

/** `node` with its rules towards other options. */
export function ruled<L extends Leaf>(node: L, rules: OptionRules): L {
  return { ...node, meta: { ...node.meta, rules: { ...node.meta.rules, ...rules } } };
}

/** A file read at startup. */
export function file(description: string, example: string) {
  return ruled(path(description, example), { readable: true });
}

export const wt = (env: string, flags: string[], convert?: WatchtowerName["convert"]): WatchtowerName => ({
  env,
  flags,
  ...(convert ? { convert } : {}),
});
/** A Watchtower on/off switch that sets svc's option to `value` when on. */
export const wtSwitch = (env: string, flags: string[], value: string): WatchtowerName => ({
  env,
  flags,
  switch: true,
  convert: (text) => (/^(true|1|t|yes)$/i.test(text.trim()) ? value : undefined),
});

export function bool(def: boolean, description: string) {
  return leaf({ kind: "boolean", description, default: def }, () => z.boolean().default(def));
}

export function rangeCheck(min: number, max: number) {
  return (n: number) => Number.isInteger(n) && n >= min && n <= max;
}

export function int(def: number, description: string, min: number, max: number) {
  return leaf({ kind: "integer", description, default: def, min, max }, () =>
    z
      .number()
      .refine(rangeCheck(min, max), { error: `must be an integer between ${min} and ${max}` })
      .default(def),
  );
}

export const nonEmpty = () => z.string().min(1, { error: "must not be empty (leave the option out to keep it unset)" });

export function str(description: string, example: string, extra: { secret?: boolean } = {}) {
  return leaf({ kind: "string", description, example, ...extra }, () => nonEmpty().optional());
}

export function path(description: string, example: string) {
  return leaf({ kind: "path", description, example }, () => nonEmpty().optional());
}

/** The one path whose default depends on who runs svc: the loader fills it in (defaultStateDir). */
export function stateDir(description: string) {
  return leaf({ kind: "path", description, defaultText: STATE_DIR_DEFAULT_TEXT, example: "/var/lib/svc" }, () =>
    nonEmpty().optional(),
  );
}

export const STATE_DIR_DEFAULT_TEXT =
  "$XDG_STATE_HOME/svc when XDG_STATE_HOME is set, else /var/lib/svc as root, else ~/.local/state/svc";

/** Where decisions persist when state_dir is not set: STATE_DIR_DEFAULT_TEXT, for this process. */
export function defaultStateDir(
  env: Record<string, string | undefined>,
  uid: number | undefined = process.getuid?.(),
): string {
  const xdg = env.XDG_STATE_HOME?.trim();
  if (xdg?.startsWith("/")) return `${xdg.replace(/\/+$/, "")}/svc`;
  if (uid === 0) return "/var/lib/svc";
  const home = env.HOME?.trim();
  return `${home?.startsWith("/") ? home.replace(/\/+$/, "") : ""}/.local/state/svc`;
}

export function choice<const V extends readonly [string, ...string[]]>(values: V, def: V[number], description: string) {
  return leaf({ kind: "enum", description, default: def, values }, () =>
    z.enum(values, { error: `must be one of ${values.join(", ")}` }).default(def as never),
  );
}

/** A bound as operators write it: whole days in days, else the shortest duration. */
export function formatBound(ms: number): string {
  return ms % DAY === 0 ? `${ms / DAY}d` : formatDuration(ms);
}

function durationSchema(minMs: number, maxMs: number) {
  return z.union([z.string(), z.number()]).transform((value, ctx) => {
    const ms = parseDuration(value);
    if (ms === undefined) {
      ctx.issues.push({
        code: "custom",
        input: value,
        message: 'is not a duration (examples: "30s", "5m", "1h30m", "250ms", or plain seconds)',
      });
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
export function duration(def: string, description: string, bounds: { min?: number; max: number }) {
  const min = bounds.min ?? 0;
  return leaf({ kind: "duration", description, default: def, min, max: bounds.max }, () =>
    durationSchema(min, bounds.max).default(parseDuration(def)!),
  );
}

export function optionalDuration(description: string, example: string, bounds: { min?: number; max: number }) {
  const min = bounds.min ?? 0;
  return leaf({ kind: "duration", description, example, min, max: bounds.max }, () =>
    durationSchema(min, bounds.max).optional(),
  );
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

export function cron(description: string, example: string) {
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
export function tagPolicy(description: string) {
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
export function parsedText(
  description: string,
  example: string,
  parse: (text: string) => object | { problem: string },
) {
  return leaf({ kind: "string", description, example }, () =>
    z
      .string()
      .superRefine((value, ctx) => {
        const parsed = parse(value);
        if ("problem" in parsed)
          ctx.addIssue({ code: "custom", message: `${JSON.stringify(value.slice(0, 200))}: ${parsed.problem}` });
      })
      .optional(),
  );
}

/** A channel's digest (docs/windows.md): one message per period instead of one per cycle. */
export function digestOptions(which = "") {
  return {
    digest: parsedText(
      `Instead of a message per cycle${which}, one digest per period ("daily HH:MM" or "weekly DAY HH:MM", time zone from TZ): what was applied, what failed or rolled back, what is pending or stale and when it lands`,
      "daily 08:00",
      parseDigestPeriod,
    ),
    immediate_on_failure: bool(true, "With digest: a failure or a rollback is still told at once"),
  };
}

export function list(description: string, example: string[], extra: { secret?: boolean } = {}) {
  // a name never holds a space or a comma: "a b" in one entry is two names written as one
  return leaf({ kind: "list", description, default: [], example, ...extra }, () =>
    z
      .array(
        z
          .string()
          .min(1, { error: "must not contain empty names" })
          .regex(/^[^\s,]+$/, { error: "one name per entry: a name holds no space or comma" }),
      )
      .default([]),
  );
}

/** IP addresses, each checked at load. */
export function addresses(description: string, example: string[]) {
  return leaf({ kind: "list", description, default: [], example }, () =>
    z
      .array(
        z
          .string()
          .refine((value) => isIP(value) !== 0, { error: 'must be an IP address such as "127.0.0.1" or "::1"' }),
      )
      .default([]),
  );
}

/** Notification URLs, each parsed at load by the parser delivery uses (src/shoutrrr/urls.ts). */
export function notificationUrls(description: string, example: string[]) {
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
export function servicesBaseUrl() {
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
  return z
    .string()
    .refine((value) => schemes.some((scheme) => value.startsWith(`${scheme}://`) && value.length > scheme.length + 3), {
      error: `must be a URL starting with ${schemes.map((s) => `${s}://`).join(", ")}`,
    });
}

export function url(description: string, schemes: readonly string[], def: string, defaultText?: string) {
  return leaf({ kind: "url", description, default: def, ...(defaultText ? { defaultText } : {}) }, () =>
    urlSchema(schemes).default(def),
  );
}

export function optionalUrl(description: string, schemes: readonly string[], example: string) {
  return leaf({ kind: "url", description, example }, () => urlSchema(schemes).optional());
}

/**
 * Forges' token forms: GitHub's prefixes (docs.github.com, "About authentication to GitHub",
 * "GitHub's token formats"), GitLab's (docs.gitlab.com, "GitLab token overview", "Token prefixes"),
 * and Gitea/Forgejo's 40 hexadecimal characters (an access token's SHA-1 form).
 */
const FORGE_TOKEN =
  /^(?:gh[pousr]_|github_pat_|glpat-|gloas-|gldt-|glrt-|glcbt-|glptt-|glft-|glimt-|glagent-|glsoat-|glffct-)|^[0-9a-f]{40}$/i;

/**
 * `compose.git_remote`: a repository's address whose user name, if any, is a name: a password in
 * it, or a user name shaped like a forge's token, would be printed and logged as part of an
 * address that is not secret; the token goes in `compose.git_token` (masked everywhere).
 */
export function gitRemote(description: string, schemes: readonly string[], example: string) {
  const shown = (value: string) => maskUserInfo(value, REDACTED);
  return leaf({ kind: "url", description, example, shown }, () =>
    urlSchema(schemes)
      .refine((value) => (URL.parse(value)?.password ?? "") === "", {
        error: "must not hold a password (https://user:password@host): give the token in compose.git_token",
      })
      .refine((value) => !FORGE_TOKEN.test(decodePercent(URL.parse(value)?.username ?? "")), {
        error: "holds a token as its user name (https://TOKEN@host): give the token in compose.git_token",
      })
      .optional(),
  );
}

export function credentials(meta: OptionMeta) {
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

/** A commit's author as Git writes it: `Name <email>`, neither holding angle brackets or a line break. */
export function gitAuthor(description: string, def: string) {
  return leaf({ kind: "string", description, default: def }, () =>
    z
      .string()
      .regex(/^[^<>\n]*[^<>\s][^<>\n]* <[^<>\s]*>$/, { error: 'must read "Name <email>"' })
      .default(def),
  );
}

/** `[[release_notes.sources]]`: an image repository and the repository its releases are published in. */
export function releaseSources(description: string) {
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

/** A TOML array of strings, or (from env and flags) one string of words separated by spaces. */
const words = (max: number) =>
  z
    .union([z.array(z.string().min(1).max(4096)).max(max), z.string().max(64 * 1024)])
    .transform((value) => (typeof value === "string" ? value.split(/\s+/).filter(Boolean) : value));

/** A TOML boolean, or (from env and flags) its text. */
const flag = (def: boolean) =>
  z
    .union([z.boolean(), z.enum(["true", "false"])])
    .transform((value) => value === true || value === "true")
    .default(def);

/**
 * `[[verify]]`: which signatures the images a table names must carry (docs/verification.md):
 * `images` globs, and `keys` (PEM files or inline PEM) or a keyless `issuer` with `identity` or
 * `identity_regexp`; `mode` enforce (held when unverified) or warn; `transparency_log`.
 */
export function verifyPolicies(description: string) {
  const fields = ["images", "keys", "issuer", "identity", "identity_regexp", "mode", "transparency_log"] as const;
  const example = [{ images: "ghcr.io/acme/*", keys: "/etc/svc/acme.pub", mode: "enforce" }];
  return leaf({ kind: "tables", description, default: [], example, fields }, () =>
    z
      .array(
        z
          .strictObject({
            images: words(64).refine((list) => list.length > 0, { error: "must name at least one image glob" }),
            keys: words(16).default([]),
            issuer: z.string().min(1).max(1024).optional(),
            identity: z.string().min(1).max(1024).optional(),
            identity_regexp: z.string().min(1).max(1024).optional(),
            mode: z.enum(["enforce", "warn"]).default("enforce"),
            transparency_log: flag(true),
          })
          .refine((p) => p.keys.length > 0 || p.issuer !== undefined, {
            error: "needs keys, or an issuer with identity or identity_regexp",
          })
          .refine((p) => p.issuer === undefined || (p.identity === undefined) !== (p.identity_regexp === undefined), {
            error: "an issuer needs exactly one of identity and identity_regexp",
          }),
      )
      .max(256)
      .default([]),
  );
}

const PEER_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const hasUserInfo = (url: string): boolean => {
  const parsed = URL.parse(url);
  return parsed !== null && (parsed.username !== "" || parsed.password !== "");
};

/** Other svc instances the dashboard shows beside this one (docs/dashboard.md). */
export function peers(description: string) {
  const fields = ["name", "url", "token", "ca_cert"] as const;
  const example = [{ name: "nas", url: "https://nas.lan:8080", token: "/run/secrets/nas_token" }];
  return leaf(
    { kind: "tables", description, default: [], example, secret: true, fields, secretFields: ["token"] },
    () =>
      z
        .array(
          z.strictObject({
            name: z.string().regex(PEER_NAME, { error: "must be 1-64 letters, digits, dots, dashes or underscores" }),
            // the token goes in `token`: a user name or password in the URL would be printed and logged with it
            url: z
              .url({ protocol: /^https?$/, error: "must be an http:// or https:// URL" })
              .refine((url) => !hasUserInfo(url), {
                error:
                  "must not hold a user name or password (https://user:password@host): give the peer's API token in token",
              }),
            token: nonEmpty(),
            ca_cert: nonEmpty().optional(),
          }),
        )
        .refine((list) => new Set(list.map((peer) => peer.name)).size === list.length, {
          error: "peer names must be distinct",
        })
        .default([]),
  );
}

/** A size with its default (`1GiB`): kept as written, read with parseSize where it is used. */
export function size(def: string, description: string) {
  return leaf({ kind: "string", description, default: def }, () =>
    z
      .string()
      .refine((value) => parseSize(value) !== undefined, {
        error: 'is not a size (examples: "512MiB", "1GiB", "2g", or plain bytes)',
      })
      .default(def),
  );
}
