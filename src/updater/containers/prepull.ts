/**
 * pre_pull (docs/windows.md): a container held by its update window gets its newer image pulled
 * when it is found, so the window holds only the stop and the start, and the time the container
 * is down does not depend on the network. The image pulled is remembered per container; one that
 * a newer image supersedes before its window opens is removed as `cleanup` removes the images
 * updates leave (when cleanup is on, and once no container runs it).
 */

import { toSvcError } from "../../core/errors.ts";
import type { Engine } from "../../engine/port.ts";
import type { Registry } from "../../registry/port.ts";
import type { Remembered } from "../../state/index.ts";
import type { Checker } from "../check/check.ts";
import { act } from "../cycle/act.ts";
import type { ProtocolContext } from "../cycle/context.ts";
import type { ContainerEntry } from "./entry.ts";
import { isHere, pullReference } from "./replace.ts";

export interface PrePullDeps {
  engine: Engine;
  registry: Registry;
  cleanup: boolean;
  /** container name -> the image id pulled ahead of its window */
  prePulled: Remembered;
}

/** Pulls a pending container's newer image ahead of its window: each reference once per cycle. */
export interface PrePuller {
  /** the newer image's id once pulled (or already here) and remembered; null when not pulled ahead (see `pullsAhead`) or the pull failed */
  pull(entry: ContainerEntry): Promise<string | null>;
}

/** Whether pre_pull pulls this container's newer image ahead of its window. */
export const pullsAhead = (entry: ContainerEntry): boolean =>
  // a built service's image is built at its window, not pulled (containers/rebuild.ts)
  entry.state === "pending" &&
  entry.policy.prePull &&
  !entry.policy.noPull &&
  Boolean(entry.verdict?.ref) &&
  !entry.built;

/**
 * One cycle's puller: the vulnerabilities' read (containers/vulns.ts) and the pre-pull step
 * share it, so that an image pulled ahead to be read is not asked for again.
 */
export function createPrePuller(deps: PrePullDeps, ctx: ProtocolContext, checker: Checker): PrePuller {
  const done = new Map<string, Promise<string | null>>();
  return {
    async pull(entry) {
      if (!pullsAhead(entry)) return null;
      const reference = entry.newImage ?? pullReference(entry.verdict!.ref!);
      let pulling = done.get(reference);
      if (!pulling) {
        pulling = pullAhead(deps, ctx, checker, entry, reference).catch((error) => {
          ctx.log.warn("pulling ahead of the update window failed; the window's update pulls", {
            container: entry.summary.name,
            image: reference,
            error: toSvcError(error).message,
          });
          return null;
        });
        done.set(reference, pulling);
      }
      const imageId = await pulling;
      if (imageId !== null) await remember(deps, ctx, entry.summary.name, imageId);
      return imageId;
    },
  };
}

/** The pending containers' newer images, pulled one reference at a time; a failure is logged and left to the window's own pull. */
export async function prePull(puller: PrePuller, entries: Iterable<ContainerEntry>): Promise<void> {
  for (const entry of entries) await puller.pull(entry);
}

/** The image id `reference` names once the newer image is here (pulled now, or already). */
async function pullAhead(
  deps: PrePullDeps,
  ctx: ProtocolContext,
  checker: Checker,
  entry: ContainerEntry,
  reference: string,
): Promise<string | null> {
  if (await isHere(deps.engine, entry, reference)) return (await deps.engine.inspectImage(reference))?.Id ?? null;
  const platform = await checker.platformOf(entry.summary.imageId);
  const auth = await deps.registry.pullAuth(entry.verdict!.ref!);
  await act(ctx, "pull", { container: entry.summary.name, container_id: entry.summary.id, image: reference }, () =>
    deps.engine.pullImage(reference, { platform, auth, digest: entry.newDigest }),
  );
  return (await deps.engine.inspectImage(reference))?.Id ?? null;
}

/** Remembers the image pulled for `name`; the one it supersedes goes, as cleanup would remove it. */
async function remember(deps: PrePullDeps, ctx: ProtocolContext, name: string, imageId: string): Promise<void> {
  const superseded = deps.prePulled.get(name);
  if (superseded === imageId) return;
  deps.prePulled.set(name, imageId);
  if (superseded === undefined || !deps.cleanup) return;
  try {
    const inUse = (await deps.engine.listContainers()).some((c) => c.imageId === superseded);
    if (inUse || deps.prePulled.entries().some(([, id]) => id === superseded)) return;
    await act(ctx, "image_remove", { container: name, image: superseded }, () => deps.engine.removeImage(superseded));
  } catch (error) {
    ctx.log.warn("could not remove the image a newer one superseded before its window", {
      container: name,
      image: superseded,
      error: toSvcError(error).message,
    });
  }
}

/** Once a container is updated (or caught up), what was pulled ahead for it is no longer remembered. */
export function forgetPrePulled(prePulled: Remembered, entries: Iterable<ContainerEntry>): void {
  for (const entry of entries)
    if (entry.state === "updated" || entry.state === "fresh") prePulled.delete(entry.summary.name);
}
