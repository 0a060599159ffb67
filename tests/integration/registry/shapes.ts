/**
 * Image shapes users pull, made on the sandbox registry without a second machine: multi-arch
 * OCI indexes and Docker manifest lists with attestation entries (platform unknown/unknown, as
 * BuildKit pushes them), and single manifests. Platform images are real (`docker import
 * --platform`), so the engine can pull the index; attestations are small in-toto manifests.
 */

import { randomBytes } from "node:crypto";
import type { Platform } from "../../../src/engine/port.ts";
import { MEDIA_TYPES } from "../../../src/registry/check.ts";
import { docker, sandbox } from "../../harness.ts";

export interface Descriptor {
  mediaType: string;
  digest: string;
  size: number;
  platform?: Platform;
  annotations?: Record<string, string>;
}

const ACCEPT_ANY = [
  MEDIA_TYPES.ociManifest,
  MEDIA_TYPES.dockerManifest,
  MEDIA_TYPES.ociIndex,
  MEDIA_TYPES.dockerList,
].join(", ");

export class Repository {
  readonly name: string;
  private readonly built: string[] = [];

  constructor(name: string) {
    this.name = name;
  }

  get reference(): string {
    return `${sandbox().registry}/${this.name}`;
  }

  private url(path: string): string {
    return `http://${sandbox().registry}/v2/${this.name}/${path}`;
  }

  /**
   * A real image for `platform` (busybox files, a fresh layer stamp), pushed under its own tag;
   * returns the descriptor of its manifest as the registry stores it.
   */
  async platformImage(platform: Platform, options: { dockerMediaTypes?: boolean } = {}): Promise<Descriptor> {
    const tag = `${platform.architecture}-${randomBytes(4).toString("hex")}`;
    const reference = `${this.reference}:${tag}`;
    const text = [platform.os, platform.architecture, platform.variant].filter(Boolean).join("/");
    docker([
      "import",
      "--platform",
      text,
      "-c",
      'CMD ["/bin/sleep","3600"]',
      "-c",
      `LABEL svc.test.build=${tag}`,
      sandbox().rootfs,
      reference,
    ]);
    docker(["push", "-q", reference]);
    this.built.push(reference);
    let descriptor = await this.describe(tag);
    if (!(await this.configNames(descriptor, platform)))
      descriptor = await this.withConfig(descriptor, tag, (config) => ({ ...config, ...platformFields(platform) }));
    if (options.dockerMediaTypes && descriptor.mediaType === MEDIA_TYPES.ociManifest)
      descriptor = await this.asDockerManifest(tag);
    return { ...descriptor, platform };
  }

  /** Whether the image's config names `platform` (Docker 20.10 imports for its own platform whatever `--platform` says). */
  private async configNames(descriptor: Descriptor, platform: Platform): Promise<boolean> {
    const config = await this.configOf(descriptor);
    return Object.entries(platformFields(platform)).every(([key, value]) => config[key] === value);
  }

  /** The descriptor of what `reference` (a tag or digest) names in the registry. */
  async describe(reference: string): Promise<Descriptor> {
    const response = await fetch(this.url(`manifests/${reference}`), { headers: { Accept: ACCEPT_ANY } });
    if (!response.ok) throw new Error(`GET ${reference}: ${response.status}`);
    const bytes = await response.arrayBuffer();
    return {
      mediaType: response.headers.get("content-type")!.split(";")[0]!,
      digest: response.headers.get("docker-content-digest")!,
      size: bytes.byteLength,
    };
  }

  /** The same image with Docker's media types (what a classic-store engine pushes). */
  private async asDockerManifest(tag: string): Promise<Descriptor> {
    const oci = (await (
      await fetch(this.url(`manifests/${tag}`), { headers: { Accept: MEDIA_TYPES.ociManifest } })
    ).json()) as any;
    const manifest = {
      schemaVersion: 2,
      mediaType: MEDIA_TYPES.dockerManifest,
      config: { ...oci.config, mediaType: "application/vnd.docker.container.image.v1+json" },
      layers: oci.layers.map((l: any) => ({ ...l, mediaType: "application/vnd.docker.image.rootfs.diff.tar.gzip" })),
    };
    return this.putManifest(`${tag}-docker`, MEDIA_TYPES.dockerManifest, manifest);
  }

