/**
 * `docker run -d` of the fixture's test containers through the Engine API (engine-api.ts): the
 * same create request the docker CLI 28.5 sends for the flags below (its body captured from the
 * CLI, field for field), then a start. A CLI start costs 40-100 ms of CPU, and an engine leg ran
 * about 200 of them for containers whose flags were only the test's setup.
 *
 * Only the flags below are translated; any other flag, and a pull or start that fails, is left to
 * the CLI itself (`runShortcut` returns undefined), so that its exact message and exit code stay.
 * tests/integration/harness.test.ts holds the two ways to the same `docker inspect`.
 */
import { registryAuthHeader } from "../../src/engine/modem.ts";
import { engineRequest, engineStream } from "./engine-api.ts";

/** The login a pull from one registry needs (the sandbox's auth registry). */
export interface RunAuth {
  /** the registry whose pulls need the login below (`host:port`) */
  registry: string;
  username: string;
  password: string;
}

/** What `docker run` was asked, as the create request's parts. */
interface RunSpec {
  name: string;
  image: string;
  cmd: string[];
  config: Record<string, unknown>;
  host: Record<string, unknown>;
  network: string;
  aliases: string[];
  links: string[];
}

/**
 * Creates and starts the container `docker run -d --name NAME ...` describes, and answers its ID,
 * or undefined when only the CLI can do it exactly (a flag not below, a failure).
 */
export function runShortcut(args: string[], socketPath: string, auth?: RunAuth): string | undefined {
  const spec = parseRun(args);
  if (!spec) return undefined;
  try {
    const id = create(spec, socketPath, auth);
    if (id === undefined) return undefined;
    const started = engineRequest("POST", `/containers/${id}/start`, { socketPath });
    if (started.status >= 300) {
      // The CLI's own words for it (its exit code differs by cause): the created one goes first.
      engineRequest("DELETE", `/containers/${id}?force=1`, { socketPath });
      return undefined;
    }
    return id;
  } catch {
    return undefined;
  }
}

function create(spec: RunSpec, socketPath: string, auth?: RunAuth): string | undefined {
  const path = `/containers/create?name=${encodeURIComponent(spec.name)}`;
  const body = JSON.stringify(createBody(spec));
  const send = () => engineRequest("POST", path, { socketPath, body, headers: { "Content-Type": "application/json" } });
  let answer = send();
  // `docker run` pulls an image the engine lacks, then creates again.
  if (answer.status === 404 && /no such image/i.test(answer.body)) {
    if (!pull(spec.image, socketPath, auth)) return undefined;
    answer = send();
  }
  if (answer.status >= 300) return undefined;
  return (JSON.parse(answer.body) as { Id: string }).Id;
}

function pull(image: string, socketPath: string, auth?: RunAuth): boolean {
  if (image.includes("@")) return false;
  const tagAt = image.lastIndexOf(":");
  const [repo, tag] =
    tagAt > image.lastIndexOf("/") ? [image.slice(0, tagAt), image.slice(tagAt + 1)] : [image, "latest"];
  const login =
    auth && repo.startsWith(`${auth.registry}/`)
      ? { username: auth.username, password: auth.password, serveraddress: auth.registry }
      : {};
  const answer = engineRequest(
    "POST",
    `/images/create?fromImage=${encodeURIComponent(repo)}&tag=${encodeURIComponent(tag)}`,
    {
      socketPath,
      headers: { "X-Registry-Auth": registryAuthHeader(login) },
    },
  );
  try {
    engineStream(answer, `docker pull ${image}`);
    return true;
  } catch {
    return false;
  }
}

/** The flags translated, each with its value (`--flag value` or `--flag=value`). */
const VALUE_FLAGS = new Set([
  "--name",
  "--network",
  "--net",
  "--network-alias",
  "--link",
  "-e",
  "--env",
  "-l",
  "--label",
  "--restart",
  "--hostname",
  "-h",
  "-v",
  "--volume",
  "--stop-timeout",
  "--stop-signal",
  "--health-cmd",
  "--health-interval",
  "--health-retries",
  "-u",
  "--user",
  "-p",
  "--publish",
]);
const SWITCHES = new Set(["-d", "--detach", "-t", "--tty", "--init"]);

