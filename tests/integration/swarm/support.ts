/**
 * The two-node Swarm of these tests: the sandbox's engine as manager, a second engine joined as a
 * worker over 127.0.0.2 (scripts/sandbox.sh swarm-up), started by the tests themselves and left
 * (on both nodes), stopped and unmounted by `stopSwarm` (swarm-down).
 */
import { afterAll, afterEach, beforeAll, expect } from "bun:test";
import { join } from "node:path";
import { docker, sandbox, uniqueName, waitUntil } from "../../harness.ts";
import { TEST_SCOPE } from "../updater/support.ts";

const SCRIPT = join(import.meta.dir, "../../../scripts/sandbox.sh");

/** The sandbox's own variables again, for its script: its folder, engine and ports. */
function scriptEnv(): Record<string, string> {
  const port = (address: string) => address.split(":").pop()!;
  return {
    ...(process.env as Record<string, string>),
    SVC_SANDBOX_DIR: sandbox().dir,
    SVC_SANDBOX_ENGINE: process.env.SVC_TEST_ENGINE ?? "docker28-containerd",
    SVC_SANDBOX_REGISTRY_PORT: port(sandbox().registry),
    SVC_SANDBOX_AUTH_REGISTRY_PORT: port(sandbox().authRegistry),
  };
}

function sandboxScript(command: string): void {
  const proc = Bun.spawnSync(["bash", SCRIPT, command], { env: scriptEnv(), stdout: "pipe", stderr: "pipe" });
  if (proc.exitCode !== 0) throw new Error(`sandbox.sh ${command} failed: ${proc.stderr.toString()}`);
}

export function startSwarm(): void {
  sandboxScript("swarm-up");
}

export function stopSwarm(): void {
  sandboxScript("swarm-down");
}

/** A file's Swarm: up before its tests, its services removed after each, down after all. */
export function useSwarm(fx: { cleanup(): void }): void {
  beforeAll(() => startSwarm(), 120_000);
  afterEach(() => removeServices());
  afterAll(() => {
    removeServices();
    fx.cleanup();
    stopSwarm();
  }, 120_000);
}

/** The docker CLI on the worker node. */
export function onWorker(args: string[]): string {
  const host = process.env.SVC_TEST_SWARM_WORKER_HOST;
  if (!host) throw new Error('SVC_TEST_SWARM_WORKER_HOST is not set: eval "$(scripts/sandbox.sh env)"');
  const proc = Bun.spawnSync(["docker", "-H", host, ...args], { stdout: "pipe", stderr: "pipe" });
  if (proc.exitCode !== 0) throw new Error(`docker ${args.join(" ")} on the worker failed: ${proc.stderr.toString()}`);
  return proc.stdout.toString().trim();
}

/**
 * Update and rollback settings that keep a rolling update short: every task at once, a short
 * monitor, a quick stop (busybox's sleep ignores SIGTERM as pid 1).
 */
export const QUICK_ROLLOUT = [
  "--stop-grace-period",
  "1s",
  "--update-parallelism",
  "0",
  "--update-monitor",
  "2s",
  "--rollback-parallelism",
  "0",
  "--rollback-monitor",
  "1s",
];

/** `docker service create` in the tests' scope (spec and task labels), waiting until its tasks run. */
export function createService(what: string, image: string, args: string[] = [], scope = TEST_SCOPE): string {
  const name = uniqueName(`swarm-${what}`);
  docker([
    "service",
    "create",
    "--quiet",
    "--name",
    name,
    "--label",
    `svc.scope=${scope}`,
    "--container-label",
    `svc.scope=${scope}`,
    ...QUICK_ROLLOUT,
    ...args,
    image,
  ]);
  created.push(name);
  return name;
}

const created: string[] = [];

/**
 * A replicated service created through the Engine API without an UpdateConfig, so with no failure
 * action of its own (the Docker CLI always writes one, "pause"; a stack file without update_config
 * or another API client need not): svc's rollback rules apply to it. `image` is pinned as the CLI would (`repo:tag@digest`).
 */
export async function createServiceWithoutFailureAction(
  what: string,
  image: string,
  replicas: number,
  healthcheck: string,
): Promise<string> {
  const name = uniqueName(`swarm-${what}`);
  const second = 1_000_000_000;
  const spec = {
    Name: name,
    Labels: { "svc.scope": TEST_SCOPE },
    TaskTemplate: {
      ContainerSpec: {
        Image: image,
        Labels: { "svc.scope": TEST_SCOPE },
        StopGracePeriod: second,
        // (a healthy image's check fails only by its time limit: on a loaded machine an exec can
        // take seconds, and a rolled-back task found unhealthy pauses Swarm's rollback)
        Healthcheck: { Test: ["CMD-SHELL", healthcheck], Interval: second, Timeout: 15 * second, Retries: 1 },
      },
    },
    Mode: { Replicated: { Replicas: replicas } },
    RollbackConfig: { Parallelism: 0, Monitor: second },
  };
  const response = await fetch("http://localhost/services/create", {
    unix: sandbox().socketPath,
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(spec),
  } as RequestInit);
  if (!response.ok) throw new Error(`service create: ${response.status} ${await response.text()}`);
  created.push(name);
  await waitUntil(() => runningTasks(name).length === replicas, 60_000, `${name}'s tasks to run`);
  return name;
}

export function removeServices(): void {
  if (created.length) docker(["service", "rm", ...created.splice(0)], { allowFailure: true });
}

export function serviceInspect(name: string): any {
  return JSON.parse(docker(["service", "inspect", name]).stdout)[0];
}

/** The running tasks of a service: the image each runs and the node it runs on. */
export function runningTasks(name: string): { image: string; node: string }[] {
  const ids = docker(["service", "ps", "-q", "--filter", "desired-state=running", name])
    .stdout.split("\n")
    .filter(Boolean);
  if (ids.length === 0) return [];
  const tasks = JSON.parse(docker(["inspect", ...ids]).stdout) as any[];
  return tasks
    .filter((t) => t.Status.State === "running")
    .map((t) => ({ image: t.Spec.ContainerSpec.Image as string, node: t.NodeID as string }));
}

/** The images the worker's own task containers of a service run (Config.Image, with the digest). */
export function workerTaskImages(name: string): string[] {
  const ids = onWorker(["ps", "-q", "--filter", `label=com.docker.swarm.service.name=${name}`])
    .split("\n")
    .filter(Boolean);
  if (ids.length === 0) return [];
  return onWorker(["inspect", "--format", "{{.Config.Image}}", ...ids]).split("\n");
}

export function nodeCount(): number {
  return docker(["node", "ls", "-q"]).stdout.split("\n").filter(Boolean).length;
}

/** Every running task of `name` on `image`, spread over both nodes, and the worker's own containers on it too. */
export function expectEveryTaskOn(name: string, image: string, tasks: number): void {
  const running = runningTasks(name);
  expect(running.map((t) => t.image)).toEqual(Array(tasks).fill(image));
  expect(new Set(running.map((t) => t.node)).size).toBe(2);
  const onWorker = workerTaskImages(name);
  expect(onWorker.length).toBeGreaterThan(0);
  for (const taskImage of onWorker) expect(taskImage).toBe(image);
}
