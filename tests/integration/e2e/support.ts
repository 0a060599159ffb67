/**
 * End-to-end support: svc run as a real process (`bun src/main.ts ...`), the way a user runs it,
 * against the sandbox engine and registry. Every process started here is tracked and killed by
 * its pid in `stopAll` (each test file calls it in afterAll); every container, network, volume
 * and image carries the fixture's unique prefix and is removed in `cleanup`.
 */
import { chmodSync, copyFileSync, existsSync, mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import type { Server, Subprocess } from "bun";
import { docker, freePort, inspect, portOpen, sandbox, waitUntil } from "../../harness.ts";
import { EngineFixture } from "../../support/fixture.ts";
import { svcCommand } from "../../support/svc-command.ts";
import { tempDir } from "../../temp.ts";

export { portOpen };

/**
 * `bun build.ts` of this checkout into `work` (the binary the image takes): the test command's,
 * compiled once a run from the same checkout (SVC_TEST_BINARY, docs/testing.md), copied when set.
 */
export function compileSvc(work: string): void {
  const once = process.env.SVC_TEST_BINARY;
  if (once && existsSync(once)) {
    mkdirSync(work, { recursive: true });
    copyFileSync(once, join(work, "svc"));
    chmodSync(join(work, "svc"), 0o755);
    return;
  }
  const compiled = Bun.spawnSync(["bun", "build.ts", "--outdir", work], {
    cwd: REPO_ROOT,
    stdout: "pipe",
    stderr: "pipe",
  });
  if (compiled.exitCode !== 0) throw new Error(`bun build.ts: ${compiled.stderr.toString()}`);
}

/**
 * Builds svc's scratch image from the binary `compileSvc` put in `work`, under `ref`, with a label
 * making each build a new image, and pushes it. Returns the image id.
 */
export function buildSvcImage(work: string, ref: string, build: string): string {
  const context = join(work, "context");
  const prepared = Bun.spawnSync(["bash", "scripts/image-context.sh", join(work, "svc"), join(context, "rootfs")], {
    cwd: REPO_ROOT,
    stdout: "pipe",
    stderr: "pipe",
  });
  if (prepared.exitCode !== 0) throw new Error(`image-context.sh: ${prepared.stderr.toString()}`);
  const id = classicBuild(ref, ["-f", join(REPO_ROOT, "Dockerfile"), "--label", `svc.e2e.build=${build}`, context]);
  docker(["push", "-q", ref]);
  return id;
}

/**
 * `docker build -q -t REF ARGS` with the classic builder (`stdin`: the Dockerfile, ARGS then "-"),
 * its image under REF when it returns. On the containerd image store the classic builder may
 * refuse to move a tag it is replacing ("after deleting the existing one: AlreadyExists"), or end
 * well and leave the tag on the image it had (seen under load: the push then sent the old image,
 * and svc rightly found its own image fresh): built again, then tagged by the id the build printed.
 */
export function classicBuild(ref: string, args: string[], stdin?: string): string {
  const build = () =>
    Bun.spawnSync(["docker", "-H", sandbox().dockerHost, "build", "-q", "-t", ref, ...args], {
      ...(stdin === undefined ? {} : { stdin: new TextEncoder().encode(stdin) }),
      env: { ...process.env, DOCKER_BUILDKIT: "0" },
      stdout: "pipe",
      stderr: "pipe",
    });
  let built = build();
  for (
    let attempt = 2;
    attempt <= 3 && built.exitCode !== 0 && built.stderr.toString().includes("already exists");
    attempt++
  )
    built = build();
  if (built.exitCode !== 0) throw new Error(`docker build: ${built.stderr.toString()}`);
  const id = built.stdout.toString().trim().split("\n").at(-1) ?? "";
  if (!id.startsWith("sha256:")) throw new Error(`docker build printed no image id: ${built.stdout.toString()}`);
  if (inspect(ref).Id !== id) docker(["tag", id, ref]);
  const tagged = inspect(ref).Id as string;
  if (tagged !== id) throw new Error(`docker build made ${id}, but ${ref} still names ${tagged}`);
  return id;
}

export const REPO_ROOT = resolve(import.meta.dir, "../../..");
export { MAIN } from "../../support/svc-command.ts";

/** An image that stops at once on SIGTERM (so stop_timeout is never waited out). */
export const QUICK_STOP_CMD = `CMD ["/bin/sh","-c","trap 'exit 0' TERM; sleep 3600 & wait"]`;
/** An image whose container exits non-zero at once: the new version that must be rolled back. */
export const FAILING_CMD = `CMD ["/bin/sh","-c","echo broken >&2; exit 3"]`;

// ---------------------------------------------------------------------------------------------
// Processes
// ---------------------------------------------------------------------------------------------

const tracked = new Set<Subprocess>();

/** Tracks a process started by a test so that `stopAll` kills it by pid. */
export function track<T extends Subprocess>(proc: T): T {
  tracked.add(proc);
  void proc.exited.then(() => tracked.delete(proc));
  return proc;
}

/** Kills one process by its pid (SIGTERM, then SIGKILL after 3 s) and waits for it. */
export async function stopProcess(proc: Subprocess | undefined): Promise<void> {
  if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
  proc.kill("SIGTERM");
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([proc.exited, new Promise((r) => (timer = setTimeout(r, 3000)))]);
  clearTimeout(timer);
  if (proc.exitCode === null && proc.signalCode === null) {
    proc.kill("SIGKILL");
    await proc.exited;
  }
}

/** Kills every process this test file started and that is still running. */
export async function stopAll(): Promise<void> {
  await Promise.all([...tracked].map((proc) => stopProcess(proc)));
  tracked.clear();
}

/** The environment a user's shell would give svc: no SVC_* or DOCKER_HOST leaking from the test run. */
export function userEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (value === undefined || key.startsWith("SVC_") || key === "DOCKER_HOST") continue;
    env[key] = value;
  }
  // state_dir's default (a folder of the user's): a fresh one per process, as a new user's would be
  return { ...env, XDG_STATE_HOME: tempDir("svc-state-"), ...extra };
}

