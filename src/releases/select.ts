/**
 * The releases between two versions (docs/release-notes.md): after the running one, up to and
 * including the candidate, newest first; each flagged when it breaks; capped per target (releases,
 * and the notes of them all together), the rest counted.
 */
import { httpUrl } from "../core/urls.ts";
import { newMajor, saysBreaking } from "./breaking.ts";
import type { StoredRelease } from "./hosts.ts";
import { compareVersions, parseVersion, sameVersion, type Version } from "./versions.ts";

export interface ReleaseView {
  version: string;
  title: string;
  published_at: string | null;
  url: string | null;
  breaking: boolean;
  /** the release's notes as its host wrote them (Markdown), capped */
  notes: string;
  /** the notes were cut (too long, or past what one answer holds) */
  notes_cut: boolean;
}

export const SELECT_LIMITS = {
  /** releases shown per target; the rest are counted ("and N more") */
  releases: 50,
  /** characters of notes of one target's releases together */
  notesChars: 64 * 1024,
} as const;

export interface Selection {
  releases: ReleaseView[];
  /** releases between the two versions beyond the cap */
  more: number;
  /** why nothing is shown, when nothing is */
  problem: string | null;
}

export function releasesBetween(
  list: readonly StoredRelease[],
  from: string,
  to: string,
  maxReleases: number = SELECT_LIMITS.releases,
): Selection {
  const [older, newer] = [parseVersion(from), parseVersion(to)];
  const versioned = list.map((release) => ({ release, version: parseVersion(release.tag) }));
  const chosen = older.parts && newer.parts ? bySemver(versioned, older, newer) : byPosition(versioned, older, newer);
  if (chosen === null) return { releases: [], more: 0, problem: `no release ${to} found in the source's releases` };
  if (chosen.length === 0)
    return { releases: [], more: 0, problem: `no release between ${from} and ${to} in the source's releases` };
  let budget: number = SELECT_LIMITS.notesChars;
  const views = chosen.slice(0, maxReleases).map(({ release, version }, index) => {
    const before = chosen[index + 1]?.version ?? older;
    const notes = release.notes.length <= budget ? release.notes : "";
    budget -= notes.length;
    return {
      version: version.text,
      title: release.title,
      published_at: release.published_at,
      url: httpUrl(release.url),
      breaking: newMajor(version, before) || saysBreaking(`${release.title}\n${release.notes}`),
      notes,
      notes_cut: release.notes_cut || notes.length < release.notes.length,
    };
  });
  return { releases: views, more: Math.max(0, chosen.length - maxReleases), problem: null };
}

type Versioned = { release: StoredRelease; version: Version };

/** Semantic versions: every release in (from, to]; pre-releases only when the candidate is one. */
function bySemver(list: Versioned[], older: Version, newer: Version): Versioned[] {
  const seen = new Set<string>();
  return list
    .filter(({ version, release }) => {
      if (!version.parts || compareVersions(version, older) <= 0 || compareVersions(version, newer) > 0) return false;
      if ((version.pre !== undefined || release.prerelease) && newer.pre === undefined) return false;
      const key = version.parts.join(".") + (version.pre ?? "");
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    })
    .sort((a, b) => compareVersions(b.version, a.version));
}

/** Other versions: the host's order (newest first), from the candidate down to the running one. null: no candidate release. */
function byPosition(list: Versioned[], older: Version, newer: Version): Versioned[] | null {
  const top = list.findIndex(({ version }) => sameVersion(version, newer));
  if (top === -1) return null;
  const bottom = list.findIndex(({ version }, index) => index > top && sameVersion(version, older));
  return list.slice(top, bottom === -1 ? top + 1 : bottom);
}
