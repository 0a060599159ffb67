/**
 * A vulnerability's severity (docs/vulnerabilities.md): the CVSS v3 base score computed from the
 * vector OSV gives (CVSS v3.1's specification, section 7), else the word of the database that
 * published the record (GitHub's `database_specific.severity`, Ubuntu's priority). Pure.
 */
import type { OsvRecord } from "./osv.ts";

export const SEVERITIES = ["critical", "high", "medium", "low", "unknown"] as const;
export type Severity = (typeof SEVERITIES)[number];

/** Higher is worse; unknown is below low. */
export function severityRank(severity: Severity): number {
  return SEVERITIES.length - 1 - SEVERITIES.indexOf(severity);
}

export function atOrAbove(severity: Severity, threshold: Severity): boolean {
  return severityRank(severity) >= severityRank(threshold);
}

/** CVSS v3's qualitative rating of a base score. */
export function ratingOf(score: number): Severity {
  if (score >= 9) return "critical";
  if (score >= 7) return "high";
  if (score >= 4) return "medium";
  if (score > 0) return "low";
  return "unknown";
}

const WEIGHTS: Record<string, Record<string, number>> = {
  AV: { N: 0.85, A: 0.62, L: 0.55, P: 0.2 },
  AC: { L: 0.77, H: 0.44 },
  UI: { N: 0.85, R: 0.62 },
  C: { H: 0.56, L: 0.22, N: 0 },
  I: { H: 0.56, L: 0.22, N: 0 },
  A: { H: 0.56, L: 0.22, N: 0 },
};

/** CVSS v3.1's Roundup: the smallest number of one decimal at or above `value`, free of float noise. */
function roundUp(value: number): number {
  const whole = Math.round(value * 100000);
  return whole % 10000 === 0 ? whole / 100000 : (Math.floor(whole / 10000) + 1) / 10;
}

/** The base score of a `CVSS:3.x/AV:N/AC:L/...` vector; null for another version or a vector that is not whole. */
export function cvss3BaseScore(vector: string): number | null {
  const parts = vector.split("/");
  if (!/^CVSS:3\.[01]$/.test(parts[0] ?? "")) return null;
  const metrics = new Map(parts.slice(1).map((part) => part.split(":") as [string, string]));
  const scope = metrics.get("S");
  const pr = metrics.get("PR");
  const prWeight =
    pr === "N" ? 0.85 : pr === "L" ? (scope === "C" ? 0.68 : 0.62) : pr === "H" ? (scope === "C" ? 0.5 : 0.27) : null;
  const weight = (metric: string) => WEIGHTS[metric]![metrics.get(metric) ?? ""];
  const [av, ac, ui, c, i, a] = ["AV", "AC", "UI", "C", "I", "A"].map(weight);
  if (prWeight === null || (scope !== "U" && scope !== "C") || [av, ac, ui, c, i, a].some((w) => w === undefined))
    return null;
  const iss = 1 - (1 - c!) * (1 - i!) * (1 - a!);
  const impact = scope === "U" ? 6.42 * iss : 7.52 * (iss - 0.029) - 3.25 * (iss - 0.02) ** 15;
  const exploitability = 8.22 * av! * ac! * prWeight * ui!;
  if (impact <= 0) return 0;
  return roundUp(Math.min((scope === "U" ? 1 : 1.08) * (impact + exploitability), 10));
}

const WORDS: Record<string, Severity> = {
  critical: "critical",
  high: "high",
  important: "high",
  moderate: "medium",
  medium: "medium",
  low: "low",
  negligible: "low",
  unimportant: "low",
};

/** The record's severity and CVSS score (null when OSV gives no CVSS v3 vector). */
export function severityOf(record: OsvRecord): { severity: Severity; score: number | null } {
  let best: number | null = null;
  let word: Severity = "unknown";
  for (const entry of record.severity ?? []) {
    const score = entry.type.startsWith("CVSS_V3") ? cvss3BaseScore(entry.score) : null;
    if (score !== null && (best === null || score > best)) best = score;
    const said = WORDS[entry.score.toLowerCase()];
    if (said && severityRank(said) > severityRank(word)) word = said;
  }
  if (best !== null) return { severity: ratingOf(best), score: best };
  const databases = [record.database_specific, ...(record.affected ?? []).map((a) => a.database_specific)];
  for (const database of databases) {
    const said = typeof database?.severity === "string" ? WORDS[database.severity.toLowerCase()] : undefined;
    if (said && severityRank(said) > severityRank(word)) word = said;
  }
  return { severity: word, score: null };
}
