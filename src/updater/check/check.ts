/**
 * Staleness: is there a newer image for the reference a container runs?
 *
 * One `listImages` call gives the RepoDigests of every local image, so fresh containers cost no
 * inspect. Candidates are grouped by (normalised reference, image id): each group costs one
 * registry check, however many containers share it.
 */

import { formatDuration, type TagPolicy } from "../../config/index.ts";
import { toSvcError } from "../../core/errors.ts";
import type { Engine, ImageSummary, Platform } from "../../engine/port.ts";
import type { Logger } from "../../log/index.ts";
import type { ImageRef, LocalImage, RegistryCheckSession } from "../../registry/port.ts";
import { isPinned, parseReference, withTag } from "../../registry/reference.ts";
import type { Remembered } from "../../state/index.ts";
import { type BaseInput, type BasesVerdict, checkBases, describeHeldTags, describeMoves } from "./bases.ts";
import { snoozeReason } from "./snooze.ts";
import { MAX_CANDIDATES, newerTags } from "./tags.ts";

export interface CheckInput {
  name: string;
  /** reference as written on the container */
  image: string;
  imageId: string;
  noPull: boolean;
  /** a newer image waits until svc has known it this long (0: at once) */
  minImageAgeMs?: number;
  /** which newer tags the container may move to; null/undefined: it follows its own tag */
  tagPolicy?: TagPolicy | null;
  /** a newer tag is only reported, never applied (a compose-managed container not labelled to move) */
  reportTagOnly?: boolean;
  /** why a newer tag is only reported (the compose file cannot be written: compose/locate.ts); absent: not labelled to move */
  tagHeldBecause?: string;
  /** a `repo:tag@digest` reference may move to a newer tag (and its digest): its compose line is written (docs/compose.md) */
  movesPinned?: boolean;
  /** with noPull: the local reference to go to instead of the container's own (a rollback across tags) */
  localReference?: string;
  /** a newer image is found but not applied before this moment (check/snooze.ts) */
  snoozedUntil?: number;
  /** a service compose builds: it follows its bases, not its own image (check/bases.ts) */
  built?: BuiltInput;
}

export interface BuiltInput {
  /** the images it is built from; null: unknown, `problem` says why */
  bases: readonly BaseInput[] | null;
  problem: string | null;
  /** why a moved base is only reported, not rebuilt (no compose CLI, not a compose service...); null: it is rebuilt */
  heldBecause: string | null;
  /** the build svc runs, as a person would type it (said by monitor-only and a dry run) */
  command?: string | null;
}

export interface Verdict {
  state: "fresh" | "stale" | "skipped";
  reason: string | null;
  ref?: ImageRef;
  oldDigest: string | null;
  newDigest: string | null;
  /** known before the pull only with no_pull (the local image for the tag) */
  newImageId: string | null;
  /** the reference the container moves to (a tag policy, a rollback across tags); null: its own */
  newImage: string | null;
  /** stale, but not to be applied in this cycle (min_image_age, a newer tag only reported): the reason says why */
  held?: boolean;
  /** held by min_image_age alone: when it lets the newer image be applied */
  minAgeUntil?: number;
  /** a built service: its bases, and those that moved since it was built */
  bases?: BasesVerdict;
}

export interface Checker {
  check(input: CheckInput): Promise<Verdict>;
  /** the platform of a local image, from its inspect (memoised per image id) */
  platformOf(imageId: string): Promise<Platform>;
  /**
   * The labels of the image a stale verdict replaces: as the engine listed the local image, else
   * (a Swarm service's image, which lives on its nodes) its config from the registry.
   */
  runningLabels(verdict: Verdict, imageId: string): Promise<Readonly<Record<string, string>>>;
  /**
   * The labels of the newer image a stale verdict names: its config from the registry (one
   * manifest and one blob request, cached for the cycle), or the local image's under no_pull.
   * Asked for stale targets only (docs/release-notes.md). Throws on registry errors.
   */
  candidateLabels(verdict: Verdict, imageId: string): Promise<Readonly<Record<string, string>>>;
}

