/**
 * The one engine fixture of the integration tests: containers, images, networks, volumes and
 * folders under one unique prefix, all removed by `cleanup`. Containers are made from typed
 * options through the Engine API (`run`, runContainer); the docker CLI's `docker run` stays where a
 * test is about what the CLI does (harness `docker`).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { registryAuthHeader } from "../../src/engine/modem.ts";
import { buildImage, removeContainersByPrefix, sandbox, uniqueName } from "../harness.ts";
import { engineFilters, engineJson, engineMessage, enginePathName, engineRequest, engineStream } from "./engine-api.ts";

export interface FixtureOptions {
  /** the image changes (`CMD ...`) when a call gives none */
  changes?: string[];
  /** labels every `run` adds (a call's own labels win) */
  labels?: Record<string, string>;
}

export interface ImageOptions {
  tag?: string;
  changes?: string[];
  push?: boolean;
  registry?: string;
}

export class EngineFixture {
  readonly prefix: string;
  private readonly images = new Set<string>();
  private readonly networks: string[] = [];
  private readonly volumes: string[] = [];
  private readonly dirs: string[] = [];

  constructor(
    what: string,
    private readonly options: FixtureOptions = {},
  ) {
    this.prefix = uniqueName(what);
  }

  name(what: string): string {
    return `${this.prefix}-${what}`;
  }

  /** `127.0.0.1:5000/<prefix>-<what>:<tag>`, built from busybox and pushed: a new image each call. */
  image(what: string, options: ImageOptions = {}): { ref: string; id: string; digest: string | null } {
    const ref = `${options.registry ?? sandbox().registry}/${this.name(what)}:${options.tag ?? "latest"}`;
    const built = buildImage(ref, { changes: options.changes ?? this.options.changes, push: options.push });
    this.images.add(built.id);
    return { ref, ...built };
  }

  network(what: string): string {
    const name = this.name(what);
    // What `docker network create <name>` sends (the CLI's default driver).
    engineJson("POST", "/networks/create", {
      body: JSON.stringify({ Name: name, Driver: "bridge" }),
      headers: JSON_BODY,
    });
    this.networks.push(name);
    return name;
  }

  volume(what: string): string {
    const name = this.name(what);
    engineJson("POST", "/volumes/create", {
      body: JSON.stringify({ Name: name, Driver: "local" }),
      headers: JSON_BODY,
    });
    this.volumes.push(name);
    return name;
  }

  /**
   * A started container `<prefix>-<what>` of `image` made as `options` say, with the fixture's own
   * labels and no network unless `options.network` names one (runContainer).
   */
  run(what: string, image: string, options: RunOptions = {}): string {
    const name = this.name(what);
    const labels = { ...this.options.labels, ...options.labels };
    const box = sandbox();
    runContainer(
      name,
      image,
      { network: "none", ...options, labels },
      {
        socketPath: box.socketPath,
        login: { registry: box.authRegistry, username: box.authUser, password: box.authPass },
      },
    );
    return name;
  }

  tempDir(what: string): string {
    const dir = mkdtempSync(join(tmpdir(), `${this.name(what)}-`));
    this.dirs.push(dir);
    return dir;
  }

  cleanup(): void {
    removeContainersByPrefix(this.prefix);
    // Removal goes on past what is already gone, as `docker rm -f`, `network rm`, `rmi -f` did.
    for (const network of this.networks) engineRequest("DELETE", `/networks/${enginePathName(network)}`);
    for (const volume of this.volumes) engineRequest("DELETE", `/volumes/${enginePathName(volume)}?force=1`);
    const listed = engineJson<{ Id: string }[]>(
      "GET",
      `/images/json?${engineFilters({ reference: [`*/${this.prefix}-*`] })}`,
    ).map((image) => image.Id);
    for (const image of new Set([...listed, ...this.images]))
      engineRequest("DELETE", `/images/${enginePathName(image)}?force=1`);
    for (const dir of this.dirs) rmSync(dir, { recursive: true, force: true });
  }
}

const JSON_BODY = { "Content-Type": "application/json" };

/**
 * What `docker compose -p <project> down -v --remove-orphans` removes, by compose's own labels
 * through the Engine API (a cleanup's, where the compose CLI and its plugin cost two process starts):
 * the project's containers with their anonymous volumes, then its networks and volumes. Goes on past
 * what is already gone, as a cleanup's `down` did.
 */
