/**
 * The heart of a faithful update: from an old container's inspect and its image's inspect,
 * compute the body that creates its replacement. Pure: no engine calls, so it is unit-tested
 * on recorded inspect JSON.
 *
 * `docker inspect` shows a container's Config MERGED with its image's defaults. What the user
 * configured is what differs from the image: a Config value equal to the old image's value came
 * from the image and is dropped, so the new image's defaults apply to it.
 */
import type { ContainerInspect, ImageInspect } from "./port.ts";

/** The API version from which the engine accepts several networks at create (and a MAC per endpoint). */
export const MULTI_NETWORK_CREATE_API = "1.44";
/** The API version from which an endpoint has a gateway priority and a mount may be an image. */
export const GATEWAY_PRIORITY_API = "1.48";

/** Compose compares this label with the image id it resolves for the service's image. */
export const COMPOSE_IMAGE_LABEL = "com.docker.compose.image";

export interface EndpointSpec {
  IPAMConfig?: { IPv4Address?: string; IPv6Address?: string; LinkLocalIPs?: string[] };
  Aliases?: string[];
  Links?: string[];
  DriverOpts?: Record<string, string>;
  MacAddress?: string;
  GwPriority?: number;
}

export interface ReplacementOptions {
  /** the new container's name (normally the old name) */
  name: string;
  /** the image reference the replacement is created from */
  image: string;
  /** for `network_mode: container:<id>`: the name of the container whose namespace to join */
  networkContainer?: string;
  /** the API version spoken to the engine (decides how networks are attached) */
  apiVersion: string;
  /** the id of the image `image` names now, when known (compose-managed containers record it) */
  imageId?: string;
  /** labels set on the replacement over the old container's (compose's config hash after svc wrote the service's files) */
  labels?: Record<string, string>;
}

export interface ReplacementSpec {
  /** body of POST /containers/create */
  createBody: Record<string, unknown>;
  /** the platform the old container was created for ("os/arch[/variant]"), passed on create */
  platform?: string;
  /** networks to connect after create and before start (engines below API 1.44) */
  extraNetworks: { network: string; endpoint: EndpointSpec }[];
}

type Json = Record<string, any>;

/** Config keys whose whole value is the image's default when equal to it. */
const WHOLE_VALUE_KEYS = [
  "User",
  "WorkingDir",
  "Cmd",
  "Entrypoint",
  "StopSignal",
  "Shell",
  "OnBuild",
  "ArgsEscaped",
] as const;

/** Network modes that are not the name of a user network. */
const BUILTIN_NETWORK_MODES = new Set(["host", "none", "bridge", "default", ""]);

export function replacementSpec(
  old: ContainerInspect,
  oldImage: ImageInspect | null,
  options: ReplacementOptions,
): ReplacementSpec {
  const hostConfig = replacementHostConfig(old, options);
  const networkMode = String(hostConfig.NetworkMode ?? "");
  const config = replacementConfig(old, oldImage, options, networkMode);
  const endpoints = replacementEndpoints(old, options);
  const createBody: Json = { ...config, HostConfig: hostConfig };
  const extraNetworks: ReplacementSpec["extraNetworks"] = [];
  if (endpoints.length > 0) {
    const atCreate =
      compareApiVersions(options.apiVersion, MULTI_NETWORK_CREATE_API) >= 0 ? endpoints : endpoints.slice(0, 1);
    createBody.NetworkingConfig = { EndpointsConfig: Object.fromEntries(atCreate.map((e) => [e.network, e.endpoint])) };
    extraNetworks.push(...endpoints.slice(atCreate.length));
  }
  const platform = containerPlatform(old, oldImage);
  return { createBody, extraNetworks, ...(platform ? { platform } : {}) };
}

/**
 * Settings of `old` that the engine takes only at a newer API version than the one spoken (a
 * `docker.api_version` set lower than the engine's): creating the replacement would lose them.
 */
