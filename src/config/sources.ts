/**
 * The three sources of configuration, each turned into a layer: option key -> raw value plus
 * where it came from, in the form the user wrote it (TOML key and line, env name, flag).
 * Text from env and flags is coerced to the TOML types here; the schema validates all alike.
 */
import type { ArgDef, ArgsDef } from "./args.ts";
import { describeOption, OPTION_BY_KEY, OPTIONS, type OptionSpec, TABLE_KEYS } from "./options.ts";
import { isTomlDateTime, lineOf, type ParsedToml } from "./toml.ts";
import { parseBoolean } from "./values.ts";

export type SourceKind = "default" | "file" | "env" | "flag";

export interface Origin {
  source: SourceKind;
  /** The option as the user wrote it: TOML key, env name or flag. */
  name: string;
  /** `file:line` for values from a file. */
  where?: string;
}

export interface Entry {
  value: unknown;
  origin: Origin;
  /** For file values: `file:line` of a part of the value (an entry of an array of tables). */
  locate?: (subPath: (string | number)[]) => string;
}

export type Layer = Map<string, Entry>;

/** One problem, already phrased for the user. */
export type Problem = string;

export function describeOrigin(origin: Origin): string {
  return origin.where ? `${origin.where}: ${origin.name}` : origin.name;
}

// ---- "did you mean" ----

/** Optimal string alignment distance: a swap of two neighbours ("prot"/"port") counts as one. */
function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        best = Math.min(best, d[i - 2]![j - 2]! + 1);
      d[i]![j] = best;
    }
  }
  return d[a.length]![b.length]!;
}

/** Names longer than this are never compared: a name from a label is hostile, and the distance is quadratic. */
const MAX_COMPARED_CHARS = 128;

/**
 * The candidates closest to `unknown` (at most `max`, nearest first), each within the tolerance
 * `suggest` allows: what "did you mean" lists when several names are as likely.
 */
export function nearest(unknown: string, candidates: readonly string[], max = 3): string[] {
  if (unknown.length > MAX_COMPARED_CHARS) return [];
  const tolerance = Math.min(3, Math.max(1, Math.floor(unknown.length / 3)));
  return [...new Set(candidates)]
    .filter((candidate) => candidate.length <= MAX_COMPARED_CHARS)
    .map((candidate) => ({ candidate, distance: editDistance(unknown.toLowerCase(), candidate.toLowerCase()) }))
    .filter(({ distance }) => distance <= tolerance)
    .sort((a, b) => a.distance - b.distance || a.candidate.localeCompare(b.candidate))
    .slice(0, max)
    .map(({ candidate }) => candidate);
}

export function suggest(unknown: string, candidates: readonly string[], lastSegment?: (c: string) => string): string {
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of candidates) {
    const distance = editDistance(unknown.toLowerCase(), candidate.toLowerCase());
    if (distance < bestDistance) [best, bestDistance] = [candidate, distance];
  }
  // Tolerance grows with the length of the last segment, the part a typo is in.
  const tail = unknown.slice(unknown.lastIndexOf(".") + 1).replace(/^(--|SVC_)/, "");
  const tolerance = Math.min(3, Math.max(1, Math.floor(tail.length / 3)));
  if (best !== undefined && bestDistance <= tolerance) return ` (did you mean ${best}?)`;
  if (lastSegment) {
    // Right name in the wrong table: `port = 8080` at top level.
    const moved = candidates.find((c) => lastSegment(c) === lastSegment(unknown));
    if (moved) return ` (did you mean ${moved}?)`;
  }
  return "";
}

const tailOfKey = (key: string) => key.slice(key.lastIndexOf(".") + 1);

// ---- file ----

export function fileLayer(parsed: ParsedToml, file: string, problems: Problem[]): Layer {
  const layer: Layer = new Map();
  const where = (path: (string | number)[]) => {
    const line = lineOf(parsed.lines, path);
    return line === undefined ? file : `${file}:${line}`;
  };
  const visit = (table: Record<string, unknown>, prefix: string[]) => {
    for (const [name, value] of Object.entries(table)) {
      const path = [...prefix, name];
      const key = path.join(".");
      const option = OPTION_BY_KEY.get(key);
      if (option) {
        const dateProblem = findDateTime(value, path);
        if (dateProblem)
          problems.push(
            `${where(dateProblem)}: ${formatPath(dateProblem)}: is a TOML date/time; quote it to make it a string`,
          );
        else
          layer.set(key, {
            value,
            origin: { source: "file", name: key, where: where(path) },
            locate: (sub) => where([...path, ...sub]),
          });
        continue;
      }
      if (TABLE_KEYS.has(key)) {
        if (isPlainTable(value)) visit(value, path);
        else problems.push(`${where(path)}: ${key}: must be a table ([${key}])`);
        continue;
      }
      problems.push(
        `${where(path)}: ${key}: unknown option${suggest(key, [...OPTION_BY_KEY.keys(), ...TABLE_KEYS], tailOfKey)}`,
      );
    }
  };
  visit(parsed.data, []);
  return layer;
}

