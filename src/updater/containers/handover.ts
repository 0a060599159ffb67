/**
 * Self-update of a container that publishes ports (`-p 127.0.0.1:8080:8080`, not host network).
 *
 * The engine will not start the replacement while the old container holds the port binding, and
 * once the old container stops no process is left to start and watch the replacement. So the old
 * svc only parks itself (renamed, still running and serving) and creates the replacement R, not
 * started; then it starts a handover container H from the NEW image (the old container's env,
 * user, binds and mounts, so it reads the same configuration and reaches the same engine socket;
 * no network, no ports, removed by the engine when it exits). H runs `svc handover`:
 *   stop the old container through the engine API (so its restart policy does not revive it),
 *   start R, watch it with the rollback checks; pass -> remove the old container;
 *   fail -> remove R, start the old one (still parked), rename it back.
 * While H runs, the new svc's crash recovery leaves svc's parked container alone; a handover
 * container left over by a crash (not running) is removed by the next svc start.
 */

import { LABEL_PREFIX } from "../../config/index.ts";
import { toSvcError } from "../../core/errors.ts";
import type { ContainerInspect } from "../../engine/port.ts";
import { act } from "../cycle/act.ts";
import type { ProtocolContext } from "../cycle/context.ts";
import { handoverContainerName } from "../selection/names.ts";
import {
  anyRollbackCheck,
  createReplacementContainer,
  planReplacement,
  type ReplaceOutcome,
  restore,
  rollback,
  watch,
} from "./protocol.ts";
import type { Replacement } from "./replacement.ts";

/** svc's own container needs a handover when the engine binds host ports for it. */
export function needsHandover(old: ContainerInspect): boolean {
  const host = old.HostConfig;
  if (host?.NetworkMode === "host") return false;
  return Object.values(host?.PortBindings ?? {}).some((bindings) => Array.isArray(bindings) && bindings.length > 0);
}

export type HandoverStart =
  | { kind: "handed_over"; newId: string; helper: string }
  | Extract<ReplaceOutcome, { kind: "failed" }>;

/**
 * The old svc's part, after `park` (renamed, still running): creates R (not started) and H, and
 * starts H. On any failure undoes it (R removed, the old container renamed back, still running).
 */
export async function startHandover(
  ctx: ProtocolContext,
  r: Replacement,
  options: { networkContainer?: string; stopping: () => boolean; pollMs?: number },
): Promise<HandoverStart> {
  let helperId: string | undefined;
  try {
    const newId = await createReplacementContainer(ctx, r, options.networkContainer);
    const helper = handoverContainerName(r.name, newId);
    const config = r.old.Config;
    const host = r.old.HostConfig;
    const labels = Object.fromEntries(
      Object.entries(config.Labels ?? {}).filter(([key]) => key.startsWith(LABEL_PREFIX)),
    );
    helperId = await act(
      ctx,
      "create",
      { container: helper, image: r.image },
      () =>
        ctx.engine.createHelper({
          name: helper,
          image: r.image,
          // the old container's arguments come last: H loads the same configuration
          cmd: ["handover", r.old.Id, newId, r.name, ...(config.Cmd ?? [])],
          env: config.Env ?? [],
          user: config.User,
          labels,
          binds: host.Binds ?? undefined,
          mounts: host.Mounts ?? undefined,
        }),
      (id) => id,
    );
    const started = helperId;
    await act(ctx, "start", { container: helper, container_id: started, image: r.image }, () =>
      ctx.engine.startContainer(started),
    );
    ctx.log.info("self-update: the handover container stops this instance, starts and watches the replacement", {
      container: r.name,
      helper,
    });
    void superviseHandover(ctx, r, started, options.stopping, options.pollMs ?? 500);
    return { kind: "handed_over", newId, helper };
  } catch (error) {
    const reason = toSvcError(error).message;
    if (helperId) {
      const id = helperId;
      // nothing lost: act() records the failed remove in the audit log; the helper is svc's own and the restore below goes on
      await act(ctx, "remove", { container: r.name, container_id: id, image: r.image }, () =>
        ctx.engine.removeContainer(id, { force: true }),
      ).catch(() => {});
    }
    const problems = await restore(ctx, r);
    return { kind: "failed", reason: problems.length === 0 ? reason : `${reason} (restoring: ${problems.join("; ")})` };
  }
}

