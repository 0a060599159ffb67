/**
 * loadConfig: file, env and flags merged (flag > env > file > default), validated by the schema,
 * checked across options, secrets read from files. Every problem is collected and reported at
 * once, naming the option the way the user wrote it; nothing else is touched before that.
 */
import { accessSync, constants, existsSync, readFileSync, statSync } from "node:fs";
import { hostname } from "node:os";
import { dirname, isAbsolute, join, resolve } from "node:path";
import type { z } from "zod";
import { SvcError } from "../core/errors.ts";
import { defaultStateDir } from "./builders.ts";
import { assembleConfig, defaultValue, envName, flagName, OPTION_BY_KEY, OPTIONS, type OptionSpec } from "./options.ts";
import type { Config } from "./schema.ts";
import {
  describeOrigin,
  dockerCliEnvLayer,
  type Entry,
  envLayer,
  fileLayer,
  formatPath,
  type Layer,
  type Origin,
  type Problem,
  parseArgv,
} from "./sources.ts";
import { parseToml } from "./toml.ts";
import { WATCHTOWER_CLASHES, watchtowerEnvLayer, watchtowerFlagAdvice } from "./watchtower.ts";

export interface LoadOptions {
  argv: readonly string[];
  env: Record<string, string | undefined>;
  cwd: string;
  /** for a one-off command (svc rollback): the configuration need not say when cycles run */
  oneOff?: boolean;
  /** --print-config: return what can be built (a refused value falls back to its default) with the problems, instead of throwing */
  keepGoing?: boolean;
}

export interface LoadResult {
  config: Config;
  /** Where each option's effective value came from, keyed by TOML key. */
  sources: Record<string, Origin>;
  /** Not errors, for the caller to log (e.g. run_once with API features on). */
  warnings: string[];
  /**
   * What the caller says at info: the person's latest word doing what was asked (`svc --run-once`
   * beside a file with a schedule and the API: one line, not a warning).
   */
  notes: string[];
  /** The configuration file read, if any. */
  file?: string;
  /** With keepGoing: every problem svc would refuse to start with, and the options whose value was refused. */
  problems?: Problem[];
  refused?: string[];
}

export const DEFAULT_FILE = "svc.toml";

export async function loadConfig({
  argv,
  env,
  cwd,
  oneOff = false,
  keepGoing = false,
}: LoadOptions): Promise<LoadResult> {
  const problems: Problem[] = [];
  const warnings: string[] = [];
  const args = parseArgv(argv, watchtowerFlagAdvice);
  problems.push(...args.problems);

  const file = chooseFile(args.command.config, env, cwd, problems);
  let fileEntries: Layer = new Map();
  if (file) {
    const text = await readConfigFile(file.path, file.display);
    fileEntries = fileLayer(parseToml(text, file.display), file.display, problems);
  }
  // Watchtower's variables sit below svc's own: SVC_* wins when both are set
  const layers = [
    dockerCliEnvLayer(env),
    fileEntries,
    watchtowerEnvLayer(env, problems, warnings),
    envLayer(env, problems),
    args.layer,
  ];
  const merged = mergeLayers(layers);
  addPositionals(merged, args.positionals);
  const fileDir = file ? dirname(resolve(cwd, file.path)) : cwd;
  anchorFilePaths(merged, fileDir);

  const values = validateLeaves(merged, problems);
  const notes: string[] = [];
  letTheLatestWordSayWhen(merged, values, notes);
  if (!merged.has("state_dir")) values.set("state_dir", defaultStateDir(env));
  checkAcrossOptions(values, merged, cwd, problems, warnings, oneOff || args.meant.some(isWhenOption));
  sayRunOnceOverTheService(merged, notes, warnings);
  if (problems.length > 0 && !keepGoing) throw configError(problems);

  const config: Config = assembleConfig(values);
  resolveSecrets(config, merged, { cwd, fileDir, home: env.HOME }, problems);
  if (problems.length > 0 && !keepGoing) throw configError(problems);

  const refused = [...merged.keys()].filter((key) => OPTION_BY_KEY.has(key) && !values.has(key));
  return {
    config,
    sources: sourcesOf(merged),
    warnings,
    notes,
    file: file?.path,
    ...(keepGoing ? { problems, refused } : {}),
  };
}

function configError(problems: Problem[]): SvcError {
  const count = problems.length === 1 ? "1 problem" : `${problems.length} problems`;
  return new SvcError("config", `invalid configuration (${count})`, { details: problems });
}

