/**
 * Containers of services compose builds (docs/compose.md, "Built services"): found before the
 * check from their project's files (compose `build:`, through the compose room), or named by hand
 * with the label `svc.build.base`; the check then follows their bases (check/bases.ts) instead of
 * their own image, which no registry holds.
 */
import {
  annotatedBases,
  BASE_NAME_ANNOTATION,
  type BaseImage,
  BUILD_BASE_LABEL,
  type BuildSpec,
  basesOf,
  buildOf,
  COMPOSE_LABELS,
  type ComposeMove,
  describeEdit,
  type Edit,
  labelledBases,
  projectOf,
  readText,
  untrustedBecause,
  WRITE_LABEL,
  writable,
} from "../../compose/index.ts";
import { toSvcError } from "../../core/errors.ts";
import type { Engine, ImageSummary } from "../../engine/port.ts";
import type { BaseInput } from "../check/bases.ts";
import type { BuiltInput } from "../check/check.ts";
import { type Decision, decision } from "../cycle/target.ts";
import type { BuiltReport } from "../types.ts";
import type { BuiltTarget, ContainerEntry } from "./entry.ts";

/**
 * Marks the entries whose containers compose built. An image's labels come from the cycle's one
 * image list (a label naming a project that came from the image names no file svc reads).
 *
 * Where the engine keeps an image's annotations (Podman), an image built here whose build svc
 * cannot read (podman-compose names its files by relative paths; a remote context; `podman build`
 * by hand) is followed through the base buildah's annotation names: such an image is one the
 * compose files say is built, or one named `localhost/...`, Podman's name for an image built
 * here and never pulled (a pulled image's annotations name the base its publisher built it from,
 * and it follows its own tag instead). The label replaces both; a Dockerfile svc reads wins
 * over the annotation, which names the last stage's base only.
 */
export async function findBuilt(
  engine: Pick<Engine, "inspectImage" | "imageAnnotations">,
  images: readonly ImageSummary[],
  entries: Iterable<ContainerEntry>,
  write = false,
): Promise<void> {
  const listed = new Map(images.map((image) => [image.id, image.labels]));
  const annotations = new Map<string, Promise<BaseImage[] | null>>();
  const annotated = (imageId: string) => {
    const read = engine.imageAnnotations;
    if (!read) return Promise.resolve(null);
    let found = annotations.get(imageId);
    if (!found) {
      // an engine that cannot say leaves the container as it was without them
      found = read.call(engine, imageId).then(annotatedBases, () => null);
      annotations.set(imageId, found);
    }
    return found;
  };
  for (const entry of entries) {
    const { labels, imageId, image } = entry.summary;
    const labelled = labelledBases(labels);
    const project = projectOf(labels);
    if (!project && !labelled) {
      const bases = image.startsWith(LOCAL_NAME) ? await annotated(imageId) : null;
      if (bases) entry.built = byAnnotation(null, bases, null);
      continue;
    }
    const imageLabels =
      listed.get(imageId) ??
      (await engine.inspectImage(imageId).then(
        (image) => (image ? (image.Config?.Labels ?? {}) : null),
        () => null,
      ));
    const found = project && !untrustedBecause(labels, imageLabels) ? buildOf(project) : null;
    if (labelled) {
      entry.built = {
        spec: found?.ok ? found.spec : null,
        namedBy: "label",
        bases: labelled.map((base) => baseInput(base, null, labels, write, "label")),
        problem: null,
      };
      continue;
    }
    const read = found?.ok ? basesOf(found.spec) : null;
    if (found?.ok && read?.ok) {
      entry.built = {
        spec: found.spec,
        bases: read.bases.map((base) => baseInput(base, found.spec, labels, write, null)),
        problem: null,
      };
      continue;
    }
    const fromAnnotation = found || image.startsWith(LOCAL_NAME) ? await annotated(imageId) : null;
    if (fromAnnotation) entry.built = byAnnotation(found?.ok ? found.spec : null, fromAnnotation, labels);
    else if (found?.ok && read && !read.ok) entry.built = { spec: found.spec, bases: null, problem: read.reason };
    else if (found && !found.ok) entry.built = { spec: null, bases: null, problem: found.reason };
  }
}

/** Podman's name for an image built here (and never pulled): `podman build -t app` names it `localhost/app`. */
const LOCAL_NAME = "localhost/";

function byAnnotation(
  spec: BuildSpec | null,
  bases: BaseImage[],
  labels: Readonly<Record<string, string>> | null,
): BuiltTarget {
  return {
    spec,
    namedBy: "annotation",
    bases: bases.map((base) => baseInput(base, null, labels ?? {}, false, "annotation")),
    problem: null,
  };
}

/**
 * A base as the check takes it: where a tag policy's newer tag is written (the Dockerfile's `FROM`
 * or global `ARG`, as the compose room writes an image line), or why it is only reported.
 */
