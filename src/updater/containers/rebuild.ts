/**
 * A built service's new image, made where a pulled service's is pulled (docs/compose.md, "Built
 * services"): the compose CLI builds it (`build --pull`), else (no CLI here, or an engine reached
 * with TLS, which svc does not hand the CLI) the engine's build endpoint builds the context svc
 * packs itself, with its classic builder; one build at a time, after a free-disk check, under
 * `[compose] build_timeout`. Either way the image is tagged with compose's name for it, which
 * compose's next `up -d` expects, so the replacement carries compose's `com.docker.compose.image`
 * label for it. The old
 * image stays by id (the parked container holds it); when the replacement does not stand, the
 * compose tag is pointed back at it, so nothing is left half-done.
 */
import {
  type BuildSpec,
  buildCommand,
  COMPOSE_LABELS,
  type ComposeCli,
  type ComposeFiles,
  describeCommand,
  diskProblem,
  engineBuildProblem,
  packContext,
  runBuild,
} from "../../compose/index.ts";
import type { Config } from "../../config/index.ts";
import { toSvcError } from "../../core/errors.ts";
import type { Engine, RegistryAuth } from "../../engine/port.ts";
import { parseReference } from "../../registry/index.ts";
import type { Registry } from "../../registry/port.ts";
import type { Remembered } from "../../state/index.ts";
import { BUILT_IMAGE_KEY, describeMoves, readBaseline, writeBaseline } from "../check/bases.ts";
import { act } from "../cycle/act.ts";
import type { ProtocolContext } from "../cycle/context.ts";
import { finish } from "../cycle/target.ts";
import type { ContainerEntry } from "./entry.ts";

/** The label compose puts on a container: the id of the image it was created from (docker/compose, api.ImageDigestLabel). */
export const IMAGE_LABEL = "com.docker.compose.image";

/** The name the image a built service ran before its rebuild keeps: `<repository>:svc-previous`. */
export function previousTag(image: string): string {
  const bare = image.includes("@") ? image.slice(0, image.indexOf("@")) : image;
  const colon = bare.lastIndexOf(":");
  return `${colon > bare.lastIndexOf("/") ? bare.slice(0, colon) : bare}:svc-previous`;
}

/** Why svc does not rebuild a built service here, or null when it does (asked once a cycle, when one is built). */
export async function rebuildHeld(
  config: Config,
  compose: ComposeFiles | undefined,
  engine: Pick<Engine, "buildImage">,
): Promise<string | null> {
  if (!config.compose.rebuild) return "[compose] rebuild is off";
  if (await usableCli(config, compose)) return null;
  if (!engine.buildImage)
    return "no compose CLI here, and the engine builds nothing for svc: run docker compose build --pull and up -d yourself (docs/compose.md)";
  return null;
}

/** The compose CLI svc builds with, or null: none here, or an engine reached with TLS (svc hands the CLI no TLS settings). */
async function usableCli(config: Config, compose: ComposeFiles | undefined): Promise<ComposeCli | null> {
  if (config.docker.tls_verify || config.docker.tls_cert) return null;
  return (await compose?.cli()) ?? null;
}

/**
 * How a built service is rebuilt here, as a dry run or monitor-only says it (the command, or the
 * engine's build), or why it is not (what the engine's classic builder cannot build, named).
 */
export async function rebuildPlan(
  config: Config,
  compose: ComposeFiles | undefined,
  spec: BuildSpec,
): Promise<{ command: string | null; held: string | null }> {
  const cli = await usableCli(config, compose);
  if (cli) return { command: describeCommand(buildCommand(cli, spec.project, spec.profiles)), held: null };
  const problem = engineBuildProblem(spec);
  if (problem) return { command: null, held: `no compose CLI here, and ${problem}` };
  return { command: describeEngineBuild(spec), held: null };
}

/** The engine's build as svc says it: what is sent to POST /build. */
function describeEngineBuild(spec: BuildSpec): string {
  const parts = [`context ${spec.context}`, spec.dockerfile ? `dockerfile ${spec.dockerfile}` : "dockerfile_inline"];
  if (spec.target) parts.push(`target ${spec.target}`);
  if (spec.platform) parts.push(`platform ${spec.platform}`);
  return `POST /build (the engine's classic builder, pull): ${parts.join(", ")}, tag ${spec.image}`;
}

