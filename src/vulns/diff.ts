/**
 * What an update fixes and what it brings in (docs/vulnerabilities.md): both images of every
 * stale container asked about in one OSV lookup, so that the two sides are compared at the same
 * moment, then each container's diff: fixed (in the running image only), introduced (in the
 * newer image only), still open (in both), each with its severity, package and fixed version.
 */
import type { InventoryAnswer } from "./image.ts";
import type { Inventory } from "./inventory.ts";
import type { OsvClient, OsvHit, OsvQuery, OsvRecord } from "./osv.ts";
import { type Severity, severityOf, severityRank } from "./severity.ts";
import { compareVersions, type VersionFormat } from "./versions.ts";

/** Entries listed per kind in one diff; the rest are counted. */
export const MAX_LISTED = 100;

export interface VulnerabilityEntry {
  id: string;
  /** other names of the same vulnerability (CVE-...), at most 5 */
  aliases: string[];
  summary: string | null;
  severity: Severity;
  /** CVSS v3 base score, when OSV gives a vector */
  score: number | null;
  /** the package OSV names (a source package on Debian, an origin on Alpine) and its version in that image */
  package: string;
  version: string;
  /** the first version that fixes it, after the one installed; null when none is known */
  fixed_version: string | null;
}

export interface VulnerabilityDiff {
  fixed: VulnerabilityEntry[];
  introduced: VulnerabilityEntry[];
  still_open: VulnerabilityEntry[];
  /** each kind's whole count (the lists hold at most MAX_LISTED, worst first) */
  counts: { fixed: number; introduced: number; still_open: number };
  /** why the lookup could not be made (an image without a package database, OSV unreachable); null when it was */
  problem: string | null;
  /** min_image_age was passed over, the update fixing one at or above `min_image_age_unless_fixes` */
  passed_min_age?: boolean;
  /** where both images' packages were read: the SBOMs attached in the registry, or the images' package databases */
  read_from?: "sbom" | "package database";
}

export interface ImagePair {
  running: InventoryAnswer;
  candidate: InventoryAnswer;
  /** both inventories from the SBOMs attached in the registry (else from the images' package databases) */
  fromSbom?: boolean;
}

const keyOf = (q: OsvQuery): string => `${q.ecosystem}\0${q.name}\0${q.version}`;

function queriesOf(inventory: Inventory): OsvQuery[] {
  if (!inventory.ecosystem) return [];
  const ecosystem = inventory.ecosystem;
  return inventory.packages.map((p) => ({ ecosystem, name: p.queryName, version: p.queryVersion }));
}

function unusable(pair: ImagePair): string | null {
  for (const [which, answer] of [
    ["running", pair.running],
    ["newer", pair.candidate],
  ] as const) {
    if (answer.inventory === null) return `the ${which} image's packages are unknown: ${answer.problem}`;
    if (answer.inventory.ecosystem === null)
      return `the ${which} image's distribution (${answer.inventory.distro?.id ?? "no /etc/os-release"}) has no OSV ecosystem svc knows`;
  }
  return null;
}

const failed = (problem: string): VulnerabilityDiff => ({
  fixed: [],
  introduced: [],
  still_open: [],
  counts: { fixed: 0, introduced: 0, still_open: 0 },
  problem,
});

/**
 * Every pair's diff from one lookup: one batch of every distinct package of every image (OSV's
 * batch limit and pages are the client's), then the records of every vulnerability named.
 * Never throws: a failure is each diff's `problem`.
 */
export async function diffPairs(
  client: OsvClient,
  pairs: ReadonlyMap<string, ImagePair>,
): Promise<Map<string, VulnerabilityDiff>> {
  const out = new Map<string, VulnerabilityDiff>();
  const usable = new Map<string, { running: Inventory; candidate: Inventory; fromSbom: boolean }>();
  for (const [name, pair] of pairs) {
    const problem = unusable(pair);
    if (problem) out.set(name, failed(problem));
    else
      usable.set(name, {
        running: pair.running.inventory!,
        candidate: pair.candidate.inventory!,
        fromSbom: pair.fromSbom === true,
      });
  }
  if (usable.size === 0) return out;
  const distinct = new Map<string, OsvQuery>();
  for (const { running, candidate } of usable.values())
    for (const query of [...queriesOf(running), ...queriesOf(candidate)]) distinct.set(keyOf(query), query);
  let hitsByQuery: Map<string, OsvHit[]>;
  let records: Map<string, OsvRecord>;
  try {
    const queries = [...distinct.values()];
    const hits = await client.query(queries);
    hitsByQuery = new Map(queries.map((query, i) => [keyOf(query), hits[i]!]));
    records = await client.records(hits.flat());
  } catch (error) {
    const problem = `OSV lookup failed: ${(error as Error).message}`;
    for (const name of usable.keys()) out.set(name, failed(problem));
    return out;
  }
  for (const [name, { running, candidate, fromSbom }] of usable) {
    const before = entriesOf(running, hitsByQuery, records);
    const after = entriesOf(candidate, hitsByQuery, records);
    out.set(name, { ...diffOf(before, after), read_from: fromSbom ? "sbom" : "package database" });
  }
  return out;
}

