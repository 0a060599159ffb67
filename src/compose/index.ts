/**
 * Compose projects: where a service's version is written (locate.ts), the smallest change to it
 * (write.ts), compose's config hash (hash.ts), and what svc keeps for the rollback. The updater
 * asks it through `ComposeFiles`; it knows no engine and no cycle (docs/compose.md).
 */
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { toSvcError } from "../core/errors.ts";
import { writeFileAtomically } from "../core/files.ts";
import { type ComposeCli, findComposeCli, serviceHash } from "./hash.ts";
import { type ImageSite, type Located, locate, splitImage } from "./locate.ts";
import { type ComposeProject, projectOf, untrustedBecause, WRITE_LABEL } from "./project.ts";
import { computeServiceHash } from "./servicehash.ts";
import { applyEdits, describeEdit, type Edit, type FileChange, replaceFile, writable } from "./write.ts";

export {
  annotatedBases,
  BASE_NAME_ANNOTATION,
  BUILD_BASE_LABEL,
  type BuildBases,
  type BuildFound,
  type BuildSpec,
  basesOf,
  buildOf,
  labelledBases,
} from "./build.ts";
export { engineBuildProblem, MAX_CONTEXT_BYTES, type PackedContext, packContext } from "./context.ts";
export { type BaseImage, baseImages } from "./dockerfile.ts";
export { type ComposeCli, findComposeCli, serviceHash } from "./hash.ts";
export { type ImageSite, type Located, locate, splitImage } from "./locate.ts";
export {
  COMPOSE_LABELS,
  type ComposeProject,
  inheritedLabels,
  projectOf,
  untrustedBecause,
  WRITE_LABEL,
} from "./project.ts";
export { type BuildRun, buildCommand, describeCommand, diskProblem, MIN_FREE_BYTES, runBuild } from "./rebuild.ts";
export { computeServiceHash } from "./servicehash.ts";
export { readText } from "./text.ts";
export { applyEdits, describeEdit, type Edit, type FileChange, replaceFile, reverseEdits, writable } from "./write.ts";

/** One service's move, planned: the runs of text to change and what svc says of them. */
export interface ComposeMove {
  /** the container's name */
  container: string;
  site: ImageSite;
  edits: Edit[];
  /** "compose.yaml line 12: 2.3.1 -> 2.4.0" per edit */
  changes: string[];
  /** the hash the running container carries (com.docker.compose.config-hash) */
  runningHash: string | undefined;
  /** a rollback on request: the move goes back to the version the service ran before */
  back?: boolean;
  /** a built service's base tags: what Git says it moved from and to (absent: the image line's) */
  from?: string;
  to?: string;
}

/** What one write of a stack did: the files, and per container the labels its replacement carries. */
export interface Written {
  files: FileChange[];
  /** container -> the config hash compose will compute for its service now */
  hashes: Map<string, string>;
  /** container -> why compose's next `up -d` recreates it all the same */
  recreates: Map<string, string>;
}

export interface ComposeOptions {
  /** `[compose] write` */
  write: boolean;
  /** where the texts before svc's changes are kept (state_dir/compose), or null */
  stateDir: string | null;
  /** the compose CLI (asked once, at the first write); null: none on this machine (scratch image) */
  cli?: ComposeCli | null | (() => Promise<ComposeCli | null>);
  /** DOCKER_CONFIG for the compose CLI (where its plugin may be), when the CLI is looked for */
  dockerConfig?: string;
}

type Hasher = (project: ComposeProject) => Promise<string>;

export class ComposeFiles {
  private found?: Promise<ComposeCli | null>;

  constructor(private readonly options: ComposeOptions) {}

  get enabled(): boolean {
    return this.options.write;
  }

  /** The compose CLI, looked for once. */
  cli(): Promise<ComposeCli | null> {
    const given = this.options.cli;
    // nothing lost in the catch: no compose CLI found (null) leaves svc's own hash alone (hashers, below)
    this.found ??=
      typeof given === "function"
        ? given()
        : given !== undefined
          ? Promise.resolve(given)
          : findComposeCli({ dockerConfig: this.options.dockerConfig }).catch(() => null);
    return this.found;
  }

  /**
   * Where a compose container's version is written, or why svc leaves its files alone. null: not a
   * compose container. `imageLabels`: its image's own labels (null: they cannot be read), for the
   * labels it has from its image, which name no file svc writes (docs/compose.md, "Labels an image
   * brings").
   */
  where(
    labels: Readonly<Record<string, string>>,
    running: string,
    imageLabels: Readonly<Record<string, string>> | null,
  ): Located | null {
    const project = projectOf(labels);
    if (!project) return null;
    if (!this.options.write) return { ok: false, reason: "[compose] write is off", optedOut: true };
    if (labels[WRITE_LABEL]?.trim() === "false")
      return { ok: false, reason: `label ${WRITE_LABEL}=false keeps its files untouched`, optedOut: true };
    // not a compose container for its files: left alone on purpose (a rollback goes on without them)
    const untrusted = untrustedBecause(labels, imageLabels);
    if (untrusted) return { ok: false, reason: untrusted, optedOut: true };
    const located = locate(project, running);
    if (!located.ok) return located;
    for (const file of new Set(
      [located.site.tag.origin.file, located.site.digest?.origin.file].filter((f): f is string => f !== undefined),
    )) {
      const problem = writable(file);
      if (problem) return { ok: false, reason: problem };
    }
    return located;
  }