export function settingsBeyondApi(old: ContainerInspect, apiVersion: string): string[] {
  const below = (version: string) => compareApiVersions(apiVersion, version) < 0;
  const problems: string[] = [];
  const mounts = (old.HostConfig?.Mounts ?? []) as Json[];
  if (below(GATEWAY_PRIORITY_API) && mounts.some((m) => m.Type === "image"))
    problems.push(`a mount of type image needs API ${GATEWAY_PRIORITY_API}`);
  const networks = Object.entries((old.NetworkSettings?.Networks ?? {}) as Record<string, Json>);
  for (const [network, settings] of networks) {
    if (below(GATEWAY_PRIORITY_API) && Number(settings.GwPriority ?? 0) !== 0)
      problems.push(`the gateway priority on network ${network} needs API ${GATEWAY_PRIORITY_API}`);
  }
  return problems;
}

/**
 * The platform the container runs: what the engine recorded for it (API >= 1.48), else its
 * image's. Passed on create, so a container of another platform (emulated) stays on it.
 */
function containerPlatform(old: ContainerInspect, oldImage: ImageInspect | null): string | undefined {
  const recorded = (old as Json).ImageManifestDescriptor?.platform as Json | undefined;
  const source: Json | undefined = recorded?.architecture
    ? recorded
    : oldImage
      ? { os: oldImage.Os, architecture: oldImage.Architecture, variant: (oldImage as Json).Variant }
      : undefined;
  if (!source?.os || !source.architecture) return undefined;
  return [source.os, source.architecture, source.variant].filter(Boolean).join("/");
}

// ---------------------------------------------------------------------------------------------
// Config

function replacementConfig(
  old: ContainerInspect,
  oldImage: ImageInspect | null,
  options: ReplacementOptions,
  networkMode: string,
): Json {
  const config: Json = structuredClone((old.Config ?? {}) as Json);
  // Without the old image we cannot tell the image's defaults from the user's values: keep all
  // (the replacement then pins the old defaults, which is safer than losing user settings).
  const image: Json = (oldImage?.Config ?? {}) as Json;
  const haveImage = oldImage !== null;

  config.Image = options.image;
  delete config.MacAddress; // re-added below only when the user set it
  // compose recreates a container whose label names another image id than the service's image
  if (options.imageId && typeof config.Labels?.[COMPOSE_IMAGE_LABEL] === "string")
    config.Labels[COMPOSE_IMAGE_LABEL] = options.imageId;
  if (options.labels) config.Labels = { ...config.Labels, ...options.labels };

  if (haveImage) {
    const userEntrypoint = config.Entrypoint !== undefined && !sameValue(config.Entrypoint, image.Entrypoint);
    for (const key of WHOLE_VALUE_KEYS) {
      // With a user entrypoint the engine does not merge the image's Cmd: keep Cmd exactly.
      if (key === "Cmd" && userEntrypoint) continue;
      if (key in config && sameValue(config[key], image[key])) delete config[key];
    }
    config.Healthcheck = withoutEqualFields(config.Healthcheck, image.Healthcheck);
    if (config.Healthcheck === undefined) delete config.Healthcheck;
    config.Env = withoutEntries(config.Env, image.Env);
    config.Labels = withoutEqualKeys(config.Labels, image.Labels, true);
    config.ExposedPorts = withoutEqualKeys(config.ExposedPorts, image.ExposedPorts, false);
    config.Volumes = withoutEqualKeys(config.Volumes, image.Volumes, false);
    for (const key of ["Env", "Labels", "ExposedPorts", "Volumes"]) if (config[key] === undefined) delete config[key];
  }

  const sharesNamespace = networkMode.startsWith("container:") || networkMode === "host";
  if (sharesNamespace || isGeneratedHostname(old)) delete config.Hostname;
  if (sharesNamespace) {
    // the engine refuses these together with another container's (or the host's) namespace
    delete config.Domainname;
    if (networkMode.startsWith("container:")) delete config.ExposedPorts;
  }

  const userMac = userMacAddress(old);
  if (userMac && compareApiVersions(options.apiVersion, MULTI_NETWORK_CREATE_API) < 0) config.MacAddress = userMac;
  return config;
}

