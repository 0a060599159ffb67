/**
 * Compose's config hash of a service computed here, for svc in its scratch image where no compose
 * CLI exists. Compose's hash is the sha256 of the service's JSON as compose-go's types marshal it
 * (docker/compose pkg/compose/hash.go ServiceHash: build, pull_policy, scale, deploy.replicas,
 * depends_on and profiles left out; compose-go types/types.go ServiceConfig: the fields in their
 * declared order, empty ones left out, map keys sorted). svc models the keys users commonly write
 * (MODELLED, with logging, secrets, configs, the long volume syntax and port ranges as compose-go
 * normalises them: format/volume.go, transform/secrets.go, types.ParsePortConfig); a service using
 * any other key has no hash here. The answer is trusted only when the
 * same computation over the files as they were gives the hash the running container carries
 * (ComposeFiles.write), so that a gap in this model costs one recreate, never a wrong label.
 */
import { existsSync } from "node:fs";
import { dirname, isAbsolute, join, posix, resolve } from "node:path";
import { isMap, type Node, parseDocument } from "yaml";
import { type EnvValue, parseEnvFile } from "./envfile.ts";
import { interpolate } from "./interpolate.ts";
import { ProjectFiles } from "./locate.ts";
import type { ComposeProject } from "./project.ts";
import { untraced } from "./text.ts";

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type Raw = Record<string, unknown>;

/** compose-go's ServiceConfig fields, in declared order (the JSON's order). */
const FIELD_ORDER = [
  "profiles",
  "annotations",
  "attach",
  "build",
  "develop",
  "blkio_config",
  "cap_add",
  "cap_drop",
  "cgroup_parent",
  "cgroup",
  "cpu_count",
  "cpu_percent",
  "cpu_period",
  "cpu_quota",
  "cpu_rt_period",
  "cpu_rt_runtime",
  "cpus",
  "cpuset",
  "cpu_shares",
  "command",
  "configs",
  "container_name",
  "credential_spec",
  "depends_on",
  "deploy",
  "device_cgroup_rules",
  "devices",
  "dns",
  "dns_opt",
  "dns_search",
  "dockerfile",
  "domainname",
  "entrypoint",
  "provider",
  "environment",
  "env_file",
  "expose",
  "extends",
  "external_links",
  "extra_hosts",
  "group_add",
  "gpus",
  "hostname",
  "healthcheck",
  "image",
  "init",
  "ipc",
  "isolation",
  "labels",
  "label_file",
  "links",
  "logging",
  "log_driver",
  "log_opt",
  "mem_limit",
  "mem_reservation",
  "memswap_limit",
  "mem_swappiness",
  "mac_address",
  "models",
  "net",
  "network_mode",
  "networks",
  "oom_kill_disable",
  "oom_score_adj",
  "pid",
  "pids_limit",
  "platform",
  "ports",
  "privileged",
  "pull_policy",
  "read_only",
  "restart",
  "runtime",
  "scale",
  "secrets",
  "security_opt",
  "shm_size",
  "stdin_open",
  "stop_grace_period",
  "stop_signal",
  "storage_opt",
  "sysctls",
  "tmpfs",
  "tty",
  "ulimits",
  "use_api_socket",
  "user",
  "userns_mode",
  "uts",
  "volume_driver",
  "volumes",
  "volumes_from",
  "working_dir",
  "post_start",
  "pre_stop",
] as const;

/** What ServiceHash leaves out. */
const LEFT_OUT = new Set(["build", "pull_policy", "scale", "depends_on", "profiles"]);
const STRINGS = new Set([
  "container_name",
  "hostname",
  "user",
  "working_dir",
  "restart",
  "stop_signal",
  "network_mode",
  "ipc",
  "pid",
  "platform",
  "runtime",
  "userns_mode",
  "uts",
  "cgroup",
  "mac_address",
  "domainname",
]);
const FLAGS = new Set(["privileged", "tty", "stdin_open", "read_only", "oom_kill_disable"]);
const LISTS = new Set([
  "cap_add",
  "cap_drop",
  "security_opt",
  "group_add",
  "dns_opt",
  "links",
  "external_links",
  "volumes_from",
]);
const MODELLED = new Set([
  ...LEFT_OUT,
  ...STRINGS,
  ...FLAGS,
  ...LISTS,
  "image",
  "command",
  "entrypoint",
  "environment",
  "labels",
  "ports",
  "volumes",
  "networks",
  "healthcheck",
  "stop_grace_period",
  "init",
  "extends",
  "logging",
  "secrets",
  "configs",
  "deploy",
  "env_file",
  "devices",
  "ulimits",
  "extra_hosts",
  "sysctls",
  "tmpfs",
]);

/** Keys compose-go merges its own way across files and `extends` (override/merge.go, uncity.go): svc gives no hash when two layers set one. */
const NOT_MERGED = new Set(["deploy", "env_file", "devices", "extra_hosts", "sysctls", "tmpfs"]);

/** Go's YAML reads `0440` as octal (yaml.v3 parses plain integers with base 0), YAML 1.2 as decimal: file modes are written so. */
const GO_OCTAL = {
  tag: "tag:yaml.org,2002:int",
  default: true,
  test: /^0[0-7]+$/,
  resolve: (text: string) => Number.parseInt(text, 8),
};

export type HashAnswer = { hash: string; json: string } | { unknown: string };

/** Compose's config hash of `project.service` over its files as they are now. */
export async function computeServiceHash(project: ComposeProject): Promise<HashAnswer> {
  const files = new ProjectFiles(project);
  try {
    files.loadEnv();
    const raw = mergedService(files, project.service);
    if ("unknown" in raw) return raw;
    resolveEnvironment(raw.service, raw.env, (path) => files.text(path));
    const json = serviceJson(raw.service, project);
    if (typeof json === "string") return { unknown: json };
    const text = goJson(json);
    const digest = new Bun.CryptoHasher("sha256").update(text).digest("hex");
    return { hash: digest, json: text };
  } catch (error) {
    return { unknown: (error as Error).message };
  }
}

