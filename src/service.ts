/**
 * The composition root: config -> logging -> HTTP API -> engine -> registry -> notifications
 * -> updater -> recovery -> scheduler, then waits for SIGTERM / SIGINT. Resolves with the
 * process exit code; startup failures are thrown as SvcError (the CLI prints them and maps
 * the kind to the exit code: "startup" and "config" are 2).
 */
import { copyListOf } from "./dataguard/index.ts";
import { type Api, serveApi } from "./api/index.ts";
import { logSettings, type Config } from "./config/index.ts";
import { toSvcError } from "./errors.ts";
import { apiEnabled } from "./healthcheck.ts";
import { createLogging, type Logger, type Logging } from "./log/index.ts";
import { Metrics } from "./metrics/index.ts";
import type { Dispatcher } from "./notify/index.ts";
import { notificationSecrets } from "./notify/secrets.ts";
import type { Scheduler } from "./scheduler/index.ts";
import { leaseForCommand, rollbackThroughOwner } from "./rollback.ts";
import { stateFile, type History, type StateStore } from "./state/index.ts";
import { claimState, newOwnerNonce } from "./state/owner.ts";
import type { Updater } from "./updater/index.ts";
import { exclusiveOn } from "./updater/wrappers/exclusive.ts";
import { liveProgress } from "./updater/views/live.ts";
import { pendingRunner } from "./updater/wrappers/pending.ts";
import { toEvery } from "./updater/cycle/progress.ts";
import { logRollback, narrated, stepLogger } from "./updater/wrappers/summary.ts";
import type { ReportSink, RollbackOptions, RollbackResult, SessionReport } from "./updater/types.ts";

export { apiEnabled, runHealthcheck } from "./healthcheck.ts";

export interface ServiceOptions {
  /** the process to take signals from (tests may pass their own emitter) */
  signals?: Pick<NodeJS.Process, "on" | "off">;
  /** what a second signal does; default: exit at once (130 for SIGINT, 143 for SIGTERM) */
  exitNow?: (code: number) => void;
  /** false when state_dir is its default, not the operator's choice: a folder svc may not use is then a warning */
  stateDirChosen?: boolean;
}

const SIGNAL_EXIT_CODES = { SIGINT: 130, SIGTERM: 143 } as const;
type StopSignal = keyof typeof SIGNAL_EXIT_CODES;

/**
 * run_once: exit 0 when no container failed or was rolled back, 1 otherwise, as README.md says;
 * 1 as well when containers were named and none of them was found (a typo is not "nothing to do").
 */
export function runOnceExitCode(report: SessionReport | null, named = false): number {
  if (report === null || (named && report.counts.scanned === 0)) return 1;
  return report.containers.some((c) => c.state === "failed" || c.state === "rolled_back") ? 1 : 0;
}

