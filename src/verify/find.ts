/**
 * Where an image's signatures are: the OCI 1.1 referrers API, else the referrers tag schema
 * (`sha256-<hex>`, an index of referrers kept by the signer), else cosign's legacy tag
 * (`sha256-<hex>.sig`). Asked only for a digest an update would run; each answer is bounded and
 * parsed (the registry room's ArtifactReader), and the number of manifests read is capped.
 */
import type { ArtifactManifest, ArtifactReader, Descriptor, ImageRef } from "../registry/index.ts";

export const BUNDLE_TYPES = [
  "application/vnd.dev.sigstore.bundle.v0.3+json",
  "application/vnd.dev.sigstore.bundle+json;version=0.3",
] as const;
export const SIMPLE_SIGNING_TYPE = "application/vnd.dev.cosign.simplesigning.v1+json";
/** cosign's annotation on a legacy signature layer: the base64 signature of the layer's payload */
export const SIGNATURE_ANNOTATION = "dev.cosignproject.cosign/signature";
/** referrer manifests read per digest: signatures are few; anything past this is not looked at */
const MAX_MANIFESTS = 10;
/** signatures read from one legacy `.sig` manifest */
const MAX_LAYERS = 10;

export type Where = "referrers API" | "referrers tag" | "legacy tag";

export type FoundSignature =
  | { format: "bundle"; where: Where; bundle: Uint8Array }
  | { format: "simple"; where: Where; payload: Uint8Array; signature: string };

/** The signatures attached to `digest` in `ref`'s repository, from the first place that has any. */
export async function findSignatures(reader: ArtifactReader, ref: ImageRef, digest: string): Promise<FoundSignature[]> {
  const tag = digest.replace(":", "-");
  const referrers = await reader.referrers(ref, digest);
  if (referrers !== null) {
    const found = await bundlesOf(reader, ref, referrers, "referrers API");
    if (found.length > 0) return found;
  } else {
    const index = await reader.manifest(ref, tag);
    const found = index ? await bundlesOf(reader, ref, index.body.manifests ?? [], "referrers tag") : [];
    if (found.length > 0) return found;
  }
  const legacy = await reader.manifest(ref, `${tag}.sig`);
  return legacy ? simpleSignaturesOf(reader, ref, legacy.body) : [];
}

/** Sigstore bundles among referrers: manifests whose artifact type (or first layer) is a bundle. */
async function bundlesOf(
  reader: ArtifactReader,
  ref: ImageRef,
  referrers: readonly Descriptor[],
  where: Where,
): Promise<FoundSignature[]> {
  const found: FoundSignature[] = [];
  // (the tag schema's index may name a referrer's type as the empty config's: only other types are passed over)
  const candidates = referrers.filter((d) => d.artifactType === undefined || !isOtherType(d.artifactType));
  // a registry may list one referrer on every page: each is read once
  const digests = [...new Set(candidates.map((d) => d.digest))];
  for (const digest of digests.slice(0, MAX_MANIFESTS)) {
    const manifest = await reader.manifest(ref, digest);
    const layer = manifest ? bundleLayer(manifest.body) : undefined;
    if (layer) found.push({ format: "bundle", where, bundle: await reader.blob(ref, layer.digest) });
  }
  return found;
}

function isOtherType(type: string): boolean {
  return !isBundleType(type) && type !== "application/vnd.oci.empty.v1+json";
}

function isBundleType(type: string | undefined): boolean {
  return type !== undefined && (BUNDLE_TYPES as readonly string[]).includes(type.replace(/\s+/g, ""));
}

function bundleLayer(manifest: ArtifactManifest): Descriptor | undefined {
  const layer = manifest.layers?.[0];
  if (!layer) return undefined;
  return isBundleType(manifest.artifactType) || isBundleType(layer.mediaType) ? layer : undefined;
}

/** cosign's legacy signatures: each simple-signing layer, its signature in an annotation. */
async function simpleSignaturesOf(
  reader: ArtifactReader,
  ref: ImageRef,
  manifest: ArtifactManifest,
): Promise<FoundSignature[]> {
  const found: FoundSignature[] = [];
  const layers = (manifest.layers ?? []).filter((l) => l.mediaType === SIMPLE_SIGNING_TYPE);
  for (const layer of layers.slice(0, MAX_LAYERS)) {
    const signature = layer.annotations?.[SIGNATURE_ANNOTATION];
    if (!signature) continue;
    found.push({ format: "simple", where: "legacy tag", payload: await reader.blob(ref, layer.digest), signature });
  }
  return found;
}
