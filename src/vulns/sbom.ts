/**
 * What an image holds, from the SBOM its publisher attached to it in the registry
 * (docs/vulnerabilities.md), read before the engine's way: BuildKit's attestation manifests in
 * the image's index (an entry with `vnd.docker.reference.type: attestation-manifest` naming the
 * platform image by `vnd.docker.reference.digest`, its in-toto layers' predicate type in
 * `in-toto.io/predicate-type`), else the OCI referrers of the platform image (the referrers API,
 * else the referrers tag schema's `sha256-<hex>` index). An SPDX or
 * CycloneDX document, bare or as an in-toto statement's predicate, gives package URLs; the OS
 * packages among them (deb, apk, rpm, their `distro` qualifier) make the inventory. Every answer
 * is bounded (the registry room's caps, MAX_SBOM_BYTES here) and parsed with a schema.
 */
import { z } from "zod";
import { parseJsonBytes } from "../core/bounded.ts";
import type { Platform } from "../engine/port.ts";
import { type Distro, type InstalledPackage, type Inventory, inventoryOf, packageUrl } from "./inventory.ts";
import type { VersionFormat } from "./versions.ts";

/**
 * What this room reads of a registry (the registry room's ArtifactReader is one; a room of the
 * same layer is not imported): manifests by digest or tag, referrers, and blobs through a cap.
 */
export interface Descriptor {
  mediaType?: string | undefined;
  artifactType?: string | undefined;
  digest: string;
  size?: number | undefined;
  annotations?: Record<string, string> | undefined;
  platform?: { os?: string | undefined; architecture?: string | undefined; variant?: string | undefined } | undefined;
}
export interface ArtifactManifest {
  artifactType?: string | undefined;
  layers?: Descriptor[] | undefined;
  manifests?: Descriptor[] | undefined;
}
export interface ImageRef {
  registry: string;
  repository: string;
  /** the reference as written, for errors */
  original: string;
}
export interface ArtifactReader {
  referrers(ref: ImageRef, digest: string): Promise<Descriptor[] | null>;
  manifest(ref: ImageRef, reference: string): Promise<{ digest: string; body: ArtifactManifest } | null>;
  blob(ref: ImageRef, digest: string, cap?: number): Promise<Uint8Array>;
}

/** The most bytes of one SBOM read (an SPDX document of a large image is a few MiB). */
export const MAX_SBOM_BYTES = 16 * 1024 * 1024;
/** Package entries an SBOM may list (OS and language packages together). */
const MAX_SBOM_ENTRIES = 50_000;
/** Attestation manifests or referrers read for one image: SBOMs are one or two. */
const MAX_CANDIDATES = 4;

export const ATTESTATION_TYPE_ANNOTATION = "vnd.docker.reference.type";
export const ATTESTATION_DIGEST_ANNOTATION = "vnd.docker.reference.digest";
export const ATTESTATION_MANIFEST = "attestation-manifest";
export const PREDICATE_TYPE_ANNOTATION = "in-toto.io/predicate-type";
/** BuildKit's artifact type of an attestation manifest pushed as an OCI artifact (a referrer) */
export const ATTESTATION_ARTIFACT_TYPE = "application/vnd.docker.attestation.manifest.v1+json";
const SPDX_PREDICATES = ["https://spdx.dev/Document"];
const CYCLONEDX_PREDICATES = ["https://cyclonedx.org/bom", "https://cyclonedx.org/schema"];
const SBOM_MEDIA_TYPES = ["application/spdx+json", "application/vnd.cyclonedx+json"];

const locator = z.string().max(4096);
const spdxDocument = z.object({
  spdxVersion: z.string().max(32),
  packages: z
    .array(
      z.object({
        externalRefs: z
          .array(z.object({ referenceType: z.string().max(64), referenceLocator: locator }))
          .max(100)
          .optional(),
      }),
    )
    .max(MAX_SBOM_ENTRIES)
    .optional(),
});
type CycloneComponent = { purl?: string | undefined; components?: CycloneComponent[] | undefined };
const cycloneComponent: z.ZodType<CycloneComponent> = z.lazy(() =>
  z.object({ purl: locator.optional(), components: z.array(cycloneComponent).max(MAX_SBOM_ENTRIES).optional() }),
);
const cycloneDocument = z.object({
  bomFormat: z.literal("CycloneDX"),
  components: z.array(cycloneComponent).max(MAX_SBOM_ENTRIES).optional(),
});
const statement = z.object({
  _type: z.string().max(128),
  predicateType: z.string().max(256),
  predicate: z.unknown(),
});