export async function runService(config: Config, options: ServiceOptions = {}): Promise<number> {
  const logging = createLogging(logSettings(config), { secrets: notificationSecrets(config.notifications) });
  const log = logging.log.child("service");
  const pretty = logging.format === "pretty";
  const stopSignal = waitForSignal(options, log);
  const metrics = new Metrics();
  const pending = pendingRunner();
  const progress = liveProgress();
  // the API listens before the state room is loaded: it reads the history once there is one
  let history: History<SessionReport> | undefined;
  const historyReader = { list: () => history?.list() ?? [] };
  let notifications: Dispatcher | undefined;
  let updater: Updater | undefined;
  let scheduler: Scheduler | undefined;
  let api: Api | undefined;
  let releaseState: (() => void) | undefined;
  try {
    // The API listens first: /v1/health answers while the engine is negotiated and recovery runs
    // (both may take seconds), and an update request arriving meanwhile waits for recovery.
    // what the API proves knowing to `svc rollback` on this state_dir before it hands over the token
    const ownerNonce = config.state_dir && !config.run_once ? newOwnerNonce() : undefined;
    if (apiEnabled(config)) api = serveApi({ config, runner: pending.runner, progress, history: historyReader, metrics, log: logging.log, access: logging.access, audit: logging.audit, ownerNonce, dataCopies: copyListOf(config) }, log);
    const rooms = await loadRooms();
    const engine = await rooms.createDockerEngine(config.docker, logging.log, {}, { mustAnswer: config.run_once });
    // each answer's rate limit (Docker Hub) goes to the metrics, where the API reads it
    const registry = rooms.createRegistry(config, logging.log, { onRateLimit: (host, limit) => metrics.recordRateLimit(host, limit) });
    const stateDir = rooms.usableStateDir(config.state_dir, logging.log, options.stateDirChosen ?? true);
    const state = rooms.openState(stateDir, logging.log, config.scope);
    if (state.file && !config.run_once) releaseState = claimState(state.file, api && config.http_api.update ? config.http_api.port : null, ownerNonce);
    notifications = await rooms.createNotifications(config, logging.log, { announcedStale: state.section("announced_stale") });
    history = rooms.openHistory<SessionReport>(stateDir, config.history_size, logging.log, config.scope);
    const selfContainerId = await rooms.ownContainerId(engine, log);
    const selfHandover = api && { release: api.release, reclaim: api.reclaim };
    updater = rooms.createUpdater({
      config,
      engine,
      registry,
      metrics,
      log: logging.log,
      audit: logging.audit,
      sink: keptIn(history, notifications),
      selfContainerId,
      selfHandover,
      progress: toEvery(progress.listen, pretty ? stepLogger(logging.log.child("updater")) : undefined),
      releases: rooms.createReleaseNotes(config, logging.log),
      ...rememberedBy(state),
    });
    updater = narrated(updater, logging.log, pretty);
    // one process at a time acts on the containers of a state file (svc rollback may run beside)
    if (state.file) updater = exclusiveOn(state.file, updater, logging.log);
    // Repair what a crash left half-done before any new cycle can start.
    await recoverOrPostpone(updater, log, engine);
    pending.ready(updater);
    if (config.run_once) return await runOnce(config, updater, stopSignal.promise, log, logging.format === "json");
    scheduler = rooms.createScheduler({ config, runner: updater, log: logging.log });
    scheduler.start();
    log.info(whenNext(config, scheduler.nextRun(), new Date()));
    const signal = await stopSignal.promise;
    log.info("stopping: waiting for the running update to finish", { signal });
    return 0;
  } catch (error) {
    pending.failed(error);
    throw error;
  } finally {
    // Timers stop and the port closes at once; the running container's update finishes or rolls
    // back (a request already waiting for its cycle still gets its answer), then reports go out,
    // then logs close. A second signal during these steps exits at once (the handlers stay).
    const schedulerStopped = scheduler?.stop();
    const serverStopped = api?.stopOnce();
    await step(log, "drain the updater", () => updater?.drain());
    await step(log, "stop the scheduler", () => schedulerStopped);
    await step(log, "stop the HTTP server", () => serverStopped);
    await step(log, "close notifications", () => notifications?.close());
    releaseState?.();
    stopSignal.remove();
    await logging.close();
  }
}

/**
 * `svc rollback NAME`: the container back on the image it ran before svc's last update of it
 * (known from state_dir), through the update protocol. Exit 0 when it runs that image again.
 */