function chooseFile(
  flag: { path: string; name: string } | undefined,
  env: Record<string, string | undefined>,
  cwd: string,
  problems: Problem[],
) {
  const named = flag ?? (env.SVC_CONFIG ? { path: env.SVC_CONFIG, name: "SVC_CONFIG" } : undefined);
  if (named) {
    const path = resolve(cwd, named.path);
    if (!existsSync(path)) {
      problems.push(
        `${named.name}: configuration file ${named.path} does not exist${clashNote(named.name, named.path)}`,
      );
      return undefined;
    }
    return { path, display: named.path };
  }
  const fallback = resolve(cwd, DEFAULT_FILE);
  return existsSync(fallback) ? { path: fallback, display: DEFAULT_FILE } : undefined;
}

async function readConfigFile(path: string, display: string): Promise<string> {
  try {
    return await Bun.file(path).text();
  } catch (error) {
    throw new SvcError("config", `cannot read configuration file ${display}`, {
      details: [`${display}: ${(error as Error).message}`],
    });
  }
}

function mergeLayers(layers: Layer[]): Map<string, Entry> {
  const merged = new Map<string, Entry>();
  for (const layer of layers) for (const [key, entry] of layer) merged.set(key, entry);
  return merged;
}

const API_KEYS = ["http_api.update", "http_api.metrics", "http_api.ui"];
const RUN_ONCE_API = "run_once: the HTTP API is not started in run-once mode";

/** The options that say when cycles run (poll_interval, schedule, run_once): one at a time. */
const WHEN_OPTIONS = OPTIONS.filter((option) => option.meta.rules?.exclusiveWith).map((option) => option.key);
const isWhenOption = (key: string) => WHEN_OPTIONS.includes(key);
const LEVELS: Record<Origin["source"], number> = { default: 0, file: 1, env: 2, flag: 3 };

/**
 * A "when" option given on a later level (flag > environment > file) is the person's latest word:
 * it replaces the ones below it, with one line saying so (`svc --run-once` beside a file that sets
 * poll_interval tries the file once). Two given on the same level still conflict.
 */
function letTheLatestWordSayWhen(merged: Map<string, Entry>, values: Map<string, unknown>, notes: string[]): void {
  const inForce = WHEN_OPTIONS.filter((key) => {
    const entry = merged.get(key);
    return entry !== undefined && entry.value !== false;
  });
  const top = Math.max(...inForce.map((key) => LEVELS[merged.get(key)!.origin.source]));
  const winners = inForce.filter((key) => LEVELS[merged.get(key)!.origin.source] === top);
  for (const key of inForce) {
    const entry = merged.get(key)!;
    if (LEVELS[entry.origin.source] === top) continue;
    // a bad value replaced was already reported: only its conflict goes
    merged.delete(key);
    values.delete(key);
    const place = top === LEVELS.flag ? "on the command line" : "in the environment";
    notes.push(
      `${winners.map((w) => merged.get(w)!.origin.name).join(" and ")} given ${place} replaces ${describeOrigin(entry.origin)} for this run`,
    );
  }
}

/**
 * `svc --run-once` beside a file that sets a schedule and the API (the README's first steps) is
 * one cycle asked for on purpose: the schedule replaced and the API not started are one info line.
 * The API turned on at the run-once's own level (both flags) is still a warning: that contradicts.
 */
function sayRunOnceOverTheService(merged: Map<string, Entry>, notes: string[], warnings: string[]): void {
  const runOnce = merged.get("run_once");
  const apiWarning = warnings.findIndex((w) => w.startsWith(RUN_ONCE_API));
  if (runOnce?.value !== true || apiWarning < 0) return;
  const level = LEVELS[runOnce.origin.source];
  const apiKeys = API_KEYS.filter((key) => merged.get(key)?.value === true);
  if (apiKeys.some((key) => LEVELS[merged.get(key)!.origin.source] >= level)) return;
  warnings.splice(apiWarning, 1);
  const api = `the HTTP API (${apiKeys.map((key) => describeOrigin(merged.get(key)!.origin)).join(", ")}) is not started`;
  const replaced = notes.findIndex((note) => note.startsWith(`${runOnce.origin.name} given`));
  if (replaced >= 0) notes[replaced] = `${notes[replaced]}; ${api}`;
  else notes.push(`${runOnce.origin.name}: ${api} for this run`);
}

/** Positional arguments are container names, added to `containers` from whatever source. */
function addPositionals(merged: Map<string, Entry>, positionals: string[]): void {
  if (positionals.length === 0) return;
  const current = merged.get("containers");
  const base = Array.isArray(current?.value) ? (current.value as string[]) : [];
  const names = [...new Set([...base, ...positionals])];
  merged.set("containers", {
    value: names,
    origin: { source: "flag", name: current?.origin.source === "flag" ? current.origin.name : "arguments" },
  });
}

