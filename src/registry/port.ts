/**
 * The registry port: the one question the updater asks per image reference.
 * The fetch-based implementation lives beside this file.
 */
import type { Platform } from "../engine/port.ts";

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
}

export interface Registry {
  session(): RegistryCheckSession;
  /** credentials to hand to the engine for a pull of `ref` (X-Registry-Auth), if any */
  pullAuth(ref: ImageRef): Promise<import("../engine/port.ts").RegistryAuth | undefined>;
}