export async function runRollback(config: Config, name: string, options: RollbackOptions = {}): Promise<number> {
  const logging = createLogging(logSettings(config), { secrets: notificationSecrets(config.notifications) });
  const log = logging.log.child("service");
  let release: (() => void) | undefined;
  try {
    if (options.withData) warnDataLoss(config, name, log);
    const file = stateFile(config.state_dir, config.scope);
    const handed = file && (await rollbackThroughOwner(config, file, name, log, options.withData));
    if (handed) return rollbackOutcome(handed, logging);
    if (file) release = await leaseForCommand(config, file, log);
    const rooms = await loadRooms();
    const engine = await rooms.createDockerEngine(config.docker, logging.log, {}, { mustAnswer: true });
    const state = rooms.openState(config.state_dir, logging.log, config.scope);
    const updater = rooms.createUpdater({
      config,
      engine,
      registry: rooms.createRegistry(config, logging.log),
      metrics: new Metrics(),
      log: logging.log,
      audit: logging.audit,
      progress: logging.format === "pretty" ? stepLogger(logging.log.child("updater")) : undefined,
      ...rememberedBy(state),
    });
    await recoverOrPostpone(updater, log);
    return rollbackOutcome(await updater.rollback(name, "run_once", options), logging);
  } finally {
    release?.();
    await logging.close();
  }
}

/** `svc rollback --with-data` says, before it acts, what the container wrote since the copy and is to be replaced. */
function warnDataLoss(config: Config, name: string, log: Logger): void {
  const copy = copyListOf(config).list().find((c) => c.container === name);
  if (!copy) return;
  const hours = Math.round(copy.age_seconds / 360) / 10;
  log.warn(
    `${name}: its data goes back to the copy of version ${copy.version ?? "?"} taken ${copy.created_at} (${hours} h ago): what it wrote since is replaced; its present data is copied first, so this rollback too can be undone (GET /v1/data-guard)`,
  );
}

/** Tells what `svc rollback` did; exit 0 when the container runs its earlier image again. */
function rollbackOutcome(result: RollbackResult | null, logging: Logging): number {
  if (result) logRollback(logging.log.child("updater"), result, logging.format === "pretty");
  return result?.state === "updated" ? 0 : 1;
}

/** Each finished cycle's report goes to the history, then to the notifications. */
function keptIn(history: History<SessionReport>, sink: ReportSink): ReportSink {
  return {
    publish(report) {
      history.add(report);
      sink.publish(report);
    },
  };
}

/** The updater's decisions, kept by the state room (across restarts with state_dir). */
function rememberedBy(state: StateStore) {
  return {
    rolledBack: state.section("rolled_back"),
    firstSeen: state.section("first_seen"),
    skipped: state.section("skipped"),
    previous: state.section("previous"),
    leftImages: state.section("left_images"),
    snoozed: state.section("snoozed"),
    prePulled: state.section("pre_pulled"),
  };
}

/**
 * The start's last line, as Watchtower's "Scheduling first run": when the first check comes.
 * `next check at 04:00 (in 5 h 12 min)`; the date too when it is not within the next 24 hours.
 */
export function whenNext(config: Pick<Config, "update_on_start" | "http_api">, next: Date | undefined, now: Date): string {
  const onRequest = config.http_api.update ? "; also on request (POST /v1/update)" : "";
  if (config.update_on_start) return `first check now (update_on_start)${next ? `, then at ${clock(next, now)}` : ""}${onRequest}`;
  if (!next) return "checks only on request (POST /v1/update)";
  return `next check at ${clock(next, now)} (in ${span(next.getTime() - now.getTime())})${onRequest}`;
}

function clock(at: Date, now: Date): string {
  const two = (n: number) => String(n).padStart(2, "0");
  const time = `${two(at.getHours())}:${two(at.getMinutes())}`;
  if (at.getTime() - now.getTime() < 24 * 3_600_000) return time;
  return `${at.getFullYear()}-${two(at.getMonth() + 1)}-${two(at.getDate())} ${time}`;
}

/** `5 h 12 min`, `3 min`, `40 s`, `2 d 4 h`. */
function span(ms: number): string {
  const minutes = Math.round(ms / 60_000);
  if (ms < 60_000) return `${Math.max(0, Math.round(ms / 1000))} s`;
  const [d, h, m] = [Math.floor(minutes / 1440), Math.floor((minutes % 1440) / 60), minutes % 60];
  if (d > 0) return h > 0 ? `${d} d ${h} h` : `${d} d`;
  if (h > 0) return m > 0 ? `${h} h ${m} min` : `${h} h`;
  return `${m} min`;
}