/** Validates each set option with its own schema, so a problem names where the value came from. */
function validateLeaves(merged: Map<string, Entry>, problems: Problem[]) {
  const values = new Map<string, unknown>();
  for (const option of OPTIONS) {
    const entry = merged.get(option.key);
    if (!entry) continue;
    const result = option.schema.safeParse(entry.value);
    if (result.success) {
      values.set(option.key, result.data);
    } else {
      for (const issue of result.error.issues) problems.push(leafProblem(option, entry, issue));
    }
  }
  return values;
}

function describeType(value: unknown): string {
  if (Array.isArray(value)) return "an array";
  if (value === null || value === undefined) return "nothing";
  if (typeof value === "object") return "a table";
  return `a ${typeof value}`;
}

function leafProblem(option: OptionSpec, entry: Entry, issue: z.core.$ZodIssue): Problem {
  const sub = issue.path as (string | number)[];
  const where = sub.length === 0 ? describeOrigin(entry.origin) : describePart(entry, sub);
  if (issue.code === "invalid_type") {
    if (sub.length > 0)
      return `${where}: ${issue.input === undefined ? "is required" : `expected a ${issue.expected}`}`;
    return `${where}: expected ${labelOf(option)}, got ${describeType(entry.value)}${shown(option, entry.value)}`;
  }
  if (issue.code === "unrecognized_keys") {
    return `${where}: unknown field${issue.keys.length > 1 ? "s" : ""} ${issue.keys.join(", ")} (expected ${option.meta.fields?.join(", ")})`;
  }
  const got = typeof entry.value === "string" && option.meta.shown ? option.meta.shown(entry.value) : entry.value;
  const value = sub.length === 0 && !option.meta.secret ? ` (got ${JSON.stringify(got)})` : "";
  return `${where}: ${issue.message}${value}`;
}

/** A part of a value: `svc.toml:12: registry_credentials[1].host`, or `SVC_REGISTRY_CREDENTIALS: entry 2 host`. */
function describePart(entry: Entry, sub: (string | number)[]): string {
  if (entry.origin.source === "file") {
    const at = entry.locate ? entry.locate(sub) : entry.origin.where;
    return `${at}: ${entry.origin.name}${formatPath(["", ...sub]).replace(/^\./, ".")}`;
  }
  const [index, ...rest] = sub;
  const part =
    typeof index === "number" ? `entry ${index + 1}${rest.length ? ` ${formatPath(rest)}` : ""}` : formatPath(sub);
  return `${entry.origin.name}: ${part}`;
}

function labelOf(option: OptionSpec): string {
  switch (option.meta.kind) {
    case "boolean":
      return "a boolean (true or false)";
    case "integer":
      return "an integer";
    case "duration":
      return 'a duration ("30s", "5m", "1h30m" or plain seconds)';
    case "list":
      return "an array of strings";
    case "credentials":
    case "tables":
      return "an array of tables";
    default:
      return "a string";
  }
}

function shown(option: OptionSpec, value: unknown): string {
  if (option.meta.secret || typeof value === "object") return "";
  return ` (${JSON.stringify(value)})`;
}

// ---- checks across options ----

/** How to name an option in a message: as the user wrote it, or in all three forms if unset. */
function named(key: string, merged: Map<string, Entry>): string {
  const entry = merged.get(key);
  if (entry && entry.origin.source !== "default") return describeOrigin(entry.origin);
  return `${key} (${flagName(key)}, ${envName(key)})`;
}

