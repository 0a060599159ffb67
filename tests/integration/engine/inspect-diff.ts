/**
 * Compares `docker inspect` of a container and of its replacement: every difference must be
 * one an update is allowed to make (ids, timestamps, state, engine-assigned network values,
 * the generated hostname, and Config values that came from the image where the user set none).
 */

type Json = Record<string, any>;

export interface DiffContext {
  old: Json;
  new: Json;
  /** image inspects: the one the old container ran, the one the replacement runs */
  oldImage: Json;
  newImage: Json;
  /** for network_mode container:<id>: the id the replacement is expected to join */
  networkContainerId?: string;
  /** more paths an update may change on this engine (Podman's inspect: tests/integration/podman) */
  allowed?: readonly RegExp[];
}

export interface Difference {
  path: string;
  old: unknown;
  new: unknown;
}

/** Flattens inspect JSON into path -> value, keying lists whose order or identity is not positional. */
export function flatten(inspect: Json): Map<string, unknown> {
  const out = new Map<string, unknown>();
  const shortId = String(inspect.Id).slice(0, 12);
  const hostname = inspect.Config?.Hostname;
  const walk = (value: unknown, path: string) => {
    if (Array.isArray(value)) {
      if (value.length === 0) out.set(path, "<empty>");
      for (const [i, v] of value.entries()) walk(v, `${path}[${i}]`);
    } else if (value && typeof value === "object") {
      const keys = Object.keys(value);
      if (keys.length === 0) out.set(path, "<empty>");
      for (const key of keys) walk((value as Json)[key], path ? `${path}.${key}` : key);
    } else {
      out.set(path, value === null ? "<empty>" : value);
    }
  };
  const copy = structuredClone(inspect);
  // Env as a map, so one changed entry shows as one key
  copy.Config.Env = Object.fromEntries(
    ((copy.Config.Env ?? []) as string[]).map((e) => [e.split("=")[0], e.slice(e.indexOf("=") + 1)]),
  );
  // Docker 28 lists a network named by its id twice (under the id and the name): compare the name
  const networks = (copy.NetworkSettings?.Networks ?? {}) as Record<string, Json>;
  for (const key of Object.keys(networks)) {
    const id = String(networks[key]?.NetworkID ?? "");
    if (id.startsWith(key) && Object.keys(networks).some((other) => other !== key && networks[other]?.NetworkID === id))
      delete networks[key];
  }
  // the engine's own aliases (short id and hostname) differ by construction; compare the user's
  for (const endpoint of Object.values((copy.NetworkSettings?.Networks ?? {}) as Record<string, Json>)) {
    if (Array.isArray(endpoint.Aliases))
      endpoint.Aliases = endpoint.Aliases.filter((a: string) => a !== shortId && a !== hostname).sort();
    if (Array.isArray(endpoint.DNSNames))
      endpoint.DNSNames = endpoint.DNSNames.filter((a: string) => a !== shortId && a !== hostname).sort();
  }
  copy.Mounts = Object.fromEntries(((copy.Mounts ?? []) as Json[]).map((m) => [m.Destination, m]));
  copy.HostConfig.Mounts = Object.fromEntries(((copy.HostConfig.Mounts ?? []) as Json[]).map((m) => [m.Target, m]));
  walk(copy, "");
  return out;
}

export function differences(a: Json, b: Json): Difference[] {
  const fa = flatten(a);
  const fb = flatten(b);
  const out: Difference[] = [];
  const hasChildren = (flat: Map<string, unknown>, path: string) =>
    [...flat.keys()].some((k) => k.startsWith(`${path}.`) || k.startsWith(`${path}[`));
  for (const path of new Set([...fa.keys(), ...fb.keys()])) {
    const va = fa.has(path) ? fa.get(path) : "<missing>";
    const vb = fb.has(path) ? fb.get(path) : "<missing>";
    if (va === vb) continue;
    // an empty map on one side that has entries on the other: the entries' own differences tell it
    if (
      (va === "<empty>" && vb === "<missing>" && hasChildren(fb, path)) ||
      (vb === "<empty>" && va === "<missing>" && hasChildren(fa, path))
    )
      continue;
    out.push({ path, old: va, new: vb });
  }
  return out.sort((x, y) => x.path.localeCompare(y.path));
}