/** `run -d --name NAME [flags] IMAGE [CMD...]`, or undefined for anything else. */
export function parseRun(args: string[]): RunSpec | undefined {
  if (args[0] !== "run") return undefined;
  const values: [string, string][] = [];
  const switches = new Set<string>();
  let at = 1;
  for (; at < args.length; at++) {
    const arg = args[at]!;
    if (!arg.startsWith("-")) break;
    const eq = arg.indexOf("=");
    const flag = arg.startsWith("--") && eq > 0 ? arg.slice(0, eq) : arg;
    if (SWITCHES.has(arg)) switches.add(arg);
    else if (VALUE_FLAGS.has(flag) && flag !== arg) values.push([flag, arg.slice(eq + 1)]);
    else if (VALUE_FLAGS.has(arg) && at + 1 < args.length) values.push([arg, args[++at]!]);
    else return undefined;
  }
  const image = args[at];
  const name = values.findLast(([flag]) => flag === "--name")?.[1];
  if (!image || !name || !(switches.has("-d") || switches.has("--detach"))) return undefined;
  const all = (...flags: string[]) => values.filter(([flag]) => flags.includes(flag)).map(([, value]) => value);
  const last = (...flags: string[]) => all(...flags).at(-1);

  const config: Record<string, unknown> = {};
  const host: Record<string, unknown> = {};
  const env = all("-e", "--env");
  if (env.some((entry) => !entry.includes("="))) return undefined; // taken from the CLI's own environment
  const labels: Record<string, string> = {};
  for (const label of all("-l", "--label")) {
    const eq = label.indexOf("=");
    labels[eq < 0 ? label : label.slice(0, eq)] = eq < 0 ? "" : label.slice(eq + 1);
  }
  const restart = restartPolicy(last("--restart") ?? "no");
  if (!restart) return undefined;
  const binds: string[] = [];
  const volumes: Record<string, object> = {};
  for (const volume of all("-v", "--volume")) {
    if (volume.includes(":")) binds.push(volume);
    else volumes[volume] = {};
  }
  const ports = all("-p", "--publish").map(portBinding);
  if (ports.some((port) => !port)) return undefined;
  const exposed: Record<string, object> = {};
  const bindings: Record<string, { HostIp: string; HostPort: string }[]> = {};
  for (const port of ports) {
    exposed[port!.container] = {};
    (bindings[port!.container] ??= []).push({ HostIp: port!.hostIp, HostPort: port!.hostPort });
  }
  const health = healthcheck(last("--health-cmd"), last("--health-interval"), last("--health-retries"));
  if (health === null) return undefined;
  const stopTimeout = last("--stop-timeout");
  if (stopTimeout !== undefined && !/^-?\d+$/.test(stopTimeout)) return undefined;

  Object.assign(config, {
    Hostname: last("--hostname", "-h") ?? "",
    User: last("-u", "--user") ?? "",
    Tty: switches.has("-t") || switches.has("--tty"),
    Env: env.length ? env : null,
    Volumes: volumes,
    Labels: labels,
    ...(Object.keys(exposed).length ? { ExposedPorts: exposed } : {}),
    ...(health ? { Healthcheck: health } : {}),
    ...(last("--stop-signal") !== undefined ? { StopSignal: last("--stop-signal") } : {}),
    ...(stopTimeout !== undefined ? { StopTimeout: Number(stopTimeout) } : {}),
  });
  const links = all("--link");
  const network = last("--network", "--net") ?? "default";
  // aliases and links belong to a user-defined network; elsewhere the CLI's own answer
  const userNetwork = !["default", "none", "host", "bridge"].includes(network) && !network.startsWith("container:");
  if ((all("--network-alias").length || links.length) && !userNetwork) return undefined;
  if (links.some((link) => !/^[^:]+:[^:]+$/.test(link))) return undefined;
  Object.assign(host, {
    Binds: binds.length ? binds : null,
    PortBindings: bindings,
    RestartPolicy: restart,
    Links: links.length ? links : null,
    ...(switches.has("--init") ? { Init: true } : {}),
  });
  return { name, image, cmd: args.slice(at + 1), config, host, network, aliases: all("--network-alias"), links };
}

function restartPolicy(value: string): { Name: string; MaximumRetryCount: number } | undefined {
  const [policy, count] = value.split(":");
  if (!["no", "always", "unless-stopped", "on-failure"].includes(policy!)) return undefined;
  if (count !== undefined && (policy !== "on-failure" || !/^\d+$/.test(count))) return undefined;
  return { Name: policy!, MaximumRetryCount: count ? Number(count) : 0 };
}

/** `[ip:]hostPort:containerPort[/proto]` (no ranges). */
function portBinding(value: string): { container: string; hostIp: string; hostPort: string } | undefined {
  const match = /^(?:(\d{1,3}(?:\.\d{1,3}){3}):)?(\d+):(\d+)(?:\/(tcp|udp))?$/.exec(value);
  if (!match) return undefined;
  return { container: `${match[3]}/${match[4] ?? "tcp"}`, hostIp: match[1] ?? "", hostPort: match[2]! };
}

