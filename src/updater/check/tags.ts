/**
 * Tag policies (docs/policies.md): which of a repository's tags a container may move to, best
 * first. Pure: the registry lists the tags, the checker asks which exist for our platform.
 *
 * A version tag is `[v]MAJOR[.MINOR[.PATCH]][-SUFFIX]`. The suffix is a pre-release when its
 * first part is one of the usual words (`rc1`, `beta.2`, `alpha`...), optionally followed by a
 * variant (`-alpine`); otherwise it is all variant (`alpine`, `bookworm`, a build counter such as
 * `ls45` or `r2`). Under a semver policy a candidate keeps the running tag's shape: the same `v`
 * prefix, the same number of version parts (so `1.27` follows `1.28`, never `1.27.3`) and the
 * same variant once its numbers are ignored (`alpine3.20` may become `alpine3.21`, never
 * `bookworm`; `ls45` may become `ls46`).
 */
import type { SemverLevel, TagOrder, TagPolicy } from "../../config/index.ts";

export interface VersionTag {
  prefix: "" | "v";
  parts: number[];
  /** the pre-release identifier (`rc.1`), null for a release */
  pre: string | null;
  /** what follows the version and pre-release (`alpine3.20`), "" for none */
  variant: string;
}

const VERSION = /^(v?)(\d+)(?:\.(\d+))?(?:\.(\d+))?(?:-([0-9A-Za-z][0-9A-Za-z._-]*))?$/;
// (one digit per repetition: `(?:\.?\d+)*` would backtrack exponentially on a hostile tag)
const PRE_RELEASE = /^(?:alpha|beta|rc|pre|preview|dev|canary|nightly|snapshot)(?:\.?\d)*$/i;
/**
 * A tag as the registry's own grammar writes it, at most 128 characters: anything else a registry
 * lists (longer names, `/`, spaces) is no tag, never matched and never moved to.
 */
const TAG = /^\w[\w.-]{0,127}$/;
/** A tag whose best candidate lacks our platform falls back to the next ones, this many at most. */
export const MAX_CANDIDATES = 5;

export function parseVersionTag(tag: string): VersionTag | null {
  const match = VERSION.exec(tag);
  if (!match) return null;
  const parts = [match[2], match[3], match[4]].filter((p): p is string => p !== undefined).map(Number);
  if (parts.some((p) => !Number.isSafeInteger(p))) return null;
  const suffix = match[5] ?? "";
  const dash = suffix.indexOf("-");
  const first = dash === -1 ? suffix : suffix.slice(0, dash);
  const isPre = first !== "" && PRE_RELEASE.test(first);
  return {
    prefix: match[1] as "" | "v",
    parts,
    pre: isPre ? first : null,
    variant: isPre ? (dash === -1 ? "" : suffix.slice(dash + 1)) : suffix,
  };
}

/**
 * The tags `policy` lets a container running `current` move to, strictly newer than it, best
 * first; null when the policy does not cover `current` (not a version, or not matched by the
 * pattern): such a container keeps following its own tag.
 */
export function newerTags(policy: TagPolicy, current: string, allTags: readonly string[]): string[] | null {
  const tags = allTags.filter((tag) => TAG.test(tag));
  if (!TAG.test(current)) return null;
  return policy.kind === "semver"
    ? newerVersions(policy.level, policy.prereleases, current, tags)
    : newerMatches(policy, current, tags);
}

function newerVersions(
  level: SemverLevel,
  prereleases: boolean,
  current: string,
  tags: readonly string[],
): string[] | null {
  const running = parseVersionTag(current);
  if (!running) return null;
  const allowed = (candidate: VersionTag): boolean =>
    sameShape(running, candidate) &&
    withinLevel(level, running, candidate) &&
    // a pre-release only when asked for, or of the very version the container runs a pre-release of
    (candidate.pre === null ||
      prereleases ||
      (running.pre !== null && compareParts(running.parts, candidate.parts) === 0)) &&
    compareVersions(candidate, running) > 0;
  const found: { tag: string; version: VersionTag }[] = [];
  for (const tag of tags) {
    const version = parseVersionTag(tag);
    if (version && allowed(version)) found.push({ tag, version });
  }
  return found.sort((a, b) => compareVersions(b.version, a.version) || naturalCompare(b.tag, a.tag)).map((f) => f.tag);
}

