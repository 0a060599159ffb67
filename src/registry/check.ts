/**
 * The digest check of one cycle. A fresh image costs one HEAD request. When the tag moved, the
 * manifest is fetched and, for a multi-arch index, only OUR platform's entry decides: an index
 * change that leaves our platform's image alone is not an update.
 * Every registry answer is cached for the session (one request per unique reference and platform,
 * however many containers share it; identical concurrent requests share one promise), and the
 * session never has more than `registry_concurrency` requests in flight.
 *
 * Tag policies ask three more questions, under the same rules: a repository's tags (one listing
 * per repository per session, following the registry's pages), whether a tag has an image for our
 * platform, and when an image was built (its config's `created`).
 */
import type { Config } from "../config/index.ts";
import { SvcError } from "../core/errors.ts";
import type { Platform } from "../engine/port.ts";
import type { Logger } from "../log/index.ts";
import {
  DIGEST,
  errorsSchema,
  type ImageConfig,
  type IndexEntry,
  imageConfigSchema,
  type ManifestBody,
  manifestSchema,
  parseAnswer,
  REGISTRY_LIMITS,
  readAnswer,
  readCapped,
  tagsPageSchema,
} from "./answers.ts";
import type { RegistryClient, Target } from "./client.ts";
import type { CheckResult, ImageRef, LocalImage, RegistryCheckSession } from "./port.ts";
import { parseReference, sameRepository } from "./reference.ts";

export const MEDIA_TYPES = {
  ociIndex: "application/vnd.oci.image.index.v1+json",
  ociManifest: "application/vnd.oci.image.manifest.v1+json",
  dockerList: "application/vnd.docker.distribution.manifest.list.v2+json",
  dockerManifest: "application/vnd.docker.distribution.manifest.v2+json",
} as const;

const ACCEPT = [MEDIA_TYPES.ociIndex, MEDIA_TYPES.ociManifest, MEDIA_TYPES.dockerList, MEDIA_TYPES.dockerManifest].join(
  ", ",
);

interface Manifest extends ManifestBody {
  digest: string;
  mediaType: string;
}

/** Tags asked for per page: one request for all but the largest repositories. */
export const TAGS_PAGE_SIZE = 1000;
/** A listing stops after this many pages (a million tags at the default size), keeping what it read. */
const MAX_TAG_PAGES = 1000;

/** A registry that answered 404: the caller decides whether that is an error. */
class NotFound extends SvcError {}

/** What a HEAD told us: a digest, or nothing usable (then GET decides). */
type HeadResult = { digest: string } | { digest?: undefined };

export class Limiter {
  private active = 0;
  private readonly waiting: (() => void)[] = [];
  constructor(private readonly max: number) {}

  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.active >= this.max) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.active++;
    try {
      return await task();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.active--;
    }
  }
}

export class CheckSession implements RegistryCheckSession {
  private readonly answers = new Map<string, Promise<unknown>>();
  private readonly limiter: Limiter;

  constructor(
    private readonly client: RegistryClient,
    private readonly options: Config,
    private readonly log: Logger,
    /** tags asked for per page (tests lower it to see the pages) */
    private readonly tagsPageSize = TAGS_PAGE_SIZE,
  ) {
    this.limiter = new Limiter(Math.max(1, options.registry_concurrency));
  }

  async check(ref: ImageRef, local: LocalImage, platform: () => Promise<Platform>): Promise<CheckResult> {
    // A pinned reference names one immutable manifest: there is never anything newer.
    if (ref.digest !== undefined) return { stale: false, digest: ref.digest };
    const tag = ref.tag ?? "latest";

    const head = await this.head(ref, tag);
    if (head.digest !== undefined && isLocalDigest(local, ref, head.digest))
      return { stale: false, digest: head.digest };

    const top = await this.manifest(ref, head.digest ?? tag);
    if (isLocalDigest(local, ref, top.digest)) return { stale: false, digest: top.digest };

    const ours = isIndex(top) ? await this.platformEntry(ref, top, platform) : top.digest;
    // An image store that keeps platform manifests (containerd) answers with our platform's
    // manifest digest alone: the manifest itself need not be downloaded.
    if (local.manifestDigests) return { stale: !local.manifestDigests.includes(ours), digest: top.digest };
    const configDigest = this.configDigestOf(ref, ours === top.digest ? top : await this.manifest(ref, ours));
    return { stale: configDigest !== local.id, digest: top.digest };
  }

