/**
 * The composition root: config -> logging -> HTTP API -> engine -> registry -> notifications
 * -> updater -> recovery -> scheduler, then waits for SIGTERM / SIGINT. Resolves with the
 * process exit code; startup failures are thrown as SvcError (the CLI prints them and maps
 * the kind to the exit code: "startup" and "config" are 2).
 */
import { readFileSync } from "node:fs";
import { type App, createApp, listen } from "./api/index.ts";
import type { Config } from "./config/index.ts";
import type { Engine } from "./engine/index.ts";
import { SvcError, toSvcError } from "./errors.ts";
import { apiEnabled } from "./healthcheck.ts";
import { createLogging, type Logger, type Logging } from "./log/index.ts";
import { Metrics } from "./metrics/index.ts";
import type { Dispatcher } from "./notify/index.ts";
import type { Updater } from "./updater/index.ts";
import type { CycleRunner, SessionReport, Trigger, UpdateFilter } from "./updater/types.ts";

export { apiEnabled, runHealthcheck } from "./healthcheck.ts";

export interface ServiceOptions {
  /** the process to take signals from (tests may pass their own emitter) */
  signals?: Pick<NodeJS.Process, "on" | "off">;
  /** what a second signal does; default: exit at once (130 for SIGINT, 143 for SIGTERM) */
  exitNow?: (code: number) => void;
}

const SIGNAL_EXIT_CODES = { SIGINT: 130, SIGTERM: 143 } as const;
type StopSignal = keyof typeof SIGNAL_EXIT_CODES;

/** run_once: exit 0 when no container failed or was rolled back, 1 otherwise, as README.md says. */
export function runOnceExitCode(report: SessionReport | null): number {
  if (report === null) return 1;
  return report.containers.some((c) => c.state === "failed" || c.state === "rolled_back") ? 1 : 0;
}

export async function runService(config: Config, options: ServiceOptions = {}): Promise<number> {
  const logging = createLogging(config);
  const log = logging.log.child("service");
  const stopSignal = waitForSignal(options, log);
  const metrics = new Metrics();
  const pending = pendingRunner();
  let notifications: Dispatcher | undefined;
  let updater: Updater | undefined;
  let app: Api | undefined;
  try {
    // The API listens first: /v1/health answers while the engine is negotiated and recovery runs
    // (both may take seconds), and an update request arriving meanwhile waits for recovery.
    app = startApi(config, pending.runner, metrics, logging, log);
    const { createDockerEngine, createRegistry, createNotifications, createUpdater, createScheduler } = await loadRooms();
    const engine = await createDockerEngine(config.docker, logging.log);
    const registry = createRegistry(config, logging.log);
    notifications = await createNotifications(config, logging.log);
    const selfContainerId = await ownContainerId(engine, log);
    const selfHandover = app && { release: app.release, reclaim: app.reclaim };
    updater = createUpdater({ config, engine, registry, metrics, log: logging.log, audit: logging.audit, sink: notifications, selfContainerId, selfHandover });
    // Repair what a crash left half-done before any new cycle can start.
    await recoverOrPostpone(updater, log);
    pending.ready(updater);
    if (config.run_once) return await runOnce(config, updater, stopSignal.promise, log);
    return await serve({ config, updater, metrics, logging, log, app, createScheduler }, stopSignal.promise);
  } catch (error) {
    pending.failed(error);
    throw error;
  } finally {
    // The running container's update finishes or rolls back, then reports go out, then logs close.
    // A second signal during these steps exits at once (the handlers stay until the end).
    // (serve stops the server itself; here it is only still open when startup failed.)
    const serverStopped = app?.stopOnce();
    await step(log, "drain the updater", () => updater?.drain());
    await step(log, "stop the HTTP server", () => serverStopped);
    await step(log, "close notifications", () => notifications?.close());
    stopSignal.remove();
    await logging.close();
  }
}

/**
 * A host may start svc before its engine: an unreachable engine must not stop the service.
 * Recovery is then postponed, and the updater repairs leftovers before its next cycle.
 */
async function recoverOrPostpone(updater: Updater, log: Logger): Promise<void> {
  try {
    await updater.recover();
  } catch (error) {
    const svcError = toSvcError(error);
    if (svcError.kind !== "engine") throw error;
    // The updater has logged it already, at error level.
    log.debug("crash recovery postponed until the engine answers", { error: svcError.message });
  }
}

/** The listening API; `stopOnce` closes the port (without cutting requests in progress) the first time only. */
interface Api {
  stopOnce(): Promise<void>;
  /**
   * Self-update: stop accepting connections so svc's replacement can listen on the port (host
   * network, published port). Requests in flight, such as the POST /v1/update that started the
   * cycle, still get their answer: so this does not wait for them.
   */
  release(): Promise<void>;
  /** Listen again on the same port: the replacement was rolled back. */
  reclaim(): Promise<void>;
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
  return {
    createDockerEngine: engine.createDockerEngine,
    createRegistry: registry.createRegistry,
    createNotifications: notify.createNotifications,
    createUpdater: updater.createUpdater,
    createScheduler: scheduler.createScheduler,
  };
}

function afterPendingRequests<T>(load: () => Promise<T>): Promise<T> {
  return new Promise((resolve, reject) => setTimeout(() => load().then(resolve, reject), 0));
}