function baseInput(
  base: BaseImage,
  spec: BuildSpec | null,
  labels: Readonly<Record<string, string>>,
  write: boolean,
  namedBy: "label" | "annotation" | null,
): BaseInput {
  const input: BaseInput = { reference: base.reference, platform: base.platform };
  const held = (why: string) => ({ ...input, tagHeldBecause: why });
  if (namedBy === "label") return held(`named by the label ${BUILD_BASE_LABEL}`);
  if (namedBy === "annotation" || !spec) return held(`named by its image's annotation ${BASE_NAME_ANNOTATION}`);
  if (!write) return held("[compose] write is off");
  if (labels[WRITE_LABEL]?.trim() === "false") return held(`label ${WRITE_LABEL}=false keeps its files untouched`);
  if (base.tagArg) {
    const site = spec.argSites.get(base.tagArg);
    if (!site) return held(`its tag is the build arg ${base.tagArg}, which svc does not find`);
    if ("reason" in site) return held(`its tag is the build arg ${base.tagArg}: ${site.reason}`);
    const problem = writable(site.file);
    if (problem) return held(problem);
    return { ...input, tagSite: { file: site.file, offset: site.offset, text: site.text, variable: site.variable } };
  }
  if (spec.dockerfile === null)
    return held("its Dockerfile is dockerfile_inline: svc moves a tag written in a Dockerfile");
  if (!base.tagAt)
    return held(`its tag is not one run of ${spec.dockerfile} (build.args or several variables give it)`);
  const problem = writable(spec.dockerfile);
  if (problem) return held(problem);
  return { ...input, tagSite: { file: spec.dockerfile, ...base.tagAt } };
}

/**
 * What the check is told of a built container; undefined: not a built one. `held`: why svc
 * rebuilds nothing here (containers/rebuild.ts, rebuildHeld), or null.
 */
export function builtCheckInput(
  entry: ContainerEntry,
  held: string | null,
  command: string | null = null,
): BuiltInput | undefined {
  const built = entry.built;
  if (!built) return undefined;
  return {
    bases: built.bases,
    problem: built.problem,
    command,
    heldBecause: built.spec
      ? held
      : `svc reads no compose build of it (its bases are named by ${built.namedBy === "annotation" ? "its image's annotations" : "label"}): rebuild it yourself`,
  };
}

/** The report's `built` of a built container (types.ts, BuiltReport). */
export function builtReport(entry: ContainerEntry): BuiltReport {
  const found = entry.verdict?.bases;
  return {
    bases: (found?.bases ?? []).map((b) => ({
      reference: b.reference,
      platform: b.platform,
      pinned: b.pinned,
      built_digest: b.built,
      digest: b.now,
    })),
    moved: (found?.moved ?? []).map((b) => b.reference),
    rebuilt: entry.state === "updated" && entry.rebuiltFrom !== undefined,
    command: entry.built?.command ?? null,
  };
}

/**
 * The Dockerfile edits of each built container to rebuild whose bases move to a newer tag (a tag
 * policy): the compose room's move, written before the build and committed or proposed through
 * Git as an image line is. A text that cannot be read as svc found it holds the container stale
 * (the containers it holds are returned).
 */
export function planBuilt(entries: Iterable<ContainerEntry>, toUpdate: ReadonlySet<string>): Decision[] {
  const held: Decision[] = [];
  for (const entry of entries) {
    const name = entry.summary.name;
    const spec = entry.built?.spec;
    const moving = (entry.verdict?.bases?.moved ?? []).filter((b) => b.site && b.newer);
    if (!toUpdate.has(name) || !spec || moving.length === 0) continue;
    const texts = new Map<string, string>();
    const edits: Edit[] = [];
    try {
      for (const base of moving) {
        const site = base.site!;
        const text = texts.get(site.file) ?? readText(site.file);
        texts.set(site.file, text);
        if (text.slice(site.offset, site.offset + site.text.length) !== site.text)
          throw new Error(`${site.file} changed since svc read it`);
        const tag = base.newer!.tag;
        if (!edits.some((e) => e.file === site.file && e.offset === site.offset))
          edits.push({ file: site.file, offset: site.offset, old: site.text, new: tag });
      }
    } catch (error) {
      held.push(decision(name, "stale", `its Dockerfile is not changed: ${toSvcError(error).message}`));
      continue;
    }
    const first = moving[0]!;
    const changes = edits.map((edit) =>
      describeEdit(
        edit,
        texts.get(edit.file) ?? "",
        spec.project.workingDir,
        moving.find((b) => b.site!.offset === edit.offset && b.site!.file === edit.file)?.site?.variable,
      ),
    );
    const move: ComposeMove = {
      container: name,
      site: {
        project: spec.project,
        image: spec.image,
        tag: { origin: { file: first.site!.file, offset: first.site!.offset }, text: first.site!.text },
        digest: null,
        variable: first.site!.variable,
        sharedWith: [],
        texts,
      },
      edits,
      changes,
      runningHash: entry.summary.labels[COMPOSE_LABELS.configHash],
      from: moving.map((b) => b.reference).join(", "),
      to: moving.map((b) => b.newer!.reference).join(", "),
    };
    entry.composeMove = move;
    entry.compose = { changes, written: false, recreates: null };
  }
  return held;
}
