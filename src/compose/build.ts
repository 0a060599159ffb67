/**
 * A service compose builds (`build:`): what its project's files say of the build, read as compose
 * reads them (the files in `-f` order, a later one's keys over an earlier one's, `args` and
 * `additional_contexts` merged key by key; merge keys; `.env` and `${VAR}` interpolation through
 * the compose room's own reader), and the images it is built from: the Dockerfile's (or
 * `dockerfile_inline`'s) external `FROM`s (dockerfile.ts) and the `docker-image://` additional
 * contexts (docs/compose.md, "Built services").
 */
import { existsSync } from "node:fs";
import { basename, isAbsolute, join, relative } from "node:path";
import { type Document, isAlias, isMap, type Node } from "yaml";
import { labelName } from "../config/labels.ts";
import { toSvcError } from "../core/errors.ts";
import { type BaseImage, baseImages, MAX_DOCKERFILE_BYTES } from "./dockerfile.ts";
import type { EnvValue } from "./envfile.ts";
import { interpolate } from "./interpolate.ts";
import { deref, ProjectFiles } from "./locate.ts";
import type { ComposeProject } from "./project.ts";
import { contiguous, lineOf, readText, type Traced, untraced } from "./text.ts";

/** The label that names a built service's bases by hand, comma-separated (docs/compose.md). */
export const BUILD_BASE_LABEL = labelName("build.base");

export interface BuildSpec {
  project: ComposeProject;
  /** the build context: a folder on this machine, or a remote context as written */
  context: string;
  /** the Dockerfile's path (null with dockerfile_inline) */
  dockerfile: string | null;
  /** dockerfile_inline's text, interpolated */
  inline: string | null;
  /** build.args, interpolated; null: written without a value (taken from the env files, else unset) */
  args: Map<string, string | null>;
  /**
   * Where each build arg's value is written, when it is one run of an env file svc may change
   * (`TAG: ${BASE_TAG}` with `BASE_TAG=2.8` in `.env`), else why svc does not change it there
   */
  argSites: Map<string, ArgSite | { reason: string }>;
  /** additional_contexts: name -> what it is (a path, `docker-image://ref`, `service:name`...) */
  additionalContexts: Map<string, string>;
  /** build.network, interpolated (the network RUN steps have); null: the engine's default */
  network: string | null;
  /** build.target, interpolated; null: the last stage */
  target: string | null;
  /** build.labels, interpolated: compose puts them on the image it builds */
  labels: Map<string, string>;
  /** the platform compose builds for (the service's `platform`, else one `build.platforms`); null: the engine's */
  platform: string | null;
  /** every key the merged `build` mapping writes (what a build other than compose's must pass or refuse) */
  keys: Set<string>;
  /** the image compose tags the build with: `image:`, else `<project>-<service>` */
  image: string;
  /**
   * every profile the project's services name: the build enables them all, since compose refuses
   * a service whose `depends_on` names one in a profile not enabled, and svc does not know which
   * profiles its user runs (compose labels no container with them)
   */
  profiles: string[];
}

/** The run of an env file that holds a build arg's whole value. */
export interface ArgSite {
  file: string;
  offset: number;
  text: string;
  /** the env file's variable ("BASE_TAG") */
  variable: string;
}

export type BuildFound = { ok: true; spec: BuildSpec } | { ok: false; reason: string } | null;

export type BuildBases = { ok: true; bases: BaseImage[] } | { ok: false; reason: string };

const REMOTE_CONTEXT = /^(?:[a-z][a-z0-9+.-]*:\/\/|git@|github\.com\/)/i;
const IMAGE_CONTEXT = "docker-image://";

/**
 * The build of `project.service` as the project's files say it; null: the service has no `build:`,
 * or svc cannot read the project's files (then whether it is built is unknown, and its container
 * is checked as any other: most compose containers run a pulled image, and svc in a container
 * often sees no project folder; podman-compose labels its files by relative paths).
 */
export function buildOf(project: ComposeProject): BuildFound {
  if (project.configFiles.length === 0) return null;
  try {
    for (const file of project.configFiles) if (!isAbsolute(file) || !existsSync(file)) return null;
    const files = new ProjectFiles(project);
    files.loadEnv();
    let layers = serviceLayers(files, project.configFiles, project.service);
    let env = files.env;
    let workingDir = project.workingDir;
    if (layers.length === 0) {
      for (const included of files.included()) {
        const found = serviceLayers(files, included.files, project.service);
        if (found.length === 0) continue;
        [layers, env, workingDir] = [found, included.env, included.workingDir];
        break;
      }
    }
    const builds = layers.map((layer) => layer.build).filter((build) => build !== undefined && build !== null);
    if (builds.length === 0) return null;
    const image = [...layers].reverse().find((layer) => layer.image !== undefined && layer.image !== null)?.image;
    const platform = [...layers]
      .reverse()
      .find((layer) => layer.platform !== undefined && layer.platform !== null)?.platform;
    const found = specOf(project, builds, image, platform, env, workingDir);
    if (found?.ok) {
      const lists = [project.configFiles, ...files.included().map((i) => i.files)];
      found.spec.profiles = profilesOf(files, lists);
      holdNamedElsewhere(files, lists, found.spec);
    }
    return found;
  } catch (error) {
    return { ok: false, reason: toSvcError(error).message };
  }
}