  /**
   * An SBOM attestation for `subject` as BuildKit writes one with `--sbom=true`, its layout taken
   * from BuildKit's source (exporter/containerimage/writer.go, commitAttestationsManifest and
   * attestationsConfig; exporter/attestation/make.go, makeInTotoStatement): an in-toto v1
   * statement whose predicate is `predicate` (an SPDX document) as the one layer, of type
   * application/vnd.in-toto+json with its `in-toto.io/predicate-type`; a config naming the
   * unknown/unknown platform and the layer as its diff id; the index entry annotated with
   * `vnd.docker.reference.type: attestation-manifest` and the subject's digest.
   */
  async sbomAttestation(subject: Descriptor, predicate: unknown): Promise<Descriptor> {
    const predicateType = "https://spdx.dev/Document";
    const statement = new TextEncoder().encode(
      JSON.stringify({
        _type: "https://in-toto.io/Statement/v1",
        predicateType,
        subject: [{ name: `pkg:docker/${this.reference}@latest`, digest: { sha256: subject.digest.slice(7) } }],
        predicate,
      }),
    );
    const layer = await this.pushBlob(statement);
    const config = await this.pushBlob(
      new TextEncoder().encode(
        JSON.stringify({
          architecture: "unknown",
          os: "unknown",
          config: {},
          rootfs: { type: "layers", diff_ids: [layer.digest] },
        }),
      ),
    );
    const manifest = {
      schemaVersion: 2,
      mediaType: MEDIA_TYPES.ociManifest,
      config: { mediaType: "application/vnd.oci.image.config.v1+json", digest: config.digest, size: config.size },
      layers: [
        {
          mediaType: "application/vnd.in-toto+json",
          digest: layer.digest,
          size: layer.size,
          annotations: { "in-toto.io/predicate-type": predicateType },
        },
      ],
    };
    const descriptor = await this.putManifest(
      `sbom-${randomBytes(4).toString("hex")}`,
      MEDIA_TYPES.ociManifest,
      manifest,
    );
    return {
      ...descriptor,
      platform: { os: "unknown", architecture: "unknown" },
      annotations: {
        "vnd.docker.reference.digest": subject.digest,
        "vnd.docker.reference.type": "attestation-manifest",
      },
    };
  }

  /**
   * An SPDX document attached to `subject` as an OCI 1.1 artifact (as `oras attach --artifact-type
   * application/spdx+json` pushes one): a manifest with the artifact type, the empty config, the
   * document as its layer and `subject`; on a registry without the referrers API, listed in the
   * referrers tag schema's index (`sha256-<hex>`), as the OCI distribution spec asks the pusher to.
   */
  async sbomReferrer(subject: Descriptor, document: unknown): Promise<Descriptor> {
    const layer = await this.pushBlob(new TextEncoder().encode(JSON.stringify(document)));
    const empty = await this.pushBlob(new TextEncoder().encode("{}"));
    const manifest = spdxArtifact(subject, layer, empty);
    const artifactType = manifest.artifactType;
    const descriptor = await this.putManifest(
      `spdx-${randomBytes(4).toString("hex")}`,
      MEDIA_TYPES.ociManifest,
      manifest,
    );
    const tag = subject.digest.replace(":", "-");
    const listed = await fetch(this.url(`manifests/${tag}`), { headers: { Accept: MEDIA_TYPES.ociIndex } });
    const index = listed.ok
      ? ((await listed.json()) as any)
      : { schemaVersion: 2, mediaType: MEDIA_TYPES.ociIndex, manifests: [] };
    if (!listed.ok) await listed.body?.cancel();
    index.manifests.push({ ...descriptor, artifactType });
    await this.putManifest(tag, MEDIA_TYPES.ociIndex, index);
    return descriptor;
  }

  /** An index (OCI) or manifest list (Docker) of `entries` under `tag`; returns its digest. */
  async pushIndex(tag: string, entries: Descriptor[], kind: "oci" | "docker" = "oci"): Promise<string> {
    const mediaType = kind === "oci" ? MEDIA_TYPES.ociIndex : MEDIA_TYPES.dockerList;
    return (await this.putManifest(tag, mediaType, { schemaVersion: 2, mediaType, manifests: entries })).digest;
  }

  /**
   * The image `descriptor` names with one more label in its config: another image of the same
   * platform, sharing every layer (as a rebuild of that platform alone would be). Pushed under
   * `tag`; returns its descriptor.
   */
  async relabelled(descriptor: Descriptor, tag: string): Promise<Descriptor> {
    return this.withConfig(descriptor, tag, (config) => ({
      ...config,
      config: {
        ...config.config,
        Labels: { ...config.config?.Labels, "svc.test.rebuild": randomBytes(4).toString("hex") },
      },
    }));
  }