function isPlainTable(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value) && !isTomlDateTime(value);
}

function findDateTime(value: unknown, path: (string | number)[]): (string | number)[] | undefined {
  if (isTomlDateTime(value)) return path;
  if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) {
      const found = findDateTime(item, [...path, i]);
      if (found) return found;
    }
  } else if (value && typeof value === "object") {
    for (const [k, item] of Object.entries(value)) {
      const found = findDateTime(item, [...path, k]);
      if (found) return found;
    }
  }
  return undefined;
}

export function formatPath(path: readonly (string | number | symbol)[]): string {
  return path.map((p, i) => (typeof p === "number" ? `[${p}]` : i === 0 ? String(p) : `.${String(p)}`)).join("");
}

// ---- text (env and flags) ----

/** Coerces env/flag text to the option's TOML type; returns a problem text on failure. */
export function coerceText(option: OptionSpec, text: string): { value: unknown } | { problem: string } {
  switch (option.meta.kind) {
    case "boolean": {
      const value = parseBoolean(text);
      if (value !== undefined) return { value };
      return { problem: `expected true/false, 1/0 or yes/no, got ${JSON.stringify(text)}` };
    }
    case "integer":
      if (/^\s*-?\d+\s*$/.test(text)) return { value: Number(text) };
      return { problem: `expected an integer, got ${option.meta.secret ? "a non-integer" : JSON.stringify(text)}` };
    case "list":
      return option.meta.spaceSeparated ? splitUrls(text) : { value: splitNames(text) };
    case "credentials":
    case "tables":
      return parseCredentials(text, option.meta.fields);
    default:
      return { value: text };
  }
}

/**
 * Names (containers, hosts, addresses) in env and flags: separated by commas or whitespace, as
 * Watchtower reads them (`"a b"`, `"a,b"` and `"a, b"` are two names); no name holds either.
 */
export function splitNames(text: string): string[] {
  return text.split(/[\s,]+/).filter((s) => s !== "");
}

/** URLs in env and flags: separated by whitespace (a URL may hold commas), a comma before another URL named. */
function splitUrls(text: string): { value: string[] } | { problem: string } {
  const urls = text.split(/\s+/).filter(Boolean);
  const joined = urls.find((url) => /,\s*[a-z][a-z0-9+.-]*:\/\//i.test(url));
  if (joined)
    return {
      problem: `URLs are separated by spaces, not commas (a URL may hold commas): a comma before ${/,\s*([a-z][a-z0-9+.-]*:\/\/)/i.exec(joined)![1]}...`,
    };
  return { value: urls };
}

const CREDENTIAL_FIELDS = ["host", "username", "password"];

/** `host=H,username=U,password=P;host=H2`: each field with its initial as the value, then a second entry. */
function tableForm(fields: readonly string[]): string {
  const value = (field: string) => field[0]!.toUpperCase();
  return `${fields.map((f) => `${f}=${value(f)}`).join(",")};${fields[0]}=${value(fields[0]!)}2`;
}

/** `host=H,username=U,password=P;host=H2` (docs/configuration.md), or another array of tables' fields. Values are never echoed: they may be secrets. */
export function parseCredentials(
  text: string,
  fields: readonly string[] = CREDENTIAL_FIELDS,
): { value: Record<string, string>[] } | { problem: string } {
  const entries: Record<string, string>[] = [];
  const parts = text
    .split(";")
    .map((s) => s.trim())
    .filter(Boolean);
  for (const [index, part] of parts.entries()) {
    const entry: Record<string, string> = {};
    for (const field of part
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean)) {
      const eq = field.indexOf("=");
      const name = eq < 0 ? field : field.slice(0, eq).trim();
      if (eq < 0 || !fields.includes(name)) {
        const hint = eq < 0 ? "expected field=value" : `unknown field "${name}"${suggest(name, [...fields])}`;
        return { problem: `entry ${index + 1}: ${hint} (form: ${tableForm(fields)})` };
      }
      entry[name] = field.slice(eq + 1).trim();
    }
    entries.push(entry);
  }
  return { value: entries };
}

// ---- env ----