/**
 * A digest that was rolled back is remembered per container name (across restarts with
 * `state_dir`): the same digest is not retried until a newer one appears.
 */
export type RolledBackDigests = Remembered;

/**
 * Why a digest is skipped, from the word kept after it: a skip on request (no word), or the image
 * a rollback left, by the API or the command line.
 */
const SKIP_ORIGINS: Record<string, string> = {
  "": "was skipped on request (POST /v1/skip)",
  "rollback:api": "was left by a rollback (POST /v1/rollback)",
  "rollback:run_once": "was left by a rollback (svc rollback)",
};

export function createChecker(deps: {
  engine: Engine;
  session: RegistryCheckSession;
  images: readonly ImageSummary[];
  rolledBack: RolledBackDigests;
  /** when each container's newer digest was first seen ("<digest> <ISO time>", per container name) */
  firstSeen?: Remembered;
  /** digests (or references) skipped on request, per container name */
  skipped?: Remembered;
  log?: Logger;
  /** the platform every checked image is for, when it is not a local image's (a Swarm service's image lives on its nodes) */
  platform?: () => Promise<Platform>;
  /** each built service's bases and the digests it was built from, per container name (check/bases.ts) */
  buildBases?: Remembered;
}): Checker {
  const images = new Map(deps.images.map((image) => [image.id, image]));
  const platforms = new Map<string, Promise<Platform>>();
  const groups = new Map<string, Promise<{ stale: boolean; digest: string }>>();

  const platformOf = (imageId: string): Promise<Platform> => {
    if (deps.platform) return deps.platform();
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
    const none = { oldDigest: null, newDigest: null, newImageId: null, newImage: null };
    if (input.built) {
      const verdict = await checkBuilt(input, input.built);
      return verdict.state === "stale" && !verdict.held ? afterStale(verdict, input) : verdict;
    }
    if (input.image === "" || input.image.startsWith("sha256:") || input.image === input.imageId) {
      return { state: "skipped", reason: "created from an image id, not a reference", ...none };
    }
    let ref: ImageRef;
    try {
      ref = parseReference(input.image);
    } catch (error) {
      return { state: "skipped", reason: toSvcError(error).message, ...none };
    }
    const pinnedLine =
      isPinned(ref) && input.movesPinned === true && Boolean(input.tagPolicy) && ref.tag !== undefined && !input.noPull;
    // (a rollback across tags names its local reference: a pinned line goes back to its old pin)
    if (isPinned(ref) && !pinnedLine && input.localReference === undefined)
      return { state: "skipped", reason: "pinned by digest", ref, ...none };

    const local = localImage(input.imageId, images.get(input.imageId));
    const oldDigest = digestFor(ref, local.repoDigests) ?? (local.manifestDigests ? local.id : null);
    let verdict: Verdict;
    try {
      verdict = pinnedLine
        ? await checkPinnedLine(ref, input)
        : input.noPull
          ? await checkLocal(deps.engine, ref, input, oldDigest)
          : await checkRegistry(ref, local, oldDigest, input);
    } catch (error) {
      return failedCheck(error, ref, oldDigest);
    }
    if (verdict.state !== "stale" || verdict.held) return verdict;
    return afterStale(verdict, input);
  };

  /** A stale verdict through what may still hold it: a digest rolled back or skipped, a snooze, min_image_age. */
  const afterStale = async (verdict: Verdict, input: CheckInput): Promise<Verdict> => {
    const candidate = verdict.newDigest ?? verdict.newImageId;
    const remembered = deps.rolledBack.get(input.name);
    if (remembered !== undefined && remembered === candidate) {
      return { ...verdict, state: "skipped", reason: `${candidate} was rolled back before; waiting for a newer image` };
    }
    const [skipped, origin] = deps.skipped?.get(input.name)?.split(" ") ?? [];
    if (skipped !== undefined && (skipped === candidate || skipped === verdict.newImage)) {
      return {
        ...verdict,
        state: "skipped",
        reason: `${skipped} ${SKIP_ORIGINS[origin ?? ""] ?? SKIP_ORIGINS[""]}; waiting for a newer image`,
      };
    }
    const minAge = (input.minImageAgeMs ?? 0) > 0;
    // when it was first seen, for anyone asking how long it has waited (the dashboard); no registry
    // request: min_image_age alone asks for the creation time
    if (candidate && !minAge && parseSeen(deps.firstSeen?.get(input.name))?.digest !== candidate)
      deps.firstSeen?.set(input.name, `${candidate} ${new Date().toISOString()} -`);
    if (input.snoozedUntil !== undefined) return { ...verdict, reason: snoozeReason(input.snoozedUntil), held: true };
    if (candidate && minAge) return holdUntilOldEnough(verdict, input, candidate);
    return verdict;
  };

  /**
   * A built service against its bases: stale when one moved since it was built (its new digest is
   * the candidate a rollback or a skip remembers), held when svc does not rebuild it.
   */
  const checkBuilt = async (input: CheckInput, built: BuiltInput): Promise<Verdict> => {
    const none = { oldDigest: null, newDigest: null, newImageId: null, newImage: null };
    if (!built.bases) return { state: "skipped", reason: built.problem ?? "its bases are unknown", ...none };
    let found: BasesVerdict;
    try {
      const policy = input.tagPolicy;
      found = await checkBases(
        deps.session,
        deps.buildBases ?? forgetful,
        input.name,
        built.bases,
        policy ? (ref) => newerTag(ref, policy, input) : undefined,
        input.imageId,
      );
    } catch (error) {
      return { state: "skipped", reason: toSvcError(error).message, ...none };
    }
    const moved = found.moved[0];
    const anchor = moved ?? found.bases.find((b) => !b.pinned) ?? found.bases[0];
    const digests = { oldDigest: anchor?.built ?? null, newImageId: null, newImage: null };
    const heldTags = describeHeldTags(found.bases);
    const reported = found.bases.find((b) => b.newer && !b.site)?.newer;
    // a newer base tag svc cannot write is reported as a compose service's newer tag is
    if (!moved && reported)
      return {
        state: "stale",
        reason: heldTags,
        ref: found.ref,
        ...digests,
        newDigest: reported.digest,
        bases: found,
        held: true,
      };
    if (!moved) return { state: "fresh", reason: null, ref: found.ref, ...digests, newDigest: null, bases: found };
    const moves = [describeMoves(found.moved), heldTags].filter(Boolean).join("; ");
    const stale: Verdict = {
      state: "stale",
      reason: built.command ? `${moves}; rebuilt with ${built.command}` : moves,
      ref: found.ref,
      ...digests,
      newDigest: moved.newer && moved.site ? moved.newer.digest : moved.now,
      bases: found,
    };
    if (built.heldBecause) return { ...stale, reason: `${moves}; not rebuilt: ${built.heldBecause}`, held: true };
    return stale;
  };

  /**
   * min_image_age: the age counts from the later of when svc first saw this digest for this
   * container and the image's creation time (which an image can forge, so it only ever delays).
   */
  const holdUntilOldEnough = async (verdict: Verdict, input: CheckInput, candidate: string): Promise<Verdict> => {
    let seen = parseSeen(deps.firstSeen?.get(input.name));
    if (seen?.digest !== candidate) {
      seen = { digest: candidate, seenAt: Date.now(), createdAt: await creationTime(verdict, input) };
      deps.firstSeen?.set(
        input.name,
        [
          candidate,
          new Date(seen.seenAt).toISOString(),
          seen.createdAt === null ? "-" : new Date(seen.createdAt).toISOString(),
        ].join(" "),
      );
    }
    const since = Math.max(seen.seenAt, seen.createdAt ?? 0);
    const eligibleAt = since + input.minImageAgeMs!;
    if (Date.now() >= eligibleAt) return verdict;
    const counted =
      since === seen.seenAt
        ? `first seen ${new Date(seen.seenAt).toISOString()}`
        : `created ${new Date(since).toISOString()} (after svc first saw it)`;
    const reason = `newer image ${candidate} ${counted}; applied once it is ${formatDuration(input.minImageAgeMs!)} old, from ${new Date(eligibleAt).toISOString()} (min_image_age)`;
    return { ...verdict, reason, held: true, minAgeUntil: eligibleAt };
  };

  /** The creation time of the newer image, as its config says; null when unknown (then first-seen alone counts). */
  const creationTime = async (verdict: Verdict, input: CheckInput): Promise<number | null> => {
    try {
      if (verdict.newImageId) {
        const created = Date.parse((await deps.engine.inspectImage(verdict.newImageId))?.Created ?? "");
        return Number.isNaN(created) ? null : created;
      }
      return (
        (await deps.session.created(verdict.ref!, verdict.newDigest!, () => platformOf(input.imageId)))?.getTime() ??
        null
      );
    } catch (error) {
      deps.log?.debug("creation time unknown; min_image_age counts from first seen", {
        container: input.name,
        error: toSvcError(error).message,
      });
      return null;
    }
  };

  const checkRegistry = async (
    ref: ImageRef,
    local: LocalImage,
    oldDigest: string | null,
    input: CheckInput,
  ): Promise<Verdict> => {
    const moved = input.tagPolicy ? await newerTag(ref, input.tagPolicy, input) : null;
    if (moved && !input.reportTagOnly)
      return {
        state: "stale",
        reason: null,
        ref,
        oldDigest,
        newDigest: moved.digest,
        newImageId: null,
        newImage: withTag(ref, moved.tag),
      };
    const result = await registryCheck(ref, local);
    if (moved) {
      // compose names the tag: a newer one is reported; a newer image of its own tag is applied as ever
      const note = `newer tag ${moved.tag} available; the compose file names ${ref.tag} (${input.tagHeldBecause ?? "label svc.tag_policy.compose=move to follow tags"})`;
      if (result.stale)
        return {
          state: "stale",
          reason: note,
          ref,
          oldDigest,
          newDigest: result.digest,
          newImageId: null,
          newImage: null,
        };
      return {
        state: "stale",
        reason: note,
        ref,
        oldDigest: oldDigest ?? result.digest,
        newDigest: moved.digest,
        newImageId: null,
        newImage: withTag(ref, moved.tag),
        held: true,
      };
    }
    if (!result.stale)
      return {
        state: "fresh",
        reason: null,
        ref,
        oldDigest: oldDigest ?? result.digest,
        newDigest: null,
        newImageId: null,
        newImage: null,
      };
    return { state: "stale", reason: null, ref, oldDigest, newDigest: result.digest, newImageId: null, newImage: null };
  };

  /** A compose line `repo:tag@digest` that svc writes: a newer tag moves both; the line's own digest never changes under it. */
  const checkPinnedLine = async (ref: ImageRef, input: CheckInput): Promise<Verdict> => {
    const oldDigest = ref.digest!;
    try {
      const moved = await newerTag(ref, input.tagPolicy!, input);
      if (!moved)
        return { state: "fresh", reason: null, ref, oldDigest, newDigest: null, newImageId: null, newImage: null };
      const base = ref.original.slice(0, ref.original.indexOf("@"));
      return {
        state: "stale",
        reason: null,
        ref,
        oldDigest,
        newDigest: moved.digest,
        newImageId: null,
        newImage: `${base.slice(0, base.lastIndexOf(":"))}:${moved.tag}@${moved.digest}`,
      };
    } catch (error) {
      return failedCheck(error, ref, oldDigest);
    }
  };

  /** The best tag the policy allows that has an image for our platform, if any is newer than the running one. */
  const newerTag = async (
    ref: ImageRef,
    policy: TagPolicy,
    input: CheckInput,
  ): Promise<{ tag: string; digest: string } | null> => {
    const candidates = newerTags(policy, ref.tag ?? "latest", await deps.session.tags(ref));
    for (const tag of (candidates ?? []).slice(0, MAX_CANDIDATES)) {
      const image = await deps.session.platformImage(ref, tag, () => platformOf(input.imageId));
      if (image) return { tag, digest: image.digest };
      deps.log?.debug("newer tag has no image for our platform; trying the next", { container: input.name, tag });
    }
    return null;
  };

  const runningLabels = async (verdict: Verdict, imageId: string): Promise<Readonly<Record<string, string>>> => {
    const listed = images.get(imageId);
    if (listed?.labels || !verdict.ref || !verdict.oldDigest || !deps.platform) return listed?.labels ?? {};
    return deps.session.labels(verdict.ref, verdict.oldDigest, () => platformOf(imageId));
  };

  const candidateLabels = async (verdict: Verdict, imageId: string): Promise<Readonly<Record<string, string>>> => {
    if (verdict.newImageId) return (await deps.engine.inspectImage(verdict.newImageId))?.Config?.Labels ?? {};
    const reference = verdict.newDigest ?? (verdict.newImage ? parseReference(verdict.newImage).tag : undefined);
    if (!verdict.ref || !reference) return {};
    return deps.session.labels(verdict.ref, reference, () => platformOf(imageId));
  };

  return { check, platformOf, runningLabels, candidateLabels };
}

