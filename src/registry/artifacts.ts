/**
 * What is attached to an image in its repository (signatures: docs/verification.md): the OCI 1.1
 * referrers API, manifests read by tag or digest with their bytes, and small blobs. Every answer
 * is bounded and parsed with a schema, through the one client (its credentials and tokens).
 */
import { z } from "zod";
import { SvcError } from "../core/errors.ts";
import { DIGEST, parseAnswer, readCapped } from "./answers.ts";
import { nextPage, registryError } from "./check.ts";
import type { RegistryClient } from "./client.ts";
import type { ImageRef } from "./port.ts";

/** The caps of what an image's attachments may cost, each named in the error that passes it. */
export const ARTIFACT_LIMITS = {
  /** a referrer's manifest, a referrers index */
  manifestBytes: 256 * 1024,
  /** a signature's layer: a Sigstore bundle or a simple-signing payload */
  blobBytes: 256 * 1024,
  /** referrers read for one digest, every page together */
  referrers: 100,
  /** pages of a referrers answer followed */
  pages: 5,
} as const;

const MEDIA_TYPES = [
  "application/vnd.oci.image.index.v1+json",
  "application/vnd.oci.image.manifest.v1+json",
  "application/vnd.docker.distribution.manifest.v2+json",
].join(", ");

const digest = z.string().regex(DIGEST, { error: "is not a digest" });
const text = z.string().max(512);
const annotations = z.record(z.string().max(256), z.string().max(64 * 1024)).optional();

export const descriptorSchema = z.object({
  mediaType: text.optional(),
  artifactType: text.optional(),
  digest,
  size: z.number().int().nonnegative().optional(),
  annotations,
  /** an index entry's platform (the one an engine pulls is picked by it) */
  platform: z.object({ os: text.optional(), architecture: text.optional(), variant: text.optional() }).optional(),
});
export type Descriptor = z.infer<typeof descriptorSchema>;

/** An OCI manifest or index, as much of it as an attachment needs. */
export const artifactManifestSchema = z.object({
  mediaType: text.optional(),
  artifactType: text.optional(),
  config: descriptorSchema.optional(),
  layers: z.array(descriptorSchema).max(ARTIFACT_LIMITS.referrers).optional(),
  manifests: z.array(descriptorSchema).max(ARTIFACT_LIMITS.referrers).optional(),
  subject: descriptorSchema.optional(),
  annotations,
});
export type ArtifactManifest = z.infer<typeof artifactManifestSchema>;

export interface ArtifactReader {
  /**
   * The referrers of `digest` (`GET /v2/<name>/referrers/<digest>`), following `Link` pages;
   * null when the registry has no referrers API (404, or an answer that is not an index).
   */
  referrers(ref: ImageRef, digest: string): Promise<Descriptor[] | null>;
  /** A manifest or index by tag or digest, with its digest; null when there is none (404). */
  manifest(ref: ImageRef, reference: string): Promise<{ digest: string; body: ArtifactManifest } | null>;
  /** A blob, at most `cap` bytes (ARTIFACT_LIMITS.blobBytes), checked against its digest. */
  blob(ref: ImageRef, digest: string, cap?: number): Promise<Uint8Array>;
  /** Requests sent so far (the bench reports what a verification costs). */
  readonly requests: number;
}

export function createArtifactReader(client: RegistryClient): ArtifactReader {
  let requests = 0;
  const request = (ref: ImageRef, path: string, accept: string) => {
    requests++;
    return client.request({ registry: ref.registry, repository: ref.repository }, "GET", path, { Accept: accept });
  };

  const referrers = async (ref: ImageRef, subject: string): Promise<Descriptor[] | null> => {
    const found: Descriptor[] = [];
    let path: string | null = `/v2/${ref.repository}/referrers/${subject}`;
    for (let page = 0; path !== null && page < ARTIFACT_LIMITS.pages; page++) {
      const response: Response = await request(ref, path, "application/vnd.oci.image.index.v1+json");
      if (response.status === 404) {
        await response.body?.cancel();
        return page === 0 ? null : found;
      }
      if (!response.ok) throw await registryError(ref, response, `GET ${path}`);
      const what = `${ref.original}: the referrers of ${subject}`;
      const bytes = await readCapped(response, ARTIFACT_LIMITS.manifestBytes, what);
      const body = parseAnswer(bytes, artifactManifestSchema, what);
      // a registry without the API may answer its catch-all with something else: no API then
      if (page === 0 && body.manifests === undefined) return null;
      found.push(...(body.manifests ?? []));
      if (found.length >= ARTIFACT_LIMITS.referrers) return found.slice(0, ARTIFACT_LIMITS.referrers);
      path = nextPage(response.headers.get("link"));
    }
    return found;
  };

  const manifest = async (ref: ImageRef, reference: string) => {
    const path = `/v2/${ref.repository}/manifests/${reference}`;
    const response = await request(ref, path, MEDIA_TYPES);
    if (response.status === 404) {
      await response.body?.cancel();
      return null;
    }
    if (!response.ok) throw await registryError(ref, response, `GET ${path}`);
    const what = `${ref.original}: the manifest ${reference}`;
    const bytes = await readCapped(response, ARTIFACT_LIMITS.manifestBytes, what);
    const computed = sha256(bytes);
    if (reference.startsWith("sha256:") && computed !== reference)
      throw new SvcError("registry", `${what} does not match its digest`);
    return { digest: computed, body: parseAnswer(bytes, artifactManifestSchema, what) };
  };

  const blob = async (ref: ImageRef, digest: string, cap: number = ARTIFACT_LIMITS.blobBytes): Promise<Uint8Array> => {
    const path = `/v2/${ref.repository}/blobs/${digest}`;
    const response = await request(ref, path, "*/*");
    if (!response.ok) throw await registryError(ref, response, `GET ${path}`);
    const what = `${ref.original}: the blob ${digest}`;
    const bytes = await readCapped(response, cap, what);
    if (sha256(bytes) !== digest) throw new SvcError("registry", `${what} does not match its digest`);
    return bytes;
  };

  return {
    referrers,
    manifest,
    blob,
    get requests() {
      return requests;
    },
  };
}

function sha256(bytes: Uint8Array): string {
  return `sha256:${new Bun.SHA256().update(bytes).digest("hex")}`;
}
