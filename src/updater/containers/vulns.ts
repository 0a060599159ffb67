/**
 * What an update fixes and brings in (docs/vulnerabilities.md), for each stale container: the
 * running image's and the newer image's packages, read through the engine (the newer image
 * pulled by digest, its tag left where it is, in a real cycle only: a dry run reads what is
 * here), every pair asked of OSV in one lookup, and the diff kept by pair so that a pair costs
 * one lookup, not one per cycle. Then the policy: `hold_if_introduces` and `on_lookup_failure =
 * "hold"` hold an update until it is asked for by name, as hold_breaking does.
 */
import type { Config } from "../../config/index.ts";
import { toSvcError } from "../../core/errors.ts";
import type { Engine } from "../../engine/port.ts";
import type { Registry } from "../../registry/port.ts";
import {
  atOrAbove,
  diffSummary,
  type ImagePair,
  pairKey,
  type Severity,
  type Vulnerabilities,
  type VulnerabilityDiff,
} from "../../vulns/index.ts";
import type { Checker } from "../check/check.ts";
import type { ProtocolContext } from "../cycle/context.ts";
import { finish, heldByWindow } from "../cycle/target.ts";
import type { CycleOptions, UpdateFilter } from "../types.ts";
import type { ContainerEntry } from "./replace.ts";

export interface VulnsDeps {
  engine: Engine;
  registry: Registry;
  config: Config;
  vulns: Vulnerabilities | null;
}

export interface VulnsScope {
  filter: UpdateFilter;
  options: CycleOptions;
}

/** Each stale container's diff on its entry, then the holds the policy asks for. Never throws. */
export async function readVulnerabilities(
  deps: VulnsDeps,
  ctx: ProtocolContext,
  checker: Checker,
  scope: VulnsScope,
  entries: Iterable<ContainerEntry>,
): Promise<void> {
  const vulns = deps.vulns;
  if (!vulns) return;
  const passOver = deps.config.vulnerabilities.min_image_age_unless_fixes;
  const stale = [...entries].filter(
    (entry) =>
      entry.state === "stale" &&
      (entry.finishedAt === undefined || (passOver !== "off" && heldByMinAge(entry))) &&
      entry.verdict?.newDigest &&
      entry.verdict.ref,
  );
  const asked = new Map<string, ImagePair & { key: string }>();
  for (const entry of stale) {
    const key = pairKey(entry.summary.imageId, entry.verdict!.newDigest!);
    const known = vulns.known(key);
    if (known) {
      entry.vulnerabilities = known;
      continue;
    }
    try {
      const attached = await attachedPair(vulns, checker, entry);
      if (attached) {
        asked.set(entry.summary.name, { ...attached, key });
        continue;
      }
      const candidateId = await candidateImage(deps, ctx, checker, scope.options, entry);
      if (candidateId === null) {
        entry.vulnerabilities = unknown("the newer image is not here yet: read at the next real cycle, once pulled");
        continue;
      }
      const [running, candidate] = await Promise.all([
        vulns.inventory(entry.summary.imageId),
        vulns.inventory(candidateId),
      ]);
      asked.set(entry.summary.name, { running, candidate, key });
    } catch (error) {
      entry.vulnerabilities = unknown(`the newer image could not be read: ${toSvcError(error).message}`);
    }
  }
  if (asked.size > 0) {
    const diffs = await vulns.lookUp(asked);
    for (const entry of stale) {
      const diff = diffs.get(entry.summary.name);
      if (diff) entry.vulnerabilities = diff;
    }
  }
  for (const entry of stale) {
    const diff = entry.vulnerabilities;
    if (!diff) continue;
    if (diff.problem !== null)
      ctx.log.warn("vulnerabilities not read", { container: entry.summary.name, problem: diff.problem });
    if (heldByMinAge(entry)) passMinAge(ctx, entry, diff, passOver as Severity);
    holdByPolicy(deps.config, ctx, scope, entry, entry.vulnerabilities ?? diff);
  }
}

/** Held by min_image_age alone (not monitor-only: that one is never applied). */
const heldByMinAge = (entry: ContainerEntry): boolean =>
  entry.finishedAt !== undefined && entry.verdict?.minAgeUntil !== undefined && !entry.policy.monitorOnly;

/**
 * min_image_age_unless_fixes: an update that fixes a known vulnerability of that severity or above
 * does not wait for min_image_age (waiting would keep the hole open); its window still applies, and
 * hold_if_introduces after it. The diff says so, for the report, the page and the notifications.
 */
