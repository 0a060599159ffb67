/**
 * Lifecycle hooks: commands a container's labels ask svc to run inside it, with `sh -c`, through
 * the engine's exec API (docs/policies.md, "Lifecycle hooks"):
 *   svc.hooks.pre_check    before the container is checked (a failure is logged)
 *   svc.hooks.pre_update   in the old container before anything is stopped (a failure skips the update)
 *   svc.hooks.post_update  in the new container once it passed the rollback checks (a failure rolls back)
 *   svc.hooks.post_check   after the cycle, in the container that then runs (a failure is logged)
 * or Watchtower's `com.centurylinklabs.watchtower.lifecycle.<pre-check|pre-update|post-update|post-check>`.
 * Each may run for `hook_timeout`, or the shorter `svc.hooks.timeout`. Every run is in the audit log (its
 * action is the hook's name) and its output in the debug log.
 */
import type { Config } from "../../config/index.ts";
import { SvcError, toSvcError } from "../../core/errors.ts";
import { act } from "../cycle/act.ts";
import type { ProtocolContext } from "../cycle/context.ts";
import { durationLabel, labelValue } from "../selection/selection.ts";

export type HookName = "pre_check" | "pre_update" | "post_update" | "post_check";

export interface Hook {
  name: HookName;
  command: string;
  timeoutMs: number;
}

/** The hook a container's labels set for `name`, if any (and if hooks are on). */
export function hookFor(labels: Readonly<Record<string, string>>, name: HookName, config: Config): Hook | undefined {
  if (!config.lifecycle_hooks) return undefined;
  const command = labelValue(labels, `hooks.${name}`)?.trim();
  if (!command) return undefined;
  const label = config.global_takes_precedence ? undefined : durationLabel(labels, "hook_timeout");
  // a label (which an image may bring) can shorten a hook's time, never lengthen it
  const timeoutMs = label && "ms" in label ? Math.min(label.ms, config.hook_timeout) : config.hook_timeout;
  return { name, command, timeoutMs };
}

/** Runs a hook in the container `target.id`; resolves null when it exited 0, else why it did not. */
export async function runHook(
  ctx: ProtocolContext,
  target: { id: string; name: string; image: string },
  hook: Hook,
): Promise<string | null> {
  try {
    await act(ctx, hook.name, { container: target.name, container_id: target.id, image: target.image }, async () => {
      const ran = await ctx.engine.exec(target.id, hook.command, hook.timeoutMs);
      ctx.log.debug("lifecycle hook ran", {
        container: target.name,
        hook: hook.name,
        exit_code: ran.exitCode,
        output: ran.output,
      });
      if (ran.exitCode !== 0) {
        const last = ran.output.trim().split("\n").at(-1);
        throw new SvcError("engine", `exited with ${ran.exitCode ?? "no code"}${last ? `: ${last}` : ""}`);
      }
    });
    return null;
  } catch (error) {
    const reason = `${hook.name} hook failed: ${toSvcError(error).message}`;
    ctx.log.warn("lifecycle hook failed", { container: target.name, hook: hook.name, reason });
    return reason;
  }
}