/** The service's keys over every file (later files win, as compose-go's merge), `extends` applied, every string interpolated; from an included project when the project's own files do not define it. */
function mergedService(
  files: ProjectFiles,
  service: string,
): { service: Raw; env: ReadonlyMap<string, EnvValue> } | { unknown: string } {
  const own = mergedIn(files, files.project.configFiles, service, files.env, files.project.workingDir);
  if (own) return { service: own, env: files.env };
  for (const included of files.included()) {
    const found = mergedIn(files, included.files, service, included.env, included.workingDir);
    if (found) return { service: found, env: included.env };
  }
  return { unknown: `no compose file defines ${service}` };
}

function mergedIn(
  files: ProjectFiles,
  list: string[],
  service: string,
  env: ReadonlyMap<string, EnvValue>,
  workingDir: string,
): Raw | null {
  let merged: Raw | null = null;
  for (const file of list) {
    const here = serviceIn(files, file, service, 0, env, workingDir);
    if (here === null) continue;
    merged = merged ? mergeRaw(merged, here) : here;
  }
  return merged;
}

function serviceIn(
  files: ProjectFiles,
  file: string,
  service: string,
  depth: number,
  env: ReadonlyMap<string, EnvValue>,
  workingDir: string,
): Raw | null {
  const doc = parseDocument(files.text(file), {
    merge: true,
    uniqueKeys: false,
    customTags: (tags) => [GO_OCTAL, ...tags],
  });
  const services = doc.get("services", true) as Node | undefined;
  if (!isMap(services)) return null;
  const node = services.get(service, true) as Node | undefined;
  if (node === undefined) return null;
  const value = interpolateAll(doc.toJS({ maxAliasCount: 1000 }).services?.[service] ?? {}, env) as Raw;
  for (const key of Object.keys(value)) if (key.startsWith("x-")) delete value[key];
  // relative bind mounts: to the project folder in the project's files, to its own folder in a file a service extends
  value["#dir"] = depth === 0 ? workingDir : dirname(file);
  // env files: to the same folder as bind mounts (compose-go paths/resolve.go, services.*.env_file.*.path)
  if (value.env_file !== undefined && value.env_file !== null)
    value.env_file = envFiles(value.env_file, value["#dir"] as string);
  const ext = value.extends;
  if (ext === undefined || depth > 10) return value;
  delete value.extends;
  const base =
    typeof ext === "string"
      ? { service: ext, file }
      : {
          service: String((ext as Raw).service),
          file: (ext as Raw).file ? resolve(dirname(file), String((ext as Raw).file)) : file,
        };
  const parent = serviceIn(files, base.file, base.service, depth + 1, env, workingDir);
  if (!parent) return value;
  delete parent.depends_on;
  return mergeRaw(parent, value);
}

function interpolateAll(value: unknown, env: ReadonlyMap<string, EnvValue>): unknown {
  if (typeof value === "string") return interpolate(untraced(value), env).value.text;
  if (Array.isArray(value)) return value.map((v) => interpolateAll(v, env));
  if (value && typeof value === "object")
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, interpolateAll(v, env)]));
  return value;
}

/** compose-go's override merge for the keys svc models: mappings merged, volumes by target, ports appended, the rest replaced. */
function mergeRaw(base: Raw, over: Raw): Raw {
  const out: Raw = { ...base };
  for (const [key, value] of Object.entries(over)) {
    if (key === "environment" || key === "labels")
      out[key] = { ...toMapping(base[key], key === "labels"), ...toMapping(value, key === "labels") };
    else if (key === "networks" && isPlainObject(base[key]) && isPlainObject(value))
      out[key] = { ...(base[key] as Raw), ...(value as Raw) };
    else if (key === "healthcheck" && isPlainObject(base[key]) && isPlainObject(value))
      out[key] = { ...(base[key] as Raw), ...(value as Raw) };
    else if (key === "ports" && Array.isArray(base[key]) && Array.isArray(value))
      out[key] = [...(base[key] as unknown[]), ...value];
    else if (key === "ulimits" && isPlainObject(base[key]) && isPlainObject(value))
      out[key] = { ...(base[key] as Raw), ...(value as Raw) };
    else if (NOT_MERGED.has(key) && base[key] !== undefined && base[key] !== null && value !== null)
      throw new Error(`${key} set in two layers (files or extends), which compose-go merges its own way`);
    else out[key] = value;
  }
  if (base["#dir"] !== undefined && over.volumes === undefined) out["#dir"] = base["#dir"];
  return out;
}