/** A memory that keeps nothing: without one, every base is seen for the first time. */
const forgetful: Remembered = { get: () => undefined, set: () => {}, delete: () => {}, entries: () => [] };

interface Seen {
  digest: string;
  seenAt: number;
  createdAt: number | null;
}

/** A first-seen record: "<digest> <first seen> <created or ->" (older records have no creation time). */
function parseSeen(value: string | undefined): Seen | undefined {
  const [digest, seen, created] = value?.split(" ") ?? [];
  const seenAt = Date.parse(seen ?? "");
  if (!digest || Number.isNaN(seenAt)) return undefined;
  const createdAt = Date.parse(created ?? "");
  return { digest, seenAt, createdAt: Number.isNaN(createdAt) ? null : createdAt };
}

/**
 * What the check needs of a local image. On the containerd image store the id is the digest of
 * what was pulled or pushed, so it is also the old digest when the engine kept no RepoDigest for
 * it (the tag moved to another image).
 */
/** A check that could not be made: skipped with its error, nothing new known. */
function failedCheck(error: unknown, ref: ImageRef, oldDigest: string | null): Verdict {
  return {
    state: "skipped",
    reason: toSvcError(error).message,
    ref,
    oldDigest,
    newDigest: null,
    newImageId: null,
    newImage: null,
  };
}