/** The package URLs an SBOM lists; null when it is no SPDX or CycloneDX document svc reads. */
export function sbomPurls(bytes: Uint8Array): string[] | null {
  const parsed = parseJsonBytes(bytes);
  if ("error" in parsed) return null;
  let document: unknown = parsed.value;
  const wrapped = statement.safeParse(document);
  if (wrapped.success && wrapped.data._type.startsWith("https://in-toto.io/Statement/"))
    document = wrapped.data.predicate;
  const spdx = spdxDocument.safeParse(document);
  if (spdx.success)
    return (spdx.data.packages ?? []).flatMap((p) =>
      (p.externalRefs ?? []).filter((r) => r.referenceType === "purl").map((r) => r.referenceLocator),
    );
  const cyclone = cycloneDocument.safeParse(document);
  if (cyclone.success) {
    const purls: string[] = [];
    const walk = (components: readonly CycloneComponent[] = []) => {
      for (const c of components) {
        if (purls.length >= MAX_SBOM_ENTRIES) return;
        if (c.purl) purls.push(c.purl);
        walk(c.components);
      }
    };
    walk(cyclone.data.components);
    return purls;
  }
  return null;
}

export interface Purl {
  type: string;
  namespace: string;
  name: string;
  version: string;
  qualifiers: Map<string, string>;
}

