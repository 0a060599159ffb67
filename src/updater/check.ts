/**
 * Staleness: is there a newer image for the reference a container runs?
 *
 * One `listImages` call gives the RepoDigests of every local image, so fresh containers cost no
 * inspect. Candidates are grouped by (normalised reference, image id): each group costs one
 * registry check, however many containers share it.
 */
import type { Engine, ImageSummary, Platform } from "../engine/port.ts";
import { formatDuration } from "../config/index.ts";
import { toSvcError } from "../errors.ts";
import type { ImageRef, LocalImage, RegistryCheckSession } from "../registry/port.ts";
import { isPinned, parseReference } from "../registry/reference.ts";
import type { Remembered } from "../state/index.ts";

export interface CheckInput {
  name: string;
  /** reference as written on the container */
  image: string;
  imageId: string;
  noPull: boolean;
  /** a newer image waits until svc has known it this long (0: at once) */
  minImageAgeMs?: number;
}

export interface Verdict {
  state: "fresh" | "stale" | "skipped";
  reason: string | null;
  ref?: ImageRef;
  oldDigest: string | null;
  newDigest: string | null;
  /** known before the pull only with no_pull (the local image for the tag) */
  newImageId: string | null;
  /** stale, but not to be applied yet (min_image_age): the reason says until when */
  held?: boolean;
}

export interface Checker {
  check(input: CheckInput): Promise<Verdict>;
  /** the platform of a local image, from its inspect (memoised per image id) */
  platformOf(imageId: string): Promise<Platform>;
}

/**
 * A digest that was rolled back is remembered per container name (across restarts with
 * `state_dir`): the same digest is not retried until a newer one appears.
 */
export type RolledBackDigests = Remembered;

