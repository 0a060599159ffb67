/**
 * `svc rollback NAME` and `POST /v1/rollback`: put a target back on what it ran before svc's last
 * update of it, through its kind (cycle/target.ts): a container is moved back to its earlier image by a
 * cycle over it alone (containers/kind.ts), a Swarm service is rolled back by Swarm to its previous spec
 * (swarm/kind.ts). The digest it left waits for a newer one.
 */
import { SvcError } from "../../core/errors.ts";
import type { ProtocolContext } from "../cycle/context.ts";
import type { Runner } from "../cycle/runner.ts";
import { firstOfKinds, type TargetKind } from "../cycle/target.ts";
import type { RollbackOptions, RollbackResult, Trigger } from "../types.ts";

export interface RollbackDeps {
  kinds: readonly TargetKind[];
  context(trigger: string): ProtocolContext;
  runner: Pick<Runner, "busy" | "draining">;
}

/** null: a cycle is running (or svc is stopping); the caller says so and asks again later. */
export async function rollbackTarget(
  deps: RollbackDeps,
  name: string,
  trigger: Trigger = "api",
  options: RollbackOptions = {},
): Promise<RollbackResult | null> {
  if (deps.runner.busy || deps.runner.draining) return null;
  const result = await firstOfKinds(deps.kinds, (kind) => kind.rollback(deps.context(trigger), name, trigger, options));
  if (result === undefined) throw new SvcError("not_found", `no container or service named ${name}`);
  return result;
}
