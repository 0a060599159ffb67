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
import { dirname, isAbsolute, join, posix, resolve } from "node:path";
import { isMap, type Node, parseDocument } from "yaml";
import type { EnvValue } from "./envfile.ts";
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
]);

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
function mergedService(files: ProjectFiles, service: string): { service: Raw } | { unknown: string } {
  const own = mergedIn(files, files.project.configFiles, service, files.env, files.project.workingDir);
  if (own) return { service: own };
  for (const included of files.included()) {
    const found = mergedIn(files, included.files, service, included.env, included.workingDir);
    if (found) return { service: found };
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
  if (raw.deploy !== undefined) return "svc does not compute compose's hash of a service with deploy";
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

const LONG_VOLUME_KEYS = ["type", "source", "target", "read_only", "consistency", "bind", "volume", "tmpfs"];

/** The long syntax: what is written, sources of binds made absolute, targets cleaned (ServiceVolumeConfig's fields in order). */
function longVolume(item: Raw, dir: string): Json {
  for (const key of Object.keys(item))
    if (!LONG_VOLUME_KEYS.includes(key)) throw new Error(`a volume setting svc does not model (${key})`);
  const type = String(item.type ?? "");
  if (!["bind", "volume", "tmpfs"].includes(type)) throw new Error(`a volume of type ${type || "(none)"}`);
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
  if (item.volume !== undefined) out.volume = subOptions(item.volume, { nocopy: "true", subpath: "string" });
  if (item.tmpfs !== undefined) out.tmpfs = tmpfs(item.tmpfs);
  return out;
}

/** A nested option map with the keys svc models, in their declared order: strings when not empty, booleans when true. */
function subOptions(value: unknown, keys: Record<string, "string" | "true">): Json {
  if (!isPlainObject(value)) throw new Error("a volume option that is not a mapping");
  for (const key of Object.keys(value))
    if (!(key in keys)) throw new Error(`a volume setting svc does not model (${key})`);
  const out: Record<string, Json> = {};
  for (const [key, kind] of Object.entries(keys)) {
    const v = value[key];
    if (kind === "true" && (v === true || v === "true")) out[key] = true;
    if (kind === "string" && v !== undefined && v !== null && String(v) !== "") out[key] = String(v);
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
