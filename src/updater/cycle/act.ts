import { toSvcError } from "../../core/errors.ts";
import type { AuditEntry } from "../../log/index.ts";
import type { ProtocolContext } from "./context.ts";
import { announce } from "./progress.ts";

/**
 * Runs one engine action and writes it to the audit log, with the error when it failed.
 * `idOf` names the container from the action's result when it is only known afterwards (the
 * id of a created container): after a crash the audit log must tell which container svc made.
 * `undoing`: the step puts the old container back (a rollback), which the progress tells.
 */
export async function act<T>(
  ctx: ProtocolContext,
  action: AuditEntry["action"],
  { undoing, ...target }: { container: string; container_id?: string; image?: string; undoing?: boolean },
  run: () => Promise<T>,
  idOf?: (result: T) => string,
): Promise<T> {
  const entry: AuditEntry = { action, ...target, trigger: ctx.trigger, session_id: ctx.sessionId };
  announce(ctx.progress, ctx, target.container, action, undoing);
  try {
    const result = await run();
    ctx.audit.record(idOf ? { ...entry, container_id: idOf(result) } : entry);
    return result;
  } catch (error) {
    ctx.audit.record({ ...entry, error: toSvcError(error).message });
    throw error;
  }
}