function localImage(id: string, summary: ImageSummary | undefined): LocalImage {
  const local: LocalImage = { id, repoDigests: summary?.repoDigests ?? [] };
  if (summary?.manifests) local.manifestDigests = summary.manifests.map((m) => m.digest);
  return local;
}

/**
 * no_pull: the local image the tag points to now (or `localReference`'s, a rollback across tags),
 * against the image the container runs.
 */
async function checkLocal(
  engine: Engine,
  ref: ImageRef,
  input: CheckInput,
  oldDigest: string | null,
): Promise<Verdict> {
  const reference = input.localReference ?? ref.original;
  const newImage = reference === ref.original ? null : reference;
  const local = await engine.inspectImage(reference);
  if (!local)
    return {
      state: "skipped",
      reason: `no local image for ${reference} (no_pull)`,
      ref,
      oldDigest,
      newDigest: null,
      newImageId: null,
      newImage,
    };
  if (local.Id === input.imageId && newImage === null)
    return { state: "fresh", reason: null, ref, oldDigest, newDigest: null, newImageId: null, newImage };
  const target = newImage === null ? ref : parseReference(newImage);
  return {
    state: "stale",
    reason: null,
    ref,
    oldDigest,
    newDigest: digestFor(target, local.RepoDigests ?? []),
    newImageId: local.Id,
    newImage,
  };
}

/** The digest under which `ref`'s repository knows a local image ("repo@sha256:..."), if any. */
export function digestFor(ref: ImageRef, repoDigests: readonly string[]): string | null {
  for (const entry of repoDigests) {
    try {
      const parsed = parseReference(entry);
      if (parsed.registry === ref.registry && parsed.repository === ref.repository && parsed.digest)
        return parsed.digest;
    } catch {
      // an odd entry tells us nothing
    }
  }
  return null;
}
