/**
 * A registry on loopback that answers the OCI distribution spec 1.1 referrers API as the spec
 * says (the sandbox's registry has none): `GET /v2/<name>/referrers/<digest>` is an image index of
 * the manifests whose `subject` is that digest, filtered by `?artifactType=` (and saying so in
 * `OCI-Filters-Applied`), paged by `Link: <...>; rel="next"`; or 404 everywhere when told it has
 * no referrers API. Manifests by tag or digest and blobs by digest, as a registry serves them.
 * `hostile` answers a request first, for the tests of answers svc must bound.
 */
import { createHash } from "node:crypto";

export const INDEX = "application/vnd.oci.image.index.v1+json";
export const MANIFEST = "application/vnd.oci.image.manifest.v1+json";
export const EMPTY_CONFIG = "application/vnd.oci.empty.v1+json";
export const BUNDLE_TYPE = "application/vnd.dev.sigstore.bundle.v0.3+json";

export interface ReferrersRegistry {
  /** `127.0.0.1:<port>`, the registry part of an image reference */
  host: string;
  /** every request's path and query, in order */
  seen: string[];
  blob(repository: string, bytes: Uint8Array | string): { digest: string; size: number };
  /** stores a manifest (under `tag` too, if given); its descriptor */
  manifest(repository: string, body: object, tag?: string): { digest: string; size: number; mediaType: string };
  /** an OCI artifact holding `bundle`, whose subject is `subject` (what cosign 3 pushes) */
  attachBundle(repository: string, subject: string, bundle: object, artifactType?: string): string;
  stop(): void;
}

export function referrersRegistry(
  options: {
    /** false: the registry has no referrers API (404, as distribution 2.x answers) */
    referrersApi?: boolean;
    /** referrers per page (the spec leaves it to the registry) */
    pageSize?: number;
    hostile?: (path: string, url: URL) => Response | undefined;
  } = {},
): ReferrersRegistry {
  const pageSize = options.pageSize ?? 50;
  const blobs = new Map<string, Uint8Array>();
  const manifests = new Map<string, { bytes: Uint8Array; mediaType: string; repository: string }>();
  const tags = new Map<string, string>();
  const seen: string[] = [];
  const digestOf = (bytes: Uint8Array) => `sha256:${createHash("sha256").update(bytes).digest("hex")}`;

  const referrersOf = (repository: string, subject: string, artifactType: string | null) => {
    const found: object[] = [];
    for (const [digest, stored] of manifests) {
      if (stored.repository !== repository) continue;
      const body = JSON.parse(new TextDecoder().decode(stored.bytes));
      if (body.subject?.digest !== subject) continue;
      const type = body.artifactType ?? body.config?.mediaType;
      if (artifactType !== null && type !== artifactType) continue;
      found.push({
        mediaType: stored.mediaType,
        digest,
        size: stored.bytes.byteLength,
        artifactType: type,
        ...(body.annotations ? { annotations: body.annotations } : {}),
      });
    }
    return found;
  };

  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(request) {
      const url = new URL(request.url);
      seen.push(url.pathname + url.search);
      const hostile = options.hostile?.(url.pathname, url);
      if (hostile) return hostile;
      if (url.pathname === "/v2/") return Response.json({});
      const match = /^\/v2\/(.+)\/(manifests|blobs|referrers)\/([^/]+)$/.exec(url.pathname);
      if (!match) return notFound("NAME_UNKNOWN");
      const [, repository, kind, reference] = match as unknown as [string, string, string, string];
      if (kind === "blobs") {
        const bytes = blobs.get(`${repository}@${reference}`);
        return bytes ? new Response(bytes) : notFound("BLOB_UNKNOWN");
      }
      if (kind === "manifests") {
        const digest = reference.startsWith("sha256:") ? reference : tags.get(`${repository}:${reference}`);
        const stored = digest ? manifests.get(digest) : undefined;
        if (!stored || stored.repository !== repository) return notFound("MANIFEST_UNKNOWN");
        // a HEAD's length too, as a registry answers it (containerd takes the manifest's size from it)
        const headers = {
          "Content-Type": stored.mediaType,
          "Docker-Content-Digest": digest!,
          "Content-Length": String(stored.bytes.byteLength),
        };
        return new Response(request.method === "HEAD" ? null : stored.bytes, { headers });
      }
      if (options.referrersApi === false) return notFound("NAME_UNKNOWN");
      const artifactType = url.searchParams.get("artifactType");
      const all = referrersOf(repository, reference, artifactType);
      const start = Number(url.searchParams.get("start") ?? 0);
      const page = all.slice(start, start + pageSize);
      const headers: Record<string, string> = { "Content-Type": INDEX };
      if (artifactType !== null) headers["OCI-Filters-Applied"] = "artifactType";
      if (start + pageSize < all.length) {
        const next = new URL(url);
        next.searchParams.set("start", String(start + pageSize));
        headers.Link = `<${next.pathname}${next.search}>; rel="next"`;
      }
      return new Response(JSON.stringify({ schemaVersion: 2, mediaType: INDEX, manifests: page }), { headers });
    },
  });

  const registry: ReferrersRegistry = {
    host: `127.0.0.1:${server.port}`,
    seen,
    blob(repository, content) {
      const bytes = typeof content === "string" ? new TextEncoder().encode(content) : content;
      const digest = digestOf(bytes);
      blobs.set(`${repository}@${digest}`, bytes);
      return { digest, size: bytes.byteLength };
    },
    manifest(repository, body, tag) {
      const bytes = new TextEncoder().encode(JSON.stringify(body));
      const mediaType = (body as { mediaType?: string }).mediaType ?? MANIFEST;
      const digest = digestOf(bytes);
      manifests.set(digest, { bytes, mediaType, repository });
      if (tag !== undefined) tags.set(`${repository}:${tag}`, digest);
      return { digest, size: bytes.byteLength, mediaType };
    },
    attachBundle(repository, subject, bundle, artifactType = BUNDLE_TYPE) {
      const config = registry.blob(repository, "{}");
      const layer = registry.blob(repository, JSON.stringify(bundle));
      const subjectSize = manifests.get(subject)?.bytes.byteLength ?? 0;
      return registry.manifest(repository, {
        schemaVersion: 2,
        mediaType: MANIFEST,
        artifactType,
        config: { mediaType: EMPTY_CONFIG, ...config },
        layers: [{ mediaType: BUNDLE_TYPE, ...layer }],
        subject: { mediaType: MANIFEST, digest: subject, size: subjectSize },
        annotations: { "dev.sigstore.bundle.predicateType": "https://sigstore.dev/cosign/sign/v1" },
      }).digest;
    },
    stop: () => server.stop(true),
  };
  return registry;
}