function checkAcrossOptions(
  values: Map<string, unknown>,
  merged: Map<string, Entry>,
  cwd: string,
  problems: Problem[],
  warnings: string[],
  oneOff: boolean,
): void {
  const get = (key: string) => values.get(key) ?? defaultOf(key);
  const isSet = (key: string) => values.get(key) !== undefined;
  // A value given but invalid is already reported: do not add "nothing would run" and the like.
  const invalid = (key: string) => merged.has(key) && !values.has(key);
  // Whether an option is in force: a boolean when true; anything else when given, even if invalid
  // (a schedule given is one the user chose: it counts for exclusivity).
  const active = (key: string) =>
    OPTION_BY_KEY.get(key)?.meta.kind === "boolean" ? get(key) === true : isSet(key) || invalid(key);

  const reportedGroups = new Set<string>();
  for (const option of OPTIONS) {
    const rules = option.meta.rules;
    if (!rules) continue;
    if (rules.exclusiveWith) {
      // the group in declaration order, reported once, naming the members in force
      const group = OPTIONS.map((o) => o.key).filter((key) => key === option.key || rules.exclusiveWith!.includes(key));
      const inForce = group.filter(active);
      if (inForce.length > 1 && !reportedGroups.has(group.join())) {
        reportedGroups.add(group.join());
        problems.push(
          `${inForce.map((key) => named(key, merged)).join(" and ")}: ${group.slice(0, -1).join(", ")} and ${group.at(-1)} are mutually exclusive; set only one`,
        );
      }
    }
    if (rules.requires && active(option.key) && !invalid(option.key))
      requireAll(option.key, rules.requires, values, merged, problems);
    const value = values.get(option.key);
    if (rules.readable && typeof value === "string") {
      const problem = unreadable(resolve(cwd, value));
      if (problem) problems.push(`${named(option.key, merged)}: cannot read ${value}: ${problem}`);
    }
  }

  const schedules = OPTIONS.filter((o) => o.meta.rules?.exclusiveWith && active(o.key));
  const anyInvalid = [...OPTIONS.filter((o) => o.meta.rules?.exclusiveWith).map((o) => o.key), "http_api.update"].some(
    invalid,
  );
  if (schedules.length === 0 && get("http_api.update") !== true && !anyInvalid && !oneOff) {
    problems.push(
      `nothing would ever run: set one of poll_interval (--poll-interval, SVC_POLL_INTERVAL), schedule (--schedule, SVC_SCHEDULE) or run_once (--run-once, SVC_RUN_ONCE), or enable http_api.update (--http-api-update, SVC_HTTP_API_UPDATE)`,
    );
  }

  const alias = (get("peers") as Config["peers"]).find((peer) => peer.name.toLowerCase() === hostname().toLowerCase());
  if (alias) {
    problems.push(
      `${named("peers", merged)}: the peer ${alias.name} has this host's name: the dashboard names this host so, and would show both as one; give the peer another name`,
    );
  }
  checkPeers(values, merged, problems, warnings);

  const runOnce = get("run_once") === true;
  const apiOn = API_KEYS.filter((key) => get(key) === true);
  if (runOnce && apiOn.length > 0) {
    warnings.push(`${RUN_ONCE_API}; ignoring ${apiOn.map((key) => named(key, merged)).join(" and ")}`);
  } else {
    const needsToken =
      get("http_api.update") === true ||
      get("http_api.ui") === true ||
      (get("http_api.metrics") === true && get("http_api.metrics_no_auth") !== true);
    if (needsToken && !isSet("http_api.token") && !invalid("http_api.token")) {
      const why = apiOn.map((key) => named(key, merged)).join(" and ");
      problems.push(
        `${why}: an authenticated endpoint is enabled but no token is set: set http_api.token (--http-api-token, SVC_HTTP_API_TOKEN)`,
      );
    }
  }
}

/**
 * Peers are shown by the dashboard (http_api.ui) and reached through /v1/peers (ui or update):
 * with neither on, nothing would ever ask them, which is a mistake worth stopping for; with the
 * update API only, they are reachable but shown nowhere, which is said.
 */
function checkPeers(
  values: Map<string, unknown>,
  merged: Map<string, Entry>,
  problems: Problem[],
  warnings: string[],
): void {
  const peers = values.get("peers");
  if (!Array.isArray(peers) || peers.length === 0) return;
  const on = (key: string) => (values.get(key) ?? defaultOf(key)) === true;
  if (on("http_api.ui")) return;
  const turnOn = "set http_api.ui (--http-api-ui, SVC_HTTP_API_UI) on this host (docs/dashboard.md)";
  if (on("http_api.update"))
    warnings.push(
      `${named("peers", merged)}: the dashboard that shows them is off (only /v1/peers/NAME reaches them): ${turnOn}`,
    );
  else
    problems.push(`${named("peers", merged)}: nothing would ever ask them: they are shown by the dashboard; ${turnOn}`);
}

/** The options an option in force requires (OptionRules.requires), each reported when missing. */
function requireAll(
  enabler: string,
  required: readonly string[],
  values: Map<string, unknown>,
  merged: Map<string, Entry>,
  problems: Problem[],
): void {
  const how = OPTION_BY_KEY.get(enabler)?.meta.kind === "boolean" ? "is true" : "is set";
  for (const key of required) {
    const value = values.get(key);
    const given = merged.has(key) && !values.has(key); // given but invalid: already reported
    const missing = !given && (value === undefined || (Array.isArray(value) && value.length === 0));
    if (missing) problems.push(`${named(enabler, merged)}: ${how}, so ${named(key, merged)} is required`);
  }
}

function defaultOf(key: string): unknown {
  const option = OPTION_BY_KEY.get(key);
  return option ? defaultValue(option) : undefined;
}

