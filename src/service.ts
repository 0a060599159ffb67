/**
 * The composition root: config -> logging -> engine -> registry -> notifications -> updater
 * -> recovery -> HTTP API + scheduler, then waits for SIGTERM / SIGINT. Resolves with the
 * process exit code; startup failures are thrown as SvcError (the CLI prints them and maps
 * the kind to the exit code: "startup" and "config" are 2).
 */
import { readFileSync } from "node:fs";
import { type App, createApp, listen } from "./api/index.ts";
import type { Config } from "./config/index.ts";
import { createDockerEngine, type Engine } from "./engine/index.ts";
import { toSvcError } from "./errors.ts";
import { createLogging, type Logger, type Logging } from "./log/index.ts";
import { Metrics } from "./metrics/index.ts";
import { createNotifications, type Dispatcher } from "./notify/index.ts";
import { createRegistry } from "./registry/index.ts";
import { createScheduler } from "./scheduler/index.ts";
import { createUpdater, type Updater } from "./updater/index.ts";
import type { SessionReport } from "./updater/types.ts";

export interface ServiceOptions {
  /** the process to take signals from (tests may pass their own emitter) */
  signals?: Pick<NodeJS.Process, "on" | "off">;
  /** what a second signal does; default: exit at once (130 for SIGINT, 143 for SIGTERM) */
  exitNow?: (code: number) => void;
}

const SIGNAL_EXIT_CODES = { SIGINT: 130, SIGTERM: 143 } as const;
type StopSignal = keyof typeof SIGNAL_EXIT_CODES;

/** The API listens only when one of its features is on, and never in run-once mode. */
export function apiEnabled(config: Config): boolean {
  return !config.run_once && (config.http_api.update || config.http_api.metrics);
}

/** run_once: exit 0 when no container failed or was rolled back, 1 otherwise (CONTRACT.md). */
export function runOnceExitCode(report: SessionReport | null): number {
  if (report === null) return 1;
  return report.containers.some((c) => c.state === "failed" || c.state === "rolled_back") ? 1 : 0;
}

export async function runService(config: Config, options: ServiceOptions = {}): Promise<number> {
  const logging = createLogging(config);
  const log = logging.log.child("service");
  const stopSignal = waitForSignal(options, log);
  let notifications: Dispatcher | undefined;
  let updater: Updater | undefined;
  try {
    const metrics = new Metrics();
    const engine = await createDockerEngine(config.docker, logging.log);
    const registry = createRegistry(config, logging.log);
    notifications = await createNotifications(config, logging.log);
    const selfContainerId = await ownContainerId(engine, log);
    updater = createUpdater({ config, engine, registry, metrics, log: logging.log, audit: logging.audit, sink: notifications, selfContainerId });
    // Repair what a crash left half-done before any new cycle can start.
    await updater.recover();
    if (config.run_once) return await runOnce(config, updater, stopSignal.promise, log);
    return await serve({ config, updater, metrics, logging, log }, stopSignal.promise);
  } finally {
    // The running container's update finishes or rolls back, then reports go out, then logs close.
    // A second signal during these steps exits at once (the handlers stay until the end).
    await step(log, "drain the updater", () => updater?.drain());
    await step(log, "close notifications", () => notifications?.close());
    stopSignal.remove();
    await logging.close();
  }
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
}

/** The long-running mode: HTTP API (when enabled) and scheduler until the first signal. */
async function serve({ config, updater, metrics, logging, log }: Running, stop: Promise<StopSignal>): Promise<number> {
  let app: App | undefined;
  if (apiEnabled(config)) {
    app = createApp({ config, runner: updater, metrics, log: logging.log, access: logging.access });
    listen(app, config.http_api.port);
    log.info("HTTP API listening", { address: `0.0.0.0:${config.http_api.port}`, update: config.http_api.update, metrics: config.http_api.metrics });
  }
  const scheduler = createScheduler({ config, runner: updater, log: logging.log });
  try {
    scheduler.start();
    const signal = await stop;
    log.info("stopping: waiting for the running update to finish", { signal });
  } finally {
    // Timers stop at once and the port closes now; a request already waiting for its cycle
    // still gets its answer (stop without closing active connections).
    const schedulerStopped = scheduler.stop();
    const serverStopped = app?.stop(false);
    await step(log, "drain the updater", () => updater.drain());
    await step(log, "stop the scheduler", () => schedulerStopped);
    await step(log, "stop the HTTP server", () => serverStopped);
  }
  return 0;
}

/**
 * Resolves on the first SIGTERM / SIGINT. A second one exits at once: the next start repairs
 * whatever update was cut off (CONTRACT.md).
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
 * by replacement (CONTRACT.md). Read from the mount table: the engine bind-mounts the
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

/**
 * `svc healthcheck` (the scratch image's HEALTHCHECK, no shell there): 0 when GET /v1/health
 * on the configured port answers 200. Without any API feature nothing listens by design, so
 * there is nothing to ask: that counts as healthy rather than marking every such container
 * unhealthy (which would also make a self-update roll back).
 */
export async function runHealthcheck(config: Config, timeoutMs = 3000): Promise<number> {
  if (!apiEnabled(config)) return 0;
  try {
    const response = await fetch(`http://127.0.0.1:${config.http_api.port}/v1/health`, { signal: AbortSignal.timeout(timeoutMs) });
    await response.body?.cancel();
    return response.status === 200 ? 0 : 1;
  } catch {
    return 1;
  }
}
