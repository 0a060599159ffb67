/**
 * Configuration: one zod schema (schema.ts) is the single source of truth; everything else
 * (loading from file/env/flags, validation, the sample, the docs, --help) derives from it.
 * The Config shape: keys as in TOML (snake_case, nested by table), durations resolved to
 * milliseconds, secrets resolved from files, arrays never undefined.
 */
import type { LogSettings } from "../log/logging.ts";
import { assembleConfig } from "./options.ts";
import type { Config } from "./schema.ts";
import { secretValues } from "./secrets.ts";

export type { ChannelName, OptionMeta } from "./builders.ts";
export { CHANNEL_TITLES, defaultStateDir } from "./builders.ts";
export { renderDocs } from "./docs.ts";
export type { DeclaredLabel, LabelKey } from "./labels.ts";
export { DECLARED_LABELS, LABEL_PREFIX, labelName, labelOf, WATCHTOWER_LABEL } from "./labels.ts";
export type { LoadOptions, LoadResult } from "./load.ts";
export { DEFAULT_FILE, loadConfig } from "./load.ts";
export type { OptionSpec, TableSpec } from "./options.ts";
export {
  buildConfigSchema,
  CHANNEL_SWITCHES,
  defaultValue,
  describeOption,
  envName,
  flagName,
  OPTIONS,
  readAsOption,
  TABLES,
} from "./options.ts";
export { configFile, generateSample, printConfig } from "./sample.ts";
export type { Config, LogFormat, LogLevel, RegistryCredential } from "./schema.ts";
export { REDACTED, redactConfig, secretValues } from "./secrets.ts";
export type { Origin, SourceKind } from "./sources.ts";
export { COMMAND_ARGS, nearest, optionArgs, parseArgv, suggest } from "./sources.ts";
export type { SemverLevel, TagOrder, TagPolicy } from "./values.ts";
export { formatDuration, parseBoolean, parseDuration, parseTagPolicy, TAG_POLICY_EXAMPLES } from "./values.ts";

/** Built-in defaults (from the schema); `overrides` is deep-merged (tests use it to build configs). */
export function defaultConfig(overrides: DeepPartial<Config> = {}): Config {
  return deepMerge(assembleConfig(new Map()), overrides);
}

export type DeepPartial<T> = {
  [K in keyof T]?: T[K] extends (infer U)[] ? U[] : T[K] extends object ? DeepPartial<T[K]> : T[K];
};

function deepMerge<T>(base: T, overrides: unknown): T {
  if (typeof overrides !== "object" || overrides === null || Array.isArray(overrides)) return (overrides ?? base) as T;
  const out: Record<string, unknown> = { ...(base as Record<string, unknown>) };
  for (const [key, value] of Object.entries(overrides)) {
    if (value === undefined) continue;
    const current = out[key];
    out[key] =
      typeof current === "object" && current !== null && !Array.isArray(current) ? deepMerge(current, value) : value;
  }
  return out as T;
}

export { type Migration, migrateWatchtower, scheduleNote, type WatchtowerSettings } from "./watchtower.ts";

/**
 * What the log room is built from. The schema knows which options are secret: a new secret
 * option is redacted in every log without a change there.
 */
export function logSettings(config: Config): LogSettings {
  return {
    log_format: config.log_format,
    log_level: config.log_level,
    audit_log: config.audit_log,
    access_log: config.http_api.access_log,
    log_audit_to_stdout: config.log_audit_to_stdout,
    log_access_to_stdout: config.log_access_to_stdout,
    secrets: secretValues(config),
  };
}
