/**
 * Podman behind its Docker-compatible API (README, "Engines"; docs/podman.md). svc speaks the
 * compatible API to Podman as to Docker: Podman's own translation of a Docker create body into
 * its spec keeps what that body holds (volumes by name, the anonymous ones included, since
 * Podman lists them in HostConfig.Binds; ports, networks and aliases, restart policy,
 * healthcheck...). What the compatible API cannot say is read from Podman's own (libpod) API:
 * the settings only Podman has (a pod, uid/gid maps, the healthcheck's on-failure action,
 * secrets...). A container holding one that the compatible API cannot carry is left alone, with
 * the reason; every replacement is compared with its old container in libpod's inspect before it
 * starts, and thrown away (the old one put back) when anything libpod reports was lost.
 *
 * Pure apart from the `libpod` reader it is given; the meaning of each field is Podman's own
 * (containers/podman, libpod/define/container_inspect.go at the version named in each row).
 */
import { existsSync } from "node:fs";
import type { ReplacementSpec } from "./clone.ts";
import type { ContainerInspect } from "./port.ts";

type Json = Record<string, any>;

/** The libpod REST API's version prefix svc speaks: served by Podman 4.0 and newer. */
export const LIBPOD_API = "v4.0.0";
/** The oldest Podman svc updates containers on: the one tested (Debian 12's), README "Engines". */
export const PODMAN_MIN_VERSION = "4.3.0";
/** The label Podman puts on a container that systemd runs (quadlet, `podman generate systemd`). */
export const SYSTEMD_UNIT_LABEL = "PODMAN_SYSTEMD_UNIT";
/** Podman's auto-update policy label: `registry` follows the tag's digest, `local` a local image. */
export const AUTO_UPDATE_LABEL = "io.containers.autoupdate";

/**
 * Podman's sockets on this machine, where `podman system service` (podman.socket) serves them:
 * rootful /run/podman/podman.sock, a user's $XDG_RUNTIME_DIR/podman/podman.sock.
 */
export function podmanSockets(
  env: Record<string, string | undefined> = process.env,
  exists: (path: string) => boolean = existsSync,
): string[] {
  const candidates = [
    "/run/podman/podman.sock",
    ...(env.XDG_RUNTIME_DIR ? [`${env.XDG_RUNTIME_DIR}/podman/podman.sock`] : []),
  ];
  return candidates.filter((path) => exists(path));
}

/** The Podman version the version endpoint's components name, or null when the engine is not Podman. */
export function podmanVersion(
  version: { Components?: { Name?: string; Version?: string }[] } | null | undefined,
): string | null {
  const podman = version?.Components?.find((c) => /^podman/i.test(c.Name ?? ""));
  return podman ? String(podman.Version ?? "") : null;
}

/** "4.3.1" >= "4.3.0"; a version that does not read as one is too old. */
export function atLeast(version: string, minimum: string): boolean {
  const parse = (v: string) =>
    (/^v?(\d+)\.(\d+)(?:\.(\d+))?/.exec(v.trim()) ?? []).slice(1, 4).map((p) => Number(p ?? 0));
  const [a, b] = [parse(version), parse(minimum)];
  if (a.length === 0 || a.some(Number.isNaN)) return false;
  for (let i = 0; i < 3; i++) if ((a[i] ?? 0) !== (b[i] ?? 0)) return (a[i] ?? 0) > (b[i] ?? 0);
  return true;
}

/** Why svc does not update containers on this Podman version, or null when it does. */
export function refusedPodman(version: string): string | null {
  if (atLeast(version, PODMAN_MIN_VERSION)) return null;
  return `Podman ${version || "(version unknown)"} is older than ${PODMAN_MIN_VERSION}, the oldest svc is tested with: it cannot tell which settings of a container a replacement would keep (its libpod API ${LIBPOD_API} and the healthcheck's on-failure action came in 4.0 and 4.3)`;
}

