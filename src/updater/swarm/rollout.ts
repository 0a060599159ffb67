/**
 * How a Swarm service is replaced: svc writes the new image into the service's spec (at the
 * version it read) and Swarm rolls the tasks out with the service's own UpdateConfig. svc then
 * waits, bounded by `service_update_timeout`, for Swarm to finish, roll back or pause, and reads
 * the outcome from the service's UpdateStatus. A service without a failure action of its own
 * gets svc's `rollback.*` rules: svc asks Swarm to roll it back. svc never touches a task.
 */
import { formatDuration } from "../../config/index.ts";
import { toSvcError } from "../../core/errors.ts";
import type { RegistryAuth } from "../../engine/port.ts";
import {
  desiredReplicas,
  isOutOfSequence,
  type ServiceSummary,
  type ServiceUpdateStatus,
  type Swarm,
} from "../../engine/swarm.ts";
import { act } from "../cycle/act.ts";
import type { ProtocolContext } from "../cycle/context.ts";

export type ServiceOutcome =
  | { kind: "updated" }
  | { kind: "rolled_back"; reason: string }
  | { kind: "failed"; reason: string; rejectedImage?: boolean };

/** The states in which Swarm's update (or rollback) has stopped moving. */
const SETTLED = new Set(["completed", "paused", "rollback_completed", "rollback_paused"]);

/**
 * Writes `image` into `service`'s spec with `auth` for the nodes' pulls. A spec someone changed
 * meanwhile is read again and written once more, with the other change kept, but only while it
 * still names the image svc checked: an image someone set meanwhile (`docker service update
 * --image`) is theirs, and the service is skipped this cycle. A second refusal is the outcome.
 * Resolves the service as written (its UpdateStatus before the write), or why it was not.
 */
export async function writeImage(
  ctx: ProtocolContext,
  swarm: Swarm,
  service: ServiceSummary,
  image: string,
  auth: RegistryAuth | undefined,
): Promise<ServiceSummary | { failed: string } | { skipped: string }> {
  const target = { container: service.name, container_id: service.id, image };
  const attempt = (s: ServiceSummary) => act(ctx, "service_update", target, () => swarm.updateImage(s, image, auth));
  try {
    await attempt(service);
    return service;
  } catch (error) {
    if (!isOutOfSequence(error)) return { failed: `updating the service spec failed: ${toSvcError(error).message}` };
  }
  ctx.log.info("the service spec changed during the cycle; reading it again", { service: service.name });
  // nothing lost: a service that cannot be read again fails this update, as the next line says
  const again = await swarm.inspectService(service.id).catch(() => null);
  if (!again) return { failed: "the service disappeared during the cycle" };
  if (again.image !== service.image) {
    ctx.log.info("the service's image changed during the cycle: left as it was set", {
      service: service.name,
      checked: service.image,
      now: again.image,
    });
    return {
      skipped: `changed meanwhile: its image is now ${again.image} (set during the cycle, after svc checked ${service.image}); left as it is, the next cycle checks it again`,
    };
  }
  try {
    await attempt(again);
    return again;
  } catch (error) {
    return {
      failed: `updating the service spec failed twice (changed by someone else meanwhile?): ${toSvcError(error).message}`,
    };
  }
}

/**
 * After the write: Swarm's outcome, with svc's rollback rules for a service without a failure
 * action. `stopping` (a graceful stop of svc) ends the wait early: Swarm goes on by itself.
 */
export async function awaitRollout(
  ctx: ProtocolContext,
  swarm: Swarm,
  before: ServiceSummary,
  stopping: () => boolean = () => false,
): Promise<ServiceOutcome> {
  const config = ctx.config;
  const timeout = config.service_update_timeout;
  const deadline = Date.now() + timeout;
  const settled = await waitSettled(ctx, swarm, before.id, before.update, timeout, stopping);
  if ("missing" in settled) return { kind: "failed", reason: "the service disappeared during its update" };
  if (settled.stopped)
    return {
      kind: "failed",
      reason: "svc stopped (shutting down) before Swarm's update finished; Swarm goes on with it",
    };
  const ownRules = before.failureAction === null;
  const status = settled.status;
  if (status?.state === "completed") return { kind: "updated" };
  if (status?.state === "rollback_completed")
    return { kind: "rolled_back", reason: `rolled back by Swarm: ${settled.firstMessage}` };
  if (status?.state === "paused" && ownRules && (config.rollback.on_exit_code || config.rollback.on_healthcheck)) {
    return askRollback(ctx, swarm, settled.service, `Swarm paused the update: ${status.message}`, timeout);
  }
  if (status?.state === "paused")
    return { kind: "failed", reason: `Swarm paused the update: ${status.message}`, rejectedImage: true };
  if (status?.state === "rollback_paused" && (await tasksSettleOn(ctx, swarm, settled.service, deadline)))
    return {
      kind: "rolled_back",
      reason: `rolled back by Swarm: ${settled.firstMessage}; Swarm paused its rollback (${status.message}), but every task runs the previous image again`,
    };
  if (status?.state === "rollback_paused")
    return { kind: "failed", reason: `Swarm paused the rollback: ${status.message}`, rejectedImage: true };
  const waited = `Swarm's update did not finish within ${formatDuration(timeout)} (service_update_timeout)`;
  if (ownRules && config.rollback.on_timeout) return askRollback(ctx, swarm, settled.service, waited, timeout);
  return { kind: "failed", reason: `${waited}; Swarm goes on with it` };
}