  /** The image `descriptor` names with its config as `edit` returns it, every layer shared; pushed under `tag`. */
  private async withConfig(descriptor: Descriptor, tag: string, edit: (config: any) => any): Promise<Descriptor> {
    const manifest = (await this.manifestBody(descriptor.digest, descriptor.mediaType)) as any;
    const config = (await (await fetch(this.url(`blobs/${manifest.config.digest}`))).json()) as any;
    const blob = await this.pushBlob(new TextEncoder().encode(JSON.stringify(edit(config))));
    const next = { ...manifest, config: { ...manifest.config, digest: blob.digest, size: blob.size } };
    return { ...(await this.putManifest(tag, descriptor.mediaType, next)), platform: descriptor.platform };
  }

  /** The manifest `digest` names, as JSON (to put it under more tags). */
  async manifestBody(digest: string, mediaType: string): Promise<unknown> {
    return (await fetch(this.url(`manifests/${digest}`), { headers: { Accept: mediaType } })).json();
  }

  /** A blob's bytes, as the registry serves them (to copy an image to another registry). */
  async blobBytes(digest: string): Promise<Uint8Array> {
    const response = await fetch(this.url(`blobs/${digest}`));
    if (!response.ok) throw new Error(`GET blob ${digest}: ${response.status}`);
    return new Uint8Array(await response.arrayBuffer());
  }

  /** The config of the image `descriptor` names (its platform, `created`...). */
  async configOf(descriptor: Descriptor): Promise<any> {
    const manifest = (await this.manifestBody(descriptor.digest, descriptor.mediaType)) as any;
    return (await fetch(this.url(`blobs/${manifest.config.digest}`))).json();
  }

  async putManifest(tag: string, mediaType: string, body: unknown): Promise<Descriptor> {
    const bytes = new TextEncoder().encode(JSON.stringify(body));
    const response = await fetch(this.url(`manifests/${tag}`), {
      method: "PUT",
      headers: { "Content-Type": mediaType },
      body: bytes,
    });
    if (response.status !== 201) throw new Error(`PUT manifest ${tag}: ${response.status} ${await response.text()}`);
    return { mediaType, digest: response.headers.get("docker-content-digest")!, size: bytes.byteLength };
  }

  async pushBlob(bytes: Uint8Array): Promise<{ digest: string; size: number }> {
    const digest = `sha256:${new Bun.SHA256().update(bytes).digest("hex")}`;
    const start = await fetch(this.url("blobs/uploads/"), { method: "POST" });
    const location = new URL(start.headers.get("location")!, `http://${sandbox().registry}`);
    location.searchParams.set("digest", digest);
    const put = await fetch(location, {
      method: "PUT",
      headers: { "Content-Type": "application/octet-stream" },
      body: bytes,
    });
    if (put.status !== 201) throw new Error(`blob upload: ${put.status} ${await put.text()}`);
    return { digest, size: bytes.byteLength };
  }

  /** Removes the locally built platform images (the engine then holds only what it pulls). */
  removeLocal(): void {
    if (this.built.length) docker(["rmi", "-f", ...this.built.splice(0)], { allowFailure: true });
  }
}

/** The platform fields of an image config, as the engine writes them. */
function platformFields(platform: Platform): Record<string, string> {
  return {
    os: platform.os,
    architecture: platform.architecture,
    ...(platform.variant ? { variant: platform.variant } : {}),
  };
}

/**
 * The manifest of an SPDX document attached to `subject` as an OCI 1.1 artifact, as `oras attach
 * --artifact-type application/spdx+json` pushes one: the artifact type, the empty config, the
 * document (`layer`, pushed first with `empty`, the two bytes `{}`) and the subject.
 */
export function spdxArtifact(
  subject: Pick<Descriptor, "mediaType" | "digest" | "size">,
  layer: { digest: string; size: number },
  empty: { digest: string; size: number },
) {
  const artifactType = "application/spdx+json";
  return {
    schemaVersion: 2,
    mediaType: MEDIA_TYPES.ociManifest,
    artifactType,
    config: { mediaType: "application/vnd.oci.empty.v1+json", digest: empty.digest, size: empty.size },
    layers: [{ mediaType: artifactType, digest: layer.digest, size: layer.size }],
    subject: { mediaType: subject.mediaType, digest: subject.digest, size: subject.size },
  };
}