function sameShape(a: VersionTag, b: VersionTag): boolean {
  return (
    a.prefix === b.prefix &&
    a.parts.length === b.parts.length &&
    withoutNumbers(a.variant) === withoutNumbers(b.variant)
  );
}

function withoutNumbers(text: string): string {
  return text.replace(/\d+/g, "#");
}

function withinLevel(level: SemverLevel, running: VersionTag, candidate: VersionTag): boolean {
  const fixed = level === "major" ? 0 : level === "minor" ? 1 : 2;
  for (let i = 0; i < fixed && i < running.parts.length; i++) if (running.parts[i] !== candidate.parts[i]) return false;
  return true;
}

/** Version order: the numbers, then a release above its pre-releases, then the variant's numbers. */
export function compareVersions(a: VersionTag, b: VersionTag): number {
  return compareParts(a.parts, b.parts) || comparePre(a.pre, b.pre) || naturalCompare(a.variant, b.variant);
}

function compareParts(a: number[], b: number[]): number {
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const diff = (a[i] ?? 0) - (b[i] ?? 0);
    if (diff !== 0) return Math.sign(diff);
  }
  return 0;
}

function comparePre(a: string | null, b: string | null): number {
  if (a === b) return 0;
  if (a === null) return 1;
  if (b === null) return -1;
  return naturalCompare(a.toLowerCase(), b.toLowerCase());
}

/** Text with runs of digits compared as numbers: `rc9` < `rc10`, `1.9` < `1.10`. */
export function naturalCompare(a: string, b: string): number {
  const left = a.match(/\d+|\D+/g) ?? [];
  const right = b.match(/\d+|\D+/g) ?? [];
  for (let i = 0; i < Math.min(left.length, right.length); i++) {
    const x = left[i]!;
    const y = right[i]!;
    if (x === y) continue;
    const bothNumbers = /^\d/.test(x) && /^\d/.test(y);
    if (bothNumbers) {
      const diff = Number(x) - Number(y);
      if (diff !== 0) return Math.sign(diff);
      continue;
    }
    return x < y ? -1 : 1;
  }
  return Math.sign(left.length - right.length);
}

/**
 * A regex policy: tags the pattern matches, ordered by their capture groups left to right (the
 * whole tag without groups), each compared as `order` says.
 */
function newerMatches(
  policy: Extract<TagPolicy, { kind: "regex" }>,
  current: string,
  tags: readonly string[],
): string[] | null {
  const keyOf = (tag: string): string[] | null => {
    const match = policy.pattern.matcher(tag);
    if (!match.matches()) return null;
    const groups = Array.from({ length: match.groupCount() }, (_, i) => match.group(i + 1) ?? "");
    return groups.length > 0 ? groups : [tag];
  };
  const compareKeys = (a: string[], b: string[]): number => {
    for (let i = 0; i < Math.max(a.length, b.length); i++) {
      const diff = compareBy(policy.order, a[i] ?? "", b[i] ?? "");
      if (diff !== 0) return diff;
    }
    return 0;
  };
  const runningKey = keyOf(current);
  if (!runningKey) return null;
  const found: { tag: string; key: string[] }[] = [];
  for (const tag of tags) {
    const key = keyOf(tag);
    if (key && compareKeys(key, runningKey) > 0) found.push({ tag, key });
  }
  return found.sort((a, b) => compareKeys(b.key, a.key) || naturalCompare(b.tag, a.tag)).map((f) => f.tag);
}

function compareBy(order: TagOrder, a: string, b: string): number {
  if (order === "lexical") return a === b ? 0 : a < b ? -1 : 1;
  if (order === "semver") {
    const x = parseVersionTag(a);
    const y = parseVersionTag(b);
    // text that is no version sorts below every version
    if (x && y) return compareVersions(x, y);
    if (x || y) return x ? 1 : -1;
  }
  return naturalCompare(a, b);
}