const OPTION_BY_ENV = new Map(OPTIONS.map((o) => [o.env, o]));
/** Variables of svc itself that are not options. */
const ENV_NOT_OPTIONS = new Set(["SVC_CONFIG"]);
/** Reserved for svc's own test suite and sandbox; never options. */
const ENV_RESERVED_PREFIXES = ["SVC_TEST_", "SVC_SANDBOX_"];

export function envLayer(env: Record<string, string | undefined>, problems: Problem[]): Layer {
  const layer: Layer = new Map();
  for (const [name, text] of Object.entries(env)) {
    if (!name.startsWith("SVC_") || text === undefined || ENV_NOT_OPTIONS.has(name)) continue;
    if (ENV_RESERVED_PREFIXES.some((p) => name.startsWith(p))) continue;
    const option = OPTION_BY_ENV.get(name);
    if (!option) {
      problems.push(
        `${name}: unknown environment variable${suggest(name, [...OPTION_BY_ENV.keys(), ...ENV_NOT_OPTIONS])}`,
      );
      continue;
    }
    const coerced = coerceText(option, text);
    if ("problem" in coerced) problems.push(`${name}: ${coerced.problem}`);
    else layer.set(option.key, { value: coerced.value, origin: { source: "env", name } });
  }
  return layer;
}

/** `docker.host` falls back to DOCKER_HOST before its default, as the Docker CLI does. */
export function dockerCliEnvLayer(env: Record<string, string | undefined>): Layer {
  const layer: Layer = new Map();
  const host = env.DOCKER_HOST?.trim();
  if (host) layer.set("docker.host", { value: host, origin: { source: "env", name: "DOCKER_HOST" } });
  // Where the Docker CLI itself looks for config.json, so `docker login` credentials just work.
  const dockerConfig = env.DOCKER_CONFIG?.trim();
  const home = env.HOME?.trim();
  if (dockerConfig)
    layer.set("docker.config", { value: dockerConfig, origin: { source: "env", name: "DOCKER_CONFIG" } });
  else if (home)
    layer.set("docker.config", {
      value: `${home.replace(/\/$/, "")}/.docker`,
      origin: { source: "env", name: "HOME" },
    });
  return layer;
}

// ---- flags ----

/*
 * The command line's flags (args.ts): the command's own (COMMAND_ARGS) and the schema's options
 * (optionArgs), declared once for --help (commands/help.ts) and for parsing (parseArgv).
 */

export interface CommandFlags {
  config?: { path: string; name: string };
  /** true: write to stdout; a string: the file */
  generateConfig?: true | string;
  force: boolean;
  printConfig: boolean;
  help: boolean;
  version: boolean;
}

export interface ParsedArgv {
  layer: Layer;
  positionals: string[];
  command: CommandFlags;
  problems: Problem[];
  /** the options meant by flags refused with advice (`--interval` means poll_interval) */
  meant: string[];
}

/** What to say about a flag that is not svc's (Watchtower's, from the config room's index). */
export type Advise = (flag: string) => { text: string; takesValue: boolean; option?: string } | undefined;

/** The command's own flags: not options of the configuration. */
export const COMMAND_ARGS = {
  config: {
    type: "string",
    alias: "c",
    valueHint: "path",
    description: "Configuration file (env SVC_CONFIG; default ./svc.toml when present)",
  },
  "generate-config": {
    type: "string",
    valueHint: "file",
    description: "Write a commented sample configuration to FILE (or stdout) and exit",
  },
  force: { type: "boolean", description: "With --generate-config: overwrite an existing FILE" },
  "print-config": { type: "boolean", description: "Print the effective configuration (secrets redacted) and exit" },
  version: { type: "boolean", alias: "v", description: "Print the version and exit" },
  help: { type: "boolean", alias: "h", description: "Show this help and exit" },
} as const satisfies ArgsDef;

/** The schema's options that `wanted` picks, as arguments saying their variable and default. */
export function optionArgs(wanted: (option: OptionSpec) => boolean = () => true): ArgsDef {
  return Object.fromEntries(
    OPTIONS.filter(wanted).map((option): [string, ArgDef] => {
      const { kind, default: value, defaultText } = option.meta;
      const shown =
        defaultText ??
        (value === undefined || (Array.isArray(value) && value.length === 0) ? undefined : String(value));
      const description = `${describeOption(option)} (env ${option.env}${shown ? `; default ${shown}` : ""})`;
      return [
        option.flag.slice(2),
        kind === "boolean" ? { type: "boolean", description } : { type: "string", valueHint: kind, description },
      ];
    }),
  );
}

/** `--generate-config` takes a value only when the next argument is not a flag: no type of ArgDef says so. */
const OPTIONAL_VALUE: ReadonlySet<string> = new Set(["generate-config"]);

