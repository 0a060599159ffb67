/** The start-up line on the compose projects svc can and cannot write (docs/compose.md). */
import type { Config } from "../config/index.ts";
import { toSvcError } from "../core/errors.ts";
import type { Engine } from "../engine/port.ts";
import type { Logger } from "../log/index.ts";
import { scopeFilter } from "../updater/selection/selection.ts";

type Survey = (containers: { labels: Readonly<Record<string, string>> }[], write: boolean) => string | null;

/** One container list and a few file checks, before the first cycle; a failure is a debug line, never a failed start. */
export async function tellComposeProjects(
  engine: Pick<Engine, "listContainers">,
  config: Config,
  survey: Survey,
  log: Logger,
): Promise<void> {
  try {
    const inScope = (await engine.listContainers()).filter(scopeFilter(config.scope));
    const line = survey(inScope, config.compose.write);
    if (line) log.info(line);
  } catch (error) {
    log.debug("compose projects not surveyed", { error: toSvcError(error).message });
  }
}