/**
 * A host may start svc before its engine: an unreachable engine must not stop the service.
 * Recovery is then postponed, and the updater repairs leftovers before its next cycle.
 */
async function recoverOrPostpone(updater: Updater, log: Logger, engine?: { info(): Promise<unknown> }): Promise<void> {
  // An engine that did not answer at start was named then ("not reachable yet"): nothing crashed,
  // and what an interrupted update left is looked for by the first cycle that reaches it.
  if (engine && !(await engine.info().then(() => true, () => false))) {
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

/**
 * The rooms behind the API, loaded once it listens (literal paths: bundled by `bun build
 * --compile`). The engine client alone takes tens of milliseconds to load on a small host.
 */
async function loadRooms() {
  // One at a time, through the event loop between them: a module's evaluation holds the thread,
  // and requests that reach the just-opened port are answered in the gaps.
  const engine = await afterPendingRequests(() => import("./engine/index.ts"));
  const registry = await afterPendingRequests(() => import("./registry/index.ts"));
  const notify = await afterPendingRequests(() => import("./notify/index.ts"));
  const updater = await afterPendingRequests(() => import("./updater/index.ts"));
  const scheduler = await afterPendingRequests(() => import("./scheduler/index.ts"));
  const state = await afterPendingRequests(() => import("./state/index.ts"));
  const releases = await afterPendingRequests(() => import("./releases/index.ts"));
  return {
    createReleaseNotes: releases.createReleaseNotes,
    createDockerEngine: engine.createDockerEngine,
    createRegistry: registry.createRegistry,
    createNotifications: notify.createNotifications,
    createUpdater: updater.createUpdater,
    createScheduler: scheduler.createScheduler,
    ownContainerId: engine.ownContainerId,
    openState: state.openState,
    usableStateDir: state.usableStateDir,
    openHistory: state.openHistory,
  };
}

function afterPendingRequests<T>(load: () => Promise<T>): Promise<T> {
  return new Promise((resolve, reject) => setTimeout(() => load().then(resolve, reject), 0));
}

async function step(log: Logger, what: string, action: () => Promise<unknown> | undefined): Promise<void> {
  try {
    await action();
  } catch (error) {
    log.error(`shutdown: could not ${what}`, { error: toSvcError(error).message });
  }
}

async function runOnce(config: Config, updater: Updater, stop: Promise<StopSignal>, log: Logger, json: boolean): Promise<number> {
  if (config.http_api.update || config.http_api.metrics || config.http_api.ui) {
    log.warn("run_once is set: the HTTP API settings are ignored and no port is opened");
  }
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

/**
 * Resolves on the first SIGTERM / SIGINT. A second one exits at once: the next start repairs
 * whatever update was cut off (docs/decisions.md, "Updater").
 */
function waitForSignal(options: ServiceOptions, log: Logger): { promise: Promise<StopSignal>; remove(): void } {
  const signals = options.signals ?? process;
  const exitNow = options.exitNow ?? ((code: number) => process.exit(code));
  let stopping = false;
  let resolve: (signal: StopSignal) => void = () => {};
  const promise = new Promise<StopSignal>((r) => (resolve = r));
  const handler = (signal: StopSignal) => {
    if (stopping) {
      log.warn("second signal: exiting now", { signal });
      exitNow(SIGNAL_EXIT_CODES[signal]);
      return;
    }
    stopping = true;
    resolve(signal);
  };
  const names = Object.keys(SIGNAL_EXIT_CODES) as StopSignal[];
  for (const name of names) signals.on(name, handler);
  return { promise, remove: () => names.forEach((name) => signals.off(name, handler)) };
}
