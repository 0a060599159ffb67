/**
 * The options as every other module reads them, walked from the declaration (schema.ts) once at
 * load: each option's TOML key, table, flag and env name, metadata and lazily built schema; and
 * what derives from them (the description every form shows, defaults, the assembled
 * configuration, a type's label).
 */
import { z } from "zod";
import { CHANNEL_TITLES, type ChannelName, formatBound, type Leaf, type OptionMeta, type Table } from "./builders.ts";
import { CONFIG, type Config } from "./schema.ts";
import { parseDuration } from "./values.ts";

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
 * The description every form shows (sample, docs, --help): the option's meaning, the label that
 * overrides it, then its rules towards other options, said from this option's side.
 */
export function describeOption(option: OptionSpec): string {
  const rules = option.meta.rules ?? {};
  const name = (key: string) => key.split(".").pop()!;
  const and = (keys: readonly string[]) => {
    const names = keys.map(name);
    return names.length < 2 ? names.join("") : `${names.slice(0, -1).join(", ")} and ${names.at(-1)}`;
  };
  const parts = [option.meta.description];
  const label = option.meta.label;
  if (label) parts.push(`label ${label.name} ${label.only ?? "overrides"} it for one container`);
  if (rules.enables) parts.push(`enables the ${CHANNEL_TITLES[rules.enables]} channel`);
  if (rules.exclusiveWith) parts.push(`exclusive with ${and(rules.exclusiveWith)}`);
  if (rules.requires)
    parts.push(`${option.meta.kind === "boolean" ? "when true, needs" : "needs"} ${and(rules.requires)}`);
  for (const other of OPTIONS) {
    if (!other.meta.rules?.requires?.includes(option.key)) continue;
    parts.push(
      other.meta.kind === "boolean" ? `required when ${name(other.key)} is true` : `required with ${name(other.key)}`,
    );
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
    z
      .strictObject(
        Object.fromEntries(
          Object.entries(node.shape).map(([name, child]) => [
            name,
            child.kind === "table" ? build(child) : child.build(),
          ]),
        ),
      )
      .prefault({});
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