/** A package URL (`pkg:type/namespace/name@version?key=value#subpath`, the purl spec); null when it is not one. */
export function parsePurl(text: string): Purl | null {
  const match = /^pkg:([a-zA-Z][a-zA-Z0-9.+-]*)\/([^?#]+?)@([^?#]+)(?:\?([^#]*))?(?:#.*)?$/.exec(text);
  if (!match) return null;
  try {
    const path = match[2]!.split("/").map(decodeURIComponent);
    const qualifiers = new Map<string, string>();
    for (const pair of (match[4] ?? "").split("&")) {
      const at = pair.indexOf("=");
      if (at > 0) qualifiers.set(pair.slice(0, at).toLowerCase(), decodeURIComponent(pair.slice(at + 1)));
    }
    return {
      type: match[1]!.toLowerCase(),
      namespace: path.slice(0, -1).join("/"),
      name: path.at(-1)!,
      version: decodeURIComponent(match[3]!),
      qualifiers,
    };
  } catch {
    return null; // a broken %-escape: no package URL
  }
}

const FORMATS: Record<string, VersionFormat> = { deb: "dpkg", apk: "apk", rpm: "rpm" };

/** `debian-12`, `alpine-3.20.0`, `rocky-9.3`, `ubuntu-22.04`: a purl's `distro` qualifier as os-release's fields. */
function distroOf(qualifier: string | undefined): Distro | null {
  const match = /^([a-z][a-z0-9._-]*?)-(\d[\w.]*)$/.exec(qualifier ?? "");
  if (!match) return null;
  const [, id, versionId] = match;
  // Ubuntu's LTS releases are the April ones of even years; a purl does not say so otherwise
  const lts = id === "ubuntu" && /^(\d\d)\.04$/.test(versionId!) && Number(versionId!.slice(0, 2)) % 2 === 0;
  return { id: id!, versionId: versionId!, ...(lts ? { version: "LTS" } : {}) };
}

/**
 * The OS packages of an SBOM as an inventory: the package URLs of the format most of them have
 * (an image has one package database), the query name their source package (deb's and apk's
 * `upstream` qualifier, as syft writes it: `glibc` or `glibc@2.36-9`), rpm's epoch from its
 * qualifier. null when it lists no OS package (a language-only SBOM: the engine's way is tried).
 */
export function sbomInventory(purls: readonly string[]): Inventory | null {
  const byType = new Map<string, Purl[]>();
  for (const text of purls) {
    const purl = parsePurl(text);
    if (!purl || !FORMATS[purl.type]) continue;
    byType.set(purl.type, [...(byType.get(purl.type) ?? []), purl]);
  }
  const [type, listed] = [...byType].sort((a, b) => b[1].length - a[1].length)[0] ?? [];
  if (!type || !listed) return null;
  const distro = listed.map((p) => distroOf(p.qualifiers.get("distro"))).find((d) => d !== null) ?? null;
  const seen = new Set<string>();
  const packages: InstalledPackage[] = [];
  for (const purl of listed) {
    const epoch = purl.qualifiers.get("epoch");
    const version = type === "rpm" && epoch && !purl.version.includes(":") ? `${epoch}:${purl.version}` : purl.version;
    const upstream = /^([^@\s(]+)(?:@(\S+)|\s+\((\S+)\))?$/.exec(purl.qualifiers.get("upstream") ?? "");
    // rpm's upstream is the source rpm's file name: OSV names rpm packages as they are installed
    const source = type !== "rpm" ? upstream : null;
    const queryName = source?.[1] ?? purl.name;
    const queryVersion = source?.[2] ?? source?.[3] ?? version;
    const key = `${purl.name}\0${version}`;
    if (seen.has(key)) continue;
    seen.add(key);
    packages.push({
      name: purl.name,
      version,
      queryName,
      queryVersion,
      purl: packageUrl(type as "deb" | "apk" | "rpm", distro, purl.name, version),
    });
  }
  return inventoryOf(FORMATS[type]!, distro, packages);
}

const isAttestationOf = (d: Descriptor, subject: string): boolean =>
  d.annotations?.[ATTESTATION_TYPE_ANNOTATION] === ATTESTATION_MANIFEST &&
  d.annotations[ATTESTATION_DIGEST_ANNOTATION] === subject;

const samePlatform = (d: Descriptor, platform: Platform): boolean =>
  d.platform?.os === platform.os &&
  d.platform.architecture === platform.architecture &&
  (platform.variant === undefined || d.platform.variant === undefined || d.platform.variant === platform.variant);

/** The layer of an attestation manifest (or an SBOM artifact) that holds an SPDX or CycloneDX document. */
function sbomLayer(manifest: ArtifactManifest): Descriptor | undefined {
  return (manifest.layers ?? []).find((layer) => {
    const predicate = layer.annotations?.[PREDICATE_TYPE_ANNOTATION];
    if (predicate !== undefined)
      return [...SPDX_PREDICATES, ...CYCLONEDX_PREDICATES].some((p) => predicate.startsWith(p));
    return SBOM_MEDIA_TYPES.includes(layer.mediaType ?? "") || SBOM_MEDIA_TYPES.includes(manifest.artifactType ?? "");
  });
}

export type SbomAnswer = { inventory: Inventory; where: "attestation manifest" | "referrers" } | null;

/**
 * The inventory of the image `digest` names in `ref`'s repository (an index: its `platform`
 * image), from an SBOM attached to it; null when there is none svc reads (then the engine's way).
 * Throws when the registry fails: the caller then tries the engine's way too.
 */
export async function readSbom(
  reader: ArtifactReader,
  ref: ImageRef,
  digest: string,
  platform: Platform,
): Promise<SbomAnswer> {
  const top = await reader.manifest(ref, digest);
  if (!top) return null;
  let subject = digest;
  if (top.body.manifests) {
    const images = top.body.manifests.filter((d) => d.annotations?.[ATTESTATION_TYPE_ANNOTATION] === undefined);
    const image = images.find((d) => samePlatform(d, platform)) ?? (images.length === 1 ? images[0] : undefined);
    if (!image) return null;
    subject = image.digest;
    for (const attestation of top.body.manifests.filter((d) => isAttestationOf(d, subject)).slice(0, MAX_CANDIDATES)) {
      const found = await fromManifest(reader, ref, attestation.digest);
      if (found) return { inventory: found, where: "attestation manifest" };
    }
  }
  // a registry without the referrers API: the referrers tag schema (an index under `sha256-<hex>`, kept by the pusher)
  const referrers =
    (await reader.referrers(ref, subject)) ??
    (await reader.manifest(ref, subject.replace(":", "-")))?.body.manifests ??
    [];
  const candidates = referrers.filter(
    (d) =>
      d.artifactType === undefined ||
      d.artifactType === ATTESTATION_ARTIFACT_TYPE ||
      SBOM_MEDIA_TYPES.includes(d.artifactType),
  );
  for (const referrer of candidates.slice(0, MAX_CANDIDATES)) {
    const found = await fromManifest(reader, ref, referrer.digest);
    if (found) return { inventory: found, where: "referrers" };
  }
  return null;
}

async function fromManifest(reader: ArtifactReader, ref: ImageRef, digest: string): Promise<Inventory | null> {
  const manifest = await reader.manifest(ref, digest);
  const layer = manifest ? sbomLayer(manifest.body) : undefined;
  if (!layer) return null;
  if ((layer.size ?? 0) > MAX_SBOM_BYTES) return null;
  const purls = sbomPurls(await reader.blob(ref, layer.digest, MAX_SBOM_BYTES));
  return purls ? sbomInventory(purls) : null;
}