function startApi(config: Config, runner: CycleRunner, metrics: Metrics, logging: Logging, log: Logger): Api | undefined {
  if (!apiEnabled(config)) return undefined;
  const app: App = createApp({ config, runner, metrics, log: logging.log, access: logging.access });
  const port = config.http_api.port;
  let server: ReturnType<typeof listen> | undefined = listen(app, port);
  log.info("HTTP API listening", { address: `0.0.0.0:${port}`, update: config.http_api.update, metrics: config.http_api.metrics });
  // The Bun servers are stopped directly (not app.stop): a released server's requests in flight
  // may finish after a reclaim, and app.stop would then forget the new server.
  const closing: Promise<unknown>[] = [];
  const close = (): void => {
    if (!server) return;
    closing.push(server.stop(false));
    server = undefined;
  };
  let stopped: Promise<void> | undefined;
  return {
    stopOnce: () => (stopped ??= (close(), Promise.all(closing).then(() => {}))),
    release: async () => {
      close();
      log.info("HTTP API: port released for svc's replacement", { port });
    },
    reclaim: async () => {
      if (server || stopped) return;
      server = listen(app, port);
      log.info("HTTP API listening again: svc's replacement was rolled back", { port });
    },
  };
}

/**
 * The API's runner until startup is done: a cycle asked for during recovery waits for it
 * (recovery runs before the API accepts updates), then runs as usual; if startup
 * fails, it fails with the same error.
 */
export function pendingRunner(): { runner: CycleRunner; ready(updater: Updater): void; failed(error: unknown): void } {
  let resolve: (updater: Updater) => void = () => {};
  let reject: (error: unknown) => void = () => {};
  const started = new Promise<Updater>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  started.catch(() => {}); // nobody may be waiting
  let updater: Updater | undefined;
  return {
    runner: {
      async run(trigger: Trigger, filter?: UpdateFilter) {
        return (updater ?? (await started)).run(trigger, filter);
      },
      get busy() {
        return updater?.busy ?? false;
      },
    },
    ready(value) {
      updater = value;
      resolve(value);
    },
    failed(error) {
      reject(error instanceof SvcError ? error : new SvcError("startup", `svc could not start: ${toSvcError(error).message}`, { cause: error }));
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

async function runOnce(config: Config, updater: Updater, stop: Promise<StopSignal>, log: Logger): Promise<number> {
  if (config.http_api.update || config.http_api.metrics) {
    log.warn("run_once is set: the HTTP API settings are ignored and no port is opened");
  }
  const outcome = await Promise.race([updater.run("run_once"), stop]);
  if (typeof outcome === "string") {
    log.info("stopping: waiting for the running update to finish", { signal: outcome });
    return 0;
  }
  if (outcome) log.info("session report", { ...outcome }); // a run-once user must see what happened
  return runOnceExitCode(outcome);
}

interface Running {
  config: Config;
  updater: Updater;
  metrics: Metrics;
  logging: Logging;
  log: Logger;
  app: Api | undefined;
  createScheduler: typeof import("./scheduler/index.ts").createScheduler;
}

/** The long-running mode: HTTP API (already listening, when enabled) and scheduler until the first signal. */
async function serve({ config, updater, logging, log, app, createScheduler }: Running, stop: Promise<StopSignal>): Promise<number> {
  const scheduler = createScheduler({ config, runner: updater, log: logging.log });
  try {
    scheduler.start();
    const signal = await stop;
    log.info("stopping: waiting for the running update to finish", { signal });
  } finally {
    // Timers stop at once and the port closes now; a request already waiting for its cycle
    // still gets its answer (stop without closing active connections).
    const schedulerStopped = scheduler.stop();
    const serverStopped = app?.stopOnce();
    await step(log, "drain the updater", () => updater.drain());
    await step(log, "stop the scheduler", () => schedulerStopped);
    await step(log, "stop the HTTP server", () => serverStopped);
  }
  return 0;
}

/**
 * Resolves on the first SIGTERM / SIGINT. A second one exits at once: the next start repairs
 * whatever update was cut off (README.md, "Updater").
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

/**
 * The id of the container svc itself runs in, if any, so the updater updates itself last and
 * by replacement (README.md, "Updater"). Read from the mount table: the engine bind-mounts the
 * container's own .../containers/<id>/hostname on /etc/hostname, on cgroup v1 and v2 alike.
 * Only that mount point counts: a host's mount table lists other containers' shm mounts under
 * .../containers/<id>/ too. The cgroup path (cgroup v1) is the fallback. An id is trusted only
 * when the configured engine knows a container by it.
 */
export async function ownContainerId(engine: Pick<Engine, "inspectContainer">, log: Logger, read = readProcFile): Promise<string | undefined> {
  const candidates = new Set<string>();
  for (const line of read("/proc/self/mountinfo").split("\n")) {
    const [, , , root, mountPoint] = line.split(" ");
    const id = mountPoint === "/etc/hostname" ? /\/containers\/([0-9a-f]{64})\//.exec(root ?? "")?.[1] : undefined;
    if (id) candidates.add(id);
  }
  for (const match of read("/proc/self/cgroup").matchAll(/\/(?:docker[/-])([0-9a-f]{64})(?:\.scope)?$/gm)) candidates.add(match[1]!);
  for (const id of candidates) {
    try {
      const inspected = await engine.inspectContainer(id);
      log.info("svc runs in a container of this engine", { container_id: inspected.Id, container: inspected.Name.replace(/^\//, "") });
      return inspected.Id;
    } catch {
      // Not a container of this engine (another engine, or not a container id at all).
    }
  }
  return undefined;
}

function readProcFile(path: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return "";
  }
}
