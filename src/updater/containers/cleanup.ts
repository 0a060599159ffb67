/**
 * `cleanup`: the old images updates left, removed once no container uses them, after
 * `cleanup_delay` (kept meanwhile for `svc rollback`), keeping the newest `cleanup_keep` per container.
 */
import type { Config } from "../../config/index.ts";
import { toSvcError } from "../../core/errors.ts";
import type { Engine } from "../../engine/port.ts";
import type { Remembered } from "../../state/index.ts";
import { act } from "../cycle/act.ts";
import type { ProtocolContext } from "../cycle/context.ts";

export interface CleanupDeps {
  config: Config;
  engine: Engine;
  /** images left by an update and waiting for cleanup_delay: image id -> "<container> <ISO time>" */
  leftImages: Remembered;
}

/** An image an update left: the one the container ran before. */
export interface LeftImage {
  container: string;
  imageId: string;
}

/** Remembers the images these updates left, then removes those that are due and unused. */
export async function cleanupImages(
  deps: CleanupDeps,
  ctx: ProtocolContext,
  left: readonly LeftImage[],
): Promise<void> {
  // every image an update leaves waits cleanup_delay (for `svc rollback`; 0: it goes now)
  const now = Date.now();
  for (const { container, imageId } of left)
    deps.leftImages.set(imageId, `${container} ${new Date(now).toISOString()}`);
  const kept = newestLeftImages(deps.leftImages.entries(), deps.config.cleanup_keep);
  const due = deps.leftImages
    .entries()
    .filter(([imageId, value]) => !kept.has(imageId) && parseLeft(value).at + deps.config.cleanup_delay <= now);
  if (due.length === 0) return;
  let inUse: Set<string>;
  try {
    inUse = new Set((await deps.engine.listContainers()).map((c) => c.imageId));
  } catch (error) {
    ctx.log.warn("cleanup skipped: cannot list containers", { error: toSvcError(error).message });
    return;
  }
  const done = new Set<string>();
  for (const [imageId, left] of due) {
    if (done.has(imageId)) continue;
    done.add(imageId);
    // an image a container runs again (a rollback) is no longer waiting to be removed
    deps.leftImages.delete(imageId);
    if (inUse.has(imageId)) continue;
    const { container } = parseLeft(left);
    try {
      await act(ctx, "image_remove", { container, image: imageId }, () => deps.engine.removeImage(imageId));
    } catch (error) {
      ctx.log.warn("could not remove the old image", { image: imageId, error: toSvcError(error).message });
    }
  }
}

/** A left-images entry, "<container> <ISO time>": whose update left the image, and when. */
function parseLeft(value: string): { container: string; at: number } {
  const [container = "", at = ""] = value.split(" ");
  return { container, at: Date.parse(at) };
}

/** cleanup_keep: the images the last `count` updates of each container left. */
function newestLeftImages(entries: [string, string][], count: number): Set<string> {
  const byContainer = new Map<string, { imageId: string; at: number }[]>();
  for (const [imageId, value] of entries) {
    const { container, at } = parseLeft(value);
    const list = byContainer.get(container) ?? [];
    list.push({ imageId, at });
    byContainer.set(container, list);
  }
  const kept = new Set<string>();
  for (const list of byContainer.values()) {
    for (const { imageId } of list.sort((a, b) => b.at - a.at).slice(0, count)) kept.add(imageId);
  }
  return kept;
}
