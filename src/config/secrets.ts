/**
 * The one place that knows which values are secret (from the schema) and masks them: for
 * --print-config, for errors, and for the log room to scrub anything that slips into a message.
 */
import { OPTIONS, type Config } from "./schema.ts";

export const REDACTED = "[redacted]";

function valueAt(config: Config, path: string[]): unknown {
  return path.reduce<any>((node, part) => node?.[part], config);
}

/** A deep copy of the configuration with every secret replaced by "[redacted]". */
export function redactConfig(config: Config): Config {
  const copy = structuredClone(config);
  for (const option of OPTIONS) {
    if (!option.meta.secret) continue;
    if (option.meta.kind === "credentials") {
      for (const credential of copy.registry_credentials) {
        if (credential.username !== undefined) credential.username = REDACTED;
        if (credential.password !== undefined) credential.password = REDACTED;
      }
      continue;
    }
    const parent = valueAt(copy, option.path.slice(0, -1)) as Record<string, unknown>;
    const name = option.path[option.path.length - 1]!;
    if (parent[name] !== undefined) parent[name] = REDACTED;
  }
  return copy;
}

/** Every secret value in the configuration (non-empty, longest first so scrubbing is greedy). */
export function secretValues(config: Config): string[] {
  const values: string[] = [];
  for (const option of OPTIONS) {
    if (!option.meta.secret) continue;
    if (option.meta.kind === "credentials") {
      for (const credential of config.registry_credentials) values.push(credential.username ?? "", credential.password ?? "");
      continue;
    }
    const value = valueAt(config, option.path);
    if (typeof value === "string") values.push(value);
  }
  return [...new Set(values.filter((v) => v !== ""))].sort((a, b) => b.length - a.length);
}

/** Replaces every occurrence of a secret in a text. */
export function scrubSecrets(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) out = out.split(secret).join(REDACTED);
  return out;
}