/** The engine names a container's host after its short id unless the user chose a hostname. */
export function isGeneratedHostname(old: ContainerInspect): boolean {
  const hostname = old.Config?.Hostname ?? "";
  return hostname === "" || hostname === old.Id.slice(0, 12);
}

/**
 * A MAC address the user set. Engines report a user-set MAC in Config.MacAddress (API < 1.44;
 * newer engines still fill it for the first network when set by the user), never a generated
 * one: the generated MAC only shows in NetworkSettings, which is never carried over.
 */
export function userMacAddress(old: ContainerInspect): string | undefined {
  const mac = (old.Config as Json | undefined)?.MacAddress;
  return typeof mac === "string" && mac !== "" ? mac : undefined;
}

/**
 * The MAC address of a network other than the first (API >= 1.44; compose's
 * `networks.<n>.mac_address`). A running container reports a configured and a generated MAC
 * alike there. Engines that derive a generated MAC from the address (02:42 and the IPv4 bytes)
 * show which it is, and that one is dropped; a random one (newer engines) is kept: fixed on the
 * replacement it loses nothing, where dropping a configured one would.
 */
function endpointMacAddress(settings: Json): string | undefined {
  const mac = settings.MacAddress;
  if (typeof mac !== "string" || mac === "") return undefined;
  return mac.toLowerCase() === macFromAddress(String(settings.IPAddress ?? "")) ? undefined : mac;
}

function macFromAddress(ipv4: string): string | undefined {
  const octets = ipv4.split(".").map(Number);
  if (octets.length !== 4 || octets.some((o) => !Number.isInteger(o) || o < 0 || o > 255)) return undefined;
  return ["02", "42", ...octets.map((o) => o.toString(16).padStart(2, "0"))].join(":");
}

// ---------------------------------------------------------------------------------------------
// HostConfig

function replacementHostConfig(old: ContainerInspect, options: ReplacementOptions): Json {
  const hostConfig: Json = structuredClone((old.HostConfig ?? {}) as Json);
  const networkMode = String(hostConfig.NetworkMode ?? "");
  if (networkMode.startsWith("container:")) {
    if (!options.networkContainer)
      throw new Error(`the container whose network ${old.Name} joins (${networkMode}) must be named`);
    hostConfig.NetworkMode = `container:${options.networkContainer}`;
  }
  if (Array.isArray(hostConfig.Links)) hostConfig.Links = hostConfig.Links.map(normalizeLink);
  const mounts = withAnonymousVolumes(old, hostConfig);
  if (mounts) hostConfig.Mounts = mounts;
  return hostConfig;
}

/**
 * Inspect shows links as "/target:/container/alias"; the engine also accepts "target:alias",
 * which does not name the old container (it is renamed by the time the replacement exists).
 */
export function normalizeLink(link: string): string {
  const [target = "", alias = ""] = link.split(":");
  if (!target.startsWith("/")) return link;
  const shortAlias = alias.slice(alias.lastIndexOf("/") + 1);
  return `${target.slice(1)}:${shortAlias || target.slice(1)}`;
}

/**
 * Anonymous volumes (an image VOLUME or a bare `-v /path`) would be created afresh for the
 * replacement, losing their data: mount the same volume by name at the same place instead.
 * As a Mounts entry (not a bind string), so the mount reads back exactly as before.
 */