/** svc's rollback rules: Swarm rolls the service back to the spec before svc's write. */
async function askRollback(
  ctx: ProtocolContext,
  swarm: Swarm,
  service: ServiceSummary,
  why: string,
  timeout: number,
): Promise<ServiceOutcome> {
  try {
    await requestRollback(ctx, swarm, service);
  } catch (error) {
    return {
      kind: "failed",
      reason: `${why}; asking Swarm to roll back failed: ${toSvcError(error).message}`,
      rejectedImage: true,
    };
  }
  const deadline = Date.now() + timeout;
  const settled = await waitSettled(ctx, swarm, service.id, service.update, timeout);
  if ("missing" in settled) return { kind: "failed", reason: `${why}; the service disappeared during its rollback` };
  const asked = `${why}; svc asked Swarm to roll back (rollback.*)`;
  const state = settled.status?.state;
  if (state === "rollback_completed") return { kind: "rolled_back", reason: asked };
  const said = settled.status ? `${state}: ${settled.status.message}` : "unknown";
  if (state === "rollback_paused" && (await tasksSettleOn(ctx, swarm, settled.service, deadline)))
    return {
      kind: "rolled_back",
      reason: `${asked}; Swarm paused its rollback (${said}), but every task runs the previous image again`,
    };
  return { kind: "failed", reason: `${why}; Swarm's rollback did not complete (${said})`, rejectedImage: true };
}

/**
 * Swarm pauses a rollback for any early end of a task it started, even one its own orchestrator
 * stopped as a spare (seen on a loaded manager): what counts is where the tasks ended up.
 * Whether, by `deadline`, every task the manager keeps for `service` is running its spec's image,
 * and (a replicated service) as many as it asks for. Read errors count as not yet.
 */
async function tasksSettleOn(
  ctx: ProtocolContext,
  swarm: Swarm,
  service: ServiceSummary,
  deadline: number,
): Promise<boolean> {
  const wanted = desiredReplicas(service);
  for (;;) {
    const tasks = await swarm.runningTasks(service.id).catch(() => []);
    const onImage = tasks.filter((t) => t.state === "running" && t.image === service.image);
    if (tasks.length > 0 && onImage.length === tasks.length && (wanted === null || tasks.length === wanted))
      return true;
    if (Date.now() >= deadline) return false;
    await Bun.sleep(Math.min(ctx.timing.pollMs, Math.max(0, deadline - Date.now())));
  }
}

/** Asks Swarm to roll `service` back to its previous spec (audited). */
export function requestRollback(ctx: ProtocolContext, swarm: Swarm, service: ServiceSummary): Promise<void> {
  return act(
    ctx,
    "service_rollback",
    { container: service.name, container_id: service.id, image: service.previousImage ?? undefined },
    () => swarm.rollback(service),
  );
}

type Settled =
  | { service: ServiceSummary; status: ServiceUpdateStatus | null; firstMessage: string; stopped?: true }
  | { missing: true };

/**
 * Polls the service until an update started after `before` has settled, or `timeoutMs` passes
 * (then the last status read). `firstMessage` is the first message Swarm gave once the update
 * left `updating`: a rollback's cause, which the final "rollback completed" no longer says.
 */
export async function waitSettled(
  ctx: ProtocolContext,
  swarm: Swarm,
  id: string,
  before: ServiceUpdateStatus | null,
  timeoutMs: number,
  stopping: () => boolean = () => false,
): Promise<Settled> {
  const deadline = Date.now() + timeoutMs;
  let firstMessage: string | undefined;
  let last: { service: ServiceSummary; status: ServiceUpdateStatus | null } | undefined;
  for (;;) {
    // an engine that does not answer for a moment is waited for, as the deadline allows
    const service = await swarm.inspectService(id).catch(() => undefined);
    if (service === null) return { missing: true };
    if (service) {
      const status = service.update;
      const ours =
        status !== null && (before === null || status.startedAt !== before.startedAt || status.state !== before.state);
      last = { service, status: ours ? status : null };
      if (ours && status.state !== "updating") firstMessage ??= status.message;
      if (ours && SETTLED.has(status.state)) return { service, status, firstMessage: firstMessage ?? status.message };
    }
    if (last && stopping()) return { ...last, firstMessage: firstMessage ?? "", stopped: true };
    if (Date.now() >= deadline) return last ? { ...last, firstMessage: firstMessage ?? "" } : { missing: true };
    await Bun.sleep(Math.min(ctx.timing.pollMs, Math.max(0, deadline - Date.now())));
  }
}
