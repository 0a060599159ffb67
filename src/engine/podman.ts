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

/** Reads one libpod inspect (a path under `/libpod`), null when there is no such object. */
export type LibpodReader = (path: string) => Promise<Json | null>;

/**
 * Podman's sockets on this machine, where `podman system service` (podman.socket) serves them:
 * rootful /run/podman/podman.sock, a user's $XDG_RUNTIME_DIR/podman/podman.sock.
 */
export function podmanSockets(env: Record<string, string | undefined> = process.env, exists: (path: string) => boolean = existsSync): string[] {
  const candidates = ["/run/podman/podman.sock", ...(env.XDG_RUNTIME_DIR ? [`${env.XDG_RUNTIME_DIR}/podman/podman.sock`] : [])];
  return candidates.filter((path) => exists(path));
}

/** The Podman version the version endpoint's components name, or null when the engine is not Podman. */
export function podmanVersion(version: { Components?: { Name?: string; Version?: string }[] } | null | undefined): string | null {
  const podman = version?.Components?.find((c) => /^podman/i.test(c.Name ?? ""));
  return podman ? String(podman.Version ?? "") : null;
}

/** "4.3.1" >= "4.3.0"; a version that does not read as one is too old. */
export function atLeast(version: string, minimum: string): boolean {
  const parse = (v: string) => (/^v?(\d+)\.(\d+)(?:\.(\d+))?/.exec(v.trim()) ?? []).slice(1, 4).map((p) => Number(p ?? 0));
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
  if (typeof logDriver === "string" && logDriver !== "" && hostConfig.LogConfig) hostConfig.LogConfig = { ...hostConfig.LogConfig, Type: logDriver };
  if (Array.isArray(hostConfig.Ulimits)) {
    hostConfig.Ulimits = hostConfig.Ulimits.map((u: Json) => ({ ...u, Name: String(u.Name ?? "").replace(/^RLIMIT_/i, "").toLowerCase() }));
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
  { path: "Config.HealthcheckOnFailureAction", what: "the healthcheck's on-failure action (--health-on-failure)", since: "4.3" },
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
const OWN_ANNOTATION = /^(io\.kubernetes\.cri-o\.|io\.podman\.annotations\.|io\.container\.manager$|org\.opencontainers\.image\.stopSignal$)/;

function valueAt(inspect: Json, path: string): unknown {
  let value: unknown = inspect;
  for (const key of path.split(".")) value = value && typeof value === "object" ? (value as Json)[key] : undefined;
  if (path === "Config.Annotations" && value && typeof value === "object") {
    value = Object.fromEntries(Object.entries(value as Json).filter(([key]) => !OWN_ANNOTATION.test(key)));
  }
  return value;
}

/** The libpod-only settings of `old` that `fresh` (its replacement) does not show alike. */
export function lostSettings(old: Json, fresh: Json): string[] {
  return LIBPOD_ONLY_SETTINGS.filter(({ path }) => canonical(valueAt(old, path)) !== canonical(valueAt(fresh, path))).map(({ what }) => what);
}

/**
 * Why svc must not replace this container through the compatible API, with what to do instead;
 * null when it may. `libpod` is the container's libpod inspect.
 */
export function unreplaceableReason(old: ContainerInspect, libpod: Json | null): string | null {
  const unit = old.Config?.Labels?.[SYSTEMD_UNIT_LABEL];
  if (unit) return systemdReason(unit, old.Config?.Labels?.[AUTO_UPDATE_LABEL]);
  if (!libpod) return null;
  const cannot: string[] = [];
  if (libpod.Pod) cannot.push("its pod");
  const maps = (libpod.HostConfig?.IDMappings ?? {}) as Json;
  if ((maps.UidMap ?? []).length > 0 || (maps.GidMap ?? []).length > 0) cannot.push("its uid/gid maps");
  const onFailure = libpod.Config?.HealthcheckOnFailureAction;
  if (onFailure && onFailure !== "none") cannot.push(`the healthcheck's on-failure action (${onFailure})`);
  if ((libpod.Config?.Secrets ?? []).length > 0) cannot.push("its secrets");
  if (cannot.length === 0) return null;
  return `Podman's Docker-compatible API cannot create a container with ${cannot.join(", ")}, so a replacement would lose ${cannot.length > 1 ? "them" : "it"}: it is left as it is (update it with podman, or recreate it without ${cannot.length > 1 ? "them" : "it"})`;
}

/**
 * A container that systemd runs is systemd's to restart: replaced behind its back, the unit would
 * stop the new container, or start the old one again. What `podman auto-update` does for it.
 */
export function systemdReason(unit: string, autoUpdate: string | undefined): string {
  const how = autoUpdate
    ? `\`podman auto-update\` updates it (its ${AUTO_UPDATE_LABEL}=${autoUpdate} label)`
    : `pull the new image, then \`systemctl restart ${unit}\` (for a new tag, move Image= in its quadlet .container file first, then \`systemctl daemon-reload\`)`;
  return `systemd runs it (unit ${unit}): svc does not replace it behind systemd's back; ${how}`;
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