export function removeComposeProject(project: string): void {
  const filters = engineFilters({ label: [`com.docker.compose.project=${project}`] });
  for (const c of engineJson<{ Id: string }[]>("GET", `/containers/json?all=1&${filters}`))
    engineRequest("DELETE", `/containers/${c.Id}?force=1&v=1`);
  for (const n of engineJson<{ Id: string }[]>("GET", `/networks?${filters}`))
    engineRequest("DELETE", `/networks/${n.Id}`);
  for (const v of engineJson<{ Volumes: { Name: string }[] | null }>("GET", `/volumes?${filters}`).Volumes ?? [])
    engineRequest("DELETE", `/volumes/${enginePathName(v.Name)}?force=1`);
}

/**
 * A test container's settings, named as `docker run`'s flags name them (in brackets); each one not
 * given is what the CLI sends without its flag.
 */
export interface RunOptions {
  /** the network mode (`--network`): the engine's default bridge unless given; the fixture's `run` says `none` */
  network?: string;
  /** the container's aliases on `network`, a user network (`--network-alias`) */
  aliases?: string[];
  /** `container:alias` links on `network`, a user network (`--link`) */
  links?: string[];
  /** more user networks joined at create (a second `--network name=...`; API 1.44 and later) */
  moreNetworks?: Record<string, EndpointOptions>;
  labels?: Record<string, string>;
  env?: Record<string, string>;
  /** `--restart` */
  restart?: RestartPolicy;
  hostname?: string;
  user?: string;
  /** `source:target[:mode]` of a named volume or a host folder (`-v`) */
  binds?: string[];
  /** the targets of anonymous volumes (`-v /path`) */
  volumes?: string[];
  /** `--mount`s, as the API takes them */
  mounts?: { Type: "bind" | "volume" | "image" | "tmpfs"; Source?: string; Target: string; ReadOnly?: boolean }[];
  /** published ports (`-p hostIp:hostPort:containerPort`) */
  ports?: { hostIp?: string; hostPort: number; containerPort: number }[];
  /** a `CMD-SHELL` healthcheck (`--health-cmd`, `--health-interval`, `--health-timeout`, `--health-retries`) */
  healthcheck?: { cmd: string; intervalMs?: number; timeoutMs?: number; retries?: number };
  stopSignal?: string;
  /** seconds (`--stop-timeout`) */
  stopTimeout?: number;
  init?: boolean;
  /** a terminal (`-t`) */
  tty?: boolean;
  /** the command after the image (the image's CMD unless given) */
  cmd?: string[];
}

/** `--restart`'s policies, `on-failure` with at most so many retries where given. */
export type RestartPolicy = "no" | "always" | "unless-stopped" | "on-failure" | `on-failure:${number}`;

/** An endpoint's own settings on a further network (`--network name=N,gw-priority=P,mac-address=M`). */
export interface EndpointOptions {
  gwPriority?: number;
  macAddress?: string;
}

/** The engine a container is made on, and the login its pull from one registry needs. */
export interface RunTarget {
  socketPath: string;
  login?: { registry: string; username: string; password: string };
}

/**
 * Creates and starts `name` as `docker run -d --name NAME` of `options` does: a create request
 * making the container the docker CLI makes (createBody), a pull first where the engine lacks the
 * image, then a start. Throws with the engine's message; a container whose start failed is left, as the CLI
 * leaves it. tests/integration/harness.test.ts holds the result equal to the CLI's own `docker run`.
 */
export function runContainer(name: string, image: string, options: RunOptions, target: RunTarget): string {
  const path = `/containers/create?name=${encodeURIComponent(name)}`;
  const body = JSON.stringify(createBody(image, options));
  const create = () => engineRequest("POST", path, { socketPath: target.socketPath, body, headers: JSON_BODY });
  let created = create();
  if (created.status === 404 && /no such image/i.test(created.body)) {
    pull(image, target);
    created = create();
  }
  if (created.status >= 300) throw new Error(`creating ${name} failed (${created.status}): ${engineMessage(created)}`);
  const id = (JSON.parse(created.body) as { Id: string }).Id;
  const started = engineRequest("POST", `/containers/${id}/start`, { socketPath: target.socketPath });
  if (started.status >= 300) throw new Error(`starting ${name} failed (${started.status}): ${engineMessage(started)}`);
  return id;
}

/** `docker pull`, with the login where the image is on its registry. */
function pull(image: string, target: RunTarget): void {
  const tagAt = image.lastIndexOf(":");
  const [repo, tag] =
    tagAt > image.lastIndexOf("/") && !image.includes("@")
      ? [image.slice(0, tagAt), image.slice(tagAt + 1)]
      : [image, image.includes("@") ? "" : "latest"];
  const login = target.login;
  const auth =
    login && repo.startsWith(`${login.registry}/`)
      ? { username: login.username, password: login.password, serveraddress: login.registry }
      : {};
  const query = `fromImage=${encodeURIComponent(repo)}${tag ? `&tag=${encodeURIComponent(tag)}` : ""}`;
  const answer = engineRequest("POST", `/images/create?${query}`, {
    socketPath: target.socketPath,
    headers: { "X-Registry-Auth": registryAuthHeader(auth) },
  });
  engineStream(answer, `docker pull ${image}`);
}