/** The profiles the services of `lists` name, each once, in the order written (as compose-go validates them). */
function profilesOf(files: ProjectFiles, lists: readonly (readonly string[])[]): string[] {
  const found = new Set<string>();
  for (const list of lists)
    for (const file of list) {
      const services = merged(files.doc(file).toJS({ maxAliasCount: 1000 })?.services) ?? {};
      for (const entry of Object.values(services)) {
        const profiles = merged(entry)?.profiles;
        if (!Array.isArray(profiles)) continue;
        for (const profile of profiles)
          if (typeof profile === "string" && /^[a-zA-Z0-9][a-zA-Z0-9_.-]*$/.test(profile)) found.add(profile);
      }
    }
  return [...found];
}

interface Layer {
  build: unknown;
  image: unknown;
  platform: unknown;
}

/** The service's `build` and `image` in each of `list`, in order (merge keys applied). */
function serviceLayers(files: ProjectFiles, list: readonly string[], service: string): Layer[] {
  const layers: Layer[] = [];
  for (const file of list) {
    const services = merged(files.doc(file).toJS({ maxAliasCount: 1000 })?.services);
    const entry = services ? merged(services[service]) : null;
    if (entry) layers.push({ build: entry.build, image: entry.image, platform: entry.platform });
  }
  return layers;
}

/** A mapping with YAML merge keys (`<<: *base`, `<<: [*a, *b]`) applied, its own keys first; null: not a mapping. */
function merged(value: unknown): Record<string, unknown> | null {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return null;
  const own = value as Record<string, unknown>;
  const sources = own["<<"] === undefined ? [] : Array.isArray(own["<<"]) ? own["<<"] : [own["<<"]];
  const out: Record<string, unknown> = {};
  for (const source of [...sources].reverse()) Object.assign(out, merged(source) ?? {});
  for (const [key, v] of Object.entries(own)) if (key !== "<<") out[key] = v;
  return out;
}

function specOf(
  project: ComposeProject,
  builds: unknown[],
  image: unknown,
  platform: unknown,
  env: ReadonlyMap<string, EnvValue>,
  workingDir: string,
): BuildFound {
  const interpolated = (value: unknown, what: string) => {
    if (typeof value !== "string" && typeof value !== "number" && typeof value !== "boolean")
      throw new Error(`${project.service}'s ${what} is not a string`);
    const result = interpolate(untraced(String(value)), env);
    if (result.problem) throw new Error(`${project.service}'s ${what}: ${result.problem}`);
    return result;
  };
  const text = (value: unknown, what: string): string => interpolated(value, what).value.text;
  let context = ".";
  let dockerfile: string | null = null;
  let inline: string | null = null;
  const args = new Map<string, string | null>();
  const argSites = new Map<string, ArgSite | { reason: string }>();
  const additionalContexts = new Map<string, string>();
  let target: string | null = null;
  let network: string | null = null;
  const labels = new Map<string, string>();
  const keys = new Set<string>();
  let platforms: string[] = [];
  for (const build of builds) {
    const map = typeof build === "string" ? { context: build } : merged(build);
    if (!map) return { ok: false, reason: `${project.service}'s build is neither a path nor a mapping` };
    for (const [key, value] of Object.entries(map)) if (value !== undefined && value !== null) keys.add(key);
    if (map.target !== undefined && map.target !== null) target = text(map.target, "build.target");
    if (map.network !== undefined && map.network !== null) network = text(map.network, "build.network");
    for (const [key, value] of pairs(map.labels, "build.labels", project.service))
      labels.set(key, value === null ? "" : text(value, `build.labels.${key}`));
    if (Array.isArray(map.platforms)) platforms = map.platforms.map((p, i) => text(p, `build.platforms[${i}]`));
    if (map.context !== undefined && map.context !== null) context = text(map.context, "build.context");
    if (map.dockerfile !== undefined && map.dockerfile !== null) {
      dockerfile = text(map.dockerfile, "build.dockerfile");
      inline = null;
    }
    if (map.dockerfile_inline !== undefined && map.dockerfile_inline !== null) {
      inline = text(map.dockerfile_inline, "build.dockerfile_inline");
      dockerfile = null;
    }
    for (const [key, value] of pairs(map.args, "build.args", project.service)) {
      if (value === null) {
        const set = env.get(key);
        args.set(key, set?.value.text ?? null);
        argSites.set(key, set ? argSite(key, set.value, key) : { reason: `${key} is set in no env file` });
        continue;
      }
      const result = interpolated(value, `build.args.${key}`);
      args.set(key, result.value.text);
      const origin = result.value.at[0];
      const variable = result.uses.find(
        (u) =>
          u.from === "env_file" &&
          origin &&
          u.env?.value.at.some((o) => o?.file === origin.file && o.offset === origin.offset),
      )?.name;
      argSites.set(
        key,
        variable
          ? argSite(key, result.value, variable)
          : { reason: `build.args.${key} is written in the compose file, not in an env file` },
      );
    }
    for (const [key, value] of pairs(map.additional_contexts, "build.additional_contexts", project.service))
      if (value !== null) additionalContexts.set(key, text(value, `build.additional_contexts.${key}`));
  }
  const remote = REMOTE_CONTEXT.test(context);
  const contextPath = remote || isAbsolute(context) ? context : join(workingDir, context);
  const dockerfilePath = inline !== null ? null : remote ? null : resolvePath(contextPath, dockerfile ?? "Dockerfile");
  const name =
    image === undefined || image === null ? `${project.name}-${project.service}`.toLowerCase() : text(image, "image");
  return {
    ok: true,
    spec: {
      project,
      context: contextPath,
      dockerfile: dockerfilePath,
      inline,
      args,
      argSites,
      additionalContexts,
      target,
      network,
      labels,
      platform:
        platform !== undefined && platform !== null
          ? text(platform, "platform")
          : platforms.length === 1
            ? platforms[0]!
            : null,
      keys,
      image: name,
      profiles: [],
    },
  };
}

