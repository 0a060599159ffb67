/**
 * What every benchmark case shares: the bench's own sandbox (engine + registry) and its images and
 * containers, the binaries it builds (svc and the baselines), and svc started on a configuration.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { compile } from "../build.ts";
import { run, runAsync, startProcess, waitForHealth } from "./lib.ts";

export const ROOT = join(import.meta.dir, "..");
export const WORK = mkdtempSync(join(tmpdir(), "svc-bench-"));
export const TOKEN = "bench-token";
export const SANDBOX_ENV = {
  SVC_SANDBOX_DIR: join(ROOT, ".sandbox", `bench-${process.pid}`),
  // BENCH_REGISTRY_PORT: another pair (it and the next port) when 5300/5301 are taken on this machine
  SVC_SANDBOX_REGISTRY_PORT: process.env.BENCH_REGISTRY_PORT ?? "5300",
  SVC_SANDBOX_AUTH_REGISTRY_PORT: String(Number(process.env.BENCH_REGISTRY_PORT ?? "5300") + 1),
};
// Exits on SIGTERM quickly: its PID 1 shell waits on a background sleep, so stop costs no grace period.
export const CMD = `CMD ["/bin/sh","-c","trap 'exit 0' TERM; sleep 3600 & wait"]`;

export let dockerHost = "";
export let socketPath = "";
export let registry = "";

export function sandboxUp(): void {
  run(["bash", join(ROOT, "scripts/sandbox.sh"), "up"], { env: SANDBOX_ENV });
  const env = run(["bash", join(ROOT, "scripts/sandbox.sh"), "env"], { env: SANDBOX_ENV });
  const read = (name: string) => new RegExp(`${name}="([^"]*)"`).exec(env)![1]!;
  dockerHost = read("SVC_TEST_DOCKER_HOST");
  socketPath = dockerHost.replace("unix://", "");
  registry = read("SVC_TEST_REGISTRY");
}

export function sandboxDown(): void {
  run(["bash", join(ROOT, "scripts/sandbox.sh"), "down"], { env: SANDBOX_ENV, allowFailure: true });
}

export const docker = (args: string[], input?: string) => run(["docker", "-H", dockerHost, ...args], { input });

/**
 * `rootfs` (the sandbox's busybox root by default) imported and pushed as `reference`. Async: the
 * push may go through the bench's own counting proxy, which must keep answering.
 */
export async function buildImage(
  reference: string,
  variant: string,
  labels: string[] = [],
  rootfs = join(SANDBOX_ENV.SVC_SANDBOX_DIR, "rootfs.tar"),
): Promise<void> {
  const changes = labels.flatMap((label) => ["-c", `LABEL ${label}`]);
  await runAsync([
    "docker",
    "-H",
    dockerHost,
    "import",
    "-c",
    CMD,
    "-c",
    `LABEL bench.variant=${variant}`,
    ...changes,
    rootfs,
    reference,
  ]);
  await runAsync(["docker", "-H", dockerHost, "push", "-q", reference]);
}

export async function buildImages(references: string[], variant: (i: number) => string): Promise<void> {
  for (const [i, reference] of references.entries()) await buildImage(reference, variant(i));
}

/** Runs `count` containers named prefix-i on images[i % images.length], four at a time. */
export async function runContainers(prefix: string, from: number, count: number, images: string[]): Promise<string[]> {
  const names: string[] = [];
  const queue = Array.from({ length: count }, (_, k) => from + k);
  const worker = async () => {
    for (let i = queue.shift(); i !== undefined; i = queue.shift()) {
      const name = `${prefix}-${i}`;
      const proc = Bun.spawn(
        ["docker", "-H", dockerHost, "run", "-d", "--name", name, "--network", "none", images[i % images.length]!],
        { stdout: "ignore", stderr: "pipe" },
      );
      if ((await proc.exited) !== 0) throw new Error(`docker run ${name}: ${await new Response(proc.stderr).text()}`);
      names.push(name);
    }
  };
  await Promise.all([worker(), worker(), worker(), worker()]);
  return names;
}

export function removeAllContainers(): void {
  const ids = docker(["ps", "-aq"]).split("\n").filter(Boolean);
  if (ids.length) docker(["rm", "-f", ...ids]);
}

// ---------- binaries ----------
// Built into the bench's own folder: the checkout's dist/ may be in use by others' tests right now.
export const DIST = join(WORK, "dist");
export const SVC_BIN = join(DIST, "svc");
export const BASE_BIN = join(WORK, "hello");
export const FIELDS_BIN = join(WORK, "access-fields");
export const LINE_BIN = join(WORK, "access-line");
export const STACK_BIN = join(WORK, "stack");

