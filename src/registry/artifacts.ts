/**
 * What is attached to an image in its repository (signatures: docs/verification.md): the OCI 1.1
 * referrers API, manifests read by tag or digest with their bytes, and small blobs. Every answer
 * is bounded and parsed with a schema, through the one client (its credentials and tokens).
 */
import { SvcError } from "../core/errors.ts";
import { parseAnswer, readCapped } from "./answers.ts";
import { nextPage, registryError } from "./check.ts";
import type { RegistryClient } from "./client.ts";
import { ARTIFACT_LIMITS, artifactManifestSchema, type Descriptor } from "./descriptors.ts";
import type { ArtifactReader, ImageRef } from "./port.ts";

const MEDIA_TYPES = [
  "application/vnd.oci.image.index.v1+json",
  "application/vnd.oci.image.manifest.v1+json",
  "application/vnd.docker.distribution.manifest.v2+json",
].join(", ");

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