const ALWAYS_ALLOWED = [
  /^Id$/,
  /^Created$/,
  /^Image$/,
  // the new image's manifest (API >= 1.48), which follows Image
  /^ImageManifestDescriptor\./,
  /^State\./,
  /^(ResolvConfPath|HostnamePath|HostsPath|LogPath)$/,
  /^RestartCount$/,
  // healthcheck probes running at the moment of inspect
  /^ExecIDs/,
  /^GraphDriver\./,
  /^NetworkSettings\.(SandboxID|SandboxKey|EndpointID|Gateway|IPAddress|IPPrefixLen|MacAddress|Bridge|HairpinMode|LinkLocalIPv6Address|LinkLocalIPv6PrefixLen|SecondaryIPAddresses|SecondaryIPv6Addresses|GlobalIPv6Address|GlobalIPv6PrefixLen|IPv6Gateway)$/,
  /^NetworkSettings\.Networks\.[^.]+\.(EndpointID)$/,
];

/** Config keys compared as a whole against the images' values. */
const WHOLE_CONFIG_KEYS = new Set([
  "Cmd",
  "Entrypoint",
  "WorkingDir",
  "User",
  "StopSignal",
  "Shell",
  "OnBuild",
  "ArgsEscaped",
]);
/** Config keys compared entry by entry against the images' values. */
const KEYED_CONFIG_KEYS = new Set(["Env", "Labels", "ExposedPorts", "Volumes"]);