  async digest(ref: ImageRef): Promise<string> {
    if (ref.digest !== undefined) return ref.digest;
    const tag = ref.tag ?? "latest";
    return (await this.head(ref, tag)).digest ?? (await this.manifest(ref, tag)).digest;
  }

  tags(ref: ImageRef): Promise<string[]> {
    return this.once(`TAGS ${ref.registry}/${ref.repository}`, () => this.listTags(ref, this.tagsPageSize));
  }

  async platformImage(
    ref: ImageRef,
    tag: string,
    platform: () => Promise<Platform>,
  ): Promise<{ digest: string } | null> {
    let top: Manifest;
    try {
      top = await this.manifest(ref, tag);
    } catch (error) {
      if (error instanceof NotFound) return null;
      throw error;
    }
    const wanted = await platform();
    if (isIndex(top)) return pickPlatform(top.manifests ?? [], wanted) ? { digest: top.digest } : null;
    const config = await this.config(ref, top);
    const entry = {
      digest: top.digest,
      platform: { os: config.os, architecture: config.architecture, variant: config.variant },
    };
    return pickPlatform([entry], wanted) ? { digest: top.digest } : null;
  }

  async created(ref: ImageRef, reference: string, platform: () => Promise<Platform>): Promise<Date | null> {
    const top = await this.manifest(ref, reference);
    const manifest = isIndex(top) ? await this.manifest(ref, await this.platformEntry(ref, top, platform)) : top;
    const created = (await this.config(ref, manifest)).created;
    const time = typeof created === "string" ? Date.parse(created) : Number.NaN;
    return Number.isNaN(time) ? null : new Date(time);
  }

  async labels(ref: ImageRef, reference: string, platform: () => Promise<Platform>): Promise<Record<string, string>> {
    const top = await this.manifest(ref, reference);
    const manifest = isIndex(top) ? await this.manifest(ref, await this.platformEntry(ref, top, platform)) : top;
    const labels = (await this.config(ref, manifest)).config?.Labels ?? {};
    return Object.fromEntries(
      Object.entries(labels).filter(
        (entry): entry is [string, string] => typeof entry[1] === "string" && entry[1].length <= 2048,
      ),
    );
  }

  /**
   * Every page of `/v2/<name>/tags/list`. A registry that refuses our page size (400) is asked
   * again with its own; a `next` link seen before ends the walk (a registry looping on its pages).
   */
  private async listTags(ref: ImageRef, pageSize: number | undefined): Promise<string[]> {
    const tags: string[] = [];
    const seen = new Set<string>();
    let path: string | null = `/v2/${ref.repository}/tags/list${pageSize ? `?n=${pageSize}` : ""}`;
    for (let page = 0; path !== null; page++) {
      if (page === MAX_TAG_PAGES || seen.has(path)) {
        this.log.warn("tag listing stopped early; newer tags may be missed", {
          image: ref.normalized,
          registry: ref.registry,
          tags: tags.length,
        });
        break;
      }
      seen.add(path);
      // (the listing as a whole holds one of the session's request slots)
      const response: Response = await this.client.request(target(ref), "GET", path, { Accept: "application/json" });
      if (response.status === 400 && page === 0 && pageSize !== undefined) {
        await response.body?.cancel();
        return this.listTags(ref, undefined);
      }
      const what = `GET /v2/${ref.repository}/tags/list`;
      if (!response.ok) throw await registryError(ref, response, what);
      const answer = `${ref.registry}'s answer to ${what}`;
      const body = await readAnswer(response, REGISTRY_LIMITS.tagsPageBytes, tagsPageSchema, answer);
      tags.push(...(body.tags ?? []));
      if (tags.length > REGISTRY_LIMITS.tagsPerRepository) {
        throw new SvcError(
          "registry",
          `${ref.registry}/${ref.repository} lists more than ${REGISTRY_LIMITS.tagsPerRepository} tags, the most svc reads of a repository`,
        );
      }
      path = nextPage(response.headers.get("link"));
    }
    return tags;
  }