/** A build arg's value as one run of an env file, or why it is not one. */
function argSite(key: string, value: Traced, variable: string): ArgSite | { reason: string } {
  const origin = contiguous(value, 0, value.text.length);
  if (!origin)
    return {
      reason: `build.args.${key} is not one run of an env file (put together from several places, quoted with escapes, or empty)`,
    };
  return { file: origin.file, offset: origin.offset, text: value.text, variable };
}

/**
 * An env file's variable changes more than the build when it is named anywhere else: in a
 * container's `environment` (compose's config hash, and what the container sees), another
 * variable of an env file, an `image:`; a service's `env_file` or a volume naming the env file
 * itself hands the container all of its variables. Such a build arg is only reported. A name in
 * a service's `build.args` (this one's, or another service's built from the same tag) is the
 * build's own.
 */
function holdNamedElsewhere(files: ProjectFiles, lists: readonly (readonly string[])[], spec: BuildSpec): void {
  const composeFiles = [...new Set(lists.flat())];
  const argRanges = new Map(composeFiles.map((file) => [file, buildArgsRanges(files.doc(file))]));
  const inArgs = (file: string, at: number) => (argRanges.get(file) ?? []).some(([s, e]) => at >= s && at < e);
  const where = (file: string, at: number) =>
    `${relative(spec.project.workingDir, file) || file} line ${lineOf(files.text(file), at)}`;
  for (const [key, site] of spec.argSites) {
    if ("reason" in site) continue;
    const word = new RegExp(`(?<![A-Za-z0-9_])${site.variable}(?![A-Za-z0-9_])`, "g");
    const reference = new RegExp(`\\$\\{?${site.variable}(?![A-Za-z0-9_])`, "g");
    const envName = basename(site.file).replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    const envFile = new RegExp(`(?<![A-Za-z0-9_.-])${envName}(?![A-Za-z0-9_.-])`, "g");
    let problem: string | null = null;
    for (const file of composeFiles) {
      const text = files.text(file);
      const named = [...text.matchAll(word)].find((m) => !inArgs(file, m.index!));
      if (named) {
        problem = `${site.variable}, which holds it, is also named at ${where(file, named.index!)}, outside build.args`;
        break;
      }
      const env = envFile.exec(text);
      envFile.lastIndex = 0;
      if (env) {
        problem = `${basename(site.file)}, which holds it, is also named at ${where(file, env.index)} (a container may read it)`;
        break;
      }
    }
    for (const [file, text] of files.texts) {
      if (problem || composeFiles.includes(file)) continue;
      const used = reference.exec(text);
      if (used) problem = `${site.variable}, which holds it, is used by another variable at ${where(file, used.index)}`;
    }
    if (problem) spec.argSites.set(key, { reason: problem });
  }
}