export interface RebuildDeps {
  config: Config;
  engine: Engine;
  /** the logins the pulls of a build's bases use (the engine's build) */
  registry?: Pick<Registry, "pullAuth">;
  compose?: ComposeFiles;
  /** one build at a time, across the groups a cycle replaces together */
  builds: { queue: Promise<unknown> };
}

/**
 * Builds the entry's new image; true when it differs from the running one and the entry is to
 * be replaced (its newImageId set), false when it is finished (failed, skipped, or fresh: the
 * build gave the image it runs).
 */
export async function rebuild(deps: RebuildDeps, ctx: ProtocolContext, entry: ContainerEntry): Promise<boolean> {
  const spec = entry.built?.spec;
  const inspect = entry.inspect!;
  if (!spec) {
    finish(entry, "skipped", "no compose build svc can read: not rebuilt");
    return false;
  }
  if (inspect.Config.Image !== spec.image) {
    finish(entry, "skipped", `its container runs ${inspect.Config.Image}, compose builds ${spec.image}: not rebuilt`);
    return false;
  }
  const cli = await usableCli(deps.config, deps.compose);
  const problem = cli ? null : deps.engine.buildImage ? engineBuildProblem(spec) : "the engine builds nothing for svc";
  if (problem) {
    finish(entry, "skipped", `no compose CLI here, and ${problem}: not rebuilt`);
    return false;
  }
  const disk = diskProblem(spec.project);
  if (disk) {
    finish(entry, "skipped", `not rebuilt: ${disk}`);
    return false;
  }
  // the image it runs keeps a name of its own: the containerd image store forgets an image whose
  // last name the build moves, and the rollback (or `svc rollback`) needs it
  try {
    await act(ctx, "image_tag", { container: entry.summary.name, image: previousTag(spec.image) }, () =>
      deps.engine.tagImage(entry.summary.imageId, previousTag(spec.image)),
    );
    entry.previousTagged = true;
  } catch (error) {
    finish(entry, "skipped", `not rebuilt: the image it runs cannot be kept (${toSvcError(error).message})`);
    return false;
  }
  const run = deps.builds.queue.then(() =>
    cli ? build(deps, ctx, entry, cli, spec) : engineBuild(deps, ctx, entry, spec),
  );
  deps.builds.queue = run.catch(() => {});
  try {
    await run;
  } catch (error) {
    finish(entry, "failed", `rebuild failed: ${toSvcError(error).message}`);
    return false;
  }
  const built = await deps.engine.inspectImage(spec.image).catch(() => null);
  if (!built) {
    finish(entry, "failed", `rebuild failed: no image ${spec.image} after the build`);
    return false;
  }
  entry.rebuiltFrom = entry.summary.imageId;
  if (built.Id === entry.summary.imageId) {
    finish(entry, "fresh", "rebuilt: the same image as it runs");
    return false;
  }
  entry.newImageId = built.Id;
  if (inspect.Config.Labels?.[IMAGE_LABEL] !== undefined)
    entry.composeLabels = { ...entry.composeLabels, [IMAGE_LABEL]: built.Id };
  return true;
}

function build(deps: RebuildDeps, ctx: ProtocolContext, entry: ContainerEntry, cli: ComposeCli, spec: BuildSpec) {
  return act(ctx, "build", { container: entry.summary.name, container_id: entry.id, image: spec.image }, () =>
    runBuild(
      cli,
      spec.project,
      {
        dockerHost: deps.config.docker.host,
        timeoutMs: deps.config.compose.build_timeout,
      },
      spec.profiles,
    ),
  );
}

/**
 * The build through the engine's build endpoint: the context packed by svc (compose room), the
 * labels compose puts on an image it builds (build.labels, the project, the service, and the
 * compose version the running image was built by), the logins of the bases' registries.
 */