export interface SvcOptions {
  cwd?: string;
  env?: Record<string, string>;
  /** what runs svc (default: the test command's compiled svc, else `bun src/main.ts`: svcCommand) */
  command?: string[];
}

/** A running `svc` process whose stdout and stderr are collected as they come. */
export class SvcProcess {
  readonly proc: Subprocess<"ignore", "pipe", "pipe">;
  stdout = "";
  stderr = "";
  private readonly done: Promise<void>;

  constructor(
    readonly args: string[],
    options: SvcOptions = {},
  ) {
    this.proc = track(
      Bun.spawn([...(options.command ?? svcCommand()), ...args], {
        cwd: options.cwd ?? REPO_ROOT,
        env: options.env ?? userEnv(),
        stdin: "ignore",
        stdout: "pipe",
        stderr: "pipe",
      }),
    );
    this.done = Promise.all([this.collect(this.proc.stdout, "stdout"), this.collect(this.proc.stderr, "stderr")]).then(
      () => {},
    );
  }

  private async collect(stream: ReadableStream<Uint8Array>, into: "stdout" | "stderr"): Promise<void> {
    const decoder = new TextDecoder();
    for await (const chunk of stream) this[into] += decoder.decode(chunk, { stream: true });
  }

  get output(): string {
    return `${this.stdout}\n${this.stderr}`;
  }

  /** stdout + stderr lines that are JSON objects (svc logs JSON when piped). */
  records(): any[] {
    return parseJsonLines(this.output);
  }

  /** Resolves with the exit code (after all output was read); throws after `timeoutMs`. */
  async exit(timeoutMs = 60_000): Promise<number> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`svc ${this.args.join(" ")} still running after ${timeoutMs} ms\n${this.describe()}`)),
        timeoutMs,
      );
    });
    try {
      const code = await Promise.race([this.proc.exited, timeout]);
      await this.done;
      return code;
    } finally {
      clearTimeout(timer);
    }
  }

  signal(name: NodeJS.Signals): void {
    this.proc.kill(name);
  }

  get running(): boolean {
    return this.proc.exitCode === null && this.proc.signalCode === null;
  }

  describe(): string {
    return `--- stdout ---\n${this.stdout}\n--- stderr ---\n${this.stderr}`;
  }
}

export function startSvc(args: string[], options: SvcOptions = {}): SvcProcess {
  return new SvcProcess(args, options);
}

/** Runs svc to its end: exit code and output. */
export async function runSvc(
  args: string[],
  options: SvcOptions = {},
  timeoutMs = 90_000,
): Promise<{ code: number; stdout: string; stderr: string; svc: SvcProcess }> {
  const svc = startSvc(args, options);
  const code = await svc.exit(timeoutMs);
  return { code, stdout: svc.stdout, stderr: svc.stderr, svc };
}

