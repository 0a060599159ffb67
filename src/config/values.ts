/**
 * Values as operators write them (docs/configuration.md), one parser each for the configuration,
 * flags, environment and the `svc.*` container labels.
 *
 * Durations: `30s`, `5m`, `1h`, `1h30m`, `250ms`, `1d`, or a plain integer meaning seconds.
 * Internally always milliseconds.
 */
import type { RE2JS } from "re2js";

const UNIT_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const PART = /(\d+)(ms|s|m|h|d)/gy;

/** Milliseconds, or undefined when the text is not a duration. */
export function parseDuration(input: string | number): number | undefined {
  if (typeof input === "number") return Number.isInteger(input) && input >= 0 ? input * 1_000 : undefined;
  const text = input.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1_000;
  if (text === "") return undefined;
  PART.lastIndex = 0;
  let total = 0;
  let consumed = 0;
  for (let match = PART.exec(text); match; match = PART.exec(text)) {
    total += Number(match[1]) * UNIT_MS[match[2]!]!;
    consumed = PART.lastIndex;
  }
  return consumed === text.length ? total : undefined;
}

/** The shortest form that parses back to the same value: 90_000 -> "1m30s", 250 -> "250ms". */
export function formatDuration(ms: number): string {
  if (ms === 0) return "0s";
  let rest = ms;
  let out = "";
  for (const [unit, size] of [
    ["h", 3_600_000],
    ["m", 60_000],
    ["s", 1_000],
    ["ms", 1],
  ] as const) {
    const count = Math.floor(rest / size);
    if (count > 0) out += `${count}${unit}`;
    rest -= count * size;
  }
  return out;
}

/** Booleans in text (environment, flags, labels): true/false, 1/0, yes/no, any case. */
export function parseBoolean(text: string): boolean | undefined {
  const lower = text.trim().toLowerCase();
  if (lower === "true" || lower === "1" || lower === "yes") return true;
  if (lower === "false" || lower === "0" || lower === "no") return false;
  return undefined;
}

/** How tags matched by a `regex` tag policy are ordered (docs/configuration.md, "Tag policies"). */
export type TagOrder = "natural" | "lexical" | "semver";
export const TAG_ORDERS: readonly TagOrder[] = ["natural", "lexical", "semver"];
export type SemverLevel = "patch" | "minor" | "major";

/** Which tags a container may move to: versions within a semver level, or tags a pattern matches. */
export type TagPolicy =
  | { kind: "semver"; level: SemverLevel; prereleases: boolean; text: string }
  | { kind: "regex"; pattern: RE2JS; order: TagOrder; text: string };

export type ParsedTagPolicy = { policy: TagPolicy | null } | { problem: string };

const SEMVER_POLICY = /^semver:(patch|minor|major)(\+pre)?$/;
const REGEX_POLICY = /^regex(?:\(([a-z]*)\))?:(.*)$/s;
export const TAG_POLICY_EXAMPLES =
  '"semver:minor", "semver:patch+pre", "regex:\\d+\\.\\d+-alpine", "regex(lexical):^2024-.*", "off"';

/**
 * The linear-time regular expression engine, loaded on first use: it costs every start several
 * milliseconds and MiB, and only regex tag policies need it.
 */
function linearEngine(): typeof RE2JS {
  return (require("re2js") as typeof import("re2js")).RE2JS;
}

/**
 * A tag policy as written (`off`, `semver:<level>[+pre]`, `regex[(<order>)]:<pattern>`): the
 * policy, null for `off`, or what is wrong with the text. A pattern must match the whole tag.
 * Patterns are RE2 expressions, matched in time linear in the tag (docs/security.md): a pattern
 * only a backtracking engine can run (backreferences, lookaround) is refused here.
 */
export function parseTagPolicy(input: string): ParsedTagPolicy {
  const text = input.trim();
  if (text === "" || text === "off") return { policy: null };
  const semver = SEMVER_POLICY.exec(text);
  if (semver)
    return { policy: { kind: "semver", level: semver[1] as SemverLevel, prereleases: semver[2] !== undefined, text } };
  const regex = REGEX_POLICY.exec(text);
  if (!regex) return { problem: `is not a tag policy (examples: ${TAG_POLICY_EXAMPLES})` };
  const order = (regex[1] || "natural") as TagOrder;
  if (!TAG_ORDERS.includes(order))
    return { problem: `orders tags by "${regex[1]}"; the orders are ${TAG_ORDERS.join(", ")}` };
  if (regex[2] === "") return { problem: "has an empty pattern" };
  try {
    return {
      policy: {
        kind: "regex",
        pattern: linearEngine().compile(regex[2]!) /* matched against whole tags */,
        order,
        text,
      },
    };
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error);
    return {
      problem: `has a pattern that is not a regular expression svc can match in linear time (RE2 syntax: no backreferences or lookaround): ${why}`,
    };
  }
}

const SIZE_UNITS: Record<string, number> = {
  "": 1,
  b: 1,
  k: 1024,
  kb: 1024,
  kib: 1024,
  m: 1024 ** 2,
  mb: 1024 ** 2,
  mib: 1024 ** 2,
  g: 1024 ** 3,
  gb: 1024 ** 3,
  gib: 1024 ** 3,
  t: 1024 ** 4,
  tb: 1024 ** 4,
  tib: 1024 ** 4,
};

/**
 * Sizes as operators write them: `512MiB`, `1GiB`, `2g`, `1024` (bytes). Units are binary
 * (K, M, G, T = 1024-based, with or without B or iB); undefined when the text is not a size.
 */
export function parseSize(input: string): number | undefined {
  const match = /^(\d{1,15})(?:\.(\d{1,3}))?\s*([a-z]{0,3})$/i.exec(input.trim());
  if (!match) return undefined;
  const unit = SIZE_UNITS[match[3]!.toLowerCase()];
  if (unit === undefined) return undefined;
  const bytes = Math.round(Number(`${match[1]}.${match[2] ?? "0"}`) * unit);
  return Number.isSafeInteger(bytes) ? bytes : undefined;
}

/** A size as operators read it: 1536 MiB -> "1.5 GiB". */
export function formatSize(bytes: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return unit === 0 ? `${bytes} B` : `${Math.round(value * 10) / 10} ${units[unit]}`;
}
