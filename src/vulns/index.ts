/**
 * The vulns room (docs/vulnerabilities.md): what an image holds, and what an update fixes and
 * brings in, from OSV. The updater holds one `Vulnerabilities` for the life of the service: its
 * inventories (by image id), records (by id and modified) and diffs (by the pair of the running
 * image and the newer digest) are kept in memory, so that a pair is looked up once, not per cycle.
 */
import type { Config } from "../config/index.ts";
import { toSvcError } from "../core/errors.ts";
import type { Engine, Platform } from "../engine/port.ts";
import { diffPairs, type ImagePair, type VulnerabilityDiff } from "./diff.ts";
import { createInventoryReader, type InventoryAnswer } from "./image.ts";
import { createOsvClient, type OsvClient } from "./osv.ts";
import { type ArtifactReader, type ImageRef, readSbom, type SbomAnswer } from "./sbom.ts";

export type { ImagePair, VulnerabilityDiff, VulnerabilityEntry } from "./diff.ts";
export { diffSummary, PASSED_MIN_AGE } from "./diff.ts";
export { READER_LABEL } from "./image.ts";
export { atOrAbove, SEVERITIES, type Severity } from "./severity.ts";

/** Diffs kept, by pair. */
const MAX_DIFFS = 1000;
/** SBOM answers kept, by repository and digest (an answer of none too: it costs requests to ask again). */
const MAX_SBOMS = 1000;

export interface Vulnerabilities {
  /** an image's inventory (a local image's id), read once per id */
  inventory(imageId: string): Promise<InventoryAnswer>;
  /**
   * The inventory of the image `digest` names in `ref`'s repository from the SBOM attached to it
   * in the registry (vulns/sbom.ts), asked once per digest; null when it has none svc reads, the
   * registry failed, or svc reads no registry artifacts.
   */
  attached(ref: ImageRef, digest: string, platform: Platform): Promise<SbomAnswer>;
  /** the diff kept for a pair, if it was looked up */
  known(pairKey: string): VulnerabilityDiff | undefined;
  /** every pair's diff from one OSV lookup; the answered ones are kept */
  lookUp(pairs: ReadonlyMap<string, ImagePair & { key: string }>): Promise<Map<string, VulnerabilityDiff>>;
  readonly osv: OsvClient;
}

/** The pair's key: the running image and the newer digest. */
export const pairKey = (runningImageId: string, newDigest: string): string => `${runningImageId} ${newDigest}`;

/** null when `vulnerabilities.enabled` is off: nothing is read and nothing leaves the host. */
export function createVulnerabilities(
  config: Config,
  engine: Pick<Engine, "createHelper" | "readArchive" | "removeContainer">,
  options: { fetch?: typeof fetch; artifacts?: ArtifactReader; onSbomProblem?: (problem: string) => void } = {},
): Vulnerabilities | null {
  if (!config.vulnerabilities.enabled) return null;
  const fetchImpl = options.fetch;
  const sboms = new Map<string, Promise<SbomAnswer>>();
  const reader = createInventoryReader(engine);
  const osv = createOsvClient({
    url: config.vulnerabilities.osv_url,
    timeoutMs: config.vulnerabilities.timeout,
    ...(fetchImpl ? { fetch: fetchImpl } : {}),
  });
  const diffs = new Map<string, VulnerabilityDiff>();
  return {
    osv,
    inventory: (imageId) => reader.read(imageId),
    attached(ref, digest, platform) {
      const artifacts = options.artifacts;
      if (!artifacts) return Promise.resolve(null);
      const key = `${ref.registry}/${ref.repository}@${digest} ${platform.os}/${platform.architecture}`;
      let answer = sboms.get(key);
      if (!answer) {
        answer = readSbom(artifacts, ref, digest, platform).catch((error): SbomAnswer => {
          // the registry failed: the engine's way is taken, and the digest asked again next time
          sboms.delete(key);
          options.onSbomProblem?.(`${ref.original}@${digest}: ${toSvcError(error).message}`);
          return null;
        });
        sboms.set(key, answer);
        if (sboms.size > MAX_SBOMS) sboms.delete(sboms.keys().next().value!);
      }
      return answer;
    },
    known: (key) => diffs.get(key),
    async lookUp(pairs) {
      const answered = await diffPairs(osv, pairs);
      for (const [name, diff] of answered) {
        if (diff.problem !== null) continue;
        const key = pairs.get(name)!.key;
        diffs.delete(key);
        diffs.set(key, diff);
        if (diffs.size > MAX_DIFFS) diffs.delete(diffs.keys().next().value!);
      }
      return answered;
    },
  };
}
