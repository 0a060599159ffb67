/** Crash recovery at start, postponed while the engine does not answer. */
import { toSvcError } from "../core/errors.ts";
import type { Logger } from "../log/index.ts";
import type { Updater } from "../updater/index.ts";

/**
 * A host may start svc before its engine: an unreachable engine must not stop the service.
 * Recovery is then postponed, and the updater repairs leftovers before its next cycle.
 */
export async function recoverOrPostpone(
  updater: Updater,
  log: Logger,
  engine?: { info(): Promise<unknown> },
): Promise<void> {
  // An engine that did not answer at start was named then ("not reachable yet"): nothing crashed,
  // and what an interrupted update left is looked for by the first cycle that reaches it.
  if (
    engine &&
    !(await engine.info().then(
      () => true,
      () => false,
    ))
  ) {
    log.debug("crash recovery postponed until the engine answers");
    return;
  }
  try {
    await updater.recover();
  } catch (error) {
    const svcError = toSvcError(error);
    if (svcError.kind !== "engine") throw error;
    // The updater has logged it already, at error level.
    log.debug("crash recovery postponed until the engine answers", { error: svcError.message });
  }
}