function isPlainObject(value: unknown): value is Raw {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The service's JSON as compose-go marshals it, or why svc cannot say. */
export function serviceJson(raw: Raw, project: ComposeProject): { [key: string]: Json } | string {
  const dir = String(raw["#dir"] ?? project.workingDir);
  for (const key of Object.keys(raw))
    if (key !== "#dir" && !MODELLED.has(key)) return `svc does not compute compose's hash of a service with ${key}`;
  const out: Record<string, Json> = {};
  for (const key of FIELD_ORDER) {
    if (LEFT_OUT.has(key)) continue;
    const value = raw[key];
    const converted = convert(key, value, raw, dir);
    if (typeof converted === "object" && converted !== null && "problem" in (converted as object))
      return (converted as unknown as { problem: string }).problem;
    if (converted !== undefined) out[key] = converted as Json;
  }
  return out;
}

function convert(key: string, value: unknown, raw: Raw, dir: string): Json | undefined | { problem: string } {
  if (key === "command" || key === "entrypoint")
    return value === undefined || value === null
      ? null
      : typeof value === "string"
        ? shellSplit(value)
        : (value as unknown[]).map(String);
  if (key === "networks") return networks(value, raw.network_mode);
  if (value === undefined || value === null) return undefined;
  if (STRINGS.has(key)) return String(value) === "" ? undefined : String(value);
  if (FLAGS.has(key)) return value === true || value === "true" ? true : undefined;
  if (LISTS.has(key)) return (value as unknown[]).length === 0 ? undefined : (value as unknown[]).map(String);
  if (key === "image") return String(value) || undefined;
  if (key === "init") return Boolean(value);
  if (key === "environment") return sortedMapping(toMapping(value, false), false);
  if (key === "labels") return sortedMapping(toMapping(value, true), true);
  if (key === "ports") return ports(value as unknown[]);
  if (key === "volumes") return volumes(value as unknown[], dir);
  if (key === "healthcheck") return healthcheck(value as Raw);
  if (key === "stop_grace_period") return goDuration(String(value));
  if (key === "logging") return logging(value as Raw);
  if (key === "secrets" || key === "configs") return fileMounts(value as unknown[], key === "secrets");
  if (key === "deploy") return deploy(value);
  if (key === "devices") return devices(value);
  if (key === "ulimits") return ulimits(value);
  if (key === "extra_hosts") return extraHosts(value);
  if (key === "sysctls") return sortedMapping(toMapping(value, true), true);
  if (key === "tmpfs") return stringList(value, "tmpfs");
  return { problem: `svc does not compute compose's hash of a service with ${key}` };
}

/** `KEY=VALUE` lists and mappings alike; `KEY` alone: null for environment (resolved by compose from its shell), "" for labels. */
function toMapping(value: unknown, labels: boolean): Record<string, string | null> {
  if (value === undefined || value === null) return {};
  const out: Record<string, string | null> = {};
  if (Array.isArray(value)) {
    for (const item of value.map(String)) {
      const eq = item.indexOf("=");
      if (eq === -1) out[item] = labels ? "" : null;
      else out[item.slice(0, eq)] = item.slice(eq + 1);
    }
    return out;
  }
  for (const [k, v] of Object.entries(value as Raw))
    out[k] = v === null || v === undefined ? (labels ? "" : null) : scalarText(v);
  return out;
}

function scalarText(value: unknown): string {
  if (typeof value === "number" && !Number.isInteger(value))
    throw new Error("a number with a fraction in a mapping (compose-go prints it its own way)");
  return String(value);
}

function sortedMapping(map: Record<string, string | null>, labels: boolean): Json | undefined {
  const keys = Object.keys(map).sort();
  if (keys.length === 0) return undefined;
  return Object.fromEntries(keys.map((k) => [k, labels ? (map[k] ?? "") : map[k]!]));
}

function networks(value: unknown, networkMode: unknown): Json | undefined {
  if (value === undefined || value === null) return networkMode ? undefined : { default: null };
  const names = Array.isArray(value) ? Object.fromEntries(value.map((n) => [String(n), null])) : (value as Raw);
  const out: Record<string, Json> = {};
  for (const name of Object.keys(names).sort()) {
    const config = names[name];
    if (config === null || config === undefined) {
      out[name] = null;
      continue;
    }
    const c = config as Raw;
    for (const key of Object.keys(c))
      if (!["aliases", "ipv4_address", "ipv6_address", "priority", "mac_address"].includes(key))
        throw new Error(`a network setting svc does not model (${key})`);
    const entry: Record<string, Json> = {};
    if (Array.isArray(c.aliases) && c.aliases.length > 0) entry.aliases = c.aliases.map(String);
    if (c.ipv4_address) entry.ipv4_address = String(c.ipv4_address);
    if (c.ipv6_address) entry.ipv6_address = String(c.ipv6_address);
    if (c.mac_address) entry.mac_address = String(c.mac_address);
    if (c.priority) entry.priority = Number(c.priority);
    out[name] = entry;
  }
  return out;
}

/** Short (`[ip:][published:]target[/protocol]`, ranges too) and long port syntax, as compose-go's ParsePortConfig makes them. */
function ports(list: unknown[]): Json {
  return list.flatMap((item): Json[] => {
    if (isPlainObject(item)) {
      const out: Record<string, Json> = {};
      if (item.name) out.name = String(item.name);
      out.mode = String(item.mode ?? "ingress");
      if (item.host_ip) out.host_ip = String(item.host_ip);
      out.target = Number(item.target);
      if (item.published !== undefined && item.published !== null && String(item.published) !== "")
        out.published = String(item.published);
      out.protocol = String(item.protocol ?? "tcp");
      if (item.app_protocol) out.app_protocol = String(item.app_protocol);
      return [out];
    }
    return shortPort(String(item));
  });
}

/**
 * One short port spec as compose-go's ParsePortConfig reads it through go-connections' nat.ParsePortSpecs:
 * a container range is expanded (paired with a host range of the same length, or unpublished); a single
 * container port keeps a host range as its published text; the ports come out sorted as the strings "port/proto".
 */
function shortPort(spec: string): Json[] {
  const [main, protocolText = "tcp"] = spec.split("/");
  const protocol = protocolText.toLowerCase();
  const parts = main!.split(":");
  const target = parts.pop()!;
  const published = parts.pop() ?? "";
  const hostIp = parts.join(":").replace(/^\[|\]$/g, "");
  const targets = portRange(target);
  const hosts = published === "" ? null : portRange(published);
  if (hosts && targets.length > 1 && hosts.length !== targets.length)
    throw new Error(`a port range compose refuses (${spec})`);
  const rows = targets.map((port, i) => {
    const out: Record<string, Json> = { mode: "ingress" };
    if (hostIp) out.host_ip = hostIp;
    out.target = port;
    if (hosts) out.published = targets.length > 1 ? String(hosts[i]) : published;
    out.protocol = protocol;
    return out;
  });
  return rows.sort((a, b) =>
    `${a.target}/${protocol}` < `${b.target}/${protocol}`
      ? -1
      : `${a.target}/${protocol}` > `${b.target}/${protocol}`
        ? 1
        : 0,
  );
}

function portRange(text: string): number[] {
  const match = /^(\d+)(?:-(\d+))?$/.exec(text);
  if (!match) throw new Error(`a port svc does not read (${text})`);
  const first = Number(match[1]);
  const last = match[2] === undefined ? first : Number(match[2]);
  if (last < first || last - first > 65535) throw new Error(`a port range svc does not read (${text})`);
  return Array.from({ length: last - first + 1 }, (_, i) => first + i);
}

const PROPAGATIONS = new Set(["rprivate", "private", "rshared", "shared", "rslave", "slave"]);

/** Volumes as compose-go loads them: the short syntax through format.ParseVolume, the long one as written. */
function volumes(list: unknown[], dir: string): Json {
  return list.map((item): Json => (isPlainObject(item) ? longVolume(item, dir) : shortVolume(String(item), dir)));
}

/** `src:dst[:options]`, `dst` (compose-go format/volume.go): bind mounts from paths, with create_host_path; named volumes otherwise. */
function shortVolume(spec: string, dir: string): Json {
  const parts = spec.split(":");
  if (parts.length > 3 || parts.some((p) => p === "")) throw new Error(`a volume svc does not read (${spec})`);
  if (parts.length > 1 && /^[A-Za-z]$/.test(parts[0]!))
    throw new Error(`a volume whose source compose reads as a Windows drive (${spec})`);
  if (parts.length === 1) return { type: "volume", target: cleanTarget(parts[0]!), volume: {} };
  const [source, target, mode] = parts as [string, string, string | undefined];
  let readOnly = false;
  let noCopy = false;
  const bind: Record<string, Json> = {};
  for (const option of (mode ?? "").split(",")) {
    if (option === "ro" || option === "rw") readOnly = option === "ro";
    else if (option === "nocopy") noCopy = true;
    else if (option === "z" || option === "Z") bind.selinux = option;
    else if (PROPAGATIONS.has(option)) bind.propagation = option;
  }
  const out: Record<string, Json> = {};
  if (/^[./~]/.test(source)) {
    Object.assign(out, { type: "bind", source: bindSource(source, dir), target: cleanTarget(target) });
    if (readOnly) out.read_only = true;
    const ordered: Record<string, Json> = {};
    if (bind.selinux) ordered.selinux = bind.selinux;
    if (bind.propagation) ordered.propagation = bind.propagation;
    out.bind = { ...ordered, create_host_path: true };
    if (noCopy) out.volume = { nocopy: true };
    return out;
  }
  if (Object.keys(bind).length > 0) throw new Error(`a bind option on a named volume (${spec})`);
  Object.assign(out, { type: "volume", source, target: cleanTarget(target) });
  if (readOnly) out.read_only = true;
  out.volume = noCopy ? { nocopy: true } : {};
  return out;
}

const LONG_VOLUME_KEYS = ["type", "source", "target", "read_only", "consistency", "bind", "volume", "tmpfs", "image"];

/** The long syntax: what is written, sources of binds made absolute, targets cleaned (ServiceVolumeConfig's fields in order). */
function longVolume(item: Raw, dir: string): Json {
  for (const key of Object.keys(item))
    if (!LONG_VOLUME_KEYS.includes(key)) throw new Error(`a volume setting svc does not model (${key})`);
  const type = String(item.type ?? "");
  if (!["bind", "volume", "tmpfs", "image"].includes(type)) throw new Error(`a volume of type ${type || "(none)"}`);
  const out: Record<string, Json> = { type };
  if (item.source !== undefined && item.source !== null && String(item.source) !== "")
    out.source = type === "bind" ? bindSource(String(item.source), dir) : String(item.source);
  if (item.target !== undefined) out.target = cleanTarget(String(item.target));
  if (item.read_only === true) out.read_only = true;
  if (item.consistency) out.consistency = String(item.consistency);
  if (item.bind !== undefined)
    out.bind = subOptions(item.bind, {
      selinux: "string",
      propagation: "string",
      create_host_path: "true",
      recursive: "string",
    });
  if (item.volume !== undefined)
    out.volume = subOptions(item.volume, { labels: "mapping", nocopy: "true", subpath: "string" });
  if (item.tmpfs !== undefined) out.tmpfs = tmpfs(item.tmpfs);
  if (item.image !== undefined) out.image = subOptions(item.image, { subpath: "string" });
  return out;
}

/** A nested option map with the keys svc models, in their declared order: strings when not empty, booleans when true. */
function subOptions(value: unknown, keys: Record<string, "string" | "true" | "mapping">): Json {
  if (!isPlainObject(value)) throw new Error("a volume option that is not a mapping");
  for (const key of Object.keys(value))
    if (!(key in keys)) throw new Error(`a volume setting svc does not model (${key})`);
  const out: Record<string, Json> = {};
  for (const [key, kind] of Object.entries(keys)) {
    const v = value[key];
    if (kind === "true" && (v === true || v === "true")) out[key] = true;
    if (kind === "string" && v !== undefined && v !== null && String(v) !== "") out[key] = String(v);
    const mapping = kind === "mapping" ? sortedMapping(toMapping(v, true), true) : undefined;
    if (mapping !== undefined) out[key] = mapping;
  }
  return out;
}

function tmpfs(value: unknown): Json {
  if (!isPlainObject(value)) throw new Error("a tmpfs option that is not a mapping");
  for (const key of Object.keys(value))
    if (key !== "size" && key !== "mode") throw new Error(`a tmpfs setting svc does not model (${key})`);
  const out: Record<string, Json> = {};
  if (value.size !== undefined && value.size !== null) {
    const size = ramInBytes(value.size);
    if (size !== 0) out.size = String(size);
  }
  if (typeof value.mode === "number" && value.mode !== 0) out.mode = value.mode;
  else if (value.mode !== undefined && typeof value.mode !== "number")
    throw new Error("a tmpfs mode that is not a number");
  return out;
}

const BINARY_UNITS: Record<string, number> = { "": 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3, t: 1024 ** 4, p: 1024 ** 5 };

/** A size as compose-go's UnitBytes reads it: an integer, or go-units' RAMInBytes (1024-based, `b`/`ib` optional). */
function ramInBytes(value: unknown): number {
  if (typeof value === "number" && Number.isInteger(value)) return value;
  const match = /^(\d+)\s*([kmgtp]?)(?:i?b)?$/i.exec(String(value).trim());
  if (!match) throw new Error(`a size svc does not read (${String(value)})`);
  const size = Number(match[1]) * BINARY_UNITS[match[2]!.toLowerCase()]!;
  if (!Number.isSafeInteger(size)) throw new Error(`a size svc does not read (${String(value)})`);
  return size;
}

function bindSource(source: string, dir: string): string {
  if (source.startsWith("~")) throw new Error("a bind mount from ~ (compose resolves the home folder of its shell)");
  const absolute = isAbsolute(source) ? source : join(dir, source);
  return absolute.length > 1 ? absolute.replace(/\/$/, "") : absolute;
}

/** path.Clean of a mount's target, as compose-go cleans it. */
function cleanTarget(target: string): string {
  return target.startsWith("/") ? posix.normalize(target).replace(/(.)\/$/, "$1") : target;
}

/** `logging` (compose-go LoggingConfig): the driver, then the options as strings, keys sorted. */
function logging(value: Raw): Json | undefined {
  if (!isPlainObject(value)) throw new Error("logging that is not a mapping");
  for (const key of Object.keys(value))
    if (key !== "driver" && key !== "options") throw new Error(`a logging setting svc does not model (${key})`);
  const out: Record<string, Json> = {};
  if (value.driver) out.driver = String(value.driver);
  const options = sortedMapping(toMapping(value.options ?? {}, true), true);
  if (options !== undefined) out.options = options;
  return Object.keys(out).length === 0 ? undefined : out;
}

/** `secrets` and `configs` (compose-go FileReferenceConfig): a name alone is `{source}`, a secret's target defaults to /run/secrets/NAME, a mode is printed in octal. */
function fileMounts(list: unknown[], secrets: boolean): Json | undefined {
  if (list.length === 0) return undefined;
  return list.map((item): Json => {
    const entry: Raw = isPlainObject(item) ? item : { source: String(item) };
    for (const key of Object.keys(entry))
      if (!["source", "target", "uid", "gid", "mode"].includes(key))
        throw new Error(`a ${secrets ? "secret" : "config"} setting svc does not model (${key})`);
    const out: Record<string, Json> = {};
    if (entry.source) out.source = String(entry.source);
    const target = entry.target ?? (secrets ? `/run/secrets/${String(entry.source)}` : undefined);
    if (target) out.target = String(target);
    if (entry.uid) out.uid = String(entry.uid);
    if (entry.gid) out.gid = String(entry.gid);
    if (entry.mode !== undefined && entry.mode !== null) out.mode = fileMode(entry.mode);
    return out;
  });
}

function fileMode(value: unknown): string {
  const mode =
    typeof value === "number" && Number.isInteger(value)
      ? value
      : /^[0-7]+$/.test(String(value))
        ? Number.parseInt(String(value), 8)
        : Number.NaN;
  if (!Number.isInteger(mode)) throw new Error(`a file mode svc does not read (${String(value)})`);
  return `0${mode.toString(8)}`;
}

/** A mapping with only the keys compose-go's type declares, or a reason svc gives no hash. */
function fields(value: unknown, what: string, keys: readonly string[]): Raw {
  if (!isPlainObject(value)) throw new Error(`${what} that is not a mapping`);
  // x- keys are extensions, which compose-go's types keep out of their JSON (json:"-")
  for (const key of Object.keys(value))
    if (!keys.includes(key) && !key.startsWith("x-")) throw new Error(`a ${what} setting svc does not model (${key})`);
  return value;
}

function present(value: unknown): boolean {
  return value !== undefined && value !== null && value !== "";
}

/** An integer as compose-go's toInt cast reads it (a number, or its text after interpolation). */
function integer(value: unknown, what: string): number {
  const n = typeof value === "number" ? value : /^-?\d+$/.test(String(value).trim()) ? Number(value) : Number.NaN;
  if (!Number.isSafeInteger(n)) throw new Error(`${what} that is not an integer (${String(value)})`);
  return n;
}

/**
 * A float32 as Go's encoding/json prints it: the shortest decimal that reads back as the same
 * float32 (strconv.FormatFloat(f, 'f', -1, 32)); compose-go keeps cpus and ratios as float32.
 */
export function goFloat32(value: unknown, what: string): number {
  const n =
    typeof value === "number"
      ? value
      : /^[+-]?(\d+\.?\d*|\.\d+)$/.test(String(value).trim())
        ? Number(value)
        : Number.NaN;
  const f = Math.fround(n);
  if (!Number.isFinite(f)) throw new Error(`${what} that is not a number (${String(value)})`);
  if (f !== 0 && (Math.abs(f) < 1e-6 || Math.abs(f) >= 1e21))
    throw new Error(`${what} Go prints with an exponent (${f})`);
  for (let digits = 1; digits <= 9; digits++) {
    const shortest = Number(f.toPrecision(digits));
    if (Math.fround(shortest) === f) return shortest;
  }
  return f;
}

function stringList(value: unknown, what: string): Json | undefined {
  const list = typeof value === "string" ? [value] : value;
  if (!Array.isArray(list) || list.some((item) => typeof item !== "string"))
    throw new Error(`${what} that is not a string or a list of strings`);
  return list.length === 0 ? undefined : (list as string[]);
}

const DEPLOY_KEYS = [
  "mode",
  "replicas",
  "labels",
  "update_config",
  "rollback_config",
  "resources",
  "restart_policy",
  "placement",
  "endpoint_mode",
];

/**
 * `deploy` (compose-go types.DeployConfig, fields in declared order): ServiceHash drops replicas;
 * resources and placement are structs, not pointers, so Go's omitempty keeps them, empty, always.
 */
function deploy(value: unknown): Json {
  const d = fields(value, "deploy", DEPLOY_KEYS);
  const out: Record<string, Json> = {};
  if (present(d.mode)) out.mode = String(d.mode);
  const labels = sortedMapping(toMapping(d.labels, true), true);
  if (labels !== undefined) out.labels = labels;
  if (d.update_config !== undefined && d.update_config !== null) out.update_config = updateConfig(d.update_config);
  if (d.rollback_config !== undefined && d.rollback_config !== null)
    out.rollback_config = updateConfig(d.rollback_config);
  out.resources = resources(d.resources ?? {});
  if (d.restart_policy !== undefined && d.restart_policy !== null) out.restart_policy = restartPolicy(d.restart_policy);
  out.placement = placement(d.placement ?? {});
  if (present(d.endpoint_mode)) out.endpoint_mode = String(d.endpoint_mode);
  return out;
}

/** types.UpdateConfig: parallelism a pointer (0 printed), the durations and the ratio omitted when zero. */
function updateConfig(value: unknown): Json {
  const u = fields(value, "deploy update", [
    "parallelism",
    "delay",
    "failure_action",
    "monitor",
    "max_failure_ratio",
    "order",
  ]);
  const out: Record<string, Json> = {};
  if (u.parallelism !== undefined && u.parallelism !== null) out.parallelism = integer(u.parallelism, "a parallelism");
  const delay = present(u.delay) ? goDuration(String(u.delay)) : "0s";
  if (delay !== "0s") out.delay = delay;
  if (present(u.failure_action)) out.failure_action = String(u.failure_action);
  const monitor = present(u.monitor) ? goDuration(String(u.monitor)) : "0s";
  if (monitor !== "0s") out.monitor = monitor;
  const ratio = present(u.max_failure_ratio) ? goFloat32(u.max_failure_ratio, "a max_failure_ratio") : 0;
  if (ratio !== 0) out.max_failure_ratio = ratio;
  if (present(u.order)) out.order = String(u.order);
  return out;
}

/** types.Resources: limits and reservations, each a types.Resource. */
function resources(value: unknown): Json {
  const r = fields(value, "deploy resources", ["limits", "reservations"]);
  const out: Record<string, Json> = {};
  if (r.limits !== undefined && r.limits !== null) out.limits = resource(r.limits, false);
  if (r.reservations !== undefined && r.reservations !== null) out.reservations = resource(r.reservations, true);
  return out;
}

/** types.Resource: cpus a float32, memory a UnitBytes printed as a string, zeros left out. */
function resource(value: unknown, reservation: boolean): Json {
  const r = fields(value, "deploy resources", ["cpus", "memory", "pids", "devices", "generic_resources"]);
  const out: Record<string, Json> = {};
  const cpus = present(r.cpus) ? goFloat32(r.cpus, "cpus") : 0;
  if (cpus !== 0) out.cpus = cpus;
  const memory = present(r.memory) ? ramInBytes(r.memory) : 0;
  if (memory !== 0) out.memory = String(memory);
  const pids = present(r.pids) ? integer(r.pids, "pids") : 0;
  if (pids !== 0) out.pids = pids;
  if (r.devices !== undefined && r.devices !== null) {
    if (!reservation) throw new Error("devices under deploy limits (compose reserves devices only)");
    if (!Array.isArray(r.devices)) throw new Error("deploy devices that are not a list");
    if (r.devices.length > 0) out.devices = r.devices.map(deviceRequest);
  }
  if (r.generic_resources !== undefined && r.generic_resources !== null) {
    if (!Array.isArray(r.generic_resources)) throw new Error("generic_resources that are not a list");
    if (r.generic_resources.length > 0) out.generic_resources = r.generic_resources.map(genericResource);
  }
  return out;
}

/** types.DeviceRequest; transform/devices.go deviceRequestDefaults: no count and no ids is count "all" (-1). */
function deviceRequest(value: unknown): Json {
  const d = fields(value, "device request", ["capabilities", "driver", "count", "device_ids", "options"]);
  const out: Record<string, Json> = {};
  const capabilities =
    d.capabilities === undefined || d.capabilities === null ? undefined : stringList(d.capabilities, "capabilities");
  if (capabilities !== undefined) out.capabilities = capabilities;
  if (present(d.driver)) out.driver = String(d.driver);
  const count =
    d.count === undefined && d.device_ids === undefined
      ? -1
      : d.count === undefined || d.count === null
        ? 0
        : String(d.count).toLowerCase() === "all"
          ? -1
          : integer(d.count, "a device count");
  if (count !== 0) out.count = count;
  const ids = d.device_ids === undefined || d.device_ids === null ? undefined : stringList(d.device_ids, "device_ids");
  if (ids !== undefined) out.device_ids = ids;
  const options = sortedMapping(toMapping(d.options, true), true);
  if (options !== undefined) out.options = options;
  return out;
}

function genericResource(value: unknown): Json {
  const g = fields(value, "generic resource", ["discrete_resource_spec"]);
  if (g.discrete_resource_spec === undefined || g.discrete_resource_spec === null) return {};
  const spec = fields(g.discrete_resource_spec, "discrete resource", ["kind", "value"]);
  return {
    discrete_resource_spec: {
      kind: present(spec.kind) ? String(spec.kind) : "",
      value: present(spec.value) ? integer(spec.value, "a resource value") : 0,
    },
  };
}

/** types.RestartPolicy: delay, max_attempts and window are pointers (printed when set, zero too). */
function restartPolicy(value: unknown): Json {
  const r = fields(value, "restart policy", ["condition", "delay", "max_attempts", "window"]);
  const out: Record<string, Json> = {};
  if (present(r.condition)) out.condition = String(r.condition);
  if (r.delay !== undefined && r.delay !== null) out.delay = goDuration(String(r.delay));
  if (r.max_attempts !== undefined && r.max_attempts !== null)
    out.max_attempts = integer(r.max_attempts, "max_attempts");
  if (r.window !== undefined && r.window !== null) out.window = goDuration(String(r.window));
  return out;
}

/** types.Placement. */
function placement(value: unknown): Json {
  const p = fields(value, "placement", ["constraints", "preferences", "max_replicas_per_node"]);
  const out: Record<string, Json> = {};
  const constraints =
    p.constraints === undefined || p.constraints === null ? undefined : stringList(p.constraints, "constraints");
  if (constraints !== undefined) out.constraints = constraints;
  if (p.preferences !== undefined && p.preferences !== null) {
    if (!Array.isArray(p.preferences)) throw new Error("placement preferences that are not a list");
    if (p.preferences.length > 0)
      out.preferences = p.preferences.map((item): Json => {
        const spread = fields(item, "placement preference", ["spread"]).spread;
        return present(spread) ? { spread: String(spread) } : {};
      });
  }
  const max = present(p.max_replicas_per_node) ? integer(p.max_replicas_per_node, "max_replicas_per_node") : 0;
  if (max !== 0) out.max_replicas_per_node = max;
  return out;
}

/** `devices` (types.DeviceMapping); transform/device.go: `src[:dst[:permissions]]`, dst defaults to src, permissions to rwm. */
function devices(value: unknown): Json | undefined {
  if (!Array.isArray(value)) throw new Error("devices that are not a list");
  if (value.length === 0) return undefined;
  const out = value.map((item): Record<string, Json> => {
    if (typeof item === "string") {
      const parts = item.split(":");
      if (parts.length > 3) throw new Error(`a device mapping compose refuses (${item})`);
      const [source = "", target, permissions = "rwm"] = parts;
      return { source, target: target || source, permissions };
    }
    const d = fields(item, "device", ["source", "target", "permissions"]);
    const entry: Record<string, Json> = {};
    for (const key of ["source", "target", "permissions"]) if (present(d[key])) entry[key] = String(d[key]);
    return entry;
  });
  const targets = out.map((d) => d.target);
  if (new Set(targets).size !== targets.length) throw new Error("two devices with one target (compose-go keeps one)");
  return out;
}

/** `ulimits` (types.UlimitsConfig's MarshalJSON): a single value as a number, else soft and hard, zeros left out; names sorted. */
function ulimits(value: unknown): Json | undefined {
  if (!isPlainObject(value)) throw new Error("ulimits that are not a mapping");
  const names = Object.keys(value).sort();
  if (names.length === 0) return undefined;
  const out: Record<string, Json> = {};
  for (const name of names) {
    const limit = value[name];
    if (!isPlainObject(limit)) {
      const single = integer(limit, `ulimit ${name}`);
      out[name] = single !== 0 ? single : {};
      continue;
    }
    const l = fields(limit, "ulimit", ["soft", "hard"]);
    const entry: Record<string, Json> = {};
    const soft = present(l.soft) ? integer(l.soft, `ulimit ${name}`) : 0;
    const hard = present(l.hard) ? integer(l.hard, `ulimit ${name}`) : 0;
    if (soft !== 0) entry.soft = soft;
    if (hard !== 0) entry.hard = hard;
    out[name] = entry;
  }
  return out;
}

/**
 * `extra_hosts` (types.HostsList): `host=ip` or `host:ip` (the first `=`, else the first `:`),
 * several addresses split at commas, brackets dropped; printed as the sorted list of `host=ip`.
 */
function extraHosts(value: unknown): Json | undefined {
  const hosts: [string, string][] = [];
  if (Array.isArray(value)) {
    for (const item of value.map(String)) {
      const sep = item.includes("=") ? "=" : ":";
      const at = item.indexOf(sep);
      if (at === -1) throw new Error(`an extra host without an address (${item})`);
      for (const ip of item.slice(at + 1).split(",")) hosts.push([item.slice(0, at), ip]);
    }
  } else if (isPlainObject(value)) {
    for (const [host, ips] of Object.entries(value)) {
      if (ips === null || ips === undefined) hosts.push([host, ""]);
      else if (typeof ips === "string") hosts.push([host, ips]);
      else if (Array.isArray(ips)) for (const ip of ips) hosts.push([host, String(ip)]);
      else throw new Error(`an extra host svc does not read (${host})`);
    }
  } else throw new Error("extra_hosts that are neither a list nor a mapping");
  const list = hosts.map(([host, ip]) => {
    if (host === "" || /[:=]/.test(host)) throw new Error(`an extra host name compose refuses (${host})`);
    return `${host}=${ip.length > 2 && ip.startsWith("[") && ip.endsWith("]") ? ip.slice(1, -1) : ip}`;
  });
  return list.length === 0 ? undefined : list.sort(byBytes);
}

/** Go's sort.Strings: by UTF-8 bytes. */
function byBytes(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b));
}

