/**
 * The update protocol for one container (docs/decisions.md, "Updater"): at every moment either the old container or a
 * verified new one exists under the container's name, or the old one is parked under a name that
 * tells crash recovery how to undo the step.
 *
 *   park:    rename old -> `<name>.svc-old-<id>-running|stopped`, then stop it
 *            (a restarting container cannot be renamed: it is stopped first)
 *   replace: copy its guarded mounts (docs/data-guard.md), create the new one under <name>,
 *            start it, watch it against the rollback checks; pass -> remove the old one;
 *            fail -> remove the new one, put the copy back, start the old one (still parked)
 *            if it was running, then rename it back.
 * Renaming before stopping means a kill between the two leaves a container whose name still
 * says it was running, so recovery starts it again.
 */
import type { Config } from "../../config/index.ts";
import { SvcError, toSvcError } from "../../core/errors.ts";
import { duration } from "../../core/moments.ts";
import { guardedMounts } from "../../dataguard/index.ts";
import type { ContainerInspect, ImageInspect } from "../../engine/port.ts";
import { act } from "../cycle/act.ts";
import type { ProtocolContext } from "../cycle/context.ts";
import { announce } from "../cycle/progress.ts";
import { oldContainerName } from "../selection/names.ts";
import { copyGuarded, mustRestore, restoreGuarded, restoreKept, supersedeGuarded } from "./guard.ts";
import { hookFor, runHook } from "./hooks.ts";
import type { Replacement } from "./replacement.ts";

const LOG_LINES = 20;

/**
 * `rolled_back`: the new image failed a rollback check and the old container runs again (or was
 * not running before). `failed`: an engine action failed, the engine could not tell how the new
 * container fared, or the old container could not be started again; `rejectedImage` says the
 * image itself failed a check all the same (its digest is not retried).
 */
export type ReplaceOutcome =
  | { kind: "replaced"; newId: string; newImageId: string | null }
  | { kind: "rolled_back"; reason: string }
  /** the data guard's copy did not fit and data_guard_over is hold: the old container is back, untouched */
  | { kind: "held"; reason: string }
  | { kind: "failed"; reason: string; rejectedImage?: boolean };