const OPTION_BY_FLAG = new Map(OPTIONS.map((o) => [o.flag, o]));

interface Flag {
  name: string;
  def: ArgDef;
  option?: OptionSpec;
}

/** Every flag and alias as written (`--config`, `-c`), from svc's arguments; built on first use. */
let flagTable: Map<string, Flag> | undefined;
function flags(): Map<string, Flag> {
  if (flagTable) return flagTable;
  flagTable = new Map();
  for (const [name, def] of Object.entries<ArgDef>({ ...COMMAND_ARGS, ...optionArgs() })) {
    const flag: Flag = { name, def, option: OPTION_BY_FLAG.get(`--${name}`) };
    flagTable.set(`--${name}`, flag);
    if (def.alias) flagTable.set(`-${def.alias}`, flag);
  }
  return flagTable;
}

/** Records a flag of the command itself; a problem when its value is missing. */
function setCommandFlag(command: CommandFlags, name: string, value: string | undefined, flag: string) {
  if (name === "config") {
    // Watchtower's -c is its cleanup switch: `svc -c --run-once` is most likely that habit
    if (value === undefined || value === "")
      return `${flag}: needs a file path${flag === "-c" ? " (-c is svc's --config; Watchtower's -c is svc's --cleanup)" : ""}`;
    command.config = { path: value, name: flag };
  } else if (name === "generate-config") command.generateConfig = value || true;
  else if (name === "print-config") command.printConfig = true;
  else command[name as "force" | "help" | "version"] = true;
  return undefined;
}

/** `advise` says what to use instead of an unknown flag (Watchtower's, from the config room's index). */
export function parseArgv(argv: readonly string[], advise: Advise = () => undefined): ParsedArgv {
  const layer: Layer = new Map();
  const positionals: string[] = [];
  const problems: Problem[] = [];
  const meant: string[] = [];
  const command: CommandFlags = { force: false, printConfig: false, help: false, version: false };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "--") {
      positionals.push(...argv.slice(i + 1));
      break;
    }
    if (!arg.startsWith("-") || arg === "-") {
      positionals.push(arg);
      continue;
    }
    const eq = arg.indexOf("=");
    const flag = eq < 0 ? arg : arg.slice(0, eq);
    const inline = eq < 0 ? undefined : arg.slice(eq + 1);
    const nextValue = () => {
      if (inline !== undefined) return inline;
      const next = argv[i + 1];
      if (next === undefined || (next.startsWith("--") && next.length > 2)) return undefined;
      i++;
      return next;
    };
    // an optional value is taken only when the next argument is not a flag
    const optionalValue = () => {
      if (inline !== undefined) return inline;
      const next = argv[i + 1];
      if (next === undefined || next.startsWith("-")) return undefined;
      i++;
      return next;
    };
    const known = flags().get(flag);
    if (known && !known.option) {
      const value =
        known.def.type === "boolean" ? undefined : OPTIONAL_VALUE.has(known.name) ? optionalValue() : nextValue();
      const problem = setCommandFlag(command, known.name, value, flag);
      if (problem) problems.push(problem);
      continue;
    }
    const option = known?.option;
    if (option) {
      if (option.meta.kind === "boolean" && inline === undefined) {
        layer.set(option.key, { value: true, origin: { source: "flag", name: flag } });
        continue;
      }
      const text = nextValue();
      if (text === undefined) {
        problems.push(`${flag}: needs a value`);
        continue;
      }
      const coerced = coerceText(option, text);
      if ("problem" in coerced) {
        problems.push(`${flag}: ${coerced.problem}`);
        continue;
      }
      // A repeated list flag adds to the list; any other repeated flag: the last one wins.
      const previous = layer.get(option.key);
      const value =
        option.meta.kind === "list" && Array.isArray(previous?.value)
          ? [...(previous.value as string[]), ...(coerced.value as string[])]
          : coerced.value;
      layer.set(option.key, { value, origin: { source: "flag", name: flag } });
      continue;
    }
    const negated = flag.startsWith("--no-") ? OPTION_BY_FLAG.get(`--${flag.slice(5)}`) : undefined;
    if (negated?.meta.kind === "boolean" && inline === undefined) {
      layer.set(negated.key, { value: false, origin: { source: "flag", name: flag } });
      continue;
    }
    const advice = advise(flag);
    if (advice?.takesValue) nextValue();
    if (advice?.option) meant.push(advice.option);
    problems.push(
      advice
        ? `${flag}: unknown flag; ${advice.text}`
        : `${flag}: unknown flag${suggest(
            flag,
            [...flags().keys()].filter((name) => name.startsWith("--")),
          )}`,
    );
  }
  return { layer, positionals, command, problems, meant };
}