interface EnvFileEntry {
  path: string;
  required: boolean;
}

/** `env_file` (transform/envfile.go): a path or a list of paths or `{path, required}`, required by default; paths made absolute against `dir`. */
function envFiles(value: unknown, dir: string): EnvFileEntry[] {
  const list = Array.isArray(value) ? value : [value];
  return list.map((item) => {
    const entry = typeof item === "string" ? { path: item } : fields(item, "env_file", ["path", "required", "format"]);
    if (present(entry.format)) throw new Error(`an env_file of format ${String(entry.format)}`);
    const path = String(entry.path ?? "");
    if (path === "") throw new Error("an env_file without a path");
    if (path.startsWith("~")) throw new Error("an env_file under ~ (compose resolves the home folder of its shell)");
    const required =
      entry.required === undefined || entry.required === null
        ? true
        : entry.required === true || entry.required === "true";
    return { path: isAbsolute(path) ? path : join(dir, path), required };
  });
}

/**
 * The service's environment as `docker compose up` hashes it (docker/compose cmd/compose/compose.go
 * WithServices, then compose-go types/project.go WithServicesEnvironmentResolved(true)): a name
 * without a value takes the project's variable; each env file's variables (later ones win,
 * `${VAR}` read from the project's variables, then the service's environment, then what the env
 * files set before) come under the service's own environment; `env_file` itself is dropped.
 * `docker compose config --hash` keeps env_file instead, so it is no oracle for such a service.
 */
