/**
 * Where a compose service's version is written: the text in the project's files that decides the
 * service's image, as compose resolves it (docs/compose.md, "Where svc writes"):
 *
 * - override files: the last file (in `-f` order) whose service sets `image` wins;
 * - `extends` (same file or another): the base's image when the service sets none;
 * - YAML anchors, aliases and merge keys (`<<: *base`): the anchored text;
 * - `${VAR}`, `${VAR:-default}`, `${VAR-default}`: the env file line that sets VAR, or the
 *   default in the compose file when no env file sets it;
 * - `repo:tag@sha256:...`: the tag and the digest, moved together;
 * - top-level `include:` (compose 2.20+): a service the project's own files do not define is
 *   looked for in the included files, with the included project's variables (ProjectFiles.included).
 *
 * When the version is not in text svc can change safely, the answer is a hold with the reason.
 */
import { existsSync } from "node:fs";
import { basename, dirname, isAbsolute, join, relative } from "node:path";
import {
  type Document,
  isAlias,
  isMap,
  isScalar,
  isSeq,
  type Node,
  parseDocument,
  type Scalar,
  type YAMLMap,
} from "yaml";
import { toSvcError } from "../core/errors.ts";
import { type EnvValue, parseEnvFile } from "./envfile.ts";
import { interpolate, type Use } from "./interpolate.ts";
import type { ComposeProject } from "./project.ts";
import { contiguous, lineOf, type Origin, readText, type Traced, traced, untraced } from "./text.ts";

/** One run of characters svc would change. */
export interface Spot {
  origin: Origin;
  text: string;
}

export interface ImageSite {
  project: ComposeProject;
  /** the image compose resolves from the files */
  image: string;
  tag: Spot;
  /** the digest of a `repo:tag@sha256:...` line, moved with the tag */
  digest: Spot | null;
  /** the variable the tag is read from, if any ("APP_TAG") */
  variable: string | null;
  /** other services whose image is the same text (an anchor, a shared variable): they move together or not at all */
  sharedWith: string[];
  /** every file read, with the text svc read (a write compares it first) */
  texts: Map<string, string>;
}

/** optedOut: the files are left alone on purpose (`[compose] write = false`, label svc.compose.write=false), not for a problem */
export type Located = { ok: true; site: ImageSite } | { ok: false; reason: string; optedOut?: boolean };

/**
 * A project an `include:` brings in, as compose-go's ApplyInclude loads it: its files (the first
 * one's folder is its project folder unless `project_directory` says otherwise), and its
 * variables: the including project's first, then its `env_file`s, or the `.env` of its folder.
 */
export interface IncludedProject {
  files: string[];
  workingDir: string;
  env: Map<string, EnvValue>;
  /** the file whose `include:` names it, for what svc says */
  by: string;
}

const MAX_INCLUDES = 10;

/** Files and env of one project, read once. */
export class ProjectFiles {
  readonly texts = new Map<string, string>();
  private readonly docs = new Map<string, Document>();
  env: Map<string, EnvValue> = new Map();
  private includes: IncludedProject[] | null = null;

  constructor(readonly project: ComposeProject) {}

  text(path: string): string {
    let text = this.texts.get(path);
    if (text === undefined) {
      text = readText(path);
      this.texts.set(path, text);
    }
    return text;
  }

  doc(path: string): Document {
    let doc = this.docs.get(path);
    if (!doc) {
      doc = parseDocument(this.text(path), { uniqueKeys: false });
      if (doc.errors.length > 0)
        throw new Error(`${path} is not YAML svc can read: ${doc.errors[0]!.message.split("\n")[0]}`);
      this.docs.set(path, doc);
    }
    return doc;
  }

  /** The env files compose read: `--env-file`s, else the project folder's `.env` when it exists. */
  loadEnv(): void {
    const files =
      this.project.envFiles.length > 0
        ? this.project.envFiles.map((f) => (isAbsolute(f) ? f : join(this.project.workingDir, f)))
        : [join(this.project.workingDir, ".env")].filter((f) => existsSync(f));
    for (const file of files) for (const [key, value] of parseEnvFile(this.text(file), file)) this.env.set(key, value);
  }

  /** The projects the files' `include:` lists bring in, nested ones too (after loadEnv); a problem is thrown with its reason. */
  included(): IncludedProject[] {
    if (this.includes) return this.includes;
    const out: IncludedProject[] = [];
    const walk = (files: string[], workingDir: string, env: Map<string, EnvValue>, depth: number) => {
      for (const file of files) {
        for (const entry of includeEntries(this.doc(file), file)) {
          if (depth >= MAX_INCLUDES) throw new Error(`${file} includes more than ${MAX_INCLUDES} levels deep`);
          const project = this.includedProject(entry, file, workingDir, env);
          out.push(project);
          walk(project.files, project.workingDir, project.env, depth + 1);
        }
      }
    };
    walk(this.project.configFiles, this.project.workingDir, this.env, 0);
    this.includes = out;
    return out;
  }