  /** An image's config blob (platform, creation time); cached by digest for the session. */
  private config(ref: ImageRef, manifest: Manifest): Promise<ImageConfig> {
    const digest = this.configDigestOf(ref, manifest);
    return this.once(`BLOB ${ref.registry}/${ref.repository}@${digest}`, async () => {
      const path = `/v2/${ref.repository}/blobs/${digest}`;
      const response = await this.client.request(target(ref), "GET", path, {});
      if (!response.ok) throw await registryError(ref, response, `GET ${path}`);
      const what = `${ref.original}: the image config from registry ${ref.registry}`;
      return readAnswer(response, REGISTRY_LIMITS.manifestBytes, imageConfigSchema, what);
    });
  }

  /** The digest of our platform's manifest in an index. */
  private async platformEntry(ref: ImageRef, index: Manifest, platform: () => Promise<Platform>): Promise<string> {
    const wanted = await platform();
    const entry = pickPlatform(index.manifests ?? [], wanted);
    if (!entry) {
      throw new SvcError(
        "registry",
        `${ref.original}: registry ${ref.registry} has no image for platform ${formatPlatform(wanted)}`,
      );
    }
    return entry.digest;
  }

  private configDigestOf(ref: ImageRef, manifest: Manifest): string {
    const digest = manifest.config?.digest;
    if (typeof digest !== "string") {
      throw new SvcError(
        "registry",
        `${ref.original}: registry ${ref.registry} returned a manifest of an unsupported type (${manifest.mediaType || "unknown"})`,
      );
    }
    return digest;
  }

  private once<T>(key: string, load: () => Promise<T>): Promise<T> {
    let answer = this.answers.get(key) as Promise<T> | undefined;
    if (!answer) {
      answer = this.limiter.run(load);
      this.answers.set(key, answer);
    }
    return answer;
  }

  private head(ref: ImageRef, tag: string): Promise<HeadResult> {
    return this.once(`HEAD ${ref.registry}/${ref.repository}:${tag}`, async () => {
      const path = manifestPath(ref, tag);
      const response = await this.client.request(target(ref), "HEAD", path, { Accept: ACCEPT });
      await response.body?.cancel();
      if (!response.ok) {
        this.logHeadFailure(ref, response.status);
        return {};
      }
      const digest = digestHeader(response);
      if (!digest) {
        this.log.debug("manifest HEAD carried no digest; using GET", { image: ref.normalized, registry: ref.registry });
        return {};
      }
      return { digest };
    });
  }

  /** head_warn_strategy (docs/configuration.md): `auto` is silent on authentication failures, loud on the rest. */
  private logHeadFailure(ref: ImageRef, status: number): void {
    const fields = { image: ref.normalized, registry: ref.registry, status };
    const message = "manifest HEAD request failed; falling back to GET";
    const strategy = this.options.head_warn_strategy;
    const authFailure = status === 401 || status === 403;
    if (strategy === "always" || (strategy === "auto" && !authFailure)) this.log.warn(message, fields);
    else this.log.debug(message, fields);
  }

  private manifest(ref: ImageRef, reference: string): Promise<Manifest> {
    return this.once(
      `GET ${ref.registry}/${ref.repository}${reference.includes(":") ? "@" : ":"}${reference}`,
      async () => {
        const path = manifestPath(ref, reference);
        const response = await this.client.request(target(ref), "GET", path, { Accept: ACCEPT });
        if (response.status === 404) {
          const error = await registryError(ref, response, `GET ${path}`);
          throw new NotFound(error.kind, error.message);
        }
        if (!response.ok) throw await registryError(ref, response, `GET ${path}`);
        const what = `${ref.original}: the manifest from registry ${ref.registry}`;
        const bytes = await readCapped(response, REGISTRY_LIMITS.manifestBytes, what);
        const digest = digestHeader(response) ?? `sha256:${new Bun.SHA256().update(bytes).digest("hex")}`;
        const body = parseAnswer(bytes, manifestSchema, what);
        const mediaType =
          body.mediaType ?? response.headers.get("content-type")?.split(";")[0]?.trim().slice(0, 256) ?? "";
        return { ...body, digest, mediaType };
      },
    );
  }
}

/** The path and query of a `Link: <...>; rel="next"` header (relative or absolute), if any. */
export function nextPage(link: string | null): string | null {
  if (!link) return null;
  for (const part of link.split(",")) {
    // anchored: unanchored, a header of many '<' took quadratic time
    const match = /^<([^>]*)>\s*;(.*)$/s.exec(part.trim());
    if (!match || !/\brel\s*=\s*"?next"?/i.test(match[2]!)) continue;
    const url = new URL(match[1]!, "http://registry.invalid");
    return `${url.pathname}${url.search}`;
  }
  return null;
}