function withAnonymousVolumes(old: ContainerInspect, hostConfig: Json): Json[] | null {
  const mounts: Json[] = Array.isArray(hostConfig.Mounts) ? [...hostConfig.Mounts] : [];
  const taken = new Set<string>();
  for (const bind of (hostConfig.Binds ?? []) as string[]) taken.add(bindDestination(bind));
  for (const mount of mounts) if (mount.Target) taken.add(mount.Target);
  for (const path of Object.keys(hostConfig.Tmpfs ?? {})) taken.add(path);
  // anonymous volumes are the declared ones (Config.Volumes); --volumes-from ones are not
  const declared = (old.Config?.Volumes ?? {}) as Json;
  const before = mounts.length;
  for (const mount of (old.Mounts ?? []) as Json[]) {
    if (mount.Type !== "volume" || !mount.Name || !(mount.Destination in declared) || taken.has(mount.Destination))
      continue;
    mounts.push({
      Type: "volume",
      Source: mount.Name,
      Target: mount.Destination,
      ...(mount.RW === false ? { ReadOnly: true } : {}),
    });
    taken.add(mount.Destination);
  }
  return mounts.length > before ? mounts : (hostConfig.Mounts ?? null);
}

function bindDestination(bind: string): string {
  const parts = bind.split(":");
  return parts.length >= 2 ? (parts[1] ?? "") : (parts[0] ?? "");
}

// ---------------------------------------------------------------------------------------------
// Networks

interface NamedEndpoint {
  network: string;
  endpoint: EndpointSpec;
}

/** Every network endpoint as the user configured it; the one named by NetworkMode first. */
function replacementEndpoints(old: ContainerInspect, options: ReplacementOptions): NamedEndpoint[] {
  const networks = (old.NetworkSettings?.Networks ?? {}) as Record<string, Json>;
  const networkMode = String(old.HostConfig?.NetworkMode ?? "");
  if (networkMode.startsWith("container:") || networkMode === "host" || networkMode === "none") return [];

  const names = distinctNetworks(networks);
  // NetworkMode names the network as the user wrote it: by name, or by (a prefix of) its id
  const byId =
    networkMode.length >= 12
      ? names.find((n) => String(networks[n]?.NetworkID ?? "").startsWith(networkMode))
      : undefined;
  const first = names.includes(networkMode)
    ? networkMode
    : (byId ?? names.find((n) => BUILTIN_NETWORK_MODES.has(n)) ?? names[0]);
  const ordered = first === undefined ? names : [first, ...names.filter((n) => n !== first)];
  // The network NetworkMode names by id keeps that spelling in the endpoint settings too: the
  // engine matches the two by their key (Docker 28 would add a second endpoint otherwise).
  const keyOf = (network: string) => (network === byId ? networkMode : network);

  // The engine adds the short id and the hostname (the short id unless the user chose one) as
  // aliases itself (API < 1.45): the replacement gets its own. An alias equal to the container's
  // name is the user's (compose sets one); the engine never adds it, so it is kept.
  const engineAliases = new Set([old.Id.slice(0, 12), old.Config?.Hostname ?? ""]);
  const userMac = userMacAddress(old);
  const macPerEndpoint = compareApiVersions(options.apiVersion, MULTI_NETWORK_CREATE_API) >= 0;
  const gatewayPriority = compareApiVersions(options.apiVersion, GATEWAY_PRIORITY_API) >= 0;

  return ordered.map((network, index) => {
    const settings = networks[network] ?? {};
    const endpoint: EndpointSpec = {};
    const ipam = nonEmptyIpam(settings.IPAMConfig);
    if (ipam) endpoint.IPAMConfig = ipam;
    const aliases = ((settings.Aliases ?? []) as string[]).filter((alias) => !engineAliases.has(alias));
    if (aliases.length > 0) endpoint.Aliases = aliases;
    if (Array.isArray(settings.Links) && settings.Links.length > 0) endpoint.Links = settings.Links.map(normalizeLink);
    if (settings.DriverOpts && Object.keys(settings.DriverOpts).length > 0)
      endpoint.DriverOpts = { ...settings.DriverOpts };
    const mac = index === 0 ? userMac : endpointMacAddress(settings);
    if (mac && macPerEndpoint) endpoint.MacAddress = mac;
    if (gatewayPriority && Number(settings.GwPriority ?? 0) !== 0) endpoint.GwPriority = Number(settings.GwPriority);
    return { network: keyOf(network), endpoint };
  });
}