function passMinAge(ctx: ProtocolContext, entry: ContainerEntry, diff: VulnerabilityDiff, threshold: Severity): void {
  if (diff.problem !== null) return;
  const over = diff.fixed.filter((e) => atOrAbove(e.severity, threshold));
  if (over.length === 0) return;
  ctx.log.info("min_image_age passed over: the update fixes a known vulnerability", {
    container: entry.summary.name,
    fixes: over
      .slice(0, 3)
      .map((e) => `${e.id} (${e.severity}, ${e.package})`)
      .join(", "),
    min_image_age_unless_fixes: threshold,
  });
  entry.vulnerabilities = { ...diff, passed_min_age: true };
  entry.verdict = { ...entry.verdict!, held: false, reason: null };
  delete entry.verdict.minAgeUntil;
  entry.state = "stale";
  entry.reason = null;
  entry.finishedAt = undefined;
  heldByWindow(entry);
}

const unknown = (problem: string): VulnerabilityDiff => ({
  fixed: [],
  introduced: [],
  still_open: [],
  counts: { fixed: 0, introduced: 0, still_open: 0 },
  problem,
});

/**
 * Both images' packages from the SBOMs attached to them in the registry (vulns/sbom.ts): no pull,
 * no reading container. null unless both have one (one side from an SBOM and the other from its
 * package database would not list the same things the same way).
 */
async function attachedPair(
  vulns: Vulnerabilities,
  checker: Checker,
  entry: ContainerEntry,
): Promise<ImagePair | null> {
  const { ref, oldDigest, newDigest } = entry.verdict!;
  if (!ref || !oldDigest?.startsWith("sha256:") || !newDigest) return null;
  const platform = await checker.platformOf(entry.summary.imageId);
  const [running, candidate] = await Promise.all([
    vulns.attached(ref, oldDigest, platform),
    vulns.attached(ref, newDigest, platform),
  ]);
  if (!running || !candidate) return null;
  return { running: { inventory: running.inventory }, candidate: { inventory: candidate.inventory }, fromSbom: true };
}

/**
 * The newer image's local id: the one no_pull found, or the image of the new digest, pulled by
 * digest when it is not here (never in a dry run). null when it is not here and may not be pulled.
 */
async function candidateImage(
  deps: VulnsDeps,
  ctx: ProtocolContext,
  checker: Checker,
  options: CycleOptions,
  entry: ContainerEntry,
): Promise<string | null> {
  const verdict = entry.verdict!;
  if (verdict.newImageId) return verdict.newImageId;
  const ref = verdict.ref!;
  const reference = `${ref.registry}/${ref.repository}@${verdict.newDigest}`;
  const here = await deps.engine.inspectImage(reference).catch(() => null);
  if (here) return here.Id;
  if (options.dryRun || entry.policy.noPull) return null;
  const platform = await checker.platformOf(entry.summary.imageId);
  const auth = await deps.registry.pullAuth(ref);
  ctx.log.debug("pulling the newer image by digest to read its packages", {
    container: entry.summary.name,
    image: reference,
  });
  await deps.engine.pullImage(reference, { platform, auth });
  return (await deps.engine.inspectImage(reference))?.Id ?? null;
}

/**
 * hold_if_introduces and on_lookup_failure = "hold": a container still to be replaced is held,
 * unless this cycle was asked for it by name (POST /v1/update naming it: the dashboard's Update).
 */
function holdByPolicy(
  config: Config,
  ctx: ProtocolContext,
  scope: VulnsScope,
  entry: ContainerEntry,
  diff: VulnerabilityDiff,
): void {
  if (entry.state !== "stale" || entry.finishedAt !== undefined) return;
  const askedByName =
    ctx.trigger === "api" && !scope.options.dryRun && (scope.filter.container ?? []).includes(entry.summary.name);
  if (askedByName) return;
  const { hold_if_introduces: threshold, on_lookup_failure: onFailure } = config.vulnerabilities;
  if (diff.problem !== null) {
    if (onFailure === "hold")
      finish(
        entry,
        "held",
        `vulnerabilities unknown (${diff.problem}): held by on_lookup_failure = "hold" until updated by name`,
      );
    return;
  }
  if (threshold === "off") return;
  const over = diff.introduced.filter((e) => atOrAbove(e.severity, threshold as Severity));
  if (over.length === 0) return;
  const named = over
    .slice(0, 3)
    .map((e) => `${e.id} (${e.severity}, ${e.package})`)
    .join(", ");
  finish(
    entry,
    "held",
    `the update brings in ${named}${over.length > 3 ? ` and ${over.length - 3} more` : ""}: held by hold_if_introduces = "${threshold}" until updated by name (${diffSummary(diff)})`,
  );
}