function resolveEnvironment(raw: Raw, env: ReadonlyMap<string, EnvValue>, read: (path: string) => string): void {
  const own = toMapping(raw.environment, false);
  for (const [key, value] of Object.entries(own)) {
    const set = env.get(key);
    if (value === null && set) own[key] = set.value.text;
  }
  const files = (raw.env_file as EnvFileEntry[] | undefined) ?? [];
  delete raw.env_file;
  const fromFiles = new Map<string, EnvValue>();
  for (const file of files) {
    if (!existsSync(file.path)) {
      if (file.required) throw new Error(`svc cannot see ${file.path}, an env_file of the service`);
      continue;
    }
    for (const [key, value] of parseEnvFile(read(file.path), file.path))
      fromFiles.set(key, { ...value, value: untraced(envFileValue(value, env, own, fromFiles)) });
  }
  const merged: Record<string, string | null> = {};
  for (const [key, value] of fromFiles) merged[key] = value.value.text;
  Object.assign(merged, own);
  if (Object.keys(merged).length > 0) raw.environment = merged;
  else delete raw.environment;
}

/** One value of an env file: literal when svc knows where its characters are, else interpolated as compose's dotenv does. */
function envFileValue(
  value: EnvValue,
  project: ReadonlyMap<string, EnvValue>,
  own: Record<string, string | null>,
  before: ReadonlyMap<string, EnvValue>,
): string {
  const text = value.value.text;
  if (value.value.at[0] || !/[$\\]/.test(text)) return text;
  if (text.includes("\\")) throw new Error(`an escape in ${value.file} (compose's dotenv reads escapes its own way)`);
  const lookup = new Map<string, EnvValue>(before);
  for (const [key, v] of Object.entries(own)) if (v !== null) lookup.set(key, { ...value, value: untraced(v) });
  for (const [key, v] of project) lookup.set(key, v);
  const result = interpolate(untraced(text), lookup);
  if (result.problem) throw new Error(`${value.file}: ${result.problem}`);
  return result.value.text;
}

