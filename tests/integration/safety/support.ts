/**
 * Fault-injection helpers. The safety tests run svc as a real process
 * (`bun src/main.ts ...`) against an engine and registry of their own: a second sandbox started
 * with scripts/sandbox.sh. Own, because svc's startup recovery looks at EVERY parked container of
 * its engine: on the shared engine it would "repair" other engineers' updates in flight, and
 * their svc processes would repair the leftovers these tests leave on purpose.
 *
 * Everything started here (sandbox, svc processes, proxies, webhook receivers) is tracked and
 * stopped by process id or handle in `stopEverything`, also when a test fails.
 */

import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, openSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { Subprocess } from "bun";
import { freePort, importImage, pushImage, uniqueName, waitUntil } from "../../harness.ts";
import { shortcut } from "../../support/docker-shortcuts.ts";
import { engineRequest } from "../../support/engine-api.ts";
import { type RunOptions, runContainer } from "../../support/fixture.ts";
import { svcCommand } from "../../support/svc-command.ts";
import { tempDir } from "../../temp.ts";

export const REPO_ROOT = resolve(import.meta.dir, "../../..");
const SANDBOX_SCRIPT = join(REPO_ROOT, "scripts/sandbox.sh");

/** A shell-trap image command: PID 1 exits at once on SIGTERM, so a 1 s stop_timeout suffices. */
export const QUICK_CMD = `CMD ["/bin/sh","-c","trap 'exit 0' TERM; sleep 3600 & wait"]`;

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

// ---------------------------------------------------------------------------------------------
// process bookkeeping: everything we start is stopped by pid, even when a test fails

const started = new Set<Subprocess>();
const cleanups: (() => void | Promise<void>)[] = [];

export function track(proc: Subprocess): Subprocess {
  started.add(proc);
  proc.exited.finally(() => started.delete(proc));
  return proc;
}

export function onCleanup(fn: () => void | Promise<void>): void {
  cleanups.push(fn);
}

const testCleanups: (() => void | Promise<void>)[] = [];

/** Stops what one test started (svc processes still running, proxies); for afterEach. */
export async function endOfTest(): Promise<void> {
  for (const proc of [...started]) {
    try {
      proc.kill("SIGKILL");
    } catch {}
  }
  await Promise.all([...started].map((p) => p.exited.catch(() => {})));
  for (const fn of testCleanups.splice(0).reverse()) {
    try {
      await fn();
    } catch (error) {
      console.error("cleanup failed:", error);
    }
  }
}

