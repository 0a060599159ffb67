/**
 * The engine port: what the updater needs from a container engine. The Docker implementation
 * (dockerode) lives beside this file; unit tests of the updater pass small fakes.
 */
import type { ContainerInspectInfo, ImageInspectInfo } from "dockerode";
import type { RegistryAuth } from "./auth.ts";
import type { Swarm } from "./swarm.ts";

/** A container's inspect, with the Config fields @types/dockerode leaves out. */
export type ContainerInspect = ContainerInspectInfo & {
  Config: ContainerInspectInfo["Config"] & { StopSignal?: string; StopTimeout?: number | null };
};
/** An image's inspect, with the platform variant @types/dockerode leaves out. */
export type ImageInspect = ImageInspectInfo & { Variant?: string };

export type ContainerState = "created" | "running" | "paused" | "restarting" | "removing" | "exited" | "dead";

/** One row of the single `listContainers(all)` call a cycle makes. */
export interface ContainerSummary {
  id: string;
  /** without the leading slash */
  name: string;
  /** the image reference the container was created with (Config.Image), never a bare image ID when a name is known */
  image: string;
  /** sha256:... of the image the container runs */
  imageId: string;
  state: ContainerState;
  labels: Record<string, string>;
}

/** One row of the single `listImages` call a cycle makes. */
export interface ImageSummary {
  id: string;
  repoTags: string[];
  repoDigests: string[];
  /**
   * The platform manifests the image is made of, as an image store that keeps them reports
   * (Docker's containerd image store, API >= 1.47). Absent on the classic store, where the id
   * is the config digest.
   */
  manifests?: ImageManifest[];
  /** the image's labels (org.opencontainers.image.version...), when the engine lists them ({}: it has none) */
  labels?: Record<string, string>;
}

/** One platform manifest of a local image. */
export interface ImageManifest {
  digest: string;
  platform?: Platform;
}

export interface Platform {
  os: string;
  architecture: string;
  variant?: string;
}

export type { RegistryAuth } from "./auth.ts";

/** Which systemd: the machine's (rootful Podman) or the user's (rootless Podman). */
export type SystemdScope = "system" | "user";

/** A unit that runs a Podman container, in its manager (the systemd port: systemd.ts). */
export interface SystemdUnit {
  unit: string;
  scope: SystemdScope;
}

/** What svc knows of the container a unit is said to run (Podman's inspect: its pid, its conmon's, its id). */
export interface UnitContainer {
  id: string;
  pid: number;
  conmonPid: number;
}

/**
 * The unit a Podman container's own PODMAN_SYSTEMD_UNIT label names, as the engine tells it: the
 * manager that would run it on svc's machine and the container's processes (for systemd.ts's proof
 * that the unit runs it), or why svc cannot reach that manager at all (`remote`).
 */
export type UnitClaim = { unit: string; autoUpdate?: string } & (
  | { scope: SystemdScope; container: UnitContainer }
  | { remote: string }
);

export interface EngineInfo {
  apiVersion: string;
  /** the engine and its version ("Docker 28.5.2", "Podman 4.3.1") */
  product?: string;
}

export interface CreateOptions {
  /** name for the new container */
  name: string;
  /** the image reference to create it from (normally the old Config.Image) */
  image: string;
  /**
   * For `network_mode: container:<id>`: the NAME of the container whose network namespace to
   * join now (the updater resolves it, since the old id may belong to a renamed or removed
   * container by the time the replacement is created).
   */
  networkContainer?: string;
  /** labels the replacement carries instead of the old container's (compose's config hash of the service's new files) */
  labels?: Record<string, string>;
}

/**
 * A short-lived helper container (svc's self-update handover): no network, no ports, no restart
 * policy, no healthcheck, removed by the engine when it exits.
 */
export interface HelperSpec {
  name: string;
  image: string;
  cmd: string[];
  env?: string[];
  user?: string;
  labels?: Record<string, string>;
  /** HostConfig.Binds / HostConfig.Mounts as the engine reported them for the container to copy */
  binds?: string[];
  mounts?: unknown[];
  /** removed by the engine when it exits (the default); false: the caller reads it and removes it */
  autoRemove?: boolean;
}

/** What `Engine.buildImage` is asked to build (the fields of `POST /build`). */
export interface ImageBuild {
  /** the name the image is tagged with */
  tag: string;
  /** the Dockerfile's path inside the context */
  dockerfile: string;
  args: Record<string, string>;
  target: string | null;
  /** the network RUN steps have (`networkmode`); null: the engine's default */
  network: string | null;
  labels: Record<string, string>;
  /** "os/arch[/variant]"; null: the engine's */
  platform: string | null;
  /** logins for the registries the bases come from */
  auths: RegistryAuth[];
  timeoutMs: number;
}