  /** The move of a located service to `reference` (a new tag, and its digest when the line pins one). */
  plan(
    container: string,
    site: ImageSite,
    reference: string,
    newDigest: string | null,
    runningHash: string | undefined,
  ): ComposeMove | string {
    const parts = splitImage(reference);
    if (!parts.tag) return `${reference} names no tag`;
    const tag = reference.slice(parts.tag[0], parts.tag[1]);
    const edits: Edit[] = [];
    if (tag !== site.tag.text)
      edits.push({ file: site.tag.origin.file, offset: site.tag.origin.offset, old: site.tag.text, new: tag });
    if (site.digest) {
      const digest = parts.digest ? reference.slice(parts.digest[0], parts.digest[1]) : newDigest;
      if (!digest) return `${site.project.service}'s line pins a digest, and the new one is not known`;
      if (digest !== site.digest.text)
        edits.push({
          file: site.digest.origin.file,
          offset: site.digest.origin.offset,
          old: site.digest.text,
          new: digest,
        });
    }
    const changes = edits.map((edit) =>
      describeEdit(
        edit,
        site.texts.get(edit.file) ?? "",
        site.project.workingDir,
        edit.file === site.tag.origin.file && site.variable ? site.variable : null,
      ),
    );
    return { container, site, edits, changes, runningHash };
  }

  /**
   * Writes the moves of one stack: each file once, with every edit in it (a run shared by two
   * services once), after checking that compose's hash over the files as they are is the one each
   * container carries; then the hash of each service over the new files. Throws, writing nothing,
   * when a file changed since svc read it or cannot be written.
   */
  async write(moves: readonly ComposeMove[]): Promise<Written> {
    const recreates = new Map<string, string>();
    const trusted = new Map<string, Hasher>();
    const hashers = await this.hashers();
    for (const move of moves) {
      const held = await this.hashHolds(hashers, move);
      if (typeof held === "string") recreates.set(move.container, held);
      else trusted.set(move.container, held);
    }
    const files = changesOf(moves);
    const done: FileChange[] = [];
    try {
      for (const change of files) {
        replaceFile(change.file, change.before, change.after);
        done.push(change);
      }
    } catch (error) {
      this.revert(done);
      throw error;
    }
    this.keep(moves, files);
    const hashes = new Map<string, string>();
    for (const move of moves) {
      const hashOf = trusted.get(move.container);
      if (!hashOf) continue;
      try {
        hashes.set(move.container, await hashOf(move.site.project));
      } catch (error) {
        recreates.set(move.container, `compose's hash of the new files is unknown (${toSvcError(error).message})`);
      }
    }
    return { files, hashes, recreates };
  }

  /**
   * Keeps only the edits of the moves that stand (their containers run the new version): each file
   * is written once more, to exactly what `before` becomes with those edits (with none: byte for
   * byte what svc read). Answers the problems (a file changed since svc wrote it is left alone).
   */
  keepOnly(written: Written, standing: readonly ComposeMove[]): string[] {
    const problems: string[] = [];
    for (const change of written.files) {
      const kept = change.edits.filter((edit) =>
        standing.some((move) => move.edits.some((e) => e.file === edit.file && e.offset === edit.offset)),
      );
      const target = applyEdits(change.before, kept);
      if (target === change.after) continue;
      try {
        replaceFile(change.file, change.after, target);
      } catch (error) {
        problems.push(`${change.file} was not written back: ${toSvcError(error).message}`);
      }
    }
    return problems;
  }

  /** Puts files back as they were before svc's change, each only if it still holds what svc wrote. Answers the problems. */
  revert(files: readonly FileChange[]): string[] {
    const problems: string[] = [];
    for (const change of [...files].reverse()) {
      try {
        replaceFile(change.file, change.after, change.before);
      } catch (error) {
        problems.push(`${change.file} was not written back: ${toSvcError(error).message}`);
      }
    }
    return problems;
  }

  /**
   * Ways to compose's hash of a service over its files as they are, in order: the compose CLI's
   * answer, then svc's own (servicehash.ts). Both are asked where a CLI exists, since `config
   * --hash` keeps `env_file` where `up` hashes the environment it reads from it (docs/compose.md).
   */
  private async hashers(): Promise<Hasher[]> {
    const own: Hasher = async (project) => {
      const answer = await computeServiceHash(project);
      if ("unknown" in answer) throw new Error(answer.unknown);
      return answer.hash;
    };
    const cli = await this.cli();
    return cli ? [(project) => serviceHash(cli, project), own] : [own];
  }

