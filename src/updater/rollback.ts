/**
 * `svc rollback NAME` and `POST /v1/rollback`: put a target back on what it ran before svc's last
 * update of it. A Swarm service is rolled back by Swarm, to its previous spec (services.ts); a
 * container is moved back to its earlier image by a cycle over it alone (the container protocol,
 * with its checks), and the digest it left waits for a newer one.
 */
import type { Config } from "../config/index.ts";
import type { Engine } from "../engine/port.ts";
import { SvcError } from "../errors.ts";
import type { Logger } from "../log/index.ts";
import type { Remembered } from "../state/index.ts";
import type { ProtocolContext } from "./context.ts";
import type { Runner } from "./runner.ts";
import { firstOfKinds, type TargetKind } from "./target.ts";
import type { RollbackResult, Trigger } from "./types.ts";

export interface RollbackDeps {
  config: Config;
  engine: Engine;
  log: Logger;
  /** the image each container ran before svc's last update of it: "<image id>" or "<image id> <reference>" */
  previous: Remembered;
  /** digests skipped, per target name */
  skipped: Remembered;
  /** the kinds of target beside containers (target.ts) */
  kinds: readonly TargetKind[];
  context(trigger: string): ProtocolContext;
  runner: Runner;
}

export async function rollbackTarget(deps: RollbackDeps, name: string, trigger: Trigger = "api"): Promise<RollbackResult | null> {
  if (deps.runner.busy || deps.runner.draining) return null;
  const other = await firstOfKinds(deps.kinds, (kind) => kind.rollback(deps.context(trigger), name));
  if (other) return other;
  return rollbackContainer(deps, name, trigger);
}

async function rollbackContainer(deps: RollbackDeps, name: string, trigger: Trigger): Promise<RollbackResult | null> {
  // "<image id>", or "<image id> <reference>" when the update moved it to another tag
  const [back, backReference] = deps.previous.get(name)?.split(" ") ?? [];
  if (back === undefined) throw new SvcError("not_found", `svc knows no earlier image of ${name} (it has not updated it${deps.config.state_dir ? "" : " since it started: set state_dir to remember across restarts"})`);
  const container = await deps.engine.inspectContainer(name).catch(() => null);
  if (!container) throw new SvcError("not_found", `no container named ${name}`);
  if (container.Image === back) throw new SvcError("bad_request", `${name} already runs ${back}`);
  if (!(await deps.engine.inspectImage(back).catch(() => null))) {
    throw new SvcError("not_found", `the earlier image of ${name} (${back}) is no longer on the engine (removed by cleanup?)`);
  }
  const reference = backReference ?? container.Config.Image;
  await deps.engine.tagImage(back, reference);
  const localReferences = new Map(reference === container.Config.Image ? [] : [[name, reference]]);
  const report = await deps.runner.run(trigger, { container: [name] }, { toLocalTag: true, localReferences, dryRun: false });
  if (report === null) return null;
  const entry = report.containers.find((c) => c.name === name);
  if (entry?.state === "updated") {
    // the image it left is not to come back by itself: its digest (as the check saw it) waits for a newer one
    // kept with who rolled back, for the reason the next cycles give (check.ts)
    if (entry.old_digest) deps.skipped.set(name, `${entry.old_digest} rollback:${trigger}`);
    deps.log.debug("container put back on its earlier image", { container: name, image_id: back, skipped_digest: entry.old_digest });
  }
  if (!entry) return { container: name, from_image_id: container.Image, to_image_id: back, state: "skipped", reason: "not selected by svc (scope, labels or options)" };
  return { container: name, from_image_id: container.Image, to_image_id: back, state: entry.state, reason: entry.reason };
}