  private includedProject(
    entry: IncludeEntry,
    by: string,
    workingDir: string,
    parentEnv: Map<string, EnvValue>,
  ): IncludedProject {
    const files = entry.path.map((p) => (isAbsolute(p) ? p : join(workingDir, p)));
    for (const f of files)
      if (!existsSync(f))
        throw new Error(
          `svc cannot see ${f}, which ${basename(by)} includes (mount the project folder at the same path: docs/compose.md)`,
        );
    const dir =
      entry.projectDirectory === null
        ? dirname(files[0]!)
        : isAbsolute(entry.projectDirectory)
          ? entry.projectDirectory
          : join(workingDir, entry.projectDirectory);
    const envFiles =
      entry.envFile === null
        ? [join(dir, ".env")].filter((f) => existsSync(f))
        : entry.envFile.filter((f) => f !== "/dev/null").map((f) => (isAbsolute(f) ? f : join(workingDir, f)));
    const env = new Map<string, EnvValue>();
    for (const f of envFiles) {
      if (!existsSync(f)) throw new Error(`svc cannot see ${f}, the env file of what ${basename(by)} includes`);
      for (const [key, value] of parseEnvFile(this.text(f), f)) env.set(key, value);
    }
    // compose-go: the including project's variables win over the included project's env files (Mapping.Merge keeps what is set)
    for (const [key, value] of parentEnv) env.set(key, value);
    return { files, workingDir: dir, env, by };
  }
}

interface IncludeEntry {
  path: string[];
  projectDirectory: string | null;
  envFile: string[] | null;
}