export function planReplacement(
  old: ContainerInspect,
  oldImage: ImageInspect | null,
  options: {
    image?: string;
    stopSignal?: string;
    stopTimeoutMs: number;
    revive: boolean;
    self: boolean;
    labels?: Record<string, string>;
  },
): Replacement {
  const wasRunning = Boolean(old.State?.Running || old.State?.Restarting);
  const stop = stopOptionsFor(old, options);
  return {
    name: old.Name.replace(/^\//, ""),
    old,
    oldImage,
    image: options.image ?? old.Config.Image,
    wasRunning,
    startAfter: wasRunning || options.revive,
    stopSignal: stop.signal,
    stopTimeoutMs: stop.timeoutMs,
    self: options.self,
    stopped: false,
    ...(options.labels ? { labels: options.labels } : {}),
  };
}

/** How a container is stopped: its own StopTimeout wins over svc's; the policy's signal over its own. */
export function stopOptionsFor(
  inspect: ContainerInspect,
  policy: { stopSignal?: string; stopTimeoutMs: number },
): { timeoutMs: number; signal?: string } {
  const config = inspect.Config;
  const ownTimeout = config?.StopTimeout;
  return {
    timeoutMs: typeof ownTimeout === "number" && ownTimeout >= 0 ? ownTimeout * 1000 : policy.stopTimeoutMs,
    signal: policy.stopSignal ?? (config?.StopSignal || undefined),
  };
}

/**
 * Rename the old container out of the way and stop it. On error, undoes what it did and throws
 * an error whose message starts with the step that failed ("renaming the old container failed: ...").
 */
export async function park(ctx: ProtocolContext, r: Replacement): Promise<void> {
  let step = "stopping";
  try {
    if (r.old.State?.Restarting) await stopOld(ctx, r);
    const parkedAs = oldContainerName(r.name, r.old.Id, r.wasRunning);
    step = "renaming";
    await act(ctx, "rename", { container: r.name, container_id: r.old.Id, image: oldImageOf(r) }, () =>
      ctx.engine.renameContainer(r.old.Id, parkedAs),
    );
    r.parkedAs = parkedAs;
    step = "stopping";
    if (!r.self && r.old.State?.Running && !r.stopped) await stopOld(ctx, r);
  } catch (error) {
    await restore(ctx, r);
    const failure = toSvcError(error);
    throw new SvcError(failure.kind, `${step} the old container failed: ${failure.message}`, { cause: error });
  }
}

async function stopOld(ctx: ProtocolContext, r: Replacement): Promise<void> {
  await act(ctx, "stop", { container: r.name, container_id: r.old.Id, image: oldImageOf(r) }, () =>
    ctx.engine.stopContainer(r.old.Id, { timeoutMs: r.stopTimeoutMs, signal: r.stopSignal }),
  );
  r.stopped = true;
}

/** Creates the replacement under the container's name (audited) and records its id on `r`. */
export async function createReplacementContainer(
  ctx: ProtocolContext,
  r: Replacement,
  networkContainer?: string,
): Promise<string> {
  r.newId = await act(
    ctx,
    "create",
    { container: r.name, image: r.image },
    () =>
      ctx.engine.createReplacement(r.old, r.oldImage, {
        name: r.name,
        image: r.image,
        networkContainer,
        ...(r.labels ? { labels: r.labels } : {}),
      }),
    (id) => id,
  );
  return r.newId;
}

/** Create, start, watch; keep the new container or roll back. Never throws. */
export async function replace(
  ctx: ProtocolContext,
  r: Replacement,
  networkContainer?: string,
): Promise<ReplaceOutcome> {
  let newId: string;
  try {
    const held = await copyGuarded(ctx, r);
    if (held !== undefined) return { kind: "held", reason: withProblems(held, await restore(ctx, r)) };
    if (r.keepCopy) await restoreKept(ctx, r);
    newId = await createReplacementContainer(ctx, r, networkContainer);
    if (r.startAfter) {
      r.dataTouched = true;
      await act(ctx, "start", { container: r.name, container_id: newId, image: r.image }, () =>
        ctx.engine.startContainer(newId),
      );
    }
  } catch (error) {
    const reason = toSvcError(error).message;
    const problems = await restore(ctx, r);
    return { kind: "failed", reason: withProblems(reason, problems) };
  }

  if (r.startAfter && anyRollbackCheck(ctx.config)) {
    announce(ctx.progress, ctx, r.name, "watch");
    const verdict = await watch(ctx, newId);
    if (!verdict.ok) return rollback(ctx, r, verdict);
  }
  // post_update: the new container is verified; its own hook has the last word
  const postUpdate =
    r.startAfter && !r.self ? hookFor(r.old.Config.Labels ?? {}, "post_update", ctx.config) : undefined;
  if (postUpdate) {
    const failure = await runHook(ctx, { id: newId, name: r.name, image: r.image }, postUpdate);
    if (failure !== null) return rollback(ctx, r, { ok: false, reason: failure, cause: "image" });
  }

  if (!r.self) {
    try {
      await act(ctx, "remove", { container: r.name, container_id: r.old.Id, image: r.image }, () =>
        ctx.engine.removeContainer(r.old.Id, { force: true }),
      );
    } catch (error) {
      // the update stands; the parked container is left for crash recovery to remove
      ctx.log.warn("could not remove the old container", { container: r.name, error: toSvcError(error).message });
    }
  }
  supersedeGuarded(ctx, r);
  // nothing lost: the replacement runs and passed its checks; its image id is only reported, null when the engine does not say
  const inspected = await ctx.engine.inspectContainer(newId).catch(() => null);
  return { kind: "replaced", newId, newImageId: inspected?.Image ?? null };
}

/**
 * Undoes the update after a failed watch. Only a verdict on the image itself, with the old
 * container running again, is `rolled_back` (and its digest is then not retried): when the engine
 * was away the image is not to blame, and when the old container could not be started again
 * nothing was rolled back.
 */
export async function rollback(
  ctx: ProtocolContext,
  r: Replacement,
  verdict: Extract<WatchVerdict, { ok: false }>,
): Promise<ReplaceOutcome> {
  const why = verdict.reason;
  // nothing lost: the logs only illustrate the reason, which stands without them
  const logs = r.newId ? await ctx.engine.containerLogs(r.newId, LOG_LINES).catch(() => "") : "";
  ctx.audit.record({
    action: "rollback",
    container: r.name,
    container_id: r.newId,
    image: r.image,
    trigger: ctx.trigger,
    session_id: ctx.sessionId,
    error: why,
  });
  ctx.log.warn("rolling back", { container: r.name, reason: why });
  const unguarded = unguardedData(r);
  const problems = await restore(ctx, r);
  const tail = logs.trim();
  const reason = withProblems(tail ? `${why}; last log lines:\n${tail}` : why, problems) + unguarded;
  const oldIsBack = !(r.wasRunning && r.stopped);
  if (verdict.cause === "engine") return { kind: "failed", reason };
  if (!oldIsBack) return { kind: "failed", reason, rejectedImage: true };
  return { kind: "rolled_back", reason };
}

/**
 * Puts the old container back: removes the new one, puts its guarded data back when the new one
 * may have changed it (marked first, so that crash recovery finishes a restore a kill interrupts;
 * a restore that fails leaves the old container parked and stopped, never running on half its
 * data), starts the old one if it was running, then renames it back. Started first, while it
 * still carries its parked `-running` name: a kill (or a failure) between the two steps then
 * leaves a marker that crash recovery repairs, never a stopped container under its own name that
 * no cycle would look at again. A running container
 * can be renamed; if the start fails, the old container stays parked for recovery to retry.
 * Best effort otherwise: every step is tried; the problems are returned for the report.
 */
export async function restore(ctx: ProtocolContext, r: Replacement): Promise<string[]> {
  const problems: string[] = [];
  const attempt = async (what: string, run: () => Promise<unknown>): Promise<boolean> => {
    try {
      await run();
      return true;
    } catch (error) {
      problems.push(`${what}: ${toSvcError(error).message}`);
      return false;
    }
  };
  const restoreData = mustRestore(r);
  if (restoreData) ctx.guard!.beginRestore(r.copy!, r.old.Id);
  if (r.newId) {
    const newId = r.newId;
    await attempt("removing the new container", () =>
      act(ctx, "remove", { container: r.name, container_id: newId, image: r.image, undoing: true }, () =>
        ctx.engine.removeContainer(newId, { force: true }),
      ),
    );
    r.newId = undefined;
  }
  if (restoreData) {
    const problem = await restoreGuarded(ctx, r);
    if (problem === undefined) ctx.guard!.endRestore(r.copy!);
    r.dataTouched = false;
    if (problem !== undefined) {
      problems.push(`restoring the data: ${problem}`);
      if (r.parkedAs)
        problems.push(
          `the old container stays parked and stopped as ${r.parkedAs}; the next cycle or start of svc restores its data`,
        );
      for (const each of problems)
        ctx.log.error("could not restore the old container", { container: r.name, problem: each });
      return problems;
    }
  }
  if (r.wasRunning && r.stopped) {
    const started = await attempt("starting the old container", () =>
      act(ctx, "start", { container: r.name, container_id: r.old.Id, image: oldImageOf(r), undoing: true }, () =>
        ctx.engine.startContainer(r.old.Id),
      ),
    );
    if (!started && r.parkedAs) {
      problems.push(`the old container stays parked as ${r.parkedAs}; the next cycle or start of svc restores it`);
      r.parkedAs = undefined;
    }
    // still stopped when the start failed: callers see the old container is not back
    if (started) r.stopped = false;
  }
  if (r.parkedAs) {
    await attempt("renaming the old container back", () =>
      act(ctx, "rename", { container: r.name, container_id: r.old.Id, image: oldImageOf(r), undoing: true }, () =>
        ctx.engine.renameContainer(r.old.Id, r.name),
      ),
    );
    r.parkedAs = undefined;
  }
  for (const problem of problems) ctx.log.error("could not restore the old container", { container: r.name, problem });
  return problems;
}

/**
 * The image the old container runs, for the audit lines of its own steps (its stop, its start
 * again): its reference when the update moves to another one, else its image id, so that a line
 * never names the image that failed for the container that did not.
 */
export function oldImageOf(r: Replacement): string {
  const reference = r.old.Config.Image;
  return reference !== r.image || !r.old.Image ? reference : r.old.Image;
}

/**
 * The failed version ran on data no copy was taken of: said, with the option that would have kept
 * it (docs/data-guard.md), since whatever it rewrote stays as it left it. "" when there was a copy,
 * the new container never started, or it mounts nothing writable.
 */
export function unguardedData(r: Replacement): string {
  if (r.copy || !r.dataTouched) return "";
  const found = guardedMounts(r.old, "all");
  if (!("mounts" in found) || found.mounts.length === 0) return "";
  const places = found.mounts.map((m) =>
    m.type === "volume" && m.name && !/^[0-9a-f]{64}$/.test(m.name) ? `${m.name} (${m.destination})` : m.destination,
  );
  return `; the failed version ran on ${places.join(", ")} with no copy taken: what it changed there stays; data_guard would have kept a copy and put it back (docs/data-guard.md)`;
}

function withProblems(reason: string, problems: string[]): string {
  return problems.length === 0 ? reason : `${reason} (restoring the old container: ${problems.join("; ")})`;
}

/** With every rollback check off there is nothing to watch for. */
export function anyRollbackCheck(config: Config): boolean {
  const rules = config.rollback;
  return rules.on_exit_code || rules.on_healthcheck || rules.on_timeout;
}

/** `cause`: "image" when the new container failed a check, "engine" when the engine was away. */
export type WatchVerdict = { ok: true } | { ok: false; reason: string; cause: "image" | "engine" };

/**
 * The rollback checks (the `[rollback]` options, docs/configuration.md): a non-zero exit, an unhealthy healthcheck, and not
 * running (or, with a healthcheck from the image or the container, not healthy) within
 * startup_timeout. A restart loop always fails: the container exited and its policy brought it back.
 *
 * An engine that does not answer (restarted, crashed) says nothing about the image: the watch
 * keeps polling through inspect errors until startup_timeout. A failure seen after such an outage
 * is put down to the engine too (a restarting engine stops containers, which then look exited).
 */
export async function watch(
  ctx: ProtocolContext,
  id: string,
  sleep: (ms: number) => Promise<void> = Bun.sleep,
): Promise<WatchVerdict> {
  const rules = ctx.config.rollback;
  const timeoutMs = rules.startup_timeout;
  const stableMs = Math.min(ctx.timing.stableMs, timeoutMs);
  const started = Date.now();
  let runningSince: number | undefined;
  let outage: string | undefined;
  const fail = (reason: string): WatchVerdict =>
    outage === undefined
      ? { ok: false, reason, cause: "image" }
      : {
          ok: false,
          reason: `${reason}, after the engine was unreachable during the watch (${outage})`,
          cause: "engine",
        };
  const pause = (now: number) => sleep(Math.min(ctx.timing.pollMs, Math.max(1, timeoutMs - (now - started))));

  for (;;) {
    const now = Date.now();
    let inspected: ContainerInspect;
    try {
      inspected = await ctx.engine.inspectContainer(id);
    } catch (error) {
      outage = toSvcError(error).message;
      runningSince = undefined; // what it did meanwhile is unknown
      if (Date.now() - started >= timeoutMs) {
        return {
          ok: false,
          reason: `the engine could not tell how the new container fared within the startup timeout of ${duration(timeoutMs)}: ${outage}`,
          cause: "engine",
        };
      }
      await pause(now);
      continue;
    }
    const state = inspected.State;
    const restarts = inspected.RestartCount ?? 0;
    if (state.Restarting || restarts > 0)
      return fail(`restart loop (restarted ${restarts} times, last exit code ${state.ExitCode})`);

    const health = state.Health?.Status;
    if (state.Running) {
      runningSince ??= now;
      if (health === "unhealthy" && rules.on_healthcheck) return fail("healthcheck reported unhealthy");
      if (health === "healthy") return { ok: true };
      if (!health && now - runningSince >= stableMs) return { ok: true };
    } else {
      runningSince = undefined;
      const exited = state.Status === "exited" || state.Status === "dead";
      if (exited && state.ExitCode !== 0 && rules.on_exit_code) return fail(`exited with code ${state.ExitCode}`);
    }

    if (now - started >= timeoutMs) {
      if (!rules.on_timeout) return { ok: true };
      if (!state.Running) return fail(`not running within the startup timeout of ${duration(timeoutMs)}`);
      if (health && health !== "healthy")
        return fail(`not healthy within the startup timeout of ${duration(timeoutMs)} (health: ${health})`);
      return { ok: true };
    }
    await pause(now);
  }
}
