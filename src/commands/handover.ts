/**
 * `svc handover <old id> <new id> <name> [svc's own arguments]`: not for users. The helper
 * container of a self-update with published ports runs it (see src/updater/containers/handover.ts).
 */
import { type Config, logSettings } from "../config/index.ts";
import { createLogging } from "../log/index.ts";

export async function runHandoverCommand(
  config: Config,
  job: { oldId: string; newId: string; name: string },
): Promise<number> {
  const logging = createLogging(logSettings(config));
  try {
    const [{ createDockerEngine }, { runHandover }] = await Promise.all([
      import("../engine/index.ts"),
      import("../updater/index.ts"),
    ]);
    const engine = await createDockerEngine(config.docker, logging.log);
    const replaced = await runHandover({ config, engine, log: logging.log, audit: logging.audit }, job);
    return replaced ? 0 : 1;
  } finally {
    await logging.close();
  }
}
