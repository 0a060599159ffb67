/**
 * The registry port: the one question the updater asks per image reference.
 * The fetch-based implementation lives beside this file.
 */
import type { Platform } from "../engine/port.ts";
import type { ArtifactManifest, Descriptor } from "./descriptors.ts";

/** A parsed, normalised image reference (see reference.ts). */
export interface ImageRef {
  /** as written on the container, e.g. "nginx:1.27" */
  original: string;
  /** canonical registry host: "docker.io" for Docker Hub's aliases, else host[:port] */
  registry: string;
  /** e.g. "library/nginx" */
  repository: string;
  /** "latest" when neither tag nor digest was written */
  tag?: string;
  /** "sha256:..." when pinned */
  digest?: string;
  /** fully qualified: "docker.io/library/nginx:1.27" (with "@digest" when pinned) */
  normalized: string;
}

/** What the local engine knows of the image a container runs. */
export interface LocalImage {
  /**
   * image ID: the config digest on Docker's classic image store; on the containerd image store
   * the digest of what was pulled or pushed (the index of a multi-arch image)
   */
  id: string;
  /** "repo@sha256:..." entries of that image */
  repoDigests: string[];
  /**
   * digests of the platform manifests the image holds, when the image store keeps them (the
   * containerd store); undefined on the classic store
   */
  manifestDigests?: string[];
}

export interface CheckResult {
  /** true when the registry's image for this reference and platform differs from the local one */
  stale: boolean;
  /** digest the reference points to now (index digest for multi-arch images) */
  digest: string;
}

/** One cycle's view of the registries: answers are cached for the cycle's lifetime. */
export interface RegistryCheckSession {
  /**
   * Is there a newer image for `ref` on `platform`? `platform` is only called when the answer
   * needs it (multi-arch index changed), so fresh images cost one HEAD request.
   * Throws SvcError (kind "registry") on registry errors.
   */
  check(ref: ImageRef, local: LocalImage, platform: () => Promise<Platform>): Promise<CheckResult>;
  /**
   * The digest `ref`'s tag names now (the index digest of a multi-arch image, as Swarm pins a
   * service): one HEAD request, shared with `check`; a GET only when the HEAD tells nothing.
   * Throws SvcError (kind "registry") on registry errors.
   */
  digest(ref: ImageRef): Promise<string>;
  /**
   * Every tag of `ref`'s repository (`/v2/<name>/tags/list`, following its pagination), in the
   * registry's order. One listing per repository per session, however many containers ask.
   * Throws SvcError (kind "registry") on registry errors.
   */
  tags(ref: ImageRef): Promise<string[]>;
  /**
   * What `tag` of `ref`'s repository holds for `platform`: the digest the tag names (the index
   * digest for a multi-arch image), or null when the tag has no image for our platform (an index
   * without our entry, a single-platform image of another platform) or does not exist (404).
   * Throws SvcError (kind "registry") on other registry errors.
   */
  platformImage(ref: ImageRef, tag: string, platform: () => Promise<Platform>): Promise<{ digest: string } | null>;
  /**
   * When the image `reference` (a tag or a digest of `ref`'s repository) was built for
   * `platform`, from its config's `created`; null when the image does not say. Throws SvcError
   * (kind "registry") on registry errors.
   */
  created(ref: ImageRef, reference: string, platform: () => Promise<Platform>): Promise<Date | null>;
  /**
   * The labels of the image `reference` (a tag or a digest of `ref`'s repository) for `platform`,
   * from its config (string values of at most 2 KiB only). Throws SvcError (kind "registry") on
   * registry errors.
   */
  labels(ref: ImageRef, reference: string, platform: () => Promise<Platform>): Promise<Record<string, string>>;
}

export interface Registry {
  session(): RegistryCheckSession;
  /**
   * credentials to hand to the engine for a pull of `ref`, or a Swarm service's spec (X-Registry-Auth),
   * if any: only what svc's own requests would send there (the realm rule: client.ts credentialForEngine)
   */
  pullAuth(ref: ImageRef): Promise<import("../engine/port.ts").RegistryAuth | undefined>;
  /** what is attached to images (signatures), read through the same client; absent in fakes without it */
  artifacts?(): ArtifactReader;
}

/** What is attached to images in their repositories (artifacts.ts reads it through the one client). */
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