// ---------------------------------------------------------------------------------------------
// The compatible create body, corrected where Podman's own inspect does not read back

/**
 * Corrections of the compatible API's create body (clone.ts) for Podman, `libpod` being the old
 * container's libpod inspect:
 * - LogConfig.Type: the compatible inspect shows Podman's default driver, k8s-file, as json-file
 *   (pkg/api/handlers/compat/containers.go, 4.3), which Podman also has and would then use: the
 *   driver is libpod's.
 * - Ulimits: inspect names them as OCI rlimit types (RLIMIT_NOFILE; libpod/container_inspect.go,
 *   4.3), which the compatible create refuses; it takes Docker's names (nofile).
 * - Env: Podman writes HOSTNAME into a container's environment at start when the user did not
 *   (libpod/container_internal_linux.go, generateSpec, 4.3), and inspect shows it: carried over,
 *   it would pin the old container's generated host name on the replacement.
 */
export function podmanCreateBody(old: ContainerInspect, libpod: Json | null, spec: ReplacementSpec): ReplacementSpec {
  const body: Json = structuredClone(spec.createBody);
  const hostConfig: Json = body.HostConfig ?? {};
  const logDriver = libpod?.HostConfig?.LogConfig?.Type;
  if (typeof logDriver === "string" && logDriver !== "" && hostConfig.LogConfig)
    hostConfig.LogConfig = { ...hostConfig.LogConfig, Type: logDriver };
  if (Array.isArray(hostConfig.Ulimits)) {
    hostConfig.Ulimits = hostConfig.Ulimits.map((u: Json) => ({
      ...u,
      Name: String(u.Name ?? "")
        .replace(/^RLIMIT_/i, "")
        .toLowerCase(),
    }));
  }
  const oldHostname = old.Config?.Hostname ?? "";
  if (Array.isArray(body.Env) && body.Hostname === undefined && oldHostname !== "") {
    body.Env = (body.Env as string[]).filter((entry) => entry !== `HOSTNAME=${oldHostname}`);
  }
  return { ...spec, createBody: body };
}

// ---------------------------------------------------------------------------------------------
// What only libpod reports

/**
 * Settings libpod's inspect reports and the compatible one does not (libpod/define/
 * container_inspect.go); `since` is the Podman version that added the field. A replacement must
 * show each exactly as its old container did.
 */
export const LIBPOD_ONLY_SETTINGS: readonly { path: string; what: string; since: string }[] = [
  { path: "Pod", what: "its pod (--pod)", since: "1.0" },
  { path: "HostConfig.IDMappings", what: "its uid/gid maps (--uidmap, --gidmap, --userns=auto)", since: "1.0" },
  { path: "HostConfig.UsernsMode", what: "its user namespace (--userns)", since: "1.0" },
  {
    path: "Config.HealthcheckOnFailureAction",
    what: "the healthcheck's on-failure action (--health-on-failure)",
    since: "4.3",
  },
  { path: "Config.Secrets", what: "its secrets (--secret)", since: "2.0" },
  { path: "Config.Timezone", what: "its time zone (--tz)", since: "2.1" },
  { path: "Config.Umask", what: "its umask (--umask)", since: "2.1" },
  { path: "Config.SystemdMode", what: "its systemd mode (--systemd)", since: "2.0" },
  { path: "Config.Passwd", what: "its /etc/passwd entry (--passwd)", since: "3.1" },
  { path: "Config.ChrootDirs", what: "its chroot directories (--chrootdirs)", since: "4.0" },
  { path: "Config.sdNotifyMode", what: "its sd_notify mode (--sdnotify)", since: "2.1" },
  { path: "Config.Timeout", what: "its run-time limit (--timeout)", since: "3.2" },
  { path: "Config.StopTimeout", what: "its stop timeout (--stop-timeout)", since: "1.0" },
  { path: "Config.Annotations", what: "its annotations (--annotation)", since: "1.0" },
  { path: "Dependencies", what: "the containers it requires (--requires)", since: "1.0" },
  { path: "HostConfig.RestartPolicy", what: "its restart policy (--restart)", since: "1.0" },
  { path: "HostConfig.CgroupConf", what: "its cgroup settings (--cgroup-conf)", since: "3.1" },
];