/** An image manifest (one empty layer) in `repository`: its digest, as a tag's target. */
export function pushImage(registry: ReferrersRegistry, repository: string, tag: string, seed: string): string {
  const config = registry.blob(repository, JSON.stringify({ architecture: "amd64", os: "linux", seed }));
  return registry.manifest(
    repository,
    {
      schemaVersion: 2,
      mediaType: MANIFEST,
      config: { mediaType: "application/vnd.oci.image.config.v1+json", ...config },
      layers: [],
    },
    tag,
  ).digest;
}

/** A multi-platform image: an index of one manifest per platform; the index's and each manifest's digest. */
export function pushIndex(
  registry: ReferrersRegistry,
  repository: string,
  tag: string,
  platforms: readonly string[],
): { index: string; manifests: Record<string, string> } {
  const manifests: Record<string, string> = {};
  const entries = platforms.map((platform) => {
    const [os, architecture] = platform.split("/") as [string, string];
    const config = registry.blob(repository, JSON.stringify({ architecture, os, tag }));
    const manifest = registry.manifest(repository, {
      schemaVersion: 2,
      mediaType: MANIFEST,
      config: { mediaType: "application/vnd.oci.image.config.v1+json", ...config },
      layers: [],
    });
    manifests[platform] = manifest.digest;
    return { ...manifest, platform: { os, architecture } };
  });
  const index = registry.manifest(repository, { schemaVersion: 2, mediaType: INDEX, manifests: entries }, tag);
  return { index: index.digest, manifests };
}

function notFound(code: string): Response {
  return Response.json({ errors: [{ code, message: code.toLowerCase() }] }, { status: 404 });
}