export function isAllowed(d: Difference, ctx: DiffContext): boolean {
  if (ALWAYS_ALLOWED.some((re) => re.test(d.path)) || ctx.allowed?.some((re) => re.test(d.path))) return true;

  const network = /^NetworkSettings\.Networks\.([^.]+)\.(IPAddress|MacAddress)$/.exec(d.path);
  if (network) {
    const name = network[1]!;
    const oldEndpoint = ctx.old.NetworkSettings.Networks[name] ?? {};
    // dynamic addresses may change; a static one may not
    if (network[2] === "IPAddress") return !oldEndpoint.IPAMConfig?.IPv4Address;
    return !ctx.old.Config.MacAddress;
  }

  // compose's record of the image id it created the container from names the new image
  if (d.path === "Config.Labels.com.docker.compose.image")
    return d.old === ctx.oldImage.Id && d.new === ctx.newImage.Id;

  if (d.path === "Config.Hostname") {
    // a container in another's network namespace shows that container's generated hostname
    if (ctx.networkContainerId !== undefined && d.new === ctx.networkContainerId.slice(0, 12)) return true;
    return d.old === shortId(ctx.old) && d.new === shortId(ctx.new);
  }

  // Podman writes the generated host name into the environment at start: it follows the host name
  if (d.path === "Config.Env.HOSTNAME") return d.old === shortId(ctx.old) && d.new === shortId(ctx.new);

  if (d.path === "HostConfig.NetworkMode")
    return ctx.networkContainerId !== undefined && d.new === `container:${ctx.networkContainerId}`;

  const mount = /^HostConfig\.Mounts\.(.+)\.(Type|Source|Target|ReadOnly)$/.exec(d.path);
  if (mount) return d.old === "<missing>" && isAnonymousVolumeReuse(mount[1]!, ctx);

  // the engine marks a volume mounted by name with the SELinux relabel mode "z" (a no-op elsewhere),
  // which it did not for the anonymous volume it created itself
  const relabel = /^Mounts\.(.+)\.Mode$/.exec(d.path);
  if (relabel) return d.old === "" && d.new === "z" && isAnonymousVolumeReuse(relabel[1]!, ctx);

  // a port the image exposes shows, unbound, in NetworkSettings.Ports
  const port = /^NetworkSettings\.Ports\.([^.]+)$/.exec(d.path);
  if (port) {
    const entry = port[1]!;
    return (
      fromImages(ctx, (c) => (entry in (c.ExposedPorts ?? {}) ? "present" : "absent")) &&
      [d.old, d.new].every((v) => v === "<empty>" || v === "<missing>")
    );
  }

  if (d.path === "Path" || d.path.startsWith("Args")) return commandFromImages(ctx);

  const config = /^Config\.([^.[]+)(?:[.[](.*))?$/.exec(d.path);
  if (config) {
    const key = config[1]!;
    if (WHOLE_CONFIG_KEYS.has(key)) return fromImages(ctx, (c) => c[key]);
    // the engine merges a healthcheck field by field: each field may follow the images on its own
    if (key === "Healthcheck") {
      const field = /^([^.[]+)/.exec(config[2] ?? "")?.[1];
      return field !== undefined && fromImages(ctx, (c) => c.Healthcheck?.[field]);
    }
    if (KEYED_CONFIG_KEYS.has(key)) {
      const entry = config[2] ?? "";
      return fromImages(ctx, (c) => {
        const map = keyed(c, key);
        return entry in map ? ["present", map[entry]] : "absent";
      });
    }
  }
  return false;
}

function shortId(inspect: Json): string {
  return String(inspect.Id).slice(0, 12);
}

/** The old value was the old image's default and the new value is the new image's default. */
function fromImages(ctx: DiffContext, pick: (config: Json) => unknown): boolean {
  return (
    same(pick(ctx.old.Config), pick(ctx.oldImage.Config ?? {})) &&
    same(pick(ctx.new.Config), pick(ctx.newImage.Config ?? {}))
  );
}

function keyed(config: Json, key: string): Json {
  if (key === "Env")
    return Object.fromEntries(
      ((config.Env ?? []) as string[]).map((e) => [e.split("=")[0], e.slice(e.indexOf("=") + 1)]),
    );
  return (config[key] ?? {}) as Json;
}

/** Path and Args follow Entrypoint + Cmd: allowed to change only when both of those may. */
function commandFromImages(ctx: DiffContext): boolean {
  const entrypointOk =
    same(ctx.old.Config.Entrypoint, ctx.new.Config.Entrypoint) || fromImages(ctx, (c) => c.Entrypoint);
  const cmdOk = same(ctx.old.Config.Cmd, ctx.new.Config.Cmd) || fromImages(ctx, (c) => c.Cmd);
  return entrypointOk && cmdOk;
}

/** A mount at <target> of the very volume the old container had there (its anonymous volume, kept). */
function isAnonymousVolumeReuse(target: string, ctx: DiffContext): boolean {
  const added = ((ctx.new.HostConfig.Mounts ?? []) as Json[]).find((m) => m.Target === target);
  return ((ctx.old.Mounts ?? []) as Json[]).some(
    (m) => m.Type === "volume" && m.Name === added?.Source && m.Destination === target,
  );
}

function same(a: unknown, b: unknown): boolean {
  const norm = (v: unknown) =>
    v === null ||
    v === undefined ||
    (Array.isArray(v) && v.length === 0) ||
    (typeof v === "object" && v !== null && Object.keys(v).length === 0)
      ? null
      : v;
  return JSON.stringify(sortKeys(norm(a))) === JSON.stringify(sortKeys(norm(b)));
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value && typeof value === "object")
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((k) => [k, sortKeys((value as Json)[k])]),
    );
  return value;
}

/** The differences that are not allowed, as readable lines ("path: old -> new"). */
export function disallowedDifferences(ctx: DiffContext): string[] {
  return differences(ctx.old, ctx.new)
    .filter((d) => !isAllowed(d, ctx))
    .map((d) => `${d.path}: ${JSON.stringify(d.old)} -> ${JSON.stringify(d.new)}`);
}