/** A file's top-level `include:` entries (a path, or `path`/`project_directory`/`env_file`), held when svc cannot follow one. */
function includeEntries(doc: Document, file: string): IncludeEntry[] {
  const raw = doc.toJS({ maxAliasCount: 1000 })?.include;
  if (raw === undefined || raw === null) return [];
  if (!Array.isArray(raw)) throw new Error(`the include: of ${file} is not a list`);
  const list = (value: unknown): string[] | null =>
    value === undefined || value === null ? null : (Array.isArray(value) ? value : [value]).map(String);
  return raw.map((item): IncludeEntry => {
    const entry = typeof item === "string" ? { path: item } : (item as Record<string, unknown>);
    const path = list(entry.path) ?? [];
    const projectDirectory =
      entry.project_directory === undefined || entry.project_directory === null
        ? null
        : String(entry.project_directory);
    const envFile = list(entry.env_file);
    const texts = [...path, ...(projectDirectory === null ? [] : [projectDirectory]), ...(envFile ?? [])];
    if (path.length === 0) throw new Error(`an include: of ${file} names no path`);
    if (texts.some((t) => t.includes("$")))
      throw new Error(`an include: of ${file} names its path with a variable: svc does not follow it`);
    if (path.some((p) => /^[a-z][a-z0-9+.-]*:\/\//i.test(p) || p.startsWith("oci:") || p.startsWith("git@")))
      throw new Error(`an include: of ${file} names a remote file (${path.join(", ")}): svc cannot see it`);
    return { path, projectDirectory, envFile };
  });
}

/** Where the version of `project.service`'s image is written, checked against the image the container runs. */
export function locate(project: ComposeProject, running: string): Located {
  const files = new ProjectFiles(project);
  try {
    if (project.configFiles.length === 0)
      return hold(
        `${project.service}'s container names no compose file (label com.docker.compose.project.config_files)`,
      );
    for (const file of project.configFiles) {
      if (!isAbsolute(file)) return hold(`the compose file ${file} is not an absolute path`);
      if (!existsSync(file))
        return hold(`svc cannot see ${file} (mount the project folder at the same path: docs/compose.md)`);
    }
    files.loadEnv();
    return locateIn(files, project.service, running);
  } catch (error) {
    return hold(toSvcError(error).message);
  }
}

function hold(reason: string): Located {
  return { ok: false, reason };
}

interface Resolved {
  node: Scalar;
  file: string;
  value: Traced;
  uses: Use[];
  problem: string | null;
}

function locateIn(files: ProjectFiles, service: string, running: string): Located {
  const found = imageOf(files, service);
  if (!found) return hold(`no compose file of ${files.project.name} sets an image for ${service}`);
  const resolved = found;
  if (resolved.problem) return hold(`${service}'s image: ${resolved.problem}`);
  const image = resolved.value.text;
  if (image !== running) return hold(shellReason(service, resolved, image, running));
  const parts = splitImage(image);
  if (!parts.tag) return hold(`${service}'s image ${image} names no tag`);
  const tag = contiguous(resolved.value, parts.tag[0], parts.tag[1]);
  if (!tag)
    return hold(
      `${service}'s tag is put together from several places (${describeUses(resolved.uses) || "YAML escapes"}): svc changes one run of text only`,
    );
  let digest: Spot | null = null;
  if (parts.digest) {
    const origin = contiguous(resolved.value, parts.digest[0], parts.digest[1]);
    if (!origin)
      return hold(`${service}'s digest is put together from several places: svc changes one run of text only`);
    digest = { origin, text: image.slice(parts.digest[0], parts.digest[1]) };
  }
  const holdsTag = (u: Use) =>
    u.from === "env_file" &&
    u.env !== undefined &&
    u.env.value.at.some((o) => o?.file === tag.file && o.offset === tag.offset);
  const variable = resolved.uses.find(holdsTag)?.name ?? null;
  const shared = sharing(files, service, tag, variable);
  if (typeof shared === "string") return hold(shared);
  const site: ImageSite = {
    project: files.project,
    image,
    tag: { origin: tag, text: image.slice(parts.tag[0], parts.tag[1]) },
    digest,
    variable,
    sharedWith: shared,
    texts: files.texts,
  };
  return { ok: true, site };
}

/** Why the files do not give the image the container runs: a variable of the shell, most likely. */
function shellReason(service: string, resolved: Resolved, image: string, running: string): string {
  const fromShell = resolved.uses.filter((u) => u.from !== "env_file");
  const named = fromShell[0]?.name ?? resolved.uses[0]?.name;
  if (named)
    return `${service}'s tag comes from ${named} in the shell that ran compose: not in a file (the files say ${image}, the container runs ${running})`;
  return `the compose files say ${image} for ${service}, the container runs ${running}: the files changed since compose made it`;
}

function describeUses(uses: Use[]): string {
  return uses
    .map(
      (u) =>
        `${u.name} from ${u.from === "env_file" ? basename(u.env!.file) : u.from === "default" ? "its default" : "the shell"}`,
    )
    .join(", ");
}

/** name[:tag][@digest] -> the [start, end) of the tag and the digest in the text. */
export function splitImage(image: string): { tag: [number, number] | null; digest: [number, number] | null } {
  const at = image.indexOf("@");
  const nameTag = at === -1 ? image : image.slice(0, at);
  const colon = nameTag.lastIndexOf(":");
  const tag: [number, number] | null = colon > nameTag.lastIndexOf("/") ? [colon + 1, nameTag.length] : null;
  return { tag: tag && tag[1] > tag[0] ? tag : null, digest: at === -1 ? null : [at + 1, image.length] };
}

/** The image scalar that decides a service's image: the last file that sets it, through merge keys and `extends`. */
function imageOf(files: ProjectFiles, service: string): Resolved | null {
  const own = imageIn(files, files.project.configFiles, files.env, service);
  if (own || definedIn(files, files.project.configFiles, service)) return own;
  for (const included of files.included()) {
    if (!definedIn(files, included.files, service)) continue;
    return imageIn(files, included.files, included.env, service);
  }
  return null;
}

function imageIn(
  files: ProjectFiles,
  list: string[],
  env: ReadonlyMap<string, EnvValue>,
  service: string,
): Resolved | null {
  let found: Resolved | null = null;
  for (const file of list) {
    const here = serviceImage(files, file, service, 0, env);
    if (here) found = here;
  }
  return found;
}

function definedIn(files: ProjectFiles, list: string[], service: string): boolean {
  return list.some((file) => servicesOf(files, file).includes(service));
}

function servicesOf(files: ProjectFiles, file: string): string[] {
  const doc = files.doc(file);
  const services = deref(doc, doc.get("services", true) as Node | undefined);
  return isMap(services)
    ? services.items.filter((pair) => isScalar(pair.key)).map((pair) => String((pair.key as Scalar).value))
    : [];
}

const MAX_EXTENDS = 10;

function serviceImage(
  files: ProjectFiles,
  file: string,
  service: string,
  depth: number,
  env: ReadonlyMap<string, EnvValue>,
): Resolved | null {
  const doc = files.doc(file);
  const services = deref(doc, doc.get("services", true) as Node | undefined);
  if (!isMap(services)) return null;
  const map = deref(doc, services.get(service, true) as Node | undefined);
  if (!isMap(map)) return null;
  const image = findKey(doc, map, "image", 0);
  if (image) {
    const node = deref(doc, image);
    if (!isScalar(node) || typeof node.value !== "string")
      throw new Error(`${service}'s image in ${file} is not a string`);
    const value = interpolate(scalarText(node, file, files.text(file)), env);
    return { node, file, value: value.value, uses: value.uses, problem: value.problem };
  }
  const ext = deref(doc, findKey(doc, map, "extends", 0));
  if (!ext || depth >= MAX_EXTENDS) return null;
  if (isScalar(ext)) return serviceImage(files, file, String(ext.value), depth + 1, env);
  if (isMap(ext)) {
    const base = String((deref(doc, ext.get("service", true) as Node) as Scalar | undefined)?.value ?? "");
    const other = (deref(doc, ext.get("file", true) as Node) as Scalar | undefined)?.value;
    const target =
      other === undefined ? file : isAbsolute(String(other)) ? String(other) : join(dirname(file), String(other));
    if (!existsSync(target)) throw new Error(`svc cannot see ${target}, which ${service} extends`);
    return serviceImage(files, target, base, depth + 1, env);
  }
  return null;
}

/** A key of a mapping, looking through merge keys (`<<: *base`, `<<: [*a, *b]`: the first that has it wins, own keys first). */
function findKey(doc: Document, map: YAMLMap, key: string, depth: number): Node | undefined {
  for (const pair of map.items) if (isScalar(pair.key) && pair.key.value === key) return pair.value as Node;
  if (depth > MAX_EXTENDS) return undefined;
  for (const pair of map.items) {
    if (!isScalar(pair.key) || pair.key.value !== "<<") continue;
    const value = deref(doc, pair.value as Node);
    const sources = isSeq(value) ? value.items.map((n) => deref(doc, n as Node)) : [value];
    for (const source of sources) {
      if (!isMap(source)) continue;
      const found = findKey(doc, source, key, depth + 1);
      if (found) return found;
    }
  }
  return undefined;
}

/** The node an alias names (a chain of them followed, at most 20 deep), or the node itself. */
export function deref(doc: Document, node: Node | undefined | null): Node | undefined {
  let current = node ?? undefined;
  for (let i = 0; i < 20 && current && isAlias(current); i++) current = current.resolve(doc) as Node | undefined;
  return current;
}

/** A scalar's value with where its characters sit, when its source holds them as they are (no escapes, one line). */
function scalarText(node: Scalar, file: string, text: string): Traced {
  const value = String(node.value);
  const [start, end] = node.range ?? [0, 0];
  const inner =
    node.type === "PLAIN"
      ? [start, end]
      : node.type === "QUOTE_SINGLE" || node.type === "QUOTE_DOUBLE"
        ? [start + 1, end - 1]
        : null;
  if (inner && text.slice(inner[0], inner[1]) === value) return traced(value, { file, offset: inner[0]! });
  return untraced(value);
}

/**
 * Other services whose tag is the same run of text (an anchor, a variable): the list, or a hold
 * when the variable is also used outside any service's image.
 */
function sharing(files: ProjectFiles, service: string, tag: Origin, variable: string | null): string[] | string {
  const others: string[] = [];
  const imageScalars: { file: string; range: [number, number] }[] = [];
  for (const name of serviceNames(files)) {
    const found = imageOf(files, name);
    if (!found) continue;
    imageScalars.push({ file: found.file, range: [found.node.range![0], found.node.range![1]] });
    if (name === service) continue;
    if (found.value.at.some((o) => o && o.file === tag.file && o.offset === tag.offset)) others.push(name);
  }
  if (variable) {
    const reference = new RegExp(`(?<!\\$)\\$\\{?${variable}(?![A-Za-z0-9_])`, "g");
    for (const file of new Set([
      ...files.project.configFiles,
      ...files.included().flatMap((i) => i.files),
      ...imageScalars.map((s) => s.file),
    ])) {
      const text = files.text(file);
      for (const match of text.matchAll(reference)) {
        const at = match.index!;
        if (imageScalars.some((s) => s.file === file && at >= s.range[0] && at < s.range[1])) continue;
        return `${variable}, which holds ${service}'s tag, is also used at ${relative(files.project.workingDir, file) || file} line ${lineOf(text, at)}, not as an image`;
      }
    }
  }
  return others;
}

function serviceNames(files: ProjectFiles): string[] {
  const names = new Set<string>();
  for (const file of [...files.project.configFiles, ...files.included().flatMap((i) => i.files)])
    for (const name of servicesOf(files, file)) names.add(name);
  return [...names];
}
