/**
 * A built service (compose `build:`) follows the images it is built from (docs/compose.md, "Built
 * services"): each base's digest is the registry's answer to the same one HEAD per image the
 * check makes for running containers (the session shares it). On first sight a base's digest is
 * recorded (state_dir, section `build_bases`) and nothing is rebuilt; from then on a base whose
 * digest differs from the one recorded makes the service stale, naming the base and both digests.
 * A base pinned by digest names one image forever: it is never asked, never moves.
 */

import { shortDigest } from "../../core/digests.ts";
import { SvcError, toSvcError } from "../../core/errors.ts";
import type { ImageRef, RegistryCheckSession } from "../../registry/port.ts";
import { isPinned, parseReference, withTag } from "../../registry/reference.ts";
import type { Remembered } from "../../state/index.ts";

/** A base as the Dockerfile (or the label) names it. */
export interface BaseInput {
  reference: string;
  platform: string | null;
  /** where its tag is written, when svc may move it there (a tag policy); absent: a newer tag is only reported */
  tagSite?: BaseTagSite;
  /** why a newer tag is only reported (the Dockerfile cannot be written, the tag comes from build.args...) */
  tagHeldBecause?: string;
}

/** The run of a Dockerfile that holds a base's tag: the `FROM`'s own, or a global `ARG`'s default. */
export interface BaseTagSite {
  file: string;
  offset: number;
  text: string;
  /** the ARG the tag is read from, if any */
  variable: string | null;
}

/** A newer tag a tag policy allows for a base. */
export interface NewerBase {
  tag: string;
  digest: string;
  /** the base's reference with the new tag */
  reference: string;
}

/** A base, checked: the digest it was recorded at and the one its reference names now. */
export interface BaseState {
  reference: string;
  platform: string | null;
  pinned: boolean;
  /** the digest the service was last built from (recorded at first sight, then at each rebuild) */
  built: string;
  /** the digest its reference names now */
  now: string;
  /** a newer tag the container's tag policy allows (moved when `site` is set) */
  newer?: NewerBase;
  site?: BaseTagSite;
  /** why the newer tag is only reported */
  newerHeld?: string;
}

/** What the check found of a built service's bases. */
export interface BasesVerdict {
  bases: BaseState[];
  /** the bases whose digest moved since the last build */
  moved: BaseState[];
  ref: ImageRef | undefined;
  /** the bases recorded at this check (first sight) */
  recorded: string[];
}

/**
 * The key of a baseline that holds the image id its container ran when the baseline was written:
 * a container on another image was built again by someone else (`docker compose build` and `up -d`
 * by hand), and its bases are recorded anew.
 */
export const BUILT_IMAGE_KEY = "@image";

/** The baseline of one container: base reference -> the digest it was last built from. */
export function readBaseline(memory: Remembered, name: string): Map<string, string> {
  try {
    const parsed: unknown = JSON.parse(memory.get(name) ?? "{}");
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) return new Map();
    return new Map(Object.entries(parsed).filter((e): e is [string, string] => typeof e[1] === "string"));
  } catch {
    return new Map();
  }
}

export function writeBaseline(memory: Remembered, name: string, baseline: ReadonlyMap<string, string>): void {
  memory.set(name, JSON.stringify(Object.fromEntries(baseline)));
}

/**
 * Each base's digest now against the baseline; bases seen for the first time are recorded (a
 * base the Dockerfile no longer names is forgotten). Throws the first base's error (the check is
 * then skipped with it: a service is not stale on a guess).
 */
export async function checkBases(
  session: RegistryCheckSession,
  memory: Remembered,
  name: string,
  inputs: readonly BaseInput[],
  newerTag?: (ref: ImageRef) => Promise<{ tag: string; digest: string } | null>,
  imageId?: string,
): Promise<BasesVerdict> {
  const stored = readBaseline(memory, name);
  const builtImage = stored.get(BUILT_IMAGE_KEY);
  stored.delete(BUILT_IMAGE_KEY);
  // rebuilt meanwhile, not by svc: what it was built from is what the registry names now
  const baseline = imageId !== undefined && builtImage !== undefined && builtImage !== imageId ? new Map() : stored;
  const bases: BaseState[] = [];
  let first: ImageRef | undefined;
  for (const input of inputs) {
    let ref: ImageRef;
    try {
      ref = parseReference(input.reference);
    } catch (error) {
      throw new SvcError("bad_request", `base ${input.reference}: ${toSvcError(error).message}`);
    }
    first ??= ref;
    const pinned = isPinned(ref);
    let now: string;
    try {
      now = await session.digest(ref);
    } catch (error) {
      const failed = toSvcError(error);
      throw new SvcError(failed.kind, `base ${input.reference}: ${failed.message}`);
    }
    const state: BaseState = {
      reference: input.reference,
      platform: input.platform,
      pinned,
      built: baseline.get(input.reference) ?? now,
      now,
    };
    const newer = !pinned && ref.tag !== undefined && newerTag ? await newerTag(ref) : null;
    if (newer) {
      state.newer = { ...newer, reference: withTag(ref, newer.tag) };
      if (input.tagSite) state.site = input.tagSite;
      else state.newerHeld = input.tagHeldBecause ?? "svc does not know where its tag is written";
    }
    bases.push(state);
  }
  const recorded = bases.filter((b) => !baseline.has(b.reference)).map((b) => b.reference);
  const kept = new Map(bases.map((b) => [b.reference, b.built]));
  if (recorded.length > 0 || kept.size !== baseline.size || (imageId !== undefined && builtImage !== imageId)) {
    if (imageId !== undefined) kept.set(BUILT_IMAGE_KEY, imageId);
    writeBaseline(memory, name, kept);
  }
  const moved = bases.filter((b) => !b.pinned && (b.built !== b.now || b.site !== undefined));
  const ref = moved[0] ? parseReference(moved[0].reference) : first;
  return { bases, moved, ref, recorded };
}

/** "base busybox:1.36 moved sha256:1111111 -> sha256:2222222; base caddy:2.8 -> caddy:2.9 (tag policy)" */
export function describeMoves(moved: readonly BaseState[]): string {
  return moved
    .map((b) =>
      b.site && b.newer
        ? `base ${b.reference} -> ${b.newer.reference} (tag policy)`
        : `base ${b.reference} moved ${shortDigest(b.built)} -> ${shortDigest(b.now)}`,
    )
    .join("; ");
}

/** "newer tag caddy:2.9 of base caddy:2.8 not moved: ..." for each newer tag only reported. */
export function describeHeldTags(bases: readonly BaseState[]): string | null {
  const held = bases.filter((b) => b.newer && !b.site);
  if (held.length === 0) return null;
  return held.map((b) => `newer tag ${b.newer!.reference} of base ${b.reference} not moved: ${b.newerHeld}`).join("; ");
}