export function parseJsonLines(text: string): any[] {
  const out: any[] = [];
  for (const line of text.split("\n")) {
    const trimmed = line.trim();
    if (!trimmed.startsWith("{")) continue;
    try {
      out.push(JSON.parse(trimmed));
    } catch {
      // not a JSON line
    }
  }
  return out;
}

/**
 * Every object found (at any depth) in svc's output lines that looks like a SessionReport
 * (has `counts` and a `containers` array): the report a run-once user is shown.
 */
export function reportsIn(text: string): any[] {
  const found: any[] = [];
  const visit = (value: unknown): void => {
    if (value === null || typeof value !== "object") return;
    if (Array.isArray(value)) {
      for (const item of value) visit(item);
      return;
    }
    const record = value as Record<string, unknown>;
    if (Array.isArray(record.containers) && typeof record.counts === "object" && record.counts !== null)
      found.push(record);
    Object.values(record).forEach(visit);
  };
  parseJsonLines(text).forEach(visit);
  return found;
}

/**
 * The state svc told the user for container `name`, from any line of its output: a printed
 * SessionReport, or a log record naming the container with a `state`/`outcome` field.
 */
export function reportedStates(text: string, name: string): string[] {
  const states: string[] = [];
  for (const report of reportsIn(text)) {
    for (const c of report.containers as any[])
      if (c?.name === name && typeof c.state === "string") states.push(c.state);
  }
  const visit = (value: unknown): void => {
    if (value === null || typeof value !== "object") return;
    if (Array.isArray(value)) {
      for (const item of value) visit(item);
      return;
    }
    const record = value as Record<string, unknown>;
    const named = record.container === name || record.name === name;
    const state = record.state ?? record.outcome;
    if (named && typeof state === "string" && !("containers" in record)) states.push(state);
    Object.values(record).forEach(visit);
  };
  parseJsonLines(text).forEach(visit);
  return states;
}

// ---------------------------------------------------------------------------------------------
// Containers, images, files
// ---------------------------------------------------------------------------------------------

/** A family of uniquely named containers, images, networks and volumes for one test file. */
/** The engine fixture of the end-to-end tests: images stop at once on SIGTERM unless told otherwise. */
export class Fixture extends EngineFixture {
  constructor(what = "e2e") {
    super(what, { changes: [QUICK_STOP_CMD] });
  }
}

export { containersByPrefix } from "../../harness.ts";

/** Flags every e2e run uses: the sandbox engine, short timeouts, JSON logs. */
export function baseFlags(): string[] {
  return [
    "--docker-host",
    sandbox().dockerHost,
    "--stop-timeout",
    "1s",
    "--rollback-startup-timeout",
    "3s",
    "--log-format",
    "json",
  ];
}

/** Waits until `port` on 127.0.0.1 accepts connections (or the process died). */
/**
 * svc as a service beside a one-off command: on `stateDir`, with the update API (token `token`)
 * on a free port of 127.0.0.1, for `names`; resolved once the port answers.
 */
export async function startServiceOnState(
  stateDir: string,
  token: string,
  names: string[],
  extraFlags: string[] = [],
): Promise<{ service: SvcProcess; port: number }> {
  const port = freePort();
  const service = startSvc([
    ...baseFlags(),
    "--state-dir",
    stateDir,
    ...extraFlags,
    "--http-api-update",
    "--http-api-token",
    token,
    "--http-api-port",
    String(port),
    ...names,
  ]);
  await waitForPort(port, service);
  return { service, port };
}

export async function waitForPort(port: number, svc?: SvcProcess, timeoutMs = 30_000): Promise<void> {
  await waitUntil(
    async () => {
      if (svc && !svc.running)
        throw new Error(`svc exited (${svc.proc.exitCode}) before listening on ${port}\n${svc.describe()}`);
      return await portOpen(port);
    },
    timeoutMs,
    `port ${port}`,
  );
}

/** Loopback HTTP receivers started by `receiver`, stopped by `stopReceivers`. */
const receivers = new Set<Server<undefined>>();

/** A loopback HTTP server standing for a webhook or Pushover: keeps each body, answers `answer()`. */
export function receiver(answer: () => Response = () => new Response(null, { status: 204 })): {
  server: Server<undefined>;
  bodies: string[];
  url: string;
} {
  const bodies: string[] = [];
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      bodies.push(await request.text());
      return answer();
    },
  });
  receivers.add(server);
  return { server, bodies, url: `http://127.0.0.1:${server.port}/` };
}

export function stopReceivers(): void {
  for (const server of receivers) server.stop(true);
  receivers.clear();
}