/**
 * Annotations Podman writes itself from other settings or at start (the create time, the stop
 * signal, the terminal, init, privileged...: libpod/define/annotations.go and
 * libpod/container_internal_linux.go, 4.3): compared through those settings, not as annotations.
 */
const OWN_ANNOTATION =
  /^(io\.kubernetes\.cri-o\.|io\.podman\.annotations\.|io\.container\.manager$|org\.opencontainers\.image\.stopSignal$)/;

function valueAt(inspect: Json, path: string): unknown {
  let value: unknown = inspect;
  for (const key of path.split(".")) value = value && typeof value === "object" ? (value as Json)[key] : undefined;
  // Passwd not shown (`podman kube play`) means true (libpod/container_internal_common.go, 4.3)
  if (path === "Config.Passwd" && value === undefined) return true;
  if (path === "Config.Annotations" && value && typeof value === "object") {
    value = Object.fromEntries(Object.entries(value as Json).filter(([key]) => !OWN_ANNOTATION.test(key)));
  }
  return value;
}

/** The libpod-only settings of `old` that `fresh` (its replacement) does not show alike. */
export function lostSettings(old: Json, fresh: Json): string[] {
  return LIBPOD_ONLY_SETTINGS.filter(
    ({ path }) => canonical(valueAt(old, path)) !== canonical(valueAt(fresh, path)),
  ).map(({ what }) => what);
}

/**
 * Why svc must not replace this container at all, with what to do instead; null when it may (what
 * a replacement would lose is the probe's to tell: PodmanEngine.probe, podman-engine.ts).
 */
export function unreplaceableReason(old: ContainerInspect, imageUnitLabel = false): string | null {
  // the image's own label names no unit of this machine (PodmanEngine.ownUnitLabel)
  const unit = imageUnitLabel ? undefined : old.Config?.Labels?.[SYSTEMD_UNIT_LABEL];
  return unit ? systemdReason(unit, old.Config?.Labels?.[AUTO_UPDATE_LABEL]) : null;
}

/**
 * A container that systemd runs is systemd's to restart: replaced behind its back, the unit would
 * stop the new container, or start the old one again. Where svc reaches that systemd it restarts
 * the unit itself (systemd.ts); where it does not (`unreachable` says why), what `podman
 * auto-update` or a person does for it.
 */
export function systemdReason(unit: string, autoUpdate: string | undefined, unreachable?: string): string {
  const how = autoUpdate
    ? `\`podman auto-update\` updates it (its ${AUTO_UPDATE_LABEL}=${autoUpdate} label)`
    : `pull the new image, then \`systemctl restart ${unit}\` (for a new tag, move Image= in its quadlet .container file first, then \`systemctl daemon-reload\`)`;
  const why = unreachable ? ` (svc cannot restart it: ${unreachable})` : "";
  return `systemd runs it (unit ${unit}): svc does not replace it behind systemd's back${why}; ${how}`;
}

/** JSON with sorted keys, where null, undefined, false, "", [] and {} all mean "not set". */
function canonical(value: unknown): string {
  const norm = (v: unknown): unknown => {
    if (v === null || v === undefined || v === false || v === "" || v === 0) return null;
    if (Array.isArray(v)) return v.length === 0 ? null : v.map(norm);
    if (typeof v === "object") {
      const entries = Object.keys(v as Json)
        .sort()
        .map((k) => [k, norm((v as Json)[k])] as const)
        .filter(([, x]) => x !== null);
      return entries.length === 0 ? null : Object.fromEntries(entries);
    }
    return v;
  };
  return JSON.stringify(norm(value));
}