export interface Engine {
  info(): Promise<EngineInfo>;
  /** the engine's OS and architecture (asked apart from `info`: on Podman it costs an answer of its `/info`) */
  platform(): Promise<Platform>;
  listContainers(): Promise<ContainerSummary[]>;
  /**
   * The local images; with `repositories` (familiar names: "nginx", "ghcr.io/o/app"), those
   * repositories' images only where the engine can filter them (more may come back, never fewer
   * of those repositories' tagged images); with `dangling`, the images no tag names (more may
   * come back, never fewer of those).
   */
  listImages(options?: { repositories?: readonly string[]; dangling?: boolean }): Promise<ImageSummary[]>;
  inspectContainer(idOrName: string): Promise<ContainerInspect>;
  /** null when the image does not exist locally */
  inspectImage(reference: string): Promise<ImageInspect | null>;
  /**
   * The annotations of a local image's manifest, where the engine keeps and tells them (Podman's
   * own inspect: buildah writes `org.opencontainers.image.base.*` there); null where it does not
   * (Docker's inspect has no annotations), or when there is no such image.
   */
  imageAnnotations?(id: string): Promise<Record<string, string> | null>;
  /**
   * Pulls `reference`. With `digest` (the digest a check found for it), pulls `repo@digest` and
   * points `reference` at what was pulled: the digest checked is the digest run, though the tag
   * moved in the registry meanwhile (an index digest: the engine still selects `platform` from it).
   */
  pullImage(
    reference: string,
    options?: { platform?: Platform; auth?: RegistryAuth; digest?: string | null },
  ): Promise<void>;
  /** timeoutMs: grace period before SIGKILL; signal: the container's stop signal */
  stopContainer(id: string, options: { timeoutMs: number; signal?: string }): Promise<void>;
  renameContainer(id: string, newName: string): Promise<void>;
  /**
   * Creates a replacement for `old` on `options.image`, keeping everything the user configured
   * (docs/decisions.md, "Engine"): the Config/HostConfig minus what came from `oldImage`,
   * every network endpoint with its user aliases, static IPs, links and driver options.
   * Returns the new container's id. The new container is not started.
   */
  createReplacement(old: ContainerInspect, oldImage: ImageInspect | null, options: CreateOptions): Promise<string>;
  /**
   * Settings of `old` the engine would take only at a newer API version than the one spoken
   * (each named with the version it needs); empty when a replacement can keep everything.
   */
  settingsBeyondApi(old: ContainerInspect): Promise<string[]>;
  /**
   * Why svc must not replace `old` itself, with what to do instead (Podman: a container systemd
   * runs, a setting the compatible API cannot carry; docs/podman.md); null when it may.
   */
  unreplaceable?(old: ContainerInspect): Promise<string | null>;
  /**
   * On Podman, the unit a container's own PODMAN_SYSTEMD_UNIT label names (not its image's: a
   * publisher's label names no unit of this machine), and where its manager is; null when no unit
   * claims it. What systemd itself says of the unit is the systemd port's (systemd.ts).
   */
  unitClaim?(old: ContainerInspect): Promise<UnitClaim | null>;
  /**
   * Builds an image from `context` (a tar stream) with the engine's classic builder (its build
   * endpoint, as `DOCKER_BUILDKIT=0 docker build` does), the base images pulled again; throws with
   * the build's own error, or when it outlives `timeoutMs` (the build is then cancelled).
   */
  buildImage?(context: NodeJS.ReadableStream, options: ImageBuild): Promise<void>;
  /** Points `reference` (repo:tag) at the local image `imageId`. */
  tagImage(imageId: string, reference: string): Promise<void>;
  /**
   * Runs `command` with `sh -c` inside the running container and waits for it to end, at most
   * `timeoutMs` (after that it is left running in the container and this rejects): its exit code
   * and its output (stdout and stderr, in order).
   */
  exec(id: string, command: string, timeoutMs: number): Promise<{ exitCode: number | null; output: string }>;
  /** creates (does not start) a helper container; returns its id */
  createHelper(spec: HelperSpec): Promise<string>;
  startContainer(id: string): Promise<void>;
  /** POST /containers/{id}/wait: the exit code once the container has ended (at once if it has), within `timeoutMs` */
  waitForExit(id: string, timeoutMs: number): Promise<number>;
  removeContainer(id: string, options?: { force?: boolean }): Promise<void>;
  removeImage(id: string): Promise<void>;
  /**
   * POST /images/create?fromSrc=-: an image made of the root file system `body` (a tar of `bytes`), tagged
   * `reference`; nothing pulled (the data guard's helper, docs/data-guard.md). Absent where the
   * engine cannot.
   */
  importImage?(body: ReadableStream<Uint8Array>, bytes: number, reference: string): Promise<void>;
  /**
   * GET /containers/{id}/archive: the tar of `path` in the container (running or stopped, its
   * mounts included), streamed as the engine sends it. The caller reads it to its end or cancels it.
   */
  readArchive(id: string, path: string): Promise<ReadableStream<Uint8Array>>;
  /** the last `lines` lines of stdout+stderr, as text */
  containerLogs(id: string, lines: number): Promise<string>;
  /** Swarm services (swarm.ts); absent on an engine without Swarm mode */
  readonly swarm?: Swarm;
}
