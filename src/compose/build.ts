/**
 * A service compose builds (`build:`): what its project's files say of the build, read as compose
 * reads them (the files in `-f` order, a later one's keys over an earlier one's, `args` and
 * `additional_contexts` merged key by key; merge keys; `.env` and `${VAR}` interpolation through
 * the compose room's own reader), and the images it is built from: the Dockerfile's (or
 * `dockerfile_inline`'s) external `FROM`s (dockerfile.ts) and the `docker-image://` additional
 * contexts (docs/compose.md, "Built services").
 */
import { existsSync } from "node:fs";
import { isAbsolute, join } from "node:path";
import { toSvcError } from "../core/errors.ts";
import { type BaseImage, baseImages, MAX_DOCKERFILE_BYTES } from "./dockerfile.ts";
import type { EnvValue } from "./envfile.ts";
import { interpolate } from "./interpolate.ts";
import { ProjectFiles } from "./locate.ts";
import type { ComposeProject } from "./project.ts";
import { readText, untraced } from "./text.ts";

/** The label that names a built service's bases by hand, comma-separated (docs/compose.md). */
export const BUILD_BASE_LABEL = "svc.build.base";

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
  /** additional_contexts: name -> what it is (a path, `docker-image://ref`, `service:name`...) */
  additionalContexts: Map<string, string>;
  /** the image compose tags the build with: `image:`, else `<project>-<service>` */
  image: string;
  /**
   * every profile the project's services name: the build enables them all, since compose refuses
   * a service whose `depends_on` names one in a profile not enabled, and svc does not know which
   * profiles its user runs (compose labels no container with them)
   */
  profiles: string[];
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
    const found = specOf(project, builds, image, env, workingDir);
    if (found?.ok)
      found.spec.profiles = profilesOf(files, [project.configFiles, ...files.included().map((i) => i.files)]);
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
}

/** The service's `build` and `image` in each of `list`, in order (merge keys applied). */
function serviceLayers(files: ProjectFiles, list: readonly string[], service: string): Layer[] {
  const layers: Layer[] = [];
  for (const file of list) {
    const services = merged(files.doc(file).toJS({ maxAliasCount: 1000 })?.services);
    const entry = services ? merged(services[service]) : null;
    if (entry) layers.push({ build: entry.build, image: entry.image });
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
  env: ReadonlyMap<string, EnvValue>,
  workingDir: string,
): BuildFound {
  const text = (value: unknown, what: string): string => {
    if (typeof value !== "string" && typeof value !== "number" && typeof value !== "boolean")
      throw new Error(`${project.service}'s ${what} is not a string`);
    const result = interpolate(untraced(String(value)), env);
    if (result.problem) throw new Error(`${project.service}'s ${what}: ${result.problem}`);
    return result.value.text;
  };
  let context = ".";
  let dockerfile: string | null = null;
  let inline: string | null = null;
  const args = new Map<string, string | null>();
  const additionalContexts = new Map<string, string>();
  for (const build of builds) {
    const map = typeof build === "string" ? { context: build } : merged(build);
    if (!map) return { ok: false, reason: `${project.service}'s build is neither a path nor a mapping` };
    if (map.context !== undefined && map.context !== null) context = text(map.context, "build.context");
    if (map.dockerfile !== undefined && map.dockerfile !== null) {
      dockerfile = text(map.dockerfile, "build.dockerfile");
      inline = null;
    }
    if (map.dockerfile_inline !== undefined && map.dockerfile_inline !== null) {
      inline = text(map.dockerfile_inline, "build.dockerfile_inline");
      dockerfile = null;
    }
    for (const [key, value] of pairs(map.args, "build.args", project.service))
      args.set(key, value === null ? (env.get(key)?.value.text ?? null) : text(value, `build.args.${key}`));
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
      additionalContexts,
      image: name,
      profiles: [],
    },
  };
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
