/**
 * Shared helpers for integration tests against the sandbox (scripts/sandbox.sh up).
 * Tests share one engine: every container, network and image a test makes carries a unique
 * name from `uniqueName`, and every cycle a test runs is scoped to its own containers.
 */
import { randomBytes } from "node:crypto";

export interface Sandbox {
  dockerHost: string;
  /** the sandbox's Docker CLI config folder (holds its login to the auth registry) */
  dockerConfig: string;
  socketPath: string;
  registry: string;
  authRegistry: string;
  authUser: string;
  authPass: string;
  rootfs: string;
  dir: string;
}

function readSandbox(): Sandbox {
  const need = (name: string): string => {
    const value = process.env[name];
    if (!value) throw new Error(`${name} is not set: start the sandbox with scripts/sandbox.sh up and eval "$(scripts/sandbox.sh env)", or run bun run test`);
    return value;
  };
  const dockerHost = need("SVC_TEST_DOCKER_HOST");
  return {
    dockerHost,
    dockerConfig: need("SVC_TEST_DOCKER_CONFIG"),
    socketPath: dockerHost.replace(/^unix:\/\//, ""),
    registry: need("SVC_TEST_REGISTRY"),
    authRegistry: need("SVC_TEST_AUTH_REGISTRY"),
    authUser: need("SVC_TEST_AUTH_USER"),
    authPass: need("SVC_TEST_AUTH_PASS"),
    rootfs: need("SVC_TEST_ROOTFS"),
    dir: need("SVC_SANDBOX_DIR"),
  };
}

let cached: Sandbox | undefined;
export function sandbox(): Sandbox {
  cached ??= readSandbox();
  return cached;
}

/** A name no other test uses: `prefix-<8 hex>`. */
export function uniqueName(prefix: string): string {
  return `${prefix}-${randomBytes(4).toString("hex")}`;
}

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the docker CLI against the sandbox engine. Throws with stderr unless allowFailure. */
export function docker(args: string[], options: { input?: string; allowFailure?: boolean } = {}): RunResult {
  const proc = Bun.spawnSync(["docker", "-H", sandbox().dockerHost, ...args], {
    // The sandbox's own CLI config (its login to the auth registry), never the user's ~/.docker.
    env: { ...process.env, DOCKER_CONFIG: sandbox().dockerConfig },
    stdin: options.input === undefined ? "ignore" : Buffer.from(options.input),
    stdout: "pipe",
    stderr: "pipe",
  });
  const result = { code: proc.exitCode ?? -1, stdout: proc.stdout.toString().trim(), stderr: proc.stderr.toString().trim() };
  if (result.code !== 0 && !options.allowFailure) {
    throw new Error(`docker ${args.join(" ")} failed (${result.code}): ${result.stderr}`);
  }
  return result;
}

/** `docker inspect` of one object, parsed. */
export function inspect<T = any>(nameOrId: string): T {
  return JSON.parse(docker(["inspect", nameOrId]).stdout)[0] as T;
}

export interface ImageOptions {
  /** Dockerfile-like instructions for `docker import -c`, e.g. 'CMD ["/bin/sleep","3600"]' */
  changes?: string[];
  /** push to the registry (default true) */
  push?: boolean;
}

/**
 * Builds an image from the busybox rootfs under `reference` and pushes it. Every call makes a
 * new image ID (import stamps a creation time), so calling it again on the same tag is
 * "a newer image was published".
 */
export function buildImage(reference: string, options: ImageOptions = {}): { id: string; digest: string | null } {
  const changes = options.changes ?? ['CMD ["/bin/sleep","3600"]'];
  const args = ["import"];
  for (const change of changes) args.push("-c", change);
  args.push("-c", `LABEL svc.test.build=${randomBytes(6).toString("hex")}`);
  args.push(sandbox().rootfs, reference);
  const id = docker(args).stdout;
  let digest: string | null = null;
  if (options.push !== false) {
    docker(["push", "-q", reference]);
    const repoDigests = inspect(reference).RepoDigests as string[];
    const repo = reference.replace(/:[^:/]+$/, "");
    digest = repoDigests.find((d) => d.startsWith(`${repo}@`))?.split("@")[1] ?? null;
  }
  return { id, digest };
}

/** Removes containers by name (or id), ignoring those that do not exist. */
export function removeContainers(...names: string[]): void {
  if (names.length) docker(["rm", "-f", ...names], { allowFailure: true });
}

/** Removes every container whose name starts with `prefix` (also renamed leftovers). */
export function removeContainersByPrefix(prefix: string): void {
  const ids = docker(["ps", "-aq", "--filter", `name=^/${prefix}`]).stdout.split("\n").filter(Boolean);
  if (ids.length) docker(["rm", "-f", ...ids], { allowFailure: true });
}

/**
 * Polls `predicate` until it returns true, or throws after `timeoutMs`. Between two polls it waits
 * twice as long as the poll took (at least 100 ms, at most 1 s): a predicate that starts the docker
 * CLI then takes at most a third of a core, however loaded the machine is.
 */
export async function waitUntil(predicate: () => boolean | Promise<boolean>, timeoutMs = 20_000, what = "condition"): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const started = Date.now();
    if (await predicate()) return;
    await Bun.sleep(Math.min(1_000, Math.max(100, 2 * (Date.now() - started))));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
}

/** A free loopback TCP port. */
export function freePort(): number {
  const server = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = server.port;
  server.stop(true);
  return port;
}

/** Whether something accepts connections on the loopback port. */
export async function portOpen(port: number): Promise<boolean> {
  try {
    const socket = await Bun.connect({ hostname: "127.0.0.1", port, socket: { data() {} } });
    socket.end();
    return true;
  } catch {
    return false;
  }
}

/** Containers whose names start with `prefix`, as name -> state. */
export function containersByPrefix(prefix: string): Record<string, string> {
  const out = docker(["ps", "-a", "--filter", `name=^/${prefix}`, "--format", "{{.Names}} {{.State}}"]).stdout;
  return Object.fromEntries(
    out
      .split("\n")
      .filter(Boolean)
      .map((line) => line.split(" ") as [string, string]),
  );
}
