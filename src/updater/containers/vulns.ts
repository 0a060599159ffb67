/**
 * What an update fixes and brings in (docs/vulnerabilities.md), for each container with a newer
 * image (to be replaced, monitor-only, held or waiting for its window): both images' packages from
 * the SBOMs attached in the registry when both have one (nothing pulled), else read through the
 * engine, the newer image pulled only when svc would pull it anyway (by digest, its tag left where
 * it is; pre_pull's own pull for a container waiting for its window; never in a dry run, never for
 * a monitor-only container); every pair asked of OSV in one lookup, and the diff kept by pair so
 * that a pair costs one lookup, not one per cycle. Then the policy: `hold_if_introduces` and
 * `on_lookup_failure = "hold"` hold an update until it is asked for by name, as hold_breaking does.
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
import type { ContainerEntry } from "./entry.ts";
import { type PrePuller, pullsAhead } from "./prepull.ts";

export interface VulnsDeps {
  engine: Engine;
  registry: Registry;
  config: Config;
  vulns: Vulnerabilities | null;
  /** pre_pull's puller (containers/prepull.ts): a pending container's newer image, pulled ahead of its window; null in a dry run */
  puller?: PrePuller | null;
}

export interface VulnsScope {
  filter: UpdateFilter;
  options: CycleOptions;
}

/**
 * Each stale container's diff on its entry, then the holds the policy asks for. Never throws.
 * Every container with a newer image is read: to be replaced, monitor-only, held by
 * min_image_age or waiting for its window. Its newer image is pulled only when svc would pull it
 * anyway (`newerImage`); without that, only the SBOMs attached in the registry give the diff.
 */
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
    (entry) => (entry.state === "stale" || entry.state === "pending") && entry.verdict?.newDigest && entry.verdict.ref,
  );
  const asked = new Map<string, ImagePair & { key: string }>();
  /** the containers whose diff svc chose not to read (nothing pulled for them): no warning */
  const byChoice = new Set<ContainerEntry>();
  for (const entry of stale) {
    const key = pairKey(entry.summary.imageId, entry.verdict!.newDigest!);
    const known = vulns.known(key);
    if (known) {
      entry.vulnerabilities = known;
      continue;
    }
    try {
      const attached = await attachedPair(vulns, checker, entry);
      if ("pair" in attached) {
        asked.set(entry.summary.name, { ...attached.pair, key });
        continue;
      }
      const candidate = await newerImage(deps, ctx, checker, scope.options, entry);
      if (typeof candidate !== "string") {
        entry.vulnerabilities = unknown(notRead(attached.missing, candidate.not));
        byChoice.add(entry);
        continue;
      }
      const [running, newer] = await Promise.all([vulns.inventory(entry.summary.imageId), vulns.inventory(candidate)]);
      asked.set(entry.summary.name, { running, candidate: newer, key });
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
      (byChoice.has(entry) ? ctx.log.debug : ctx.log.warn).call(ctx.log, "vulnerabilities not read", {
        container: entry.summary.name,
        problem: diff.problem,
      });
    if (passOver !== "off" && heldByMinAge(entry)) passMinAge(ctx, entry, diff, passOver as Severity);
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
 * no reading container. Unless both have one, which is missing (one side from an SBOM and the
 * other from its package database would not list the same things the same way).
 */
async function attachedPair(
  vulns: Vulnerabilities,
  checker: Checker,
  entry: ContainerEntry,
): Promise<{ pair: ImagePair } | { missing: Side }> {
  const { ref, oldDigest, newDigest } = entry.verdict!;
  if (!ref || !newDigest) return { missing: "newer" };
  const platform = await checker.platformOf(entry.summary.imageId);
  const [running, candidate] = await Promise.all([
    oldDigest?.startsWith("sha256:") ? vulns.attached(ref, oldDigest, platform) : null,
    vulns.attached(ref, newDigest, platform),
  ]);
  if (!candidate) return { missing: "newer" };
  if (!running) return { missing: "running" };
  return {
    pair: { running: { inventory: running.inventory }, candidate: { inventory: candidate.inventory }, fromSbom: true },
  };
}

type Side = "running" | "newer";

/** Why a container has no diff when svc does not pull its newer image: said in the report as it is. */
function notRead(missing: Side, why: string): string {
  const sbom =
    missing === "newer" ? "no SBOM for the new image" : "no SBOM for the running image, and the new image is not here";
  return `${sbom}; ${why}`;
}

/**
 * The newer image's local id, when it is here (the one no_pull found, or the image of the new
 * digest), or when svc pulls it anyway: a container to be replaced, or held by min_image_age when
 * min_image_age_unless_fixes may pass it over, pulled by digest (its tag left where it is); a
 * container waiting for its window through pre_pull's own pull ahead. Never in a dry run, never
 * for a monitor-only container. Else why not (`not`), for the report.
 */
async function newerImage(
  deps: VulnsDeps,
  ctx: ProtocolContext,
  checker: Checker,
  options: CycleOptions,
  entry: ContainerEntry,
): Promise<string | { not: string }> {
  const verdict = entry.verdict!;
  if (verdict.newImageId) return verdict.newImageId;
  const ref = verdict.ref!;
  const reference = `${ref.registry}/${ref.repository}@${verdict.newDigest}`;
  const here = await deps.engine.inspectImage(reference).catch(() => null);
  if (here) return here.Id;
  if (entry.policy.monitorOnly) return { not: "svc pulls nothing for a monitor-only container" };
  if (entry.state === "pending") {
    if (!pullsAhead(entry)) return { not: "nothing is pulled ahead of its window for it: read when its window opens" };
    if (!deps.puller) return { not: "the newer image is pulled ahead of its window at the next real cycle" };
    const pulled = await deps.puller.pull(entry);
    return pulled ?? { not: "pulling it ahead of its window failed: read at the next cycle" };
  }
  const mayPassOver = deps.config.vulnerabilities.min_image_age_unless_fixes !== "off" && heldByMinAge(entry);
  if (entry.finishedAt !== undefined && !mayPassOver)
    return {
      not: heldByMinAge(entry)
        ? "svc pulls it once min_image_age has passed"
        : "svc pulls it once the update is no longer held",
    };
  if (options.dryRun || entry.policy.noPull)
    return { not: "the newer image is not here yet: read at the next real cycle, once pulled" };
  const platform = await checker.platformOf(entry.summary.imageId);
  const auth = await deps.registry.pullAuth(ref);
  ctx.log.debug("pulling the newer image by digest to read its packages", {
    container: entry.summary.name,
    image: reference,
  });
  await deps.engine.pullImage(reference, { platform, auth });
  const pulled = await deps.engine.inspectImage(reference);
  if (!pulled) throw new Error(`${reference} is not on the engine once pulled`);
  return pulled.Id;
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