/** The [start, end) of each service's `build.args` in a compose file. */
function buildArgsRanges(doc: Document): [number, number][] {
  const out: [number, number][] = [];
  const services = deref(doc, doc.get("services", true) as Node | undefined);
  if (!isMap(services)) return out;
  for (const pair of services.items) {
    const service = deref(doc, pair.value as Node | undefined);
    if (!isMap(service)) continue;
    const build = deref(doc, service.get("build", true) as Node | undefined);
    if (!isMap(build)) continue;
    const args = build.get("args", true) as Node | undefined;
    if (args && !isAlias(args) && args.range) out.push([args.range[0], args.range[1]]);
  }
  return out;
}

function resolvePath(context: string, path: string): string {
  return isAbsolute(path) ? path : join(context, path);
}

/** `KEY: value` or `- KEY=value` / `- KEY` (a list), as compose reads `args` and `additional_contexts`. */
function pairs(value: unknown, what: string, service: string): [string, unknown][] {
  if (value === undefined || value === null) return [];
  if (Array.isArray(value))
    return value.map((item) => {
      const entry = String(item);
      const eq = entry.indexOf("=");
      return eq === -1 ? [entry, null] : [entry.slice(0, eq), entry.slice(eq + 1)];
    });
  const map = merged(value);
  if (!map) throw new Error(`${service}'s ${what} is neither a list nor a mapping`);
  return Object.entries(map);
}

/**
 * The images a build is made from: the Dockerfile's external `FROM`s and `COPY --from` images,
 * then the `docker-image://` additional contexts, each once. A remote context or a Dockerfile
 * svc cannot see is a reason: name the bases with the label instead.
 */
export function basesOf(spec: BuildSpec): BuildBases {
  let text: string;
  if (spec.inline !== null) text = spec.inline;
  else if (spec.dockerfile === null)
    return {
      ok: false,
      reason: `${spec.project.service} is built from a remote context (${spec.context}): svc cannot read its Dockerfile (name its bases with the label ${BUILD_BASE_LABEL})`,
    };
  else if (!existsSync(spec.dockerfile))
    return {
      ok: false,
      reason: `svc cannot see ${spec.dockerfile} (mount the project folder at the same path: docs/compose.md)`,
    };
  else {
    try {
      text = readText(spec.dockerfile, MAX_DOCKERFILE_BYTES);
    } catch (error) {
      return { ok: false, reason: toSvcError(error).message };
    }
  }
  const found = baseImages(text, spec.args);
  if (!found.ok) return { ok: false, reason: `${spec.dockerfile ?? "dockerfile_inline"}: ${found.reason}` };
  const bases = [...found.bases];
  for (const [name, value] of spec.additionalContexts) {
    if (!value.startsWith(IMAGE_CONTEXT)) continue;
    bases.push({ reference: value.slice(IMAGE_CONTEXT.length), platform: null, line: 0, via: "additional_contexts" });
    // a context named like an image replaces that image in the Dockerfile
    for (let i = bases.length - 2; i >= 0; i--) if (bases[i]!.reference === name) bases.splice(i, 1);
  }
  const seen = new Set<string>();
  return { ok: true, bases: bases.filter((b) => !seen.has(b.reference) && seen.add(b.reference)) };
}

/** The annotations buildah (`podman build`, podman-compose) writes into the manifest of an image it builds. */
export const BASE_NAME_ANNOTATION = "org.opencontainers.image.base.name";

/**
 * The base an image's own annotations name (buildah, new.go: the image its last stage is `FROM`,
 * by the first of that local image's names that holds the `FROM`'s repository), or null. Only its name: the digest buildah records beside it (`org.opencontainers.image.base.digest`)
 * is the manifest its local store holds, which
 * for a multi-platform base is one platform's, not the index a registry names for the tag.
 */
export function annotatedBases(annotations: Readonly<Record<string, string>> | null): BaseImage[] | null {
  const name = annotations?.[BASE_NAME_ANNOTATION]?.trim();
  if (!name || name.length > 512 || /\s/.test(name)) return null;
  return [{ reference: name, platform: null, line: 0, via: "annotation" }];
}

/** The bases `svc.build.base` names by hand ("img:1, other:2"), or null without the label. */
export function labelledBases(labels: Readonly<Record<string, string>>): BaseImage[] | null {
  const value = labels[BUILD_BASE_LABEL]?.trim();
  if (!value) return null;
  return value
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean)
    .slice(0, 32)
    .map((reference) => ({ reference, platform: null, line: 0, via: "FROM" as const }));
}