export async function stopEverything(): Promise<void> {
  await endOfTest();
  for (const proc of [...started]) {
    try {
      proc.kill("SIGKILL");
    } catch {}
  }
  await Promise.all([...started].map((p) => p.exited.catch(() => {})));
  for (const fn of cleanups.splice(0).reverse()) {
    try {
      await fn();
    } catch (error) {
      console.error("cleanup failed:", error);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// a sandbox of our own

/**
 * sandbox.sh decides whether to apt-get install by probing `python3 -c 'import aiosmtpd'`; under a
 * pyenv shim that python lacks the Debian module and every `up` would reinstall packages (~30 s).
 * A PATH entry that points python3 at the system interpreter avoids it.
 */
let pythonBin: string | undefined;

function sandboxPath(): string {
  // one folder per run, removed when the run ends (a fixed name under /tmp outlived every run)
  if (pythonBin === undefined) {
    pythonBin = tempDir("svc-safety-pybin-");
    if (existsSync("/usr/bin/python3")) symlinkSync("/usr/bin/python3", join(pythonBin, "python3"));
  }
  return `${pythonBin}:${process.env.PATH ?? ""}`;
}

export class PrivateSandbox {
  readonly dir: string;
  readonly registryPort: number;
  readonly authRegistryPort: number;
  constructor() {
    this.dir = mkdtempSync(join(tmpdir(), "svc-safety-"));
    this.registryPort = freePort();
    this.authRegistryPort = freePort();
  }
  get socketPath(): string {
    return join(this.dir, "docker.sock");
  }
  get dockerHost(): string {
    return `unix://${this.socketPath}`;
  }
  get registry(): string {
    return `127.0.0.1:${this.registryPort}`;
  }
  get rootfs(): string {
    return join(this.dir, "rootfs.tar");
  }
  private env(): Record<string, string> {
    return {
      ...cleanEnv(),
      PATH: sandboxPath(),
      SVC_SANDBOX_DIR: this.dir,
      SVC_SANDBOX_REGISTRY_PORT: String(this.registryPort),
      SVC_SANDBOX_AUTH_REGISTRY_PORT: String(this.authRegistryPort),
      // the engine the whole run is on
      ...(process.env.SVC_TEST_ENGINE ? { SVC_SANDBOX_ENGINE: process.env.SVC_TEST_ENGINE } : {}),
    };
  }

  /**
   * sandbox.sh is edited by others while tests run, and bash reads a script as it goes: run a
   * copy that parses, the same copy for `up` and `down`. `up` is idempotent, so it is retried.
   */
  private script(): string {
    const copy = join(this.dir, "..", `${this.dir.split("/").pop()}-sandbox.sh`);
    if (existsSync(copy)) return copy;
    for (let attempt = 0; attempt < 20; attempt++) {
      writeFileSync(copy, readFileSync(SANDBOX_SCRIPT));
      if (Bun.spawnSync(["bash", "-n", copy]).exitCode === 0) return copy;
      Bun.sleepSync(500);
    }
    throw new Error("scripts/sandbox.sh does not parse");
  }

  up(): void {
    let stderr = "";
    for (let attempt = 0; attempt < 3; attempt++) {
      const proc = Bun.spawnSync(["bash", this.script(), "up"], { env: this.env(), stdout: "pipe", stderr: "pipe" });
      if (proc.exitCode === 0) return;
      stderr = proc.stderr.toString();
    }
    throw new Error(`sandbox up failed: ${stderr}`);
  }

  down(): void {
    Bun.spawnSync(["bash", this.script(), "down"], { env: this.env(), stdout: "pipe", stderr: "pipe" });
    rmSync(this.dir, { recursive: true, force: true });
    rmSync(this.script(), { force: true });
  }

  /**
   * The docker CLI against this engine; inspect, logs, rm -f and network create/rm through its API
   * where the CLI's answer is certain (tests/support/docker-shortcuts.ts):
   * an engine that is down, or anything else, goes to the CLI itself.
   */
  docker(args: string[], options: { allowFailure?: boolean } = {}): RunResult {
    const cli = (cliArgs: string[]): RunResult => {
      const proc = Bun.spawnSync(["docker", "-H", this.dockerHost, ...cliArgs], {
        stdout: "pipe",
        stderr: "pipe",
        env: cleanEnv(),
      });
      return {
        code: proc.exitCode ?? -1,
        stdout: proc.stdout.toString().trim(),
        stderr: proc.stderr.toString().trim(),
      };
    };
    const result = shortcut(args, this.socketPath, cli) || this.apiShortcut(args) || cli(args);
    if (result.code !== 0 && !options.allowFailure)
      throw new Error(`docker ${args.join(" ")} failed (${result.code}): ${result.stderr}`);
    return result;
  }

  /** A started container on this engine, as the fixture's `run` makes one (without its defaults). */
  run(name: string, image: string, options: RunOptions = {}): string {
    return runContainer(name, image, options, { socketPath: this.socketPath });
  }

  /** `network create NAME` (prints the ID) and `network rm NAME` (the name). */
  private apiShortcut(args: string[]): RunResult | undefined {
    const done = (stdout: string): RunResult => ({ code: 0, stdout, stderr: "" });
    try {
      if (args[0] !== "network" || args.length !== 3 || args[2]!.startsWith("-")) return undefined;
      if (args[1] === "create") {
        // What `docker network create NAME` sends (the default driver).
        const answer = engineRequest("POST", "/networks/create", {
          socketPath: this.socketPath,
          body: JSON.stringify({ Name: args[2], Driver: "bridge" }),
          headers: { "Content-Type": "application/json" },
        });
        return answer.status === 201 ? done((JSON.parse(answer.body) as { Id: string }).Id) : undefined;
      }
      if (args[1] === "rm")
        return engineRequest("DELETE", `/networks/${encodeURIComponent(args[2]!)}`, { socketPath: this.socketPath })
          .status < 300
          ? done(args[2]!)
          : undefined;
    } catch {
      // the engine is down: the CLI says so in its own words
    }
    return undefined;
  }

  inspect<T = any>(nameOrId: string): T {
    return JSON.parse(this.docker(["inspect", nameOrId]).stdout)[0] as T;
  }

  /** A new image (new ID on every call) under `reference`, pushed unless told otherwise (through the Engine API). */
  buildImage(reference: string, changes: string[], push = true): string {
    const id = importImage(reference, [...changes, `LABEL svc.test.build=${randomBytes(6).toString("hex")}`], this);
    if (push) pushImage(reference, this.socketPath);
    return id;
  }

  /** name -> state of every container of this engine (what `docker ps -a` lists; a link's alias is not a name) */
  containers(): Record<string, string> {
    const listed = JSON.parse(engineRequest("GET", "/containers/json?all=1", { socketPath: this.socketPath }).body) as {
      Names: string[];
      State: string;
    }[];
    return Object.fromEntries(
      listed.map((c) => [c.Names.map((n) => n.replace(/^\//, "")).find((n) => !n.includes("/")) ?? "", c.State]),
    );
  }

  removeAllContainers(): void {
    const ids = this.docker(["ps", "-aq"]).stdout.split("\n").filter(Boolean);
    if (ids.length) this.docker(["rm", "-f", ...ids], { allowFailure: true });
  }

  private pid(file: string): number | null {
    try {
      return Number(readFileSync(join(this.dir, file), "utf8").trim());
    } catch {
      return null;
    }
  }

  engineAlive(): boolean {
    try {
      return engineRequest("GET", "/_ping", { socketPath: this.socketPath, timeoutMs: 10_000 }).status === 200;
    } catch {
      return false;
    }
  }

  /**
   * Stops the engine by its pid (SIGTERM: what `systemctl restart docker` does; the engine stops
   * its containers on the way down) and starts it again with sandbox.sh's own command line.
   */
  async stopEngine(signal: "SIGTERM" | "SIGKILL" = "SIGTERM"): Promise<void> {
    const pid = this.pid("dockerd.pid");
    if (!pid) throw new Error("no dockerd pid");
    // a crashed engine's containerd (its child) keeps running but never answers the next dockerd
    // here ("containerd is still running", then a timeout): a crash takes both down
    const containerd = signal === "SIGKILL" ? this.pid("exec/containerd/containerd.pid") : null;
    process.kill(pid, signal);
    if (containerd && alive(containerd)) process.kill(containerd, "SIGKILL");
    await waitUntil(() => !alive(pid) && (!containerd || !alive(containerd)), 60_000, "dockerd to exit");
  }

  async startEngine(): Promise<void> {
    // after a SIGKILL the pid file stays, and dockerd refuses to start while that pid is in /proc
    // (a zombie until init reaps it): a pid file of a dead engine is removed, as a host's init would
    // (the same for its containerd: dockerd would wait for a zombie to answer)
    for (const file of ["dockerd.pid", "exec/containerd/containerd.pid"]) {
      const pid = this.pid(file);
      if (pid && !alive(pid)) rmSync(join(this.dir, file), { force: true });
    }
    // sandbox.sh's own command line for this engine
    const proc = Bun.spawnSync(["bash", this.script(), "start-engine"], {
      env: this.env(),
      stdout: "pipe",
      stderr: "pipe",
    });
    if (proc.exitCode !== 0) throw new Error(`sandbox start-engine failed: ${proc.stderr.toString()}`);
    await waitUntil(() => this.engineAlive(), 60_000, "dockerd to answer");
  }

  /** Kills the plain registry by its pid (it is started again by `startRegistry`). */
  async stopRegistry(): Promise<void> {
    const pid = this.pid("registry.pid");
    if (!pid || !alive(pid)) return;
    process.kill(pid, "SIGKILL");
    await waitUntil(() => !alive(pid), 20_000, "registry to exit");
  }

  /** sandbox.sh start_registry: the same command line and pid file. */
  async startRegistry(): Promise<void> {
    const pid = this.pid("registry.pid");
    if (pid && alive(pid)) return;
    const log = openSync(join(this.dir, "registry.log"), "a");
    const proc = Bun.spawn(["setsid", "docker-registry", "serve", join(this.dir, "registry", "config.yml")], {
      stdin: "ignore",
      stdout: log,
      stderr: log,
      env: cleanEnv(),
    });
    proc.unref();
    writeFileSync(join(this.dir, "registry.pid"), String(proc.pid));
    await waitUntil(
      async () => (await fetch(`http://${this.registry}/v2/`).catch(() => null))?.status === 200,
      30_000,
      "registry to answer",
    );
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    // a zombie still answers kill 0: look at its state
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return !/^\d+ \(.*\) Z/.test(stat);
  } catch {
    return false;
  }
}

/** The environment without anything svc would read as configuration. */
export function cleanEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (value === undefined || key.startsWith("SVC_") || key === "DOCKER_HOST" || key === "NODE_ENV") continue;
    env[key] = value;
  }
  return env;
}

// ---------------------------------------------------------------------------------------------
// svc as a process, its audit log read live

export interface LogLine {
  timestamp: string;
  level: string;
  target: string;
  message: string;
  fields?: Record<string, any>;
}

export interface AuditFields {
  action: string;
  container: string;
  container_id?: string | null;
  image?: string;
  error?: string;
  trigger?: string;
}

export interface SvcProcess {
  proc: Subprocess;
  lines: LogLine[];
  audit: AuditFields[];
  stderr: () => string;
  exited: Promise<number>;
  /** set when the test killed it */
  killedAfter?: string;
}

export interface SvcOptions {
  /**
   * Called for each audit entry as it arrives, with every entry so far. Return true to SIGKILL svc
   * at once (synchronously, from the stdout reader), or a number of ms to kill it after.
   */
  killWhen?: (entry: AuditFields, all: AuditFields[]) => boolean | number;
}

/**
 * The empty folder svc runs from, made on first use (a test file that only imports this module,
 * such as sandbox-down's, must not leave one behind) and removed by stopEverything.
 */
let workDir: string | undefined;
function svcWorkDir(): string {
  if (workDir) return workDir;
  const dir = mkdtempSync(join(tmpdir(), "svc-safety-cwd-"));
  onCleanup(() => {
    rmSync(dir, { recursive: true, force: true });
    workDir = undefined;
  });
  workDir = dir;
  return dir;
}

/** svc (svcCommand) `--log-format json --log-audit-to-stdout ...args`, from an empty folder with a clean env. */
export function startSvc(args: string[], options: SvcOptions = {}): SvcProcess {
  const proc = track(
    Bun.spawn([...svcCommand(), "--log-format", "json", "--log-audit-to-stdout", ...args], {
      cwd: svcWorkDir(),
      // state_dir's default: a fresh folder per process, not the host's /var/lib/svc
      env: { ...cleanEnv(), XDG_STATE_HOME: tempDir("svc-state-") },
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
    }),
  );
  const run: SvcProcess = { proc, lines: [], audit: [], stderr: () => stderrText, exited: proc.exited };
  let stderrText = "";
  (async () => {
    for await (const chunk of proc.stderr as ReadableStream<Uint8Array>) stderrText += new TextDecoder().decode(chunk);
  })().catch(() => {});

  const kill = (why: string) => {
    if (run.killedAfter !== undefined) return;
    run.killedAfter = why;
    proc.kill("SIGKILL");
  };
  const stdoutDone = (async () => {
    const decoder = new TextDecoder();
    let buffer = "";
    for await (const chunk of proc.stdout as ReadableStream<Uint8Array>) {
      buffer += decoder.decode(chunk, { stream: true });
      let newline: number;
      while ((newline = buffer.indexOf("\n")) >= 0) {
        const text = buffer.slice(0, newline);
        buffer = buffer.slice(newline + 1);
        if (!text.trim()) continue;
        let line: LogLine;
        try {
          line = JSON.parse(text);
        } catch {
          line = { timestamp: "", level: "raw", target: "stdout", message: text };
        }
        run.lines.push(line);
        if (line.target !== "svc::audit" || !line.fields || run.killedAfter !== undefined) continue;
        const entry = line.fields as AuditFields;
        run.audit.push(entry);
        const verdict = options.killWhen?.(entry, run.audit);
        if (verdict === true) kill(describe(entry));
        else if (typeof verdict === "number") setTimeout(() => kill(`${describe(entry)} + ${verdict} ms`), verdict);
      }
    }
  })().catch(() => {});
  run.exited = Promise.all([proc.exited, stdoutDone]).then(([code]) => code);
  return run;
}

function describe(entry: AuditFields): string {
  // a rollback entry carries its reason in `error`; any other entry with one failed
  return entry.error && entry.action !== "rollback" ? `${entry.action} (failed)` : entry.action;
}

/** The "recovery" lines svc logs at start: what it did with each leftover. */
export function recoveryActions(run: SvcProcess): string[] {
  return run.lines.filter((l) => l.message === "recovery" && l.fields?.action).map((l) => String(l.fields!.action));
}

// ---------------------------------------------------------------------------------------------
// a webhook receiver: how a run-once process hands us its SessionReport

export interface Receiver {
  url: string;
  reports: any[];
  stop(): void;
}

export function startReceiver(): Receiver {
  const reports: any[] = [];
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      reports.push(await request.json().catch(() => null));
      return new Response("ok");
    },
  });
  const receiver = { url: `http://127.0.0.1:${server.port}/hook`, reports, stop: () => server.stop(true) };
  onCleanup(() => receiver.stop());
  return receiver;
}

// ---------------------------------------------------------------------------------------------
// an engine proxy: forwards every API call to the real engine socket, except those a test answers

export type Intercept = (request: Request, url: URL) => Response | undefined | Promise<Response | undefined>;

export interface EngineProxy {
  socketPath: string;
  dockerHost: string;
  /** "METHOD path" of every request seen, in order */
  seen: string[];
  intercept: Intercept | undefined;
  stop(): void;
}

export function startEngineProxy(upstreamSocket: string): EngineProxy {
  const dir = mkdtempSync(join(tmpdir(), "svc-safety-proxy-"));
  const socketPath = join(dir, "engine.sock");
  const proxy: EngineProxy = {
    socketPath,
    dockerHost: `unix://${socketPath}`,
    seen: [],
    intercept: undefined,
    stop: () => {
      server.stop(true);
      rmSync(dir, { recursive: true, force: true });
    },
  };
  const server = Bun.serve({
    unix: socketPath,
    async fetch(request: Request): Promise<Response> {
      const url = new URL(request.url);
      proxy.seen.push(`${request.method} ${url.pathname}`);
      const answered = await proxy.intercept?.(request, url);
      if (answered) return answered;
      const hasBody = request.method !== "GET" && request.method !== "HEAD";
      const headers = new Headers(request.headers);
      headers.delete("content-length");
      const upstream = await fetch(`http://localhost${url.pathname}${url.search}`, {
        method: request.method,
        headers,
        body: hasBody ? await request.arrayBuffer() : undefined,
        unix: upstreamSocket,
        redirect: "manual",
        decompress: false,
      } as RequestInit);
      // the engine streams (pull progress, logs): pass the body through as it comes
      const responseHeaders = new Headers(upstream.headers);
      responseHeaders.delete("content-length");
      responseHeaders.delete("transfer-encoding");
      return new Response(upstream.body, {
        status: upstream.status,
        statusText: upstream.statusText,
        headers: responseHeaders,
      });
    },
  });
  testCleanups.push(() => proxy.stop());
  return proxy;
}

/** `/v1.41/containers/create` and `/containers/create` alike: the path without its API version. */
export function apiPath(url: URL): string {
  return url.pathname.replace(/^\/v[0-9.]+\//, "/");
}

// ---------------------------------------------------------------------------------------------
// what a user configured on a container: must survive any fault

export interface UserConfig {
  name: string;
  env: string[];
  labels: Record<string, string>;
  binds: unknown;
  mounts: { type: string; source: string; destination: string; rw: boolean }[];
  restart: unknown;
  networks: Record<string, string[]>;
}

export function userConfig(inspect: any, userLabels: string[]): UserConfig {
  const shortId = String(inspect.Id).slice(0, 12);
  const labels: Record<string, string> = {};
  for (const key of userLabels) labels[key] = inspect.Config.Labels?.[key];
  return {
    name: inspect.Name,
    env: [...(inspect.Config.Env ?? [])].sort(),
    labels,
    binds: inspect.HostConfig.Binds,
    mounts: ((inspect.Mounts ?? []) as any[]).map((m) => ({
      type: m.Type,
      source: m.Source,
      destination: m.Destination,
      rw: m.RW,
    })),
    restart: inspect.HostConfig.RestartPolicy,
    networks: Object.fromEntries(
      Object.entries((inspect.NetworkSettings?.Networks ?? {}) as Record<string, any>).map(([net, endpoint]) => [
        net,
        ((endpoint.Aliases ?? []) as string[]).filter((a) => a !== shortId && a !== inspect.Config.Hostname).sort(),
      ]),
    ),
  };
}

// ---------------------------------------------------------------------------------------------
// the fault-injection matrix: step x fault -> outcome

export interface MatrixRow {
  fault: string;
  step: string;
  /** what svc was doing when the fault hit, as observed */
  observed: string;
  first_exit: string;
  recovery: string;
  image_after: string;
  leftovers: string;
  rerun_exit: string;
  verdict: string;
}

export const matrix: MatrixRow[] = [];

export function renderMatrix(rows: MatrixRow[]): string {
  const header = [
    "fault",
    "step",
    "observed at fault",
    "1st run exit",
    "recovery / report",
    "image after",
    "leftovers",
    "next run exit",
    "verdict",
  ];
  const body = rows.map((r) => [
    r.fault,
    r.step,
    r.observed,
    r.first_exit,
    r.recovery,
    r.image_after,
    r.leftovers,
    r.rerun_exit,
    r.verdict,
  ]);
  const cell = (s: string) => {
    const text = s.replace(/\/tmp\/svc-safety-[A-Za-z0-9]+/g, "<sandbox>").replace(/\n/g, " ");
    return (text.length > 240 ? `${text.slice(0, 240)}…` : text).replace(/\|/g, "\\|");
  };
  return [
    `| ${header.join(" | ")} |`,
    `|${header.map(() => "---").join("|")}|`,
    ...body.map((cells) => `| ${cells.map(cell).join(" | ")} |`),
  ].join("\n");
}

export { freePort, uniqueName, waitUntil };
