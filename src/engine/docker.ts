/**
 * The Engine port on the Docker Engine API, through dockerode's promise API over a modem on Bun's
 * fetch (modem.ts: connection, TLS, X-Registry-Auth encoding). Every call goes through `call`,
 * which gives it a deadline, accepts the statuses that mean success for svc (304 "already
 * stopped", 404 "already gone") and turns failures into SvcError kind "engine". On Podman, what
 * svc does otherwise is the Podman engine's (podman-engine.ts), chosen in the negotiation.
 */
import { readFileSync } from "node:fs";
import { Readable } from "node:stream";
import Docker from "dockerode";
import { SvcError, toSvcError } from "../core/errors.ts";
import { duration } from "../core/moments.ts";
import { timerDelay } from "../core/timers.ts";

/** The most of a command's output (a lifecycle hook's) svc keeps: its first MiB. */
const MAX_EXEC_OUTPUT = 1024 * 1024;

import type { Logger } from "../log/index.ts";
import { readArchiveOverUnix } from "./archive.ts";
import {
  COMPOSE_IMAGE_LABEL,
  compareApiVersions,
  type ReplacementSpec,
  replacementSpec,
  settingsBeyondApi,
} from "./clone.ts";
import {
  CLIENT_MAX_API_VERSION,
  CLIENT_MIN_API_VERSION,
  type DockerConfig,
  displayHost,
  type Endpoint,
  normalizeApiVersion,
  parseDockerHost,
  type TlsMaterial,
  tlsMaterial,
  unreachableAdvice,
} from "./connection.ts";
import { type EngineIdentity, identityFromPing, identityFromVersion, type VersionAnswer } from "./identity.ts";
import { demultiplexLogs, lastLines } from "./logs.ts";
import { FetchModem } from "./modem.ts";
import { PODMAN_MIN_VERSION, podmanSockets, refusedPodman } from "./podman.ts";
import { type CompatibleEngine, PodmanEngine, type RawRequest } from "./podman-engine.ts";
import type {
  ContainerInspect,
  ContainerState,
  ContainerSummary,
  CreateOptions,
  Engine,
  EngineInfo,
  HelperSpec,
  ImageBuild,
  ImageInspect,
  ImageSummary,
  Platform,
  RegistryAuth,
  UnitClaim,
} from "./port.ts";
import { dockerSwarm, type EngineCall, type Swarm } from "./swarm.ts";

/**
 * How long the engine may take to answer a request (its status line; a stream may then run on).
 * Stops get their grace period on top of this.
 */
export const RESPONSE_TIMEOUT_MS = 120_000;
/** How long the version negotiation (one small GET, also the reachability probe) may take. */
export const NEGOTIATION_TIMEOUT_MS = 10_000;
/** The slowest upload of an archive svc waits for (an image import), per second. */
const ARCHIVE_FLOOR_BYTES_PER_SECOND = 1024 * 1024;
/** The longest the engine may send nothing while it streams an archive (GET .../archive over the socket). */
const ARCHIVE_IDLE_MS = 120_000;
/** Stop API with a `signal` parameter. */
const STOP_SIGNAL_API = "1.42";
/** Image list with each image's platform manifests (`manifests=1`). */
const IMAGE_MANIFESTS_API = "1.47";
/** Above this many repositories a cycle's images come from one whole list. */
const FILTERED_LISTS_MAX = 8;

/** Podman below the version svc is tested with is refused, with the reason (podman.ts). */
function refuseOldPodman(podman: string | null, host: string): void {
  const reason = podman === null ? null : refusedPodman(podman);
  if (reason)
    throw new SvcError(
      "config",
      `docker.host: ${host} is ${reason}. Point svc at Podman ${PODMAN_MIN_VERSION} or newer, or at a Docker engine (20.10 or newer)`,
    );
}

function imageSummary(row: any): ImageSummary {
  const summary: ImageSummary = {
    id: row.Id,
    repoTags: ((row.RepoTags ?? []) as string[]).filter((t) => t !== "<none>:<none>"),
    repoDigests: ((row.RepoDigests ?? []) as string[]).filter((d) => d !== "<none>@<none>"),
  };
  // Docker lists an image without labels as `"Labels": null`: none, not unknown
  if (row.Labels === null) summary.labels = {};
  else if (row.Labels && typeof row.Labels === "object") summary.labels = row.Labels as Record<string, string>;
  if (Array.isArray(row.Manifests)) {
    summary.manifests = (row.Manifests as any[])
      .filter((m) => m?.Kind === "image" && typeof m.ID === "string")
      .map((m) => ({
        digest: m.ID as string,
        platform: m.ImageData?.Platform ? toPlatform(m.ImageData.Platform) : undefined,
      }));
  }
  return summary;
}

