/**
 * The vulns room (docs/vulnerabilities.md): what an image holds, and what an update fixes and
 * brings in, from OSV. The updater holds one `Vulnerabilities` for the life of the service: its
 * inventories (by image id), records (by id and modified) and diffs (by the pair of the running
 * image and the newer digest) are kept in memory, so that a pair is looked up once, not per cycle.
 */
import type { Config } from "../config/index.ts";
import type { Engine } from "../engine/port.ts";
import { diffPairs, type ImagePair, type VulnerabilityDiff } from "./diff.ts";
import { createInventoryReader, type InventoryAnswer } from "./image.ts";
import { createOsvClient, type OsvClient } from "./osv.ts";

export type { ImagePair, VulnerabilityDiff, VulnerabilityEntry } from "./diff.ts";
export { diffSummary, PASSED_MIN_AGE } from "./diff.ts";
export { READER_LABEL } from "./image.ts";
export { atOrAbove, SEVERITIES, type Severity } from "./severity.ts";

/** Diffs kept, by pair. */
const MAX_DIFFS = 1000;

export interface Vulnerabilities {
  /** an image's inventory (a local image's id), read once per id */
  inventory(imageId: string): Promise<InventoryAnswer>;
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
  fetchImpl?: typeof fetch,
): Vulnerabilities | null {
  if (!config.vulnerabilities.enabled) return null;
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
