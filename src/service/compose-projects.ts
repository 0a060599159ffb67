/** The start-up line on the compose projects svc can and cannot write (docs/compose.md). */
import { COMPOSE_LABELS } from "../compose/index.ts";
import type { Config } from "../config/index.ts";
import { toSvcError } from "../core/errors.ts";
import type { Engine } from "../engine/port.ts";
import type { Logger } from "../log/index.ts";
import { imagesOfContainers } from "../updater/check/images.ts";
import { scopeFilter } from "../updater/selection/selection.ts";

type Survey = (
  containers: { labels: Readonly<Record<string, string>>; imageId: string }[],
  write: boolean,
  imageLabels: ReadonlyMap<string, Readonly<Record<string, string>>>,
) => string | null;

/**
 * One container list, the images of its compose containers (their labels, which name no file svc
 * writes; none asked for when no container is compose's) and a few file checks, before the first
 * cycle; a failure is a debug line, never a failed start.
 */
export async function tellComposeProjects(
  engine: Pick<Engine, "listContainers" | "listImages">,
  config: Config,
  survey: Survey,
  log: Logger,
): Promise<void> {
  try {
    const inScope = (await engine.listContainers()).filter(scopeFilter(config.scope));
    const composed = inScope.filter((c) => c.labels[COMPOSE_LABELS.project] !== undefined);
    const images = composed.length > 0 ? await imagesOfContainers(engine, composed) : [];
    const imageLabels = new Map(images.map((image) => [image.id, image.labels ?? {}]));
    const line = survey(inScope, config.compose.write, imageLabels);
    if (line) log.info(line);
  } catch (error) {
    log.debug("compose projects not surveyed", { error: toSvcError(error).message });
  }
}