// ---------------------------------------------------------------------------------------------
// Podman's own create: what the compatible one cannot make

/** Annotations Podman writes when it creates or starts a container (libpod/container_internal_linux.go, 4.3). */
const WRITTEN_AT_START =
  /^(io\.kubernetes\.cri-o\.Created|io\.container\.manager|org\.opencontainers\.image\.stopSignal)$/;

/** Signal numbers of Linux (x86 and arm), for a stop signal given by name. */
const SIGNALS: Record<string, number> = {
  HUP: 1,
  INT: 2,
  QUIT: 3,
  KILL: 9,
  USR1: 10,
  USR2: 12,
  TERM: 15,
  CONT: 18,
  STOP: 19,
  WINCH: 28,
  PWR: 30,
  RTMIN: 34,
};

function signalNumber(value: unknown): number | undefined {
  const text = String(value ?? "")
    .trim()
    .toUpperCase()
    .replace(/^SIG/, "");
  if (text === "") return undefined;
  return /^\d+$/.test(text) ? Number(text) : SIGNALS[text];
}

/** "0:1:1000" (libpod's inspect of an id map) as Podman's spec writes one. */
function idMap(entry: string): Json {
  const [container, host, size] = entry.split(":").map(Number);
  return { container_id: container, host_id: host, size };
}

/** Docker's `HostConfig.PortBindings` as Podman's port mappings (one per host binding). */
function portMappings(bindings: Json | undefined): Json[] {
  const out: Json[] = [];
  for (const [key, hosts] of Object.entries(bindings ?? {})) {
    const [port = "", protocol = "tcp"] = key.split("/");
    for (const host of (hosts ?? []) as Json[]) {
      out.push({
        container_port: Number(port),
        protocol,
        ...(host.HostIp ? { host_ip: host.HostIp } : {}),
        ...(host.HostPort ? { host_port: Number(host.HostPort) } : {}),
      });
    }
  }
  return out;
}

/** The network namespace a Docker NetworkMode names, in Podman's spec (pkg/specgen/namespaces.go). */
function networkNamespace(mode: string): Json | undefined {
  if (mode === "" || mode === "default") return undefined;
  if (mode.startsWith("container:")) return { nsmode: "container", value: mode.slice("container:".length) };
  if (["none", "host", "bridge", "slirp4netns", "pasta", "private"].includes(mode)) return { nsmode: mode };
  // a network's name: a bridge namespace joined to that network
  return { nsmode: "bridge" };
}

/**
 * The body of libpod's create (POST /libpod/containers/create, a SpecGenerator of
 * pkg/specgen/specgen.go at 4.3) for a replacement: the compatible create body svc builds (what the
 * user set, the image's defaults left out; clone.ts) in Podman's terms, with what only libpod
 * reports taken from the old container's libpod inspect `lp`: its pod, uid/gid maps, umask, time
 * zone, secrets, systemd and sd_notify modes, healthcheck on-failure action, annotations,
 * requirements. Used where the compatible create would lose one of those (podman-engine.ts's probe).
 */