/**
 * The helper always stops this instance before it finishes. So a helper that is gone while this
 * instance still runs (and was not asked to stop) died before it did anything (a new image that
 * cannot even load the configuration, say): the update is undone here, the replacement removed
 * and this container renamed back, or svc would stay parked beside a replacement that never starts.
 */
async function superviseHandover(
  ctx: ProtocolContext,
  r: Replacement,
  helperId: string,
  stopping: () => boolean,
  pollMs: number,
): Promise<void> {
  for (;;) {
    await Bun.sleep(pollMs);
    if (stopping()) return;
    // null: gone (removed by the engine once it exited); undefined: the engine did not answer
    const helper = await ctx.engine
      .inspectContainer(helperId)
      .catch((error) => (/no such container/i.test(toSvcError(error).message) ? null : undefined));
    if (helper === undefined) continue;
    if (helper?.State?.Running || helper?.State?.Status === "created") continue;
    if (stopping()) return;
    const exit = helper ? ` (exit code ${helper.State.ExitCode})` : "";
    ctx.log.error(`self-update: the handover container ended without taking over${exit}; undoing the update`, {
      container: r.name,
    });
    ctx.audit.record({
      action: "rollback",
      container: r.name,
      container_id: r.newId,
      image: r.image,
      trigger: ctx.trigger,
      session_id: ctx.sessionId,
      error: `the handover container ended without taking over${exit}`,
    });
    await restore(ctx, r);
    return;
  }
}

export interface HandoverJob {
  oldId: string;
  newId: string;
  /** svc's container name (the old one is parked under another) */
  name: string;
  stopTimeoutMs: number;
  stopSignal?: string;
  /** a moment for the old svc to answer the request that started the update */
  settleMs?: number;
}

/** H's part: stop the old svc, start and watch R, keep it or put the old one back. Never throws. */
export async function completeHandover(ctx: ProtocolContext, job: HandoverJob): Promise<ReplaceOutcome> {
  let old: ContainerInspect;
  try {
    old = await ctx.engine.inspectContainer(job.oldId);
  } catch (error) {
    return { kind: "failed", reason: `cannot inspect the old svc container: ${toSvcError(error).message}` };
  }
  const r = planReplacement(old, null, {
    stopTimeoutMs: job.stopTimeoutMs,
    stopSignal: job.stopSignal,
    revive: false,
    self: false,
  });
  r.parkedAs = r.name;
  r.name = job.name;
  r.newId = job.newId;
  r.wasRunning = true;
  r.startAfter = true;
  const outcome = await run(ctx, r, job.settleMs ?? 1000);
  if (outcome.kind === "replaced")
    ctx.log.info("self-update finished: the new svc runs", { container: job.name, container_id: outcome.newId });
  else
    ctx.log.error(`self-update ${outcome.kind === "rolled_back" ? "rolled back" : "failed"}`, {
      container: job.name,
      reason: outcome.reason,
    });
  return outcome;
}

async function run(ctx: ProtocolContext, r: Replacement, settleMs: number): Promise<ReplaceOutcome> {
  const newId = r.newId!;
  const target = (id: string) => ({ container: r.name, container_id: id, image: r.image });
  try {
    if (settleMs > 0) await Bun.sleep(settleMs);
    if (r.old.State?.Running) {
      await act(ctx, "stop", target(r.old.Id), () =>
        ctx.engine.stopContainer(r.old.Id, { timeoutMs: r.stopTimeoutMs, signal: r.stopSignal }),
      );
    }
    r.stopped = true;
    await act(ctx, "start", target(newId), () => ctx.engine.startContainer(newId));
  } catch (error) {
    const problems = await restore(ctx, r);
    const reason = toSvcError(error).message;
    return { kind: "failed", reason: problems.length === 0 ? reason : `${reason} (restoring: ${problems.join("; ")})` };
  }
  if (anyRollbackCheck(ctx.config)) {
    const verdict = await watch(ctx, newId);
    if (!verdict.ok) return rollback(ctx, r, verdict);
  }
  try {
    await act(ctx, "remove", target(r.old.Id), () => ctx.engine.removeContainer(r.old.Id, { force: true }));
  } catch (error) {
    ctx.log.warn("could not remove the old svc container", { container: r.name, error: toSvcError(error).message });
  }
  // nothing lost: the replacement runs (it took over); its image id is only reported, null when the engine does not say
  const inspected = await ctx.engine.inspectContainer(newId).catch(() => null);
  return { kind: "replaced", newId, newImageId: inspected?.Image ?? null };
}