/** One image's vulnerabilities, one entry per vulnerability and package. */
function entriesOf(
  inventory: Inventory,
  hitsByQuery: ReadonlyMap<string, OsvHit[]>,
  records: ReadonlyMap<string, OsvRecord>,
): Map<string, VulnerabilityEntry> {
  const entries = new Map<string, VulnerabilityEntry>();
  for (const query of queriesOf(inventory)) {
    for (const hit of hitsByQuery.get(keyOf(query)) ?? []) {
      const key = `${hit.id}\0${query.name}`;
      if (entries.has(key)) continue;
      const record = records.get(hit.id);
      const { severity, score } = record ? severityOf(record) : { severity: "unknown" as const, score: null };
      entries.set(key, {
        id: hit.id,
        aliases: (record?.aliases ?? []).slice(0, 5),
        summary: record?.summary?.slice(0, 300) ?? null,
        severity,
        score,
        package: query.name,
        version: query.version,
        fixed_version: record ? fixedVersion(record, query, inventory.format) : null,
      });
    }
  }
  return entries;
}

/** The smallest `fixed` event of the record's ranges for this package that is above the installed version. */
export function fixedVersion(record: OsvRecord, query: OsvQuery, format: VersionFormat): string | null {
  let best: string | null = null;
  for (const affected of record.affected ?? []) {
    if (affected.package?.name !== query.name || affected.package.ecosystem !== query.ecosystem) continue;
    for (const range of affected.ranges ?? []) {
      if (range.type !== "ECOSYSTEM") continue;
      for (const event of range.events) {
        const fixed = event.fixed;
        if (fixed === undefined || compareVersions(format, fixed, query.version) <= 0) continue;
        if (best === null || compareVersions(format, fixed, best) < 0) best = fixed;
      }
    }
  }
  return best;
}

const worstFirst = (a: VulnerabilityEntry, b: VulnerabilityEntry): number =>
  severityRank(b.severity) - severityRank(a.severity) || (b.score ?? 0) - (a.score ?? 0) || a.id.localeCompare(b.id);

/** fixed: in the running image only; introduced: in the newer only; still open: in both (as the newer image has it). */
export function diffOf(
  before: ReadonlyMap<string, VulnerabilityEntry>,
  after: ReadonlyMap<string, VulnerabilityEntry>,
): VulnerabilityDiff {
  const fixed = [...before].filter(([key]) => !after.has(key)).map(([, entry]) => entry);
  const introduced = [...after].filter(([key]) => !before.has(key)).map(([, entry]) => entry);
  const stillOpen = [...after].filter(([key]) => before.has(key)).map(([, entry]) => entry);
  return {
    fixed: fixed.sort(worstFirst).slice(0, MAX_LISTED),
    introduced: introduced.sort(worstFirst).slice(0, MAX_LISTED),
    still_open: stillOpen.sort(worstFirst).slice(0, MAX_LISTED),
    counts: { fixed: fixed.length, introduced: introduced.length, still_open: stillOpen.length },
    problem: null,
  };
}

/** What a report line and the badge add when the update did not wait for min_image_age. */
export const PASSED_MIN_AGE = "min_image_age passed over";

/** "fixes 3, 1 high; brings in 1 (high)": what a badge and a report line say. */
export function diffSummary(diff: VulnerabilityDiff): string {
  if (diff.problem !== null) return "vulnerabilities unknown";
  const worst = (entries: VulnerabilityEntry[]) => {
    const top = entries[0]?.severity;
    if (!top || top === "unknown" || top === "low") return "";
    return `, ${entries.filter((e) => e.severity === top).length} ${top}`;
  };
  const parts: string[] = [];
  if (diff.counts.fixed > 0) parts.push(`fixes ${diff.counts.fixed}${worst(diff.fixed)}`);
  if (diff.counts.introduced > 0) parts.push(`brings in ${diff.counts.introduced}${worst(diff.introduced)}`);
  if (parts.length === 0)
    return diff.counts.still_open > 0 ? `${diff.counts.still_open} still open` : "no known vulnerabilities";
  if (diff.passed_min_age) parts.push(PASSED_MIN_AGE);
  return parts.join("; ");
}