/**
 * What the docker CLI sends for a host setting not given where the engine keeps it as sent, and so
 * a container's inspect (what svc recreates from) shows it: empty lists and no ports where the
 * API's default is null, a restart policy of "no" (Docker 20.10 keeps "" without one), and a
 * pids limit of 0 (Podman 5.8 sets its own 2048 without one, as an annotation svc's replacement
 * then carries). Every other field the CLI sends empty is the engine's default anyway:
 * tests/integration/harness.test.ts finds one that is not on Docker, podman/podman.test.ts on Podman.
 */
const CLI_HOST_DEFAULTS = {
  NetworkMode: "default",
  PidsLimit: 0,
  PortBindings: {},
  RestartPolicy: { Name: "no", MaximumRetryCount: 0 },
  Dns: [],
  DnsOptions: [],
  DnsSearch: [],
  Devices: [],
  Ulimits: [],
  BlkioWeightDevice: [],
  BlkioDeviceReadBps: [],
  BlkioDeviceWriteBps: [],
  BlkioDeviceReadIOps: [],
  BlkioDeviceWriteIOps: [],
};

/** The create request (POST /containers/create) for the container `docker run -d` of `options` makes. */
function createBody(image: string, options: RunOptions): Record<string, unknown> {
  const o = options;
  const ports = o.ports ?? [];
  const network = o.network ?? CLI_HOST_DEFAULTS.NetworkMode;
  const endpoints: Record<string, unknown> = {};
  if (o.aliases?.length || o.links?.length || o.moreNetworks)
    endpoints[network] = { Aliases: o.aliases, Links: o.links };
  for (const [name, endpoint] of Object.entries(o.moreNetworks ?? {}))
    endpoints[name] = { GwPriority: endpoint.gwPriority, MacAddress: endpoint.macAddress };
  return {
    Image: image,
    Hostname: o.hostname,
    User: o.user,
    Tty: o.tty,
    Env: o.env && Object.entries(o.env).map(([key, value]) => `${key}=${value}`),
    Cmd: o.cmd?.length ? o.cmd : undefined,
    Volumes: o.volumes && Object.fromEntries(o.volumes.map((target) => [target, {}])),
    Labels: o.labels,
    ExposedPorts: ports.length ? Object.fromEntries(ports.map((port) => [`${port.containerPort}/tcp`, {}])) : undefined,
    Healthcheck: o.healthcheck && healthcheck(o.healthcheck),
    StopSignal: o.stopSignal,
    StopTimeout: o.stopTimeout,
    HostConfig: {
      ...CLI_HOST_DEFAULTS,
      NetworkMode: network,
      Binds: o.binds,
      ...(ports.length ? { PortBindings: portBindings(ports) } : {}),
      ...(o.restart ? { RestartPolicy: restartPolicy(o.restart) } : {}),
      Links: o.links,
      Mounts: o.mounts,
      Init: o.init || undefined,
    },
    NetworkingConfig: { EndpointsConfig: endpoints },
  };
}

function restartPolicy(value: RestartPolicy): { Name: string; MaximumRetryCount: number } {
  const [name, retries] = value.split(":");
  return { Name: name!, MaximumRetryCount: Number(retries ?? 0) };
}

function portBindings(ports: NonNullable<RunOptions["ports"]>): Record<string, { HostIp: string; HostPort: string }[]> {
  const bindings: Record<string, { HostIp: string; HostPort: string }[]> = {};
  for (const port of ports)
    (bindings[`${port.containerPort}/tcp`] ??= []).push({ HostIp: port.hostIp ?? "", HostPort: String(port.hostPort) });
  return bindings;
}

/** The CLI's Healthcheck: Go leaves out the fields that are zero; durations in nanoseconds. */
function healthcheck(check: NonNullable<RunOptions["healthcheck"]>): Record<string, unknown> {
  return {
    Test: ["CMD-SHELL", check.cmd],
    ...(check.intervalMs ? { Interval: check.intervalMs * 1e6 } : {}),
    ...(check.timeoutMs ? { Timeout: check.timeoutMs * 1e6 } : {}),
    ...(check.retries ? { Retries: check.retries } : {}),
  };
}