export function libpodCreateSpec(name: string, body: Json, lp: Json): Json {
  const host: Json = body.HostConfig ?? {};
  const config: Json = lp.Config ?? {};
  const lpHost: Json = lp.HostConfig ?? {};
  const inPod = typeof lp.Pod === "string" && lp.Pod !== "";
  const spec: Json = { name, image: body.Image };
  const set = (key: string, value: unknown) => {
    if (value === undefined || value === null || value === "" || (Array.isArray(value) && value.length === 0)) return;
    if (typeof value === "object" && !Array.isArray(value) && Object.keys(value as Json).length === 0) return;
    spec[key] = value;
  };
  if (inPod) spec.pod = lp.Pod;
  set("hostname", body.Hostname);
  // Podman's create adds PATH, TERM and container=podman where the image and the user set none
  // (pkg/specgen/generate/container.go, 4.3): one the old container did not show (made by
  // `podman kube play`) stays unset
  const oldEnv = new Set(((lp.Config?.Env ?? []) as string[]).map((e) => e.split("=")[0]));
  set(
    "unsetenv",
    ["PATH", "TERM", "container"].filter((name) => !oldEnv.has(name)),
  );
  set(
    "env",
    Object.fromEntries(
      ((body.Env ?? []) as string[]).map((e) => [
        e.slice(0, e.indexOf("=") < 0 ? e.length : e.indexOf("=")),
        e.includes("=") ? e.slice(e.indexOf("=") + 1) : "",
      ]),
    ),
  );
  set("labels", body.Labels);
  // every annotation but those Podman writes at create or start (the time, the manager, the stop
  // signal); the ones its CLI derives from settings (io.podman.annotations.*, the terminal) are kept
  // as they were, as the CLI wrote them
  set(
    "annotations",
    Object.fromEntries(
      Object.entries((config.Annotations ?? {}) as Json).filter(([key]) => !WRITTEN_AT_START.test(key)),
    ),
  );
  // the command line that made the old container (`podman generate systemd --new` runs it again)
  set("containerCreateCommand", config.CreateCommand);
  set("entrypoint", Array.isArray(body.Entrypoint) ? body.Entrypoint : undefined);
  set("command", body.Cmd);
  set("work_dir", body.WorkingDir);
  set("user", body.User);
  if (body.Tty) spec.terminal = true;
  if (body.OpenStdin) spec.stdin = true;
  set("stop_signal", body.StopSignal === undefined ? undefined : signalNumber(body.StopSignal));
  set("stop_timeout", config.StopTimeout);
  set("timeout", config.Timeout || undefined);
  const restart = host.RestartPolicy?.Name;
  if (restart && restart !== "no") {
    spec.restart_policy = restart;
    if (restart === "on-failure" && host.RestartPolicy.MaximumRetryCount)
      spec.restart_tries = host.RestartPolicy.MaximumRetryCount;
  }
  if (body.Healthcheck) spec.healthconfig = { ...(config.Healthcheck ?? {}), ...body.Healthcheck };
  const onFailure = ["none", "invalid", "kill", "restart", "stop"].indexOf(
    String(config.HealthcheckOnFailureAction ?? "none"),
  );
  if (onFailure > 0) spec.health_check_on_failure_action = onFailure;
  // every volume by name (the anonymous ones too: the very volumes, with their data), every other
  // mount as libpod shows it
  const mounts = (lp.Mounts ?? []) as Json[];
  // a mount's options as HostConfig.Binds shows them, in the order they were given (the mount's
  // Options leave out rw/ro and the propagation); else the mount's own
  const bindOptions = new Map<string, string[]>();
  for (const bind of (lpHost.Binds ?? []) as string[]) {
    const [, destination, options] = bind.split(":");
    if (destination && options) bindOptions.set(destination, options.split(","));
  }
  const optionsOf = (m: Json): string[] =>
    bindOptions.get(m.Destination) ?? [...(m.Options ?? []), ...(m.RW === false ? ["ro"] : [])];
  set(
    "volumes",
    mounts
      .filter((m) => m.Type === "volume")
      .map((m) => ({ Name: m.Name, Dest: m.Destination, Options: optionsOf(m) })),
  );
  set(
    "mounts",
    mounts
      .filter((m) => m.Type === "bind")
      .map((m) => ({ destination: m.Destination, type: "bind", source: m.Source, options: optionsOf(m) })),
  );
  for (const [destination, options] of Object.entries((lpHost.Tmpfs ?? {}) as Json)) {
    spec.mounts = [
      ...(spec.mounts ?? []),
      { destination, type: "tmpfs", source: "tmpfs", options: String(options).split(",").filter(Boolean) },
    ];
  }
  // in a pod, a namespace the pod shares is the pod's (its infra container's); one it does not share
  // (a pod without infra) is the container's own, as for any container
  const mode = String(host.NetworkMode ?? "");
  const netns = inPod && mode.startsWith("container:") ? undefined : networkNamespace(mode);
  if (netns) spec.netns = netns;
  if (!inPod) {
    const endpoints = (body.NetworkingConfig?.EndpointsConfig ?? {}) as Json;
    const networks = Object.fromEntries(
      Object.entries(endpoints)
        .filter(([network]) => !["none", "host", "bridge", ""].includes(network) || network === "podman")
        .map(([network, endpoint]) => [
          network,
          {
            ...(endpoint.Aliases ? { aliases: endpoint.Aliases } : {}),
            ...(endpoint.IPAMConfig?.IPv4Address ? { static_ips: [endpoint.IPAMConfig.IPv4Address] } : {}),
            ...(endpoint.MacAddress ? { static_mac: endpoint.MacAddress } : {}),
          },
        ]),
    );
    set("Networks", networks);
    set("portmappings", portMappings(host.PortBindings));
    set(
      "expose",
      Object.fromEntries(
        Object.keys((body.ExposedPorts ?? {}) as Json).map((key) => [
          Number(key.split("/")[0]),
          key.split("/")[1] ?? "tcp",
        ]),
      ),
    );
    set("dns_server", host.Dns);
    set("dns_search", host.DnsSearch);
    set("dns_option", host.DnsOptions);
    set("hostadd", host.ExtraHosts);
  }
  set("cap_add", host.CapAdd);
  set("cap_drop", host.CapDrop);
  if (host.Privileged) spec.privileged = true;
  if (host.ReadonlyRootfs) spec.read_only_filesystem = true;
  if (((host.SecurityOpt ?? []) as string[]).some((o) => /^no-new-privileges(:true)?$/.test(o)))
    spec.no_new_privileges = true;
  set("groups", host.GroupAdd);
  set("sysctl", host.Sysctls);
  if (host.Init) spec.init = true;
  set("shm_size", host.ShmSize);
  set("oom_score_adj", host.OomScoreAdj || undefined);
  // by the short name: Podman prefixes RLIMIT_ itself (pkg/specgen/generate/oci.go, addRlimits, 4.3)
  set(
    "r_limits",
    ((lpHost.Ulimits ?? []) as Json[]).map((u) => ({
      type: String(u.Name)
        .replace(/^RLIMIT_/i, "")
        .toLowerCase(),
      soft: u.Soft,
      hard: u.Hard,
    })),
  );
  set(
    "devices",
    ((host.Devices ?? []) as Json[]).map((d) => ({
      path: [d.PathOnHost, d.PathInContainer, d.CgroupPermissions].filter(Boolean).join(":"),
    })),
  );
  const resources: Json = {};
  if (host.Memory || host.MemoryReservation || host.MemorySwap)
    resources.memory = {
      ...(host.Memory ? { limit: host.Memory } : {}),
      ...(host.MemoryReservation ? { reservation: host.MemoryReservation } : {}),
      ...(host.MemorySwap ? { swap: host.MemorySwap } : {}),
    };
  if (host.CpuShares || host.CpuQuota || host.CpuPeriod || host.CpusetCpus)
    resources.cpu = {
      ...(host.CpuShares ? { shares: host.CpuShares } : {}),
      ...(host.CpuQuota ? { quota: host.CpuQuota } : {}),
      ...(host.CpuPeriod ? { period: host.CpuPeriod } : {}),
      ...(host.CpusetCpus ? { cpus: host.CpusetCpus } : {}),
    };
  // no limit given would be containers.conf's (pids_limit, 2048): a limit of 0 is none, as shown
  if (typeof host.PidsLimit === "number") resources.pids = { limit: host.PidsLimit };
  set("resource_limits", resources);
  const log = lpHost.LogConfig ?? {};
  set("log_configuration", {
    ...(log.Type ? { driver: log.Type } : {}),
    ...(log.Config ? { options: log.Config } : {}),
  });
  // the user namespace and its maps, as libpod shows them
  const maps = (lpHost.IDMappings ?? {}) as Json;
  if ((maps.UidMap ?? []).length > 0 || (maps.GidMap ?? []).length > 0) {
    spec.idmappings = {
      UIDMap: ((maps.UidMap ?? []) as string[]).map(idMap),
      GIDMap: ((maps.GidMap ?? []) as string[]).map(idMap),
    };
    spec.userns = { nsmode: "private" };
  } else if (lpHost.UsernsMode) {
    const [mode, value] = String(lpHost.UsernsMode).split(":", 2);
    spec.userns = { nsmode: mode, ...(value ? { value } : {}) };
  }
  set("umask", config.Umask);
  // not shown means managed, as true (libpod/container_internal_common.go, 4.3)
  spec.manage_password = config.Passwd !== false;
  set("timezone", config.Timezone);
  if (config.SystemdMode) spec.systemd = "always";
  set("sdnotifyMode", config.sdNotifyMode);
  set("chroot_directories", config.ChrootDirs);
  set(
    "secrets",
    ((config.Secrets ?? []) as Json[]).map((s) => ({
      Source: s.Name,
      Target: s.Name,
      UID: s.UID ?? 0,
      GID: s.GID ?? 0,
      Mode: s.Mode ?? 0o444,
    })),
  );
  set("dependencyContainers", lp.Dependencies);
  return spec;
}