/** Why a file cannot be read, or undefined when it can. */
function unreadable(path: string): string | undefined {
  try {
    if (!statSync(path).isFile()) return "not a regular file";
    accessSync(path, constants.R_OK);
    return undefined;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return code === "ENOENT" ? "no such file" : code === "EACCES" ? "permission denied" : (error as Error).message;
  }
}

/**
 * A relative path written in the configuration file means "next to this file" (services are
 * often started from /); paths from flags and env stay relative to the working directory.
 */
function anchorFilePaths(merged: Map<string, Entry>, fileDir: string): void {
  for (const option of OPTIONS) {
    if (option.meta.kind !== "path") continue;
    const entry = merged.get(option.key);
    if (
      entry?.origin.source === "file" &&
      typeof entry.value === "string" &&
      entry.value !== "" &&
      !isAbsolute(entry.value)
    ) {
      entry.value = resolve(fileDir, entry.value);
    }
  }
}

// ---- secrets ----

/** What a secret value that names a file looks like; such a value is never taken as the secret. */
const PATH_SHAPED = /^(?:\/|\.\.?\/|~\/)[^\n]*$/;

/**
 * Secrets (docs/configuration.md): a value that is a path to a readable file is replaced by the file's
 * trimmed contents. A relative path written in the configuration file is relative to that file's
 * folder (services are often started from /), one from a flag or env to the working directory.
 * A value shaped like a path (`/`, `./`, `../`, `~/`) must name a readable regular file: a typo in
 * the path, or the folder Docker creates for a missing bind-mounted file, would otherwise become
 * the secret itself (docs/security.md). Other values that name no file are the secret.
 */
function resolveSecrets(
  config: Config,
  merged: Map<string, Entry>,
  base: { cwd: string; fileDir: string; home?: string },
  problems: Problem[],
): void {
  const resolveOne = (value: string | undefined, label: string, key: string): string | undefined => {
    if (value === undefined) return undefined;
    const home = base.home !== undefined && value.startsWith("~/") ? join(base.home, value.slice(2)) : value;
    const path = resolve(merged.get(key)?.origin.source === "file" ? base.fileDir : base.cwd, home);
    const why = value.includes("\n") ? "not a path" : unreadable(path);
    if (why !== undefined) {
      if (PATH_SHAPED.test(value))
        problems.push(
          `${label}: the secret file ${value} cannot be read (${why}); a value shaped like a path must name the file holding the secret`,
        );
      return value;
    }
    const contents = readFileSync(path, "utf8").trim();
    if (contents === "") problems.push(`${label}: the secret file ${value} is empty`);
    return contents;
  };
  for (const option of OPTIONS) {
    if (!option.meta.secret || option.meta.kind === "credentials" || option.meta.kind === "tables") continue;
    const parent = option.path.slice(0, -1).reduce<any>((node, part) => node[part], config);
    const name = option.path[option.path.length - 1]!;
    const value = parent[name];
    if (Array.isArray(value))
      parent[name] = value.map((entry: string, index) =>
        resolveOne(entry, `${named(option.key, merged)} entry ${index + 1}`, option.key),
      );
    else if (value !== undefined) parent[name] = resolveOne(value, named(option.key, merged), option.key);
  }
  for (const [index, credential] of config.registry_credentials.entries()) {
    const label = `${named("registry_credentials", merged)} entry ${index + 1}`;
    credential.username = resolveOne(credential.username, `${label} username`, "registry_credentials");
    credential.password = resolveOne(credential.password, `${label} password`, "registry_credentials");
    if (credential.username === undefined) delete credential.username;
    if (credential.password === undefined) delete credential.password;
  }
  for (const [index, peer] of config.peers.entries()) {
    peer.token = resolveOne(peer.token, `${named("peers", merged)} entry ${index + 1} token`, "peers")!;
  }
}

function sourcesOf(merged: Map<string, Entry>): Record<string, Origin> {
  const sources: Record<string, Origin> = {};
  for (const option of OPTIONS)
    sources[option.key] = merged.get(option.key)?.origin ?? { source: "default", name: option.key };
  return sources;
}

/**
 * For a flag that is svc's own but meant something else in Watchtower (`-c`) and was given a bare
 * word (`svc -c web`: Watchtower's cleanup, then a container name): what Watchtower meant.
 */
function clashNote(flag: string, path: string): string {
  const meant = WATCHTOWER_CLASHES[flag];
  return meant && !/[./]/.test(path) ? ` (${flag} is svc's --config; Watchtower's ${flag} is svc's ${meant})` : "";
}