function engineBuild(deps: RebuildDeps, ctx: ProtocolContext, entry: ContainerEntry, spec: BuildSpec) {
  return act(ctx, "build", { container: entry.summary.name, container_id: entry.id, image: spec.image }, async () => {
    const running = await deps.engine.inspectImage(entry.summary.imageId).catch(() => null);
    const version = running?.Config?.Labels?.[COMPOSE_VERSION_LABEL];
    const packed = packContext(spec);
    await deps.engine.buildImage!(packed.stream, {
      tag: spec.image,
      dockerfile: packed.dockerfile,
      args: Object.fromEntries([...spec.args].filter((pair): pair is [string, string] => pair[1] !== null)),
      target: spec.target,
      network: spec.network,
      labels: {
        ...Object.fromEntries(spec.labels),
        ...(version ? { [COMPOSE_VERSION_LABEL]: version } : {}),
        [COMPOSE_LABELS.project]: spec.project.name,
        [COMPOSE_LABELS.service]: spec.project.service,
      },
      platform: spec.platform,
      auths: await baseAuths(deps, entry),
      timeoutMs: deps.config.compose.build_timeout,
    });
  });
}

/** The label compose puts on an image it builds: its own version (docker/compose, api.VersionLabel). */
const COMPOSE_VERSION_LABEL = "com.docker.compose.version";

/** The logins of the registries the entry's bases come from, one per registry. */
async function baseAuths(deps: RebuildDeps, entry: ContainerEntry): Promise<RegistryAuth[]> {
  const found = new Map<string, RegistryAuth>();
  for (const base of entry.built?.bases ?? []) {
    // a base svc cannot name a login for is pulled anonymously, as the engine would
    const auth = await Promise.resolve()
      .then(() => deps.registry?.pullAuth(parseReference(base.reference)))
      .catch(() => undefined);
    if (auth && !found.has(auth.serveraddress)) found.set(auth.serveraddress, auth);
  }
  return [...found.values()];
}

/**
 * Once the entry's group is done: a replacement that stands records the bases it was built from
 * (the next move is counted from them), and `svc-previous` keeps naming the image it left (for
 * the rollback; `cleanup` removes that image, and so the name, after `cleanup_delay`). One that
 * does not points compose's tag back at the image the old container runs, so that `compose up
 * -d` finds what it left; that image then needs no name of svc's, which goes.
 */
export async function settleRebuild(
  engine: Engine,
  ctx: ProtocolContext,
  memory: Remembered | undefined,
  entry: ContainerEntry,
): Promise<void> {
  const spec = entry.built?.spec;
  if (!spec || !entry.previousTagged) return;
  const moved = entry.verdict?.bases?.moved ?? [];
  const built = entry.rebuiltFrom !== undefined;
  if (built && (entry.state === "updated" || entry.state === "fresh") && memory) {
    const baseline = readBaseline(memory, entry.summary.name);
    // the image svc built is the one the container runs now (fresh: the one it ran)
    baseline.set(
      BUILT_IMAGE_KEY,
      entry.state === "updated" && entry.newImageId ? entry.newImageId : entry.summary.imageId,
    );
    for (const base of entry.verdict?.bases?.bases ?? []) {
      // a base moved to a newer tag: the Dockerfile names the new reference now
      if (base.site && base.newer) {
        baseline.delete(base.reference);
        baseline.set(base.newer.reference, base.newer.digest);
      } else baseline.set(base.reference, base.now);
    }
    writeBaseline(memory, entry.summary.name, baseline);
  }
  if (built && entry.state === "updated") {
    entry.reason = `rebuilt: ${describeMoves(moved)}`;
    return;
  }
  if (built && entry.state !== "fresh") {
    try {
      await act(ctx, "image_tag", { container: entry.summary.name, image: spec.image }, () =>
        engine.tagImage(previousTag(spec.image), spec.image),
      );
    } catch (error) {
      entry.reason = `${entry.reason ?? ""}; ${spec.image} still names the image that failed: ${toSvcError(error).message}`;
      return;
    }
  }
  // compose's tag names the image the container runs: svc's second name for it goes (only the name)
  const previous = previousTag(spec.image);
  try {
    await act(ctx, "image_remove", { container: entry.summary.name, image: previous }, () =>
      engine.removeImage(previous),
    );
  } catch (error) {
    ctx.log.warn("could not remove svc's name of the image it kept", {
      image: previous,
      error: toSvcError(error).message,
    });
  }
}