/**
 * What a container's creation (or its start) decides, which two containers made from one body and
 * image may differ in: ids, names, times, state, runtime files, addresses, the annotations written at
 * start (which the compatible inspect shows from Podman 5, API 1.44) and the one the compatible
 * create writes from the pids limit, itself compared (pkg/specgenutil/specgen.go, 4.6); the image as
 * each API writes it back (the id it was given, or its name).
 */
const CREATION_ONLY =
  /^(Id|Created|Name|State|Image|ResolvConfPath|HostnamePath|HostsPath|LogPath|GraphDriver|ExecIDs|RestartCount|Config\.Image|Config\.Hostname|Config\.Env\.HOSTNAME|HostConfig\.Annotations\.(io\.container\.manager|org\.opencontainers\.image\.stopSignal|io\.kubernetes\.cri-o\.Created|io\.podman\.annotations\.pids-limit)$|NetworkSettings\.(?!Networks\.[^.]+\.(Aliases|IPAMConfig|Links|DriverOpts|NetworkID)(\.|\[|$)).*)(\.|\[|$)/;
/** ... and, in a pod, what the pod decides (its namespaces, its network). */
const POD_DECIDES =
  /^(HostConfig\.(NetworkMode|IpcMode|PidMode|UTSMode|CgroupnsMode|PortBindings|Dns|DnsSearch|DnsOptions|ExtraHosts)|NetworkSettings|Config\.ExposedPorts)(\.|\[|$)/;

function flatten(value: unknown, path: string, out: Map<string, string>): Map<string, string> {
  if (Array.isArray(value)) {
    for (const [i, v] of value.entries()) flatten(v, `${path}[${i}]`, out);
  } else if (value && typeof value === "object") {
    for (const [key, v] of Object.entries(value as Json)) flatten(v, path ? `${path}.${key}` : key, out);
  } else if (value !== null && value !== undefined && value !== "" && value !== false && value !== 0) {
    out.set(path, String(value));
  }
  return out;
}

/** A compatible inspect in comparable form: env and mounts keyed, binds sorted. */
function comparable(inspect: Json): Json {
  const copy: Json = structuredClone(inspect);
  copy.Config = {
    ...(copy.Config ?? {}),
    Env: Object.fromEntries(
      ((copy.Config?.Env ?? []) as string[]).map((e) => [e.split("=")[0], e.slice(e.indexOf("=") + 1)]),
    ),
  };
  copy.Mounts = Object.fromEntries(((copy.Mounts ?? []) as Json[]).map((m) => [m.Destination, m]));
  if (Array.isArray(copy.HostConfig?.Binds)) copy.HostConfig.Binds = [...copy.HostConfig.Binds].sort();
  // the alias Podman adds, the container's short id, is its own
  for (const endpoint of Object.values((copy.NetworkSettings?.Networks ?? {}) as Json)) {
    if (Array.isArray(endpoint?.Aliases))
      endpoint.Aliases = endpoint.Aliases.filter((a: string) => a !== String(copy.Id).slice(0, 12)).sort();
  }
  return copy;
}

/**
 * Where a container made by libpod's create differs, in the compatible inspect, from `reference`:
 * one the compatible create made from the same body and image (both created, not started), or,
 * where the compatible create refuses the body, the old container itself (on the same image).
 * Empty when Podman's own create kept everything the reference shows.
 */
export function creationDifferences(compat: Json, libpod: Json, inPod: boolean): string[] {
  const [a, b] = [flatten(comparable(compat), "", new Map()), flatten(comparable(libpod), "", new Map())];
  const paths = new Set([...a.keys(), ...b.keys()]);
  return [...paths]
    .filter((path) => a.get(path) !== b.get(path) && !CREATION_ONLY.test(path) && !(inPod && POD_DECIDES.test(path)))
    .sort();
}

/**
 * Whether a pull's failure is Podman's signature policy (policy.json) refusing the image, and
 * its reason (bounded); null for any other failure. Podman's CLI says `Source image rejected:
 * <reason>` (containers/image, copy/single.go); its Docker-compatible API passes on the reason
 * alone, which is one of the requirements' own (signature/policy_eval_*.go): "Running image
 * docker://... is rejected by policy." (`reject`), "A signature was required, but no signature
 * exists", "None of the signatures were accepted, reasons: ...", "Signature for identity ... is
 * not accepted", "Signature for digest ... does not match" (`signedBy`, `sigstoreSigned`),
 * "cryptographic signature verification failed: ...".
 */
export function signaturePolicyRefusal(message: string): string | null {
  const prefixed = message.indexOf(SOURCE_REJECTED);
  // the reason from where it starts: what svc or Podman wrote before it names the pull, not why
  const starts = POLICY_REASONS.map((pattern) => pattern.exec(message)?.index ?? -1).filter((at) => at >= 0);
  let reason: string;
  if (prefixed >= 0) reason = message.slice(prefixed + SOURCE_REJECTED.length).trim();
  else if (starts.length > 0) reason = message.slice(Math.min(...starts)).trim();
  else return null;
  return reason.length > MAX_REFUSAL_CHARS
    ? `${reason.slice(0, MAX_REFUSAL_CHARS)}...`
    : reason || "rejected by policy";
}

const SOURCE_REJECTED = "Source image rejected:";
const POLICY_REASONS = [
  /\bRunning image \S+ is rejected by policy\b/,
  /\bA signature was required, but no signature exists\b/,
  /\bNone of the signatures were accepted, reasons: /,
  /\bSignature for identity "[^"]*" is not accepted\b/,
  /\bSignature for digest \S+ does not match\b/,
  /\bcryptographic signature verification failed: /,
];
const MAX_REFUSAL_CHARS = 1000;

/** The cause an engine error carries when Podman's signature policy refused the pull. */
interface PolicyRefusalCause {
  signaturePolicy: string;
}

export function policyRefusalCause(reason: string): PolicyRefusalCause {
  return { signaturePolicy: reason };
}

/** Podman's reason when `error` is a pull its signature policy refused; null for any other error. */
export function refusedByPolicy(error: unknown): string | null {
  const cause = error instanceof Error ? (error.cause as Partial<PolicyRefusalCause> | undefined) : undefined;
  return typeof cause?.signaturePolicy === "string" ? cause.signaturePolicy : null;
}