function toPlatform(p: { os?: string; architecture?: string; variant?: string }): Platform {
  return { os: p.os ?? "", architecture: p.architecture ?? "", ...(p.variant ? { variant: p.variant } : {}) };
}

interface CallOptions {
  /** statuses that mean success for svc besides 2xx (e.g. 304 "already stopped"): the call resolves undefined */
  ok?: number[];
  timeoutMs?: number;
  /** what running out of time means for this call (default: the engine did not answer) */
  timedOut?: () => SvcError;
}

/** Time limits; the defaults suit real engines (tests shorten them). */
export interface EngineTimeouts {
  negotiationMs?: number;
  responseMs?: number;
}

/**
 * The Engine for the `docker` configuration table. Rejects only on configuration errors (kind
 * "config": bad host, TLS file missing or unreadable, bad api_version, an engine svc refuses).
 * An engine that cannot be reached does not stop it (unless `mustAnswer`: it rejects with that
 * cause): every call then rejects with kind "engine" until the engine is back.
 */
export async function createDockerEngine(
  docker: DockerConfig,
  log: Logger,
  timeouts: EngineTimeouts = {},
  options: { mustAnswer?: boolean } = {},
): Promise<Engine> {
  const endpoint = parseDockerHost(docker.host);
  const tls = tlsMaterial(docker, endpoint, (path) => readFileSync(path, "utf8"));
  const override = docker.api_version ? normalizeApiVersion(docker.api_version) : undefined;

  // The connection comes from svc's configuration only: dockerode's own modem would fill gaps
  // from DOCKER_HOST, DOCKER_TLS_VERIFY and DOCKER_CERT_PATH.
  const engine = new DockerEngine({ endpoint, tls }, displayHost(docker.host), override, log.child("engine"), {
    negotiationMs: timeouts.negotiationMs ?? NEGOTIATION_TIMEOUT_MS,
    responseMs: timeouts.responseMs ?? RESPONSE_TIMEOUT_MS,
  });
  // Negotiate now when the engine is there; if it is not, every call retries and fails clearly,
  // so a service started before its engine keeps running.
  await engine.info().then(
    // the first words about the engine: which one, and on which socket (docs/podman.md)
    (info) => log.info(`using ${info.product} at ${displayHost(docker.host)}`, { api_version: info.apiVersion }),
    (error) => {
      // a one-off command (run-once, svc rollback) has no later cycle to wait for: the cause is its answer
      if ((error instanceof SvcError && error.kind === "config") || options.mustAnswer) throw error;
      log.warn("the Docker engine is not reachable yet", { error: (error as Error).message });
    },
  );
  return engine;
}

interface Negotiated {
  docker: Docker;
  info: EngineInfo;
  /** Podman's differences (podman-engine.ts), chosen once when the engine answers as Podman; null on Docker */
  podman: PodmanEngine | null;
  /** the engine's platform once known: a ping does not say it (identity.ts) */
  platform: Promise<Platform> | undefined;
}

export class DockerEngine implements Engine {
  private negotiation: Promise<Negotiated> | undefined;
  /** services on a Swarm manager (swarm.ts), through the same bounded calls */
  readonly swarm: Swarm = dockerSwarm(((what, action, options) =>
    this.call(what, action as never, options)) as EngineCall);

  constructor(
    private readonly connection: { endpoint: Endpoint; tls: TlsMaterial | null },
    private readonly host: string,
    private readonly apiOverride: string | undefined,
    private readonly log: Logger,
    private readonly timeouts: Required<EngineTimeouts> = {
      negotiationMs: NEGOTIATION_TIMEOUT_MS,
      responseMs: RESPONSE_TIMEOUT_MS,
    },
  ) {}

  // ------------------------------------------------------------------ connection

  private negotiated(): Promise<Negotiated> {
    this.negotiation ??= this.negotiate().catch((error) => {
      this.negotiation = undefined;
      throw error;
    });
    return this.negotiation;
  }

  private async negotiate(): Promise<Negotiated> {
    const identity = (await this.pinged()) ?? (await this.versionAnswer());
    const podman = identity.podman;
    refuseOldPodman(podman, this.host);
    const server = identity.apiVersion ?? CLIENT_MIN_API_VERSION;
    let apiVersion =
      this.apiOverride ?? (compareApiVersions(server, CLIENT_MAX_API_VERSION) < 0 ? server : CLIENT_MAX_API_VERSION);
    if (!this.apiOverride && compareApiVersions(apiVersion, CLIENT_MIN_API_VERSION) < 0) {
      throw new SvcError(
        "engine",
        `the Docker engine at ${this.host} speaks API ${server}; svc needs ${CLIENT_MIN_API_VERSION} or newer`,
      );
    }
    apiVersion = apiVersion.replace(/^v/, "");
    this.log.debug("negotiated the engine API version", {
      host: this.host,
      server_api: server,
      api_version: apiVersion,
    });
    return {
      docker: this.client(`v${apiVersion}`),
      info: { apiVersion, product: identity.product },
      podman: podman === null ? null : new PodmanEngine(this.compatible()),
      platform: identity.platform ? Promise.resolve(identity.platform) : undefined,
    };
  }