export function createChecker(deps: {
  engine: Engine;
  session: RegistryCheckSession;
  images: readonly ImageSummary[];
  rolledBack: RolledBackDigests;
  /** when each container's newer digest was first seen ("<digest> <ISO time>", per container name) */
  firstSeen?: Remembered;
  /** digests skipped on request, per container name */
  skipped?: Remembered;
}): Checker {
  const images = new Map(deps.images.map((image) => [image.id, image]));
  const platforms = new Map<string, Promise<Platform>>();
  const groups = new Map<string, Promise<{ stale: boolean; digest: string }>>();

  const platformOf = (imageId: string): Promise<Platform> => {
    let platform = platforms.get(imageId);
    if (!platform) {
      platform = deps.engine.inspectImage(imageId).then((image) => {
        if (!image) throw toSvcError(new Error(`image ${imageId} is not in the local store`), "engine");
        return { os: image.Os, architecture: image.Architecture, variant: image.Variant || undefined };
      });
      platforms.set(imageId, platform);
    }
    return platform;
  };

  const registryCheck = (ref: ImageRef, local: LocalImage) => {
    const key = `${ref.normalized}|${local.id}`;
    let result = groups.get(key);
    if (!result) {
      result = deps.session.check(ref, local, () => platformOf(local.id));
      groups.set(key, result);
    }
    return result;
  };

  const check = async (input: CheckInput): Promise<Verdict> => {
    const none = { oldDigest: null, newDigest: null, newImageId: null };
    if (input.image === "" || input.image.startsWith("sha256:") || input.image === input.imageId) {
      return { state: "skipped", reason: "created from an image id, not a reference", ...none };
    }
    let ref: ImageRef;
    try {
      ref = parseReference(input.image);
    } catch (error) {
      return { state: "skipped", reason: toSvcError(error).message, ...none };
    }
    if (isPinned(ref)) return { state: "skipped", reason: "pinned by digest", ref, ...none };

    const local = localImage(input.imageId, images.get(input.imageId));
    const oldDigest = digestFor(ref, local.repoDigests) ?? (local.manifestDigests ? local.id : null);
    let verdict: Verdict;
    try {
      verdict = input.noPull ? await checkLocal(deps.engine, ref, input.imageId, oldDigest) : await checkRegistry(ref, local, oldDigest);
    } catch (error) {
      return { state: "skipped", reason: toSvcError(error).message, ref, oldDigest, newDigest: null, newImageId: null };
    }
    const remembered = deps.rolledBack.get(input.name);
    const candidate = verdict.newDigest ?? verdict.newImageId;
    if (verdict.state === "stale" && remembered !== undefined && remembered === candidate) {
      return { ...verdict, state: "skipped", reason: `${candidate} was rolled back before; waiting for a newer image` };
    }
    if (verdict.state === "stale" && candidate && deps.skipped?.get(input.name) === candidate) {
      return { ...verdict, state: "skipped", reason: `${candidate} was skipped on request (POST /v1/skip); waiting for a newer image` };
    }
    if (verdict.state === "stale" && candidate && (input.minImageAgeMs ?? 0) > 0) return holdUntilOldEnough(verdict, input.name, candidate, input.minImageAgeMs!);
    return verdict;
  };

  /** min_image_age: the age is counted from when svc first saw this digest for this container. */
  const holdUntilOldEnough = (verdict: Verdict, name: string, candidate: string, minAgeMs: number): Verdict => {
    const seen = deps.firstSeen?.get(name)?.split(" ");
    let seenAt = seen?.[0] === candidate ? Date.parse(seen[1] ?? "") : Number.NaN;
    if (Number.isNaN(seenAt)) {
      seenAt = Date.now();
      deps.firstSeen?.set(name, `${candidate} ${new Date(seenAt).toISOString()}`);
    }
    const eligibleAt = seenAt + minAgeMs;
    if (Date.now() >= eligibleAt) return verdict;
    const reason = `newer image ${candidate} first seen ${new Date(seenAt).toISOString()}; applied once it is ${formatDuration(minAgeMs)} old, from ${new Date(eligibleAt).toISOString()} (min_image_age)`;
    return { ...verdict, reason, held: true };
  };

  const checkRegistry = async (ref: ImageRef, local: LocalImage, oldDigest: string | null): Promise<Verdict> => {
    const result = await registryCheck(ref, local);
    if (!result.stale) return { state: "fresh", reason: null, ref, oldDigest: oldDigest ?? result.digest, newDigest: null, newImageId: null };
    return { state: "stale", reason: null, ref, oldDigest, newDigest: result.digest, newImageId: null };
  };

  return { check, platformOf };
}

/**
 * What the check needs of a local image. On the containerd image store the id is the digest of
 * what was pulled or pushed, so it is also the old digest when the engine kept no RepoDigest for
 * it (the tag moved to another image).
 */
function localImage(id: string, summary: ImageSummary | undefined): LocalImage {
  const local: LocalImage = { id, repoDigests: summary?.repoDigests ?? [] };
  if (summary?.manifests) local.manifestDigests = summary.manifests.map((m) => m.digest);
  return local;
}

/** no_pull: the local image the tag points to now, against the image the container runs. */
async function checkLocal(engine: Engine, ref: ImageRef, imageId: string, oldDigest: string | null): Promise<Verdict> {
  const local = await engine.inspectImage(ref.original);
  if (!local) return { state: "skipped", reason: `no local image for ${ref.original} (no_pull)`, ref, oldDigest, newDigest: null, newImageId: null };
  if (local.Id === imageId) return { state: "fresh", reason: null, ref, oldDigest, newDigest: null, newImageId: null };
  return { state: "stale", reason: null, ref, oldDigest, newDigest: digestFor(ref, local.RepoDigests ?? []), newImageId: local.Id };
}

/** The digest under which `ref`'s repository knows a local image ("repo@sha256:..."), if any. */
export function digestFor(ref: ImageRef, repoDigests: readonly string[]): string | null {
  for (const entry of repoDigests) {
    try {
      const parsed = parseReference(entry);
      if (parsed.registry === ref.registry && parsed.repository === ref.repository && parsed.digest) return parsed.digest;
    } catch {
      // an odd entry tells us nothing
    }
  }
  return null;
}