function healthcheck(value: Raw): Json {
  const out: Record<string, Json> = {};
  if (value.test !== undefined)
    out.test = typeof value.test === "string" ? ["CMD-SHELL", value.test] : (value.test as unknown[]).map(String);
  for (const key of ["timeout", "interval"]) if (value[key] !== undefined) out[key] = goDuration(String(value[key]));
  if (value.retries !== undefined) out.retries = Number(value.retries);
  for (const key of ["start_period", "start_interval"])
    if (value[key] !== undefined) out[key] = goDuration(String(value[key]));
  if (value.disable === true) out.disable = true;
  for (const key of Object.keys(value))
    if (!["test", "timeout", "interval", "retries", "start_period", "start_interval", "disable"].includes(key))
      throw new Error(`a healthcheck setting svc does not model (${key})`);
  return out;
}

const UNITS: Record<string, number> = {
  ns: 1,
  us: 1e3,
  µs: 1e3,
  ms: 1e6,
  s: 1e9,
  m: 60e9,
  h: 3600e9,
  d: 86400e9,
  w: 604800e9,
};

/** A duration as compose reads it (str2duration: Go's units plus d and w), printed as Go's time.Duration prints it. */
export function goDuration(text: string): string {
  const matches = [...text.matchAll(/(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h|d|w)/g)];
  if (matches.length === 0 || matches.map((m) => m[0]).join("") !== text)
    throw new Error(`a duration svc does not read (${text})`);
  const ns = Math.round(matches.reduce((sum, m) => sum + Number(m[1]) * UNITS[m[2]!]!, 0));
  return formatGoDuration(ns);
}