  /**
   * What the engine's ping says (identity.ts); null when it does not say it, or refuses the ping
   * (a proxy that lets `/version` through only): `/version` is asked then.
   */
  private async pinged(): Promise<EngineIdentity | null> {
    const modem = new FetchModem(this.connection.endpoint, this.connection.tls);
    const headers = await this.attempt("ask the engine which it is", (signal) => modem.ping(signal), {
      timeoutMs: this.timeouts.negotiationMs,
    });
    return headers ? identityFromPing(headers) : null;
  }

  private async versionAnswer(): Promise<EngineIdentity> {
    const probe = this.client();
    // dockerode's version() takes options like every call (its types list only a callback)
    const version = probe.version.bind(probe) as unknown as (options: {
      abortSignal: AbortSignal;
    }) => Promise<VersionAnswer>;
    const answer = (await this.attempt("read the engine's version", (abortSignal) => version({ abortSignal }), {
      timeoutMs: this.timeouts.negotiationMs,
    }))!;
    return identityFromVersion(answer);
  }

  private client(version?: string): Docker {
    return new Docker({
      modem: new FetchModem(this.connection.endpoint, this.connection.tls, version),
    } as Docker.DockerOptions);
  }

  /** One engine call on the negotiated client: see `attempt`. */
  private async call<T>(
    what: string,
    action: (docker: Docker, signal: AbortSignal) => Promise<T>,
    options: CallOptions = {},
  ): Promise<T | undefined> {
    const { docker } = await this.negotiated();
    return this.attempt(what, (signal) => action(docker, signal), options);
  }