  /** The first way whose hash over the files as they are is the container's own (so its new one can be trusted), else why none. */
  private async hashHolds(hashers: readonly Hasher[], move: ComposeMove): Promise<Hasher | string> {
    const service = move.site.project.service;
    if (!move.runningHash) return `the container carries no compose config hash`;
    const problems: string[] = [];
    for (const hashOf of hashers) {
      try {
        if ((await hashOf(move.site.project)) === move.runningHash) return hashOf;
      } catch (error) {
        problems.push(toSvcError(error).message);
      }
    }
    if (problems.length === hashers.length)
      return `compose's hash of ${service} is unknown (${hashers.length === 1 ? "no compose CLI here, and " : ""}${problems.join("; ")}): compose recreates it once at its next up`;
    return `compose's hash of ${service} over its files differs from the container's already (set by compose with other variables, or a network_mode/volumes_from service): compose recreates it once at its next up`;
  }

  /** The texts before and after, kept in state_dir/compose/<project>/<service>.json (the last change of each service). */
  private keep(moves: readonly ComposeMove[], files: readonly FileChange[]): void {
    if (!this.options.stateDir) return;
    try {
      for (const move of moves) {
        const folder = join(this.options.stateDir, "compose", safeName(move.site.project.name));
        mkdirSync(folder, { recursive: true, mode: 0o700 });
        const mine = files.filter((f) => move.edits.some((e) => e.file === f.file));
        writeFileAtomically(
          join(folder, `${safeName(move.site.project.service)}.json`),
          JSON.stringify(
            { container: move.container, at: new Date().toISOString(), changes: move.changes, files: mine },
            null,
            1,
          ),
        );
      }
    } catch {
      // the rollback works from the files themselves; the copy is for the person who looks
    }
  }
}

/** Every file's change once: the edits of every move into it, a run shared by several moves once. */
export function changesOf(moves: readonly ComposeMove[]): FileChange[] {
  const byFile = new Map<string, { before: string; edits: Map<number, Edit> }>();
  for (const move of moves) {
    for (const edit of move.edits) {
      const entry = byFile.get(edit.file) ?? { before: move.site.texts.get(edit.file)!, edits: new Map() };
      const same = entry.edits.get(edit.offset);
      if (same && same.new !== edit.new)
        throw new Error(`${edit.file}: two services move one text to ${same.new} and ${edit.new}`);
      entry.edits.set(edit.offset, edit);
      byFile.set(edit.file, entry);
    }
  }
  return [...byFile].map(([file, { before, edits }]) => ({
    file,
    before,
    after: applyEdits(before, [...edits.values()]),
    edits: [...edits.values()],
  }));
}

function safeName(name: string): string {
  return name.replace(/[^A-Za-z0-9_.-]/g, "_");
}

/**
 * Which compose projects svc can write, for its start-up line: per project (its containers'
 * labels), whether every compose file is visible and its folder writable, and whether its labels
 * are its containers' own, not their images' (`imageLabels`: an image id's labels, as the one image
 * list gave them; an image it does not hold is taken to have none). Files only: a service may still
 * hold for its own reason (a variable of the shell, a shared line).
 */
export function surveyProjects(
  containers: readonly { labels: Readonly<Record<string, string>>; imageId?: string }[],
  write: boolean,
  imageLabels: ReadonlyMap<string, Readonly<Record<string, string>>> = new Map(),
): string | null {
  const projects = new Map<string, ComposeProject & { untrusted?: string }>();
  for (const { labels, imageId } of containers) {
    const project = projectOf(labels);
    if (!project) continue;
    const key = `${project.workingDir}\0${project.name}`;
    const untrusted = untrustedBecause(labels, imageLabels.get(imageId ?? "") ?? {});
    // one container of a project whose labels came from its image is enough to name it
    if (!projects.get(key)?.untrusted) projects.set(key, { ...project, ...(untrusted ? { untrusted } : {}) });
  }
  if (projects.size === 0) return null;
  if (!write)
    return `compose: [compose] write is off: tag moves of ${projects.size} compose project${projects.size === 1 ? "" : "s"} stay reported only`;
  const writable: string[] = [];
  const not: string[] = [];
  for (const project of projects.values()) {
    const problem = projectProblem(project);
    if (problem) not.push(`${project.name} (${problem})`);
    else writable.push(project.name);
  }
  const can = writable.length > 0 ? `svc can write ${writable.sort().join(", ")}` : "svc can write no compose project";
  return `compose: ${can}${not.length > 0 ? `; not ${not.sort().join(", ")}` : ""}`;
}

function projectProblem(project: ComposeProject & { untrusted?: string }): string | null {
  if (project.untrusted) return project.untrusted;
  if (project.configFiles.length === 0) return "its containers name no compose file";
  for (const file of project.configFiles) {
    if (!existsSync(file)) return `svc cannot see ${file}: mount the project folder at the same path, docs/compose.md`;
    const problem = writable(file);
    if (problem) return problem;
  }
  return null;
}