/**
 * The keys of NetworkSettings.Networks, one per network. Docker 28 lists a network the user named
 * by its id twice, under that id and under its name, with the same endpoint: attaching both would
 * attach the network twice. The name is kept.
 */
function distinctNetworks(networks: Record<string, Json>): string[] {
  const keys = Object.keys(networks);
  return keys.filter((key) => {
    const id = String(networks[key]?.NetworkID ?? "");
    const isIdSpelling = id !== "" && id.startsWith(key);
    return !isIdSpelling || !keys.some((other) => other !== key && networks[other]?.NetworkID === id);
  });
}

function nonEmptyIpam(ipam: Json | null | undefined): EndpointSpec["IPAMConfig"] | undefined {
  if (!ipam) return undefined;
  const out: NonNullable<EndpointSpec["IPAMConfig"]> = {};
  if (ipam.IPv4Address) out.IPv4Address = ipam.IPv4Address;
  if (ipam.IPv6Address) out.IPv6Address = ipam.IPv6Address;
  if (Array.isArray(ipam.LinkLocalIPs) && ipam.LinkLocalIPs.length > 0) out.LinkLocalIPs = [...ipam.LinkLocalIPs];
  return Object.keys(out).length > 0 ? out : undefined;
}

// ---------------------------------------------------------------------------------------------
// helpers

/** "1.41" < "1.44" < "1.100" */
export function compareApiVersions(a: string, b: string): number {
  const pa = a.replace(/^v/, "").split(".").map(Number);
  const pb = b.replace(/^v/, "").split(".").map(Number);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}

/** Deep equality where null, undefined and an empty list/object all mean "not set". */
export function sameValue(a: unknown, b: unknown): boolean {
  if (isUnset(a) && isUnset(b)) return true;
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((v, i) => sameValue(v, b[i]));
  if (isObject(a) && isObject(b)) {
    const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
    for (const key of keys) if (!sameValue(a[key], b[key])) return false;
    return true;
  }
  return a === b;
}

function isUnset(value: unknown): boolean {
  if (value === null || value === undefined) return true;
  if (Array.isArray(value)) return value.length === 0;
  if (isObject(value)) return Object.keys(value).length === 0;
  return false;
}

function isObject(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Entries of `list` that are not in `imageList` (Env: "K=V" entries the image set are dropped one by one). */
/**
 * The engine merges a healthcheck field by field (a field left out takes the image's): inspect
 * shows the merged result, so a user who set only --health-interval would otherwise pin the
 * old image's test command. Fields equal to the old image's are dropped, so the new image's apply.
 */
function withoutEqualFields(value: unknown, imageValue: unknown): Json | undefined {
  if (!value || typeof value !== "object") return undefined;
  const image = (imageValue && typeof imageValue === "object" ? imageValue : {}) as Json;
  const kept = Object.fromEntries(
    Object.entries(value as Json).filter(([key, field]) => !sameValue(field, image[key])),
  );
  return Object.keys(kept).length > 0 ? kept : undefined;
}

function withoutEntries(list: unknown, imageList: unknown): string[] | undefined {
  if (!Array.isArray(list)) return undefined;
  const fromImage = new Set(Array.isArray(imageList) ? (imageList as string[]) : []);
  return (list as string[]).filter((entry) => !fromImage.has(entry));
}

/** Keys of `map` not present in `imageMap` (or, with compareValues, present with another value). */
function withoutEqualKeys(map: unknown, imageMap: unknown, compareValues: boolean): Json | undefined {
  if (!isObject(map)) return undefined;
  const image = isObject(imageMap) ? imageMap : {};
  const out: Json = {};
  for (const [key, value] of Object.entries(map)) {
    const inImage = key in image && (!compareValues || sameValue(image[key], value));
    if (!inImage) out[key] = value;
  }
  return Object.keys(out).length > 0 ? out : undefined;
}