/** The Docker-Content-Digest header when it holds a digest (it goes into later request paths). */
function digestHeader(response: Response): string | undefined {
  const digest = response.headers.get("docker-content-digest");
  return digest !== null && DIGEST.test(digest) ? digest : undefined;
}

function target(ref: ImageRef): Target {
  return { registry: ref.registry, repository: ref.repository };
}

function manifestPath(ref: ImageRef, reference: string): string {
  return `/v2/${ref.repository}/manifests/${reference}`;
}

function isIndex(manifest: Manifest): boolean {
  return (
    manifest.mediaType === MEDIA_TYPES.ociIndex ||
    manifest.mediaType === MEDIA_TYPES.dockerList ||
    (Array.isArray(manifest.manifests) && !manifest.config)
  );
}

/**
 * Does the local image already hold what `digest` names? One of its RepoDigests for this
 * repository, or, on an image store whose ids are manifest digests (containerd), its id.
 */
function isLocalDigest(local: LocalImage, ref: ImageRef, digest: string): boolean {
  return knowsDigest(local, ref, digest) || local.id === digest;
}

/** Is `digest` one of the local image's RepoDigests for this reference's repository? */
export function knowsDigest(local: LocalImage, ref: ImageRef, digest: string): boolean {
  return local.repoDigests.some((entry) => {
    const at = entry.lastIndexOf("@");
    if (at === -1 || entry.slice(at + 1) !== digest) return false;
    try {
      return sameRepository(parseReference(entry), ref);
    } catch {
      return false;
    }
  });
}

const ARCH_ALIASES: Record<string, string> = {
  x86_64: "amd64",
  "x86-64": "amd64",
  aarch64: "arm64",
  armhf: "arm",
  armel: "arm",
  i386: "386",
};

function normalArch(architecture: string | undefined): string {
  const lower = (architecture ?? "").toLowerCase();
  return ARCH_ALIASES[lower] ?? lower;
}

/** arm64's only variant is v8: writing it or not means the same. */
function normalVariant(architecture: string, variant: string | undefined): string | undefined {
  if (architecture === "arm64" && (variant === undefined || variant === "v8")) return undefined;
  return variant || undefined;
}

/**
 * The index entry for `wanted`: same OS and architecture; the same variant when one matches,
 * else an entry without a variant, else the only candidate. Attestation entries
 * (platform unknown/unknown) never match.
 */
export function pickPlatform(entries: IndexEntry[], wanted: Platform): IndexEntry | undefined {
  const arch = normalArch(wanted.architecture);
  const variant = normalVariant(arch, wanted.variant);
  const candidates = entries.filter(
    (e) =>
      e.platform &&
      (e.platform.os ?? "").toLowerCase() === wanted.os.toLowerCase() &&
      normalArch(e.platform.architecture) === arch,
  );
  const variantOf = (e: IndexEntry) => normalVariant(arch, e.platform?.variant);
  return (
    candidates.find((e) => variantOf(e) === variant) ??
    (variant === undefined ? undefined : candidates.find((e) => variantOf(e) === undefined)) ??
    (candidates.length === 1 && variant === undefined ? candidates[0] : undefined)
  );
}

export function formatPlatform(platform: Platform): string {
  return [platform.os, platform.architecture, platform.variant].filter(Boolean).join("/");
}

/** A registry error for a non-2xx answer: host, status, the registry's error code; never a credential. */
export async function registryError(ref: ImageRef, response: Response, what: string): Promise<SvcError> {
  let code = "";
  try {
    const body = await readAnswer(response, REGISTRY_LIMITS.errorBytes, errorsSchema, what);
    const first = body.errors?.[0]?.code;
    if (typeof first === "string" && /^[A-Z_]{1,64}$/.test(first)) code = ` ${first}`;
  } catch {
    // not JSON, not the usual shape, or too large: the status says enough
  }
  const hint =
    response.status === 401 || response.status === 403 ? " (authentication required or credentials rejected)" : "";
  const statusText = response.statusText ? ` ${response.statusText}` : "";
  return new SvcError(
    "registry",
    `registry ${ref.registry} answered ${response.status}${statusText}${code}${hint} to ${what}`,
  );
}