  /**
   * Runs a dockerode call with a deadline (its abort signal, and a timer for the calls of
   * dockerode that take none); a status in `ok` resolves undefined; any other failure is an
   * SvcError naming `what`.
   */
  private async attempt<T>(
    what: string,
    action: (signal: AbortSignal) => Promise<T>,
    options: CallOptions,
  ): Promise<T | undefined> {
    const timeoutMs = options.timeoutMs ?? this.timeouts.responseMs;
    const abort = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const reason = Object.assign(new Error("no answer in time"), { name: "TimeoutError", timeoutMs });
        abort.abort(reason);
        reject(reason);
      }, timerDelay(timeoutMs));
    });
    try {
      return await Promise.race([action(abort.signal), deadline]);
    } catch (error) {
      const status = (error as { statusCode?: number })?.statusCode;
      if (status !== undefined && options.ok?.includes(status)) return undefined;
      if (abort.signal.aborted && options.timedOut) throw options.timedOut();
      throw this.engineError(abort.signal.aborted ? abort.signal.reason : error, what);
    } finally {
      clearTimeout(timer);
    }
  }

  /** One message per failure, naming the host when the engine cannot be reached; never a secret. */
  private engineError(error: any, what: string): SvcError {
    if (error instanceof SvcError) return error;
    const status: number | undefined = error?.statusCode;
    // No HTTP status: the request never got an answer (socket, TLS handshake, timeout).
    if (status === undefined) {
      const timedOut = error?.name === "AbortError" || error?.name === "TimeoutError";
      const advice = timedOut
        ? undefined
        : unreachableAdvice(this.connection.endpoint, String(error?.code ?? ""), podmanSockets());
      const reason = timedOut ? `no answer within ${this.timeoutText(error)}` : networkReason(error);
      return new SvcError("engine", advice ?? `cannot reach the Docker engine at ${this.host}: ${reason}`, {
        cause: new Error(String(error?.message)),
      });
    }
    const message = String(error?.message ?? error).trim();
    return new SvcError("engine", `${what}: ${message}`, { cause: new Error(message) });
  }

  private timeoutText(error: unknown): string {
    const ms = (error as { timeoutMs?: number })?.timeoutMs;
    return ms ? duration(ms) : "the time allowed";
  }

  // ------------------------------------------------------------------ the port

  async info(): Promise<EngineInfo> {
    return { ...(await this.negotiated()).info };
  }

  async platform(): Promise<Platform> {
    const negotiated = await this.negotiated();
    negotiated.platform ??= this.versionAnswer().then(
      (identity) => identity.platform!,
      (error) => {
        negotiated.platform = undefined;
        throw error;
      },
    );
    return negotiated.platform;
  }

  async listContainers(): Promise<ContainerSummary[]> {
    const rows = (await this.call("list containers", (docker, abortSignal) =>
      docker.listContainers({ all: true, abortSignal }),
    ))!;
    return Promise.all(
      rows.map(async (row) => {
        const summary: ContainerSummary = {
          id: row.Id,
          name: String(row.Names?.[0] ?? "").replace(/^\//, ""),
          image: row.Image,
          imageId: row.ImageID,
          state: row.State as ContainerState,
          labels: row.Labels ?? {},
        };
        // When the tag has moved on to another image, the list shows the old image's ID: the
        // reference the container was created with is only in its own Config.
        if (looksLikeImageId(summary.image, summary.imageId)) {
          // nothing lost: the listed reference stays as it was (the image id), and the check says it cannot check it
          const inspect = await this.inspectContainer(summary.id).catch(() => null);
          if (inspect?.Config?.Image) summary.image = inspect.Config.Image;
        }
        return summary;
      }),
    );
  }

  async listImages(options: { repositories?: readonly string[]; dangling?: boolean } = {}): Promise<ImageSummary[]> {
    const { info, podman } = await this.negotiated();
    // The containerd image store lists each image's platform manifests on request: freshness is
    // then decided by our platform's manifest digest (the image id is the digest of the index).
    const manifests = compareApiVersions(info.apiVersion, IMAGE_MANIFESTS_API) >= 0 ? true : undefined;
    const list = (what: string, filters?: string) =>
      this.call(what, (docker, abortSignal) =>
        docker.listImages({ manifests, ...(filters ? { filters } : {}), abortSignal }),
      ) as Promise<any[]>;
    // (Podman answers with its whole list below)
    if (options.dangling && podman === null)
      return (await list("list untagged images", JSON.stringify({ dangling: ["true"] }))).map(imageSummary);
    const wanted = [...new Set(options.repositories ?? [])];
    // Docker's whole list costs the engine some 9 ms of CPU an image on the containerd store
    // (0.4 s for 42 images), a repository's list 21 ms (docs/decisions.md, "Engine"): a cycle over a few
    // repositories asks for each. Podman's `reference` filter matches otherwise: its whole list.
    if (podman !== null || wanted.length === 0 || wanted.length > FILTERED_LISTS_MAX)
      return (await list("list images")).map(imageSummary);
    const lists = await Promise.all(
      wanted.map((name) => list(`list images of ${name}`, JSON.stringify({ reference: [name] }))),
    );
    const byId = new Map(lists.flat().map((row) => [String(row.Id), row]));
    return [...byId.values()].map(imageSummary);
  }

  async inspectContainer(idOrName: string): Promise<ContainerInspect> {
    return (await this.call(`inspect container ${idOrName}`, (docker, abortSignal) =>
      docker.getContainer(idOrName).inspect({ abortSignal }),
    ))!;
  }

  async inspectImage(reference: string): Promise<ImageInspect | null> {
    return (
      (await this.call(`inspect image ${reference}`, (docker) => docker.getImage(reference).inspect(), {
        ok: [404],
      })) ?? null
    );
  }

  async imageAnnotations(id: string): Promise<Record<string, string> | null> {
    return (await this.negotiated()).podman?.imageAnnotations(id) ?? null;
  }

  async pullImage(
    reference: string,
    options: { platform?: Platform; auth?: RegistryAuth; digest?: string | null } = {},
  ): Promise<void> {
    const pinned = checkedReference(reference, options.digest ?? null);
    await this.pull(pinned, options);
    // tagged by the digest reference: on the containerd store an id may name several images
    if (pinned !== reference) await this.tagImage(pinned, reference);
  }

  private async pull(reference: string, options: { platform?: Platform; auth?: RegistryAuth }): Promise<void> {
    const { repository, tag } = splitReference(reference);
    const platform = options.platform ? platformString(options.platform) : undefined;
    const what = `pull ${reference}`;
    const query = { fromImage: repository, tag, ...(platform ? { platform } : {}) };
    let failure: string | null;
    try {
      const stream = (await this.call(
        what,
        (docker, abortSignal) =>
          docker.createImage(options.auth ?? {}, { ...query, abortSignal }) as Promise<AsyncIterable<Uint8Array>>,
      ))!;
      failure = await followPullStream(stream);
    } catch (error) {
      // Podman refuses by its policy in-band or with an error status, as the pull has begun or not
      throw await this.pullFailure(toSvcError(error, "engine"));
    }
    if (failure) throw await this.pullFailure(new SvcError("engine", `${what}: ${failure}`));
  }

  private async pullFailure(error: SvcError): Promise<SvcError> {
    return (await this.negotiated()).podman?.pullFailure(error) ?? error;
  }

  async stopContainer(id: string, options: { timeoutMs: number; signal?: string }): Promise<void> {
    const seconds = Math.max(0, Math.ceil(options.timeoutMs / 1000));
    const { info } = await this.negotiated();
    if (options.signal && compareApiVersions(info.apiVersion, STOP_SIGNAL_API) < 0) {
      const inspect = await this.inspectContainer(id);
      // The stop API sends the container's own stop signal: only another one needs the kill path.
      if (!sameSignal(options.signal, inspect.Config.StopSignal || "SIGTERM")) {
        return this.stopWithSignal(inspect, options.signal, seconds);
      }
      options = { timeoutMs: options.timeoutMs };
    }
    const stop = { t: seconds, ...(options.signal ? { signal: options.signal } : {}) };
    await this.call(
      `stop container ${id}`,
      (docker, abortSignal) => docker.getContainer(id).stop({ ...stop, abortSignal }),
      {
        ok: [304],
        timeoutMs: this.timeouts.responseMs + seconds * 1000,
      },
    );
  }

  /**
   * Engines before API 1.42 take no signal on stop: send it, wait the grace period, then SIGKILL.
   * A container killed that way counts as having exited by itself, so the engine would restart it
   * under `always` / `on-failure`: the policy is set to "no" for the stop and put back after.
   */
  private async stopWithSignal(container: ContainerInspect, signal: string, seconds: number): Promise<void> {
    const id = container.Id;
    const policy = container.HostConfig?.RestartPolicy;
    const restarts = policy?.Name === "always" || policy?.Name === "on-failure";
    const setPolicy = (value: unknown) =>
      this.call(`set the restart policy of container ${id}`, (docker, abortSignal) =>
        docker.getContainer(id).update({ RestartPolicy: value, abortSignal }),
      );
    const kill = (sig: string) =>
      this.call(
        `stop container ${id} (${sig})`,
        (docker, abortSignal) => docker.getContainer(id).kill({ signal: sig, abortSignal }),
        { ok: [409] },
      );
    const waitStopped = () =>
      this.call(
        `wait for container ${id} to stop`,
        (docker, abortSignal) => docker.getContainer(id).wait({ condition: "not-running", abortSignal }),
        {
          timeoutMs: this.timeouts.responseMs + seconds * 1000,
        },
      );

    if (restarts) await setPolicy({ Name: "no", MaximumRetryCount: 0 });
    try {
      await kill(signal);
      let timer: ReturnType<typeof setTimeout> | undefined;
      const timedOut = new Promise<"timeout">(
        (resolve) => (timer = setTimeout(() => resolve("timeout"), timerDelay(seconds * 1000))),
      );
      const outcome = await Promise.race([waitStopped().then(() => "stopped" as const), timedOut]).finally(() =>
        clearTimeout(timer),
      );
      if (outcome === "timeout") {
        await kill("SIGKILL");
        await waitStopped();
      }
    } finally {
      // the old container must come back as it was if the update is rolled back
      if (restarts) await setPolicy(policy);
    }
  }

  async renameContainer(id: string, newName: string): Promise<void> {
    await this.call(`rename container ${id} to ${newName}`, (docker, abortSignal) =>
      docker.getContainer(id).rename({ name: newName, abortSignal }),
    );
  }

  async createReplacement(
    old: ContainerInspect,
    oldImage: ImageInspect | null,
    options: CreateOptions,
  ): Promise<string> {
    const { podman } = await this.negotiated();
    if (podman) return podman.createReplacement(old, oldImage, options);
    return this.createCompatible(options.name, await this.compatibleSpec(old, oldImage, options));
  }

  private async compatibleSpec(
    old: ContainerInspect,
    oldImage: ImageInspect | null,
    options: CreateOptions,
  ): Promise<ReplacementSpec> {
    const { info } = await this.negotiated();
    const networkContainer = options.networkContainer ?? (await this.networkContainerName(old));
    const imageId =
      old.Config?.Labels?.[COMPOSE_IMAGE_LABEL] === undefined
        ? undefined
        : (await this.inspectImage(options.image))?.Id;
    return replacementSpec(old, oldImage, { ...options, networkContainer, imageId, apiVersion: info.apiVersion });
  }

  /** The compatible create, then the networks it could not take at create. */
  private async createCompatible(name: string, spec: ReplacementSpec): Promise<string> {
    const id = await this.create(name, spec.createBody, spec.platform);
    try {
      for (const { network, endpoint } of spec.extraNetworks) {
        await this.call(`connect container ${name} to network ${network}`, (docker, abortSignal) =>
          docker.getNetwork(network).connect({ Container: id, EndpointConfig: endpoint, abortSignal }),
        );
      }
    } catch (error) {
      // A replacement missing a network is not a replacement: leave nothing half-made behind.
      // nothing lost to the caller: its error is thrown next; a container that cannot be removed either stays, never started, under the name it was given
      await this.removeContainer(id, { force: true }).catch(() => {});
      throw error;
    }
    return id;
  }

  /** POST /containers/create: the name and platform in the query, the body as built (never in the query). */
  private async create(name: string, body: Record<string, unknown>, platform?: string): Promise<string> {
    const query = { name, ...(platform ? { platform } : {}) };
    const created = await this.call(`create container ${name}`, (docker, abortSignal) =>
      docker.createContainer({ _query: query, _body: body, abortSignal }),
    );
    return created!.id;
  }

  async settingsBeyondApi(old: ContainerInspect): Promise<string[]> {
    const { info } = await this.negotiated();
    return settingsBeyondApi(old, info.apiVersion);
  }

  async unreplaceable(old: ContainerInspect): Promise<string | null> {
    return (await this.negotiated()).podman?.unreplaceable(old) ?? null;
  }

  async unitClaim(old: ContainerInspect): Promise<UnitClaim | null> {
    return (await this.negotiated()).podman?.unitClaim(old) ?? null;
  }

  /**
   * One request on this connection outside the Docker API (Podman's own, libpod), bounded as every
   * call; a status in `ok` resolves undefined.
   */
  private async request<T>(what: string, request: RawRequest, ok: number[] = []): Promise<T | undefined> {
    const modem = new FetchModem(this.connection.endpoint, this.connection.tls);
    const send = (abortSignal: AbortSignal) =>
      new Promise<T>((resolve, reject) =>
        modem.dial(
          {
            path: request.path,
            method: request.method,
            ...(request.body === undefined ? {} : { options: { _body: request.body } }),
            statusCodes: { [request.status]: true },
            abortSignal,
          },
          (error, data) => (error ? reject(error) : resolve(data as T)),
        ),
      );
    return this.attempt(what, send, { ok });
  }

  /** What Podman's engine (podman-engine.ts) uses of this one. */
  private compatible(): CompatibleEngine {
    return {
      local: this.connection.endpoint.kind === "unix",
      inspectContainer: (id) => this.inspectContainer(id),
      inspectImage: (reference) => this.inspectImage(reference),
      removeContainer: (id, options) => this.removeContainer(id, options),
      replacementSpec: (old, oldImage, options) => this.compatibleSpec(old, oldImage, options),
      createFromSpec: (name, spec) => this.createCompatible(name, spec),
      request: (what, request, ok) => this.request(what, request, ok),
    };
  }

  /** For `network_mode: container:<id>`: the current name of that container. */
  private async networkContainerName(old: ContainerInspect): Promise<string | undefined> {
    const mode = String(old.HostConfig?.NetworkMode ?? "");
    if (!mode.startsWith("container:")) return undefined;
    const target = mode.slice("container:".length);
    try {
      return (await this.inspectContainer(target)).Name.replace(/^\//, "");
    } catch (error) {
      throw new SvcError(
        "engine",
        `${old.Name.replace(/^\//, "")} joins the network of container ${target}, which cannot be found: ${(error as Error).message}`,
      );
    }
  }

  async createHelper(spec: HelperSpec): Promise<string> {
    return this.create(spec.name, {
      Image: spec.image,
      Cmd: spec.cmd,
      Env: spec.env ?? [],
      User: spec.user ?? "",
      Labels: spec.labels ?? {},
      Healthcheck: { Test: ["NONE"] },
      HostConfig: {
        Binds: spec.binds ?? null,
        Mounts: spec.mounts ?? null,
        NetworkMode: "none",
        AutoRemove: spec.autoRemove ?? true,
        RestartPolicy: { Name: "no" },
      },
    });
  }

  async startContainer(id: string): Promise<void> {
    await this.call(`start container ${id}`, (docker, abortSignal) => docker.getContainer(id).start({ abortSignal }), {
      ok: [304],
    });
  }

  async waitForExit(id: string, timeoutMs: number): Promise<number> {
    const answer = await this.call(
      `wait for container ${id}`,
      (docker, abortSignal) => docker.getContainer(id).wait({ abortSignal }),
      { timeoutMs, timedOut: () => new SvcError("engine", `did not end within ${duration(timeoutMs)}`) },
    );
    return Number((answer as { StatusCode?: unknown }).StatusCode ?? -1);
  }

  async removeContainer(id: string, options: { force?: boolean } = {}): Promise<void> {
    // v=false: an anonymous volume the replacement took over must survive the old container.
    await this.call(
      `remove container ${id}`,
      (docker, abortSignal) => docker.getContainer(id).remove({ force: options.force === true, v: false, abortSignal }),
      { ok: [404] },
    );
  }

  async removeImage(id: string): Promise<void> {
    await this.call(`remove image ${id}`, (docker, abortSignal) => docker.getImage(id).remove({ abortSignal }), {
      ok: [404],
    });
  }

  async importImage(body: ReadableStream<Uint8Array>, bytes: number, reference: string): Promise<void> {
    const what = `import ${reference}`;
    // the engine answers once it has read the whole tar: a floor of 1 MiB/s on top of the answer's deadline
    const timeoutMs = this.timeouts.responseMs + Math.ceil(bytes / ARCHIVE_FLOOR_BYTES_PER_SECOND) * 1000;
    const stream = await this.call(
      what,
      (docker, abortSignal) =>
        // the tag inside `repo`, as the API allows: Podman's compatible import reads no `tag` (it named
        // every import `latest`)
        docker.importImage(body as never, { repo: reference, abortSignal }) as Promise<AsyncIterable<Uint8Array>>,
      { timeoutMs },
    );
    const failure = await followPullStream(stream!);
    if (failure) throw new SvcError("engine", `${what}: ${failure}`);
  }

  async buildImage(context: NodeJS.ReadableStream, options: ImageBuild): Promise<void> {
    const what = `build ${options.tag}`;
    const query = {
      t: options.tag,
      dockerfile: options.dockerfile,
      buildargs: options.args,
      labels: options.labels,
      ...(options.target ? { target: options.target } : {}),
      ...(options.platform ? { platform: options.platform } : {}),
      ...(options.network ? { networkmode: options.network } : {}),
      // compose's `build --pull`; intermediate containers removed, a failed build's too
      pull: "1",
      rm: "1",
      forcerm: "1",
      version: "1",
    };
    // X-Registry-Config: the logins the pulls of the bases use, by registry
    const registryconfig = Object.fromEntries(options.auths.map((auth) => [auth.serveraddress, auth]));
    const body = Readable.toWeb(context as Readable) as ReadableStream<Uint8Array>;
    const failure = await this.call(
      what,
      async (docker, abortSignal) =>
        followPullStream(
          (await docker.buildImage(
            body as never,
            {
              ...query,
              ...(options.auths.length > 0 ? { registryconfig } : {}),
              abortSignal,
            } as never,
          )) as unknown as AsyncIterable<Uint8Array>,
        ),
      {
        timeoutMs: options.timeoutMs,
        timedOut: () =>
          new SvcError("internal", `the build outlived its ${Math.round(options.timeoutMs / 1000)} s and was stopped`),
      },
    );
    if (failure) throw new SvcError("engine", `the engine's build failed: ${failure.trim()}`);
  }

  async tagImage(imageId: string, reference: string): Promise<void> {
    const { repository, tag } = splitReference(reference);
    await this.call(`tag image ${imageId} as ${reference}`, (docker, abortSignal) =>
      docker.getImage(imageId).tag({ repo: repository, tag, abortSignal }),
    );
  }

  async exec(id: string, command: string, timeoutMs: number): Promise<{ exitCode: number | null; output: string }> {
    const ran = await this.call(
      `run a command in container ${id}`,
      async (docker, abortSignal) => {
        const exec = await docker
          .getContainer(id)
          .exec({ Cmd: ["sh", "-c", command], AttachStdout: true, AttachStderr: true, abortSignal });
        // not detached: the answer is the command's output, multiplexed, until it ends
        const stream = (await exec.start({ Detach: false, Tty: false, abortSignal })) as AsyncIterable<Uint8Array>;
        // kept up to a bound (a hook printing without end must not take svc's memory), read to its end
        const chunks: Uint8Array[] = [];
        let kept = 0;
        for await (const chunk of stream) {
          if (kept >= MAX_EXEC_OUTPUT) continue;
          chunks.push(chunk.subarray(0, MAX_EXEC_OUTPUT - kept));
          kept += chunks.at(-1)!.byteLength;
        }
        const info = await exec.inspect({ abortSignal });
        return { exitCode: info.ExitCode ?? null, output: demultiplexLogs(Buffer.concat(chunks)) };
      },
      // the engine answered; the command did not end (it is left running: exec has no stop)
      { timeoutMs, timedOut: () => new SvcError("engine", `did not end within ${duration(timeoutMs)}`) },
    );
    return ran!;
  }

  async readArchive(id: string, path: string): Promise<ReadableStream<Uint8Array>> {
    const { endpoint } = this.connection;
    if (endpoint.kind === "unix") {
      // read without fetch's small chunks: a data guard's measure reads up to data_guard_max_size (archive.ts)
      const { info } = await this.negotiated();
      const request = `/v${info.apiVersion}/containers/${encodeURIComponent(id)}/archive?path=${encodeURIComponent(path)}`;
      const stream = await this.attempt(
        `read ${path} of container ${id}`,
        (signal) => readArchiveOverUnix(endpoint.socketPath, request, ARCHIVE_IDLE_MS, signal),
        {},
      );
      return stream!;
    }
    // the deadline covers the answer's status line; the stream then runs as long as the volume takes
    const stream = await this.call(
      `read ${path} of container ${id}`,
      (docker, abortSignal) =>
        docker.getContainer(id).getArchive({ path, abortSignal }) as unknown as Promise<ReadableStream<Uint8Array>>,
    );
    return stream!;
  }

  async containerLogs(id: string, lines: number): Promise<string> {
    const inspect = await this.inspectContainer(id);
    const raw = await this.call(`read the logs of container ${id}`, (docker, abortSignal) =>
      docker
        .getContainer(id)
        .logs({ stdout: true, stderr: true, tail: Math.max(0, lines), follow: false, abortSignal }),
    );
    const bytes = Buffer.isBuffer(raw) ? raw : Buffer.from(typeof raw === "string" ? raw : "");
    const text = inspect.Config?.Tty ? bytes.toString("utf8") : demultiplexLogs(bytes);
    return lastLines(text, lines);
  }
}

// ------------------------------------------------------------------ helpers

/** The list shows "sha256:<id>" (or a bare hex id) instead of a reference when the tag moved. */
export function looksLikeImageId(image: string, imageId: string): boolean {
  if (!image) return true;
  if (image === imageId || image.startsWith("sha256:")) return true;
  return /^[0-9a-f]{12,64}$/.test(image) && imageId.replace(/^sha256:/, "").startsWith(image);
}

/**
 * Why a request got no answer. fetch names the cause in `code` (ENOENT: no socket there,
 * ECONNREFUSED, a TLS verification failure); for connection failures its message only guesses
 * ("ENOENT: Was there a typo in the url or port?"), for TLS ones it explains the code.
 */
function networkReason(error: any): string {
  const code = typeof error?.code === "string" ? error.code : "";
  const message = String(error?.message ?? error ?? "");
  if (!code) return message;
  if (message === "" || message.startsWith(code)) return code;
  return `${code} (${message})`;
}

/** "repo:tag" -> fromImage + tag; "repo@sha256:..." keeps the digest; no tag means latest (never "all tags"). */
export function splitReference(reference: string): { repository: string; tag: string } {
  const at = reference.indexOf("@");
  if (at >= 0) return { repository: reference.slice(0, at), tag: reference.slice(at + 1) };
  const lastSlash = reference.lastIndexOf("/");
  const colon = reference.lastIndexOf(":");
  if (colon > lastSlash) return { repository: reference.slice(0, colon), tag: reference.slice(colon + 1) };
  return { repository: reference, tag: "latest" };
}

/**
 * What to pull for `reference` (a tag) when a check found `digest`: `repo@digest`; the reference
 * itself when it already names a digest, or no digest was found. A tag moved in the registry
 * between the check and the pull then changes nothing: the image run is the one checked.
 */
export function checkedReference(reference: string, digest: string | null): string {
  if (!digest || !/^sha256:[0-9a-f]{64}$/.test(digest) || reference.includes("@")) return reference;
  return `${splitReference(reference).repository}@${digest}`;
}

/** "SIGTERM", "TERM", "sigterm" name the same signal. */
export function sameSignal(a: string, b: string): boolean {
  const norm = (s: string) => s.trim().toUpperCase().replace(/^SIG/, "");
  return norm(a) === norm(b);
}

export function platformString(platform: Platform): string {
  return [platform.os, platform.architecture, platform.variant].filter(Boolean).join("/");
}

/**
 * A pull answers 200 at once and reports failures in-band, as a JSON line with `error`: read
 * the progress stream to its end and return the first error message, if any.
 */
export async function followPullStream(stream: AsyncIterable<Uint8Array | string>): Promise<string | null> {
  let failure: string | null = null;
  let pending = "";
  const consider = (line: string) => {
    if (failure || !line.trim()) return;
    try {
      const event = JSON.parse(line) as { error?: string; errorDetail?: { message?: string } };
      if (event.error || event.errorDetail?.message) failure = String(event.errorDetail?.message ?? event.error);
    } catch {
      // not JSON: a progress fragment we do not need
    }
  };
  for await (const chunk of stream) {
    pending += typeof chunk === "string" ? chunk : Buffer.from(chunk as Uint8Array).toString("utf8");
    const lines = pending.split("\n");
    pending = lines.pop() ?? "";
    lines.forEach(consider);
  }
  consider(pending);
  return failure;
}