export async function buildBinaries(): Promise<void> {
  run(["bun", join(ROOT, "build.ts"), "--outdir", DIST]);
  // The baseline is compiled exactly like svc: build.ts's own compile() with every release setting.
  await compile({ outfile: BASE_BIN, commit: "", entrypoint: join(ROOT, "bench/baseline/hello.ts") });
  await compile({ outfile: FIELDS_BIN, commit: "", entrypoint: join(ROOT, "bench/baseline/access-fields.ts") });
  await compile({ outfile: LINE_BIN, commit: "", entrypoint: join(ROOT, "bench/baseline/access-line.ts") });
  await compile({ outfile: STACK_BIN, commit: "", entrypoint: join(ROOT, "bench/baseline/stack.ts") });
}

export interface SvcOptions {
  port: number;
  accessLog?: string;
  rollback?: boolean;
  /** the engine address svc is given (default: the sandbox engine) */
  dockerHost?: string;
  tagPolicy?: string;
  /** the dashboard (http_api.ui) */
  ui?: boolean;
  peers?: { name: string; url: string; token: string }[];
  /** update_window (docs/windows.md) */
  updateWindow?: string;
  prePull?: boolean;
  stateDir?: string;
  monitorOnly?: boolean;
  /** release_notes.github_api_url (a loopback stand-in) */
  githubApiUrl?: string;
  /** vulnerabilities on, asking this OSV address (a loopback stand-in) */
  vulnerabilities?: { osvUrl: string };
  /** a `[[verify]]` policy: these images signed by this key, offline (docs/verification.md) */
  verify?: { images: string; key: string };
}

export function svcConfig(options: SvcOptions): string {
  const file = join(WORK, `svc-${options.port}.toml`);
  const lines = [
    `log_level = "warn"`,
    `log_format = "json"`,
    ...(options.tagPolicy ? [`tag_policy = "${options.tagPolicy}"`] : []),
    ...(options.updateWindow ? [`update_window = "${options.updateWindow}"`] : []),
    ...(options.prePull === undefined ? [] : [`pre_pull = ${options.prePull}`]),
    ...(options.stateDir ? [`state_dir = "${options.stateDir}"`] : []),
    ...(options.monitorOnly ? [`monitor_only = true`] : []),
    ...(options.peers?.length
      ? [
          `peers = [${options.peers.map((p) => `{ name = "${p.name}", url = "${p.url}", token = "${p.token}" }`).join(", ")}]`,
        ]
      : []),
    `[http_api]`,
    ...(options.ui ? [`ui = true`] : []),
    `update = true`,
    `metrics = true`,
    `token = "${TOKEN}"`,
    `port = ${options.port}`,
    ...(options.accessLog ? [`access_log = "${options.accessLog}"`] : []),
    `[docker]`,
    `host = "${options.dockerHost ?? dockerHost}"`,
  ];
  // cache_for 0s: a conditional request every cycle, however close the cycles (the default answers from memory for 5 minutes)
  if (options.githubApiUrl)
    lines.push(`[release_notes]`, `github_api_url = "${options.githubApiUrl}"`, `cache_for = "0s"`);
  if (options.vulnerabilities)
    lines.push(`[vulnerabilities]`, `enabled = true`, `osv_url = "${options.vulnerabilities.osvUrl}"`);
  if (options.verify)
    lines.push(
      `[[verify]]`,
      `images = ["${options.verify.images}"]`,
      `keys = ["${options.verify.key}"]`,
      `transparency_log = false`,
    );
  if (options.rollback === false)
    lines.push(`[rollback]`, `on_exit_code = false`, `on_healthcheck = false`, `on_timeout = false`);
  // Written before it returns: svc must never race a half-written file.
  writeFileSync(file, lines.join("\n") + "\n");
  return file;
}

export async function startSvc(options: SvcOptions): Promise<Subprocess> {
  const config = svcConfig(options);
  const proc = startProcess([SVC_BIN, "--config", config], {}, join(WORK, `svc-${options.port}.log`));
  await waitForHealth(options.port);
  return proc;
}

export async function startBaseline(port: number): Promise<Subprocess> {
  const proc = startProcess([BASE_BIN, String(port)]);
  await waitForHealth(port);
  return proc;
}

/** One cycle through the API: wall time in ms and the report. */
export async function cycle(port: number): Promise<{ ms: number; report: any }> {
  const started = performance.now();
  const response = await fetch(`http://127.0.0.1:${port}/v1/update`, {
    method: "POST",
    headers: { authorization: `Bearer ${TOKEN}` },
  });
  const ms = performance.now() - started;
  if (response.status !== 200) throw new Error(`POST /v1/update: ${response.status} ${await response.text()}`);
  return { ms, report: await response.json() };
}

/** What bench/baseline/stack.ts runs: before its port opens, and with "all" also after. */
export const STACK_BEFORE_LISTEN = "Elysia serving health, consola and zod imported";
export const STACK_ALL = `${STACK_BEFORE_LISTEN} before it listens, dockerode and croner after`;

export function memoryParts(memory: { anon: number; file: number }): string {
  return `anon ${(memory.anon / 1024).toFixed(1)} + file-backed ${(memory.file / 1024).toFixed(1)} MiB`;
}
