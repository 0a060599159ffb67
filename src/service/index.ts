/**
 * The composition root: config -> logging -> HTTP API -> engine -> registry -> notifications
 * -> updater -> recovery -> scheduler, then waits for SIGTERM / SIGINT. Resolves with the
 * process exit code; startup failures are thrown as SvcError (the CLI prints them and maps
 * the kind to the exit code: "startup" and "config" are 2).
 */

import { type Api, serveApi } from "../api/index.ts";
import { type Config, logSettings } from "../config/index.ts";
import { toSvcError } from "../core/errors.ts";
import { reachableAddress } from "../core/loopback.ts";
import { copyListOf } from "../dataguard/index.ts";
import { createLogging, type Logger } from "../log/index.ts";
import { Metrics } from "../metrics/index.ts";
import type { Dispatcher } from "../notify/index.ts";
import { notificationSecrets } from "../notify/secrets.ts";
import type { Scheduler } from "../scheduler/index.ts";
import type { History } from "../state/index.ts";
import { claimState, newOwnerNonce } from "../state/owner.ts";
import { toEvery } from "../updater/cycle/progress.ts";
import type { Updater } from "../updater/index.ts";
import type { ReportSink, SessionReport } from "../updater/types.ts";
import { liveProgress } from "../updater/views/live.ts";
import { exclusiveOn } from "../updater/wrappers/exclusive.ts";
import { pendingRunner } from "../updater/wrappers/pending.ts";
import { narrated, stepLogger } from "../updater/wrappers/summary.ts";
import { apiEnabled } from "./api-enabled.ts";
import { tellComposeProjects } from "./compose-projects.ts";
import { recoverOrPostpone } from "./recovery.ts";
import { loadRooms, rememberedBy } from "./rooms.ts";
import { runOnce } from "./run-once.ts";
import { type SignalOptions, waitForSignal } from "./signals.ts";
import { whenNext } from "./when-next.ts";

export interface ServiceOptions extends SignalOptions {
  /** false when state_dir is its default, not the operator's choice: a folder svc may not use is then a warning */
  stateDirChosen?: boolean;
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
    // what the API and `svc rollback` on this state_dir prove knowing to each other (no token travels)
    const ownerNonce = config.state_dir && !config.run_once ? newOwnerNonce() : undefined;
    if (apiEnabled(config))
      api = serveApi(
        {
          config,
          runner: pending.runner,
          progress,
          history: historyReader,
          metrics,
          log: logging.log,
          access: logging.access,
          audit: logging.audit,
          ownerNonce,
          dataCopies: copyListOf(config),
        },
        log,
      );
    const rooms = await loadRooms();
    const engine = await rooms.createDockerEngine(config.docker, logging.log, {}, { mustAnswer: config.run_once });
    // each answer's rate limit (Docker Hub) goes to the metrics, where the API reads it
    const registry = rooms.createRegistry(config, logging.log, {
      onRateLimit: (host, limit) => metrics.recordRateLimit(host, limit),
    });
    const stateDir = rooms.usableStateDir(config.state_dir, logging.log, options.stateDirChosen ?? true);
    const state = rooms.openState(stateDir, logging.log, config.scope);
    if (state.file && !config.run_once)
      releaseState = claimState(
        state.file,
        api && config.http_api.update
          ? { address: reachableAddress(config.http_api.address), port: config.http_api.port }
          : null,
        ownerNonce,
      );
    notifications = await rooms.createNotifications(config, logging.log, {
      announcedStale: state.section("announced_stale"),
      digests: state.section("digests"),
      homeAssistant: state.section("home_assistant"),
    });
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
      progress: toEvery(
        progress.listen,
        notifications.progress,
        pretty ? stepLogger(logging.log.child("updater")) : undefined,
      ),
      // its cache goes where the other decisions go: nowhere when the folder was not fit for them
      releases: rooms.createReleaseNotes({ ...config, state_dir: stateDir }, logging.log),
      compose: new rooms.ComposeFiles({
        write: config.compose.write,
        stateDir: stateDir ?? null,
        dockerConfig: config.docker.config,
      }),
      ...rememberedBy(state),
    });
    await tellComposeProjects(engine, config, rooms.surveyProjects, log);
    updater = narrated(updater, logging.log, pretty);
    // one process at a time acts on the containers of a state file (svc rollback may run beside)
    if (state.file) updater = exclusiveOn(state.file, updater, logging.log);
    // Repair what a crash left half-done before any new cycle can start.
    await recoverOrPostpone(updater, log, engine);
    pending.ready(updater);
    // Home Assistant's commands go the API's ways, waiting for recovery as its requests do
    notifications.attach({ runner: pending.runner, audit: logging.audit });
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
 * Each finished cycle's report goes to the history, then to the notifications. A run-once that
 * selected nothing (a name that matches no container) did nothing to remember: the history would
 * only fill with empty entries (its log lines say what was missing).
 */
function keptIn(history: History<SessionReport>, sink: ReportSink): ReportSink {
  return {
    publish(report) {
      if (report.trigger !== "run_once" || report.containers.length > 0) history.add(report);
      sink.publish(report);
    },
  };
}

async function step(log: Logger, what: string, action: () => Promise<unknown> | undefined): Promise<void> {
  try {
    await action();
  } catch (error) {
    log.error(`shutdown: could not ${what}`, { error: toSvcError(error).message });
  }
}
