/** run_once: one cycle, its report, and the exit code that tells it. */
import type { Config } from "../config/index.ts";
import type { Logger } from "../log/index.ts";
import type { Updater } from "../updater/index.ts";
import type { SessionReport } from "../updater/types.ts";
import type { StopSignal } from "./signals.ts";

/**
 * run_once: exit 0 when no container failed or was rolled back, 1 otherwise, as README.md says;
 * 1 as well when containers were named and none of them was found (a typo is not "nothing to do"),
 * and when a compose change svc wrote was not recorded in Git as `[compose] git` asks (a refused
 * commit: the files hold the new version, the repository does not).
 */
export function runOnceExitCode(report: SessionReport | null, named = false): number {
  if (report === null || (named && report.counts.scanned === 0)) return 1;
  if (report.containers.some((c) => c.compose?.written && c.compose.git?.problem)) return 1;
  return report.containers.some((c) => c.state === "failed" || c.state === "rolled_back") ? 1 : 0;
}

export async function runOnce(
  config: Config,
  updater: Updater,
  stop: Promise<StopSignal>,
  log: Logger,
  json: boolean,
): Promise<number> {
  // the HTTP API settings beside run_once were said when the configuration was read (config/load.ts)
  // `svc --run-once NAME` names what a person asks for: no update window holds it (docs/windows.md)
  const named = config.containers.length > 0 ? { container: [...config.containers] } : undefined;
  const outcome = await Promise.race([updater.run("run_once", named), stop]);
  if (typeof outcome === "string") {
    log.info("stopping: waiting for the running update to finish", { signal: outcome });
    return 0;
  }
  // a run-once user must see what happened: the lines per container said it; in json the whole
  // report too, one record a program can read (in logfmt it would be an escaped string)
  if (outcome && json) log.info("session report", { ...outcome });
  return runOnceExitCode(outcome, config.containers.length > 0);
}
