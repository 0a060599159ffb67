/**
 * Containers of services compose builds (docs/compose.md, "Built services"): found before the
 * check from their project's files (compose `build:`, through the compose room), or named by hand
 * with the label `svc.build.base`; the check then follows their bases (check/bases.ts) instead of
 * their own image, which no registry holds.
 */
import { type BuildSpec, basesOf, buildOf, labelledBases, projectOf, untrustedBecause } from "../../compose/index.ts";
import type { Engine, ImageSummary } from "../../engine/port.ts";
import type { BaseInput } from "../check/bases.ts";
import type { BuiltInput } from "../check/check.ts";
import type { BuiltReport } from "../types.ts";
import type { ContainerEntry } from "./replace.ts";

/** A built service's container: its build as the files say it, and its bases. */
export interface BuiltTarget {
  /** null: named by the label alone, with no build svc can read (not rebuilt) */
  spec: BuildSpec | null;
  bases: BaseInput[] | null;
  /** why its bases are unknown */
  problem: string | null;
  /** the build svc runs for it, as a person would type it (set once a cycle, when svc rebuilds here) */
  command?: string | null;
}

/**
 * Marks the entries whose containers compose built. An image's labels come from the cycle's one
 * image list (a label naming a project that came from the image names no file svc reads).
 */
export async function findBuilt(
  engine: Pick<Engine, "inspectImage">,
  images: readonly ImageSummary[],
  entries: Iterable<ContainerEntry>,
): Promise<void> {
  const listed = new Map(images.map((image) => [image.id, image.labels]));
  for (const entry of entries) {
    const { labels, imageId } = entry.summary;
    const labelled = labelledBases(labels);
    const project = projectOf(labels);
    if (!project && !labelled) continue;
    const imageLabels =
      listed.get(imageId) ??
      (await engine.inspectImage(imageId).then(
        (image) => (image ? (image.Config?.Labels ?? {}) : null),
        () => null,
      ));
    const found = project && !untrustedBecause(labels, imageLabels) ? buildOf(project) : null;
    if (!found) {
      if (labelled) entry.built = { spec: null, bases: labelled, problem: null };
      continue;
    }
    if (!found.ok) {
      entry.built = { spec: null, bases: labelled, problem: found.reason };
      continue;
    }
    const bases = labelled ? { ok: true as const, bases: labelled } : basesOf(found.spec);
    entry.built = bases.ok
      ? {
          spec: found.spec,
          bases: bases.bases.map(({ reference, platform }) => ({ reference, platform })),
          problem: null,
        }
      : { spec: found.spec, bases: null, problem: bases.reason };
  }
}

/**
 * What the check is told of a built container; undefined: not a built one. `held`: why svc
 * rebuilds nothing here (containers/rebuild.ts, rebuildHeld), or null.
 */
export function builtCheckInput(
  entry: ContainerEntry,
  held: string | null,
  command: string | null = null,
): BuiltInput | undefined {
  const built = entry.built;
  if (!built) return undefined;
  return {
    bases: built.bases,
    problem: built.problem,
    command,
    heldBecause: built.spec
      ? held
      : "svc reads no compose build of it (its bases are named by label): rebuild it yourself",
  };
}

/** The report's `built` of a built container (types.ts, BuiltReport). */
export function builtReport(entry: ContainerEntry): BuiltReport {
  const found = entry.verdict?.bases;
  return {
    bases: (found?.bases ?? []).map((b) => ({
      reference: b.reference,
      platform: b.platform,
      pinned: b.pinned,
      built_digest: b.built,
      digest: b.now,
    })),
    moved: (found?.moved ?? []).map((b) => b.reference),
    rebuilt: entry.state === "updated" && entry.rebuiltFrom !== undefined,
    command: entry.built?.command ?? null,
  };
}