/** Go's time.Duration.String: "1h2m3.5s", "1.5s", "500ms", "0s". */
export function formatGoDuration(ns: number): string {
  if (ns === 0) return "0s";
  if (ns < 1e9) {
    const [unit, size] = ns < 1e3 ? ["ns", 1] : ns < 1e6 ? ["µs", 1e3] : ["ms", 1e6];
    return `${trimFraction(ns / (size as number))}${unit}`;
  }
  const hours = Math.floor(ns / 3600e9);
  const minutes = Math.floor((ns % 3600e9) / 60e9);
  const seconds = (ns % 60e9) / 1e9;
  return `${hours > 0 ? `${hours}h` : ""}${hours > 0 || minutes > 0 ? `${minutes}m` : ""}${trimFraction(seconds)}s`;
}

function trimFraction(value: number): string {
  return Number.isInteger(value) ? String(value) : String(Number(value.toFixed(9)));
}

/** A command string split as compose-go splits it (go-shellwords: quotes and backslashes, no expansion). */
export function shellSplit(text: string): string[] {
  const words: string[] = [];
  let word = "";
  let inWord = false;
  let quote: string | null = null;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quote) {
      if (c === quote) quote = null;
      else if (c === "\\" && quote === '"' && i + 1 < text.length && '"\\$`'.includes(text[i + 1]!)) word += text[++i];
      else word += c;
    } else if (c === "'" || c === '"') {
      quote = c;
      inWord = true;
    } else if (c === "\\" && i + 1 < text.length) {
      word += text[++i];
      inWord = true;
    } else if (/\s/.test(c)) {
      if (inWord) words.push(word);
      word = "";
      inWord = false;
    } else {
      word += c;
      inWord = true;
    }
  }
  if (quote) throw new Error("a command with an unclosed quote");
  if (inWord) words.push(word);
  return words;
}

/** JSON as Go's encoding/json writes it: compact, with <, > and & (and U+2028, U+2029) escaped. */
export function goJson(value: Json): string {
  return JSON.stringify(value).replace(
    /[<>&\u2028\u2029]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}