/** The CLI's Healthcheck: Go drops zero fields; undefined without one, null where only the CLI knows. */
function healthcheck(cmd?: string, interval?: string, retries?: string): Record<string, unknown> | undefined | null {
  if (cmd === undefined) return interval === undefined && retries === undefined ? undefined : null;
  const check: Record<string, unknown> = { Test: ["CMD-SHELL", cmd] };
  if (interval !== undefined) {
    const ns = nanoseconds(interval);
    if (ns === undefined) return null;
    if (ns) check.Interval = ns;
  }
  if (retries !== undefined) {
    if (!/^\d+$/.test(retries)) return null;
    if (Number(retries)) check.Retries = Number(retries);
  }
  return check;
}

/** A Go duration of one unit (`1s`, `500ms`, `2m`) in nanoseconds. */
function nanoseconds(value: string): number | undefined {
  const match = /^(\d+)(ms|s|m|h)$/.exec(value);
  if (!match) return undefined;
  const unit = { ms: 1e6, s: 1e9, m: 60e9, h: 3600e9 }[match[2] as "ms" | "s" | "m" | "h"];
  return Number(match[1]) * unit;
}

/** The body the CLI 28.5 sends to POST /containers/create, with what `spec` sets. */
function createBody(spec: RunSpec): Record<string, unknown> {
  const endpoint = spec.aliases.length || spec.links.length ? { [spec.network]: endpointConfig(spec) } : {};
  return {
    Hostname: "",
    Domainname: "",
    User: "",
    AttachStdin: false,
    AttachStdout: false,
    AttachStderr: false,
    Tty: false,
    OpenStdin: false,
    StdinOnce: false,
    Env: null,
    Cmd: spec.cmd.length ? spec.cmd : null,
    Image: spec.image,
    Volumes: {},
    WorkingDir: "",
    Entrypoint: null,
    OnBuild: null,
    Labels: {},
    ...spec.config,
    HostConfig: {
      Binds: null,
      ContainerIDFile: "",
      LogConfig: { Type: "", Config: {} },
      NetworkMode: spec.network,
      PortBindings: {},
      RestartPolicy: { Name: "no", MaximumRetryCount: 0 },
      AutoRemove: false,
      VolumeDriver: "",
      VolumesFrom: null,
      ConsoleSize: [0, 0],
      CapAdd: null,
      CapDrop: null,
      CgroupnsMode: "",
      Dns: [],
      DnsOptions: [],
      DnsSearch: [],
      ExtraHosts: null,
      GroupAdd: null,
      IpcMode: "",
      Cgroup: "",
      Links: null,
      OomScoreAdj: 0,
      PidMode: "",
      Privileged: false,
      PublishAllPorts: false,
      ReadonlyRootfs: false,
      SecurityOpt: null,
      UTSMode: "",
      UsernsMode: "",
      ShmSize: 0,
      Isolation: "",
      CpuShares: 0,
      Memory: 0,
      NanoCpus: 0,
      CgroupParent: "",
      BlkioWeight: 0,
      BlkioWeightDevice: [],
      BlkioDeviceReadBps: [],
      BlkioDeviceWriteBps: [],
      BlkioDeviceReadIOps: [],
      BlkioDeviceWriteIOps: [],
      CpuPeriod: 0,
      CpuQuota: 0,
      CpuRealtimePeriod: 0,
      CpuRealtimeRuntime: 0,
      CpusetCpus: "",
      CpusetMems: "",
      Devices: [],
      DeviceCgroupRules: null,
      DeviceRequests: null,
      MemoryReservation: 0,
      MemorySwap: 0,
      MemorySwappiness: -1,
      OomKillDisable: false,
      PidsLimit: 0,
      Ulimits: [],
      CpuCount: 0,
      CpuPercent: 0,
      IOMaximumIOps: 0,
      IOMaximumBandwidth: 0,
      MaskedPaths: null,
      ReadonlyPaths: null,
      ...spec.host,
    },
    NetworkingConfig: { EndpointsConfig: endpoint },
  };
}

/** The endpoint the CLI sends for a user-defined network given aliases or links. */
function endpointConfig(spec: RunSpec): Record<string, unknown> {
  return {
    IPAMConfig: null,
    Links: spec.links.length ? spec.links : null,
    Aliases: spec.aliases.length ? spec.aliases : null,
    MacAddress: "",
    DriverOpts: null,
    GwPriority: 0,
    NetworkID: "",
    EndpointID: "",
    Gateway: "",
    IPAddress: "",
    IPPrefixLen: 0,
    IPv6Gateway: "",
    GlobalIPv6Address: "",
    GlobalIPv6PrefixLen: 0,
    DNSNames: null,
  };
}
