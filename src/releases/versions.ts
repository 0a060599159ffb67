/**
 * Versions as release tags and image labels write them: `v1.2.0` and `1.2.0` are the same release
 * (docs/release-notes.md). Semantic versions are compared by their numbers; anything else only by
 * its text, once a tag prefix is set aside.
 */

export interface Version {
  /** as written, without a leading `v` */
  text: string;
  /** major, minor, patch (missing parts are 0); undefined when the text is not a version number */
  parts?: [number, number, number];
  /** the pre-release after `-`, if any */
  pre?: string;
}

const MAX_VERSION = 128;
// anchored, no nested quantifiers: linear on any input
const SEMVER = /^(\d{1,9})(?:\.(\d{1,9}))?(?:\.(\d{1,9}))?(?:-([0-9A-Za-z.-]{1,64}))?(?:\+[0-9A-Za-z.-]{1,64})?$/;

/** The version a tag or a label names: a leading `v` (or `V`) is not part of it. */
export function parseVersion(written: string): Version {
  const text = written
    .trim()
    .slice(0, MAX_VERSION)
    .replace(/^[vV](?=\d)/, "");
  const match = SEMVER.exec(text);
  if (!match) return { text };
  const parts: [number, number, number] = [Number(match[1]), Number(match[2] ?? 0), Number(match[3] ?? 0)];
  return match[4] === undefined ? { text, parts } : { text, parts, pre: match[4] };
}

/** Do two written versions name the same release (`v1.2` and `1.2.0` do)? */
export function sameVersion(a: Version, b: Version): boolean {
  if (a.parts && b.parts) return compareVersions(a, b) === 0;
  return a.text === b.text;
}

/** Semver order of two versions with numbers: negative when a is older. A pre-release comes before its release. */
export function compareVersions(a: Version, b: Version): number {
  const [x, y] = [a.parts ?? [0, 0, 0], b.parts ?? [0, 0, 0]];
  for (let i = 0; i < 3; i++) if (x[i] !== y[i]) return x[i]! - y[i]!;
  if (a.pre === b.pre) return 0;
  if (a.pre === undefined) return 1;
  if (b.pre === undefined) return -1;
  return comparePre(a.pre, b.pre);
}

function comparePre(a: string, b: string): number {
  const [x, y] = [a.split("."), b.split(".")];
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    if (x[i] === undefined) return -1;
    if (y[i] === undefined) return 1;
    const [m, n] = [Number(x[i]), Number(y[i])];
    const numeric = /^\d+$/.test(x[i]!) && /^\d+$/.test(y[i]!);
    if (numeric && m !== n) return m - n;
    if (!numeric && x[i] !== y[i]) return x[i]! < y[i]! ? -1 : 1;
  }
  return 0;
}
