/**
 * Shared helpers for integration tests against the sandbox (scripts/sandbox.sh up).
 * Tests share one engine: every container, network and image a test makes carries a unique
 * name from `uniqueName`, and every cycle a test runs is scoped to its own containers.
 */
import { randomBytes } from "node:crypto";
import { registryAuthHeader } from "../src/engine/modem.ts";
import { shortcut } from "./support/docker-shortcuts.ts";
import { engineFilters, engineJson, enginePathName, engineRequest, engineStream } from "./support/engine-api.ts";

export { engineJson, engineRequest } from "./support/engine-api.ts";

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
    if (!value)
      throw new Error(
        `${name} is not set: start the sandbox with scripts/sandbox.sh up and eval "$(scripts/sandbox.sh env)", or run bun run test`,
      );
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

/**
 * Runs the docker CLI against the sandbox engine. Throws with stderr unless allowFailure.
 * The calls that only read, remove or push (`inspect`, `logs`, `ps -q`, `rm -f`, `rmi`, `push -q`)
 * are answered through the Engine API where the CLI's answer is certain
 * (tests/support/docker-shortcuts.ts): a CLI start costs more CPU than the request.
 */
export function docker(args: string[], options: { input?: string; allowFailure?: boolean } = {}): RunResult {
  const result =
    (options.input === undefined && (pushShortcut(args) ?? shortcut(args, sandbox().socketPath, dockerCli))) ||
    dockerCli(args, options.input);
  if (result.code !== 0 && !options.allowFailure) {
    throw new Error(`docker ${args.join(" ")} failed (${result.code}): ${result.stderr}`);
  }
  return result;
}

/** `push -q <reference>`: the CLI prints the reference; a push that fails is the CLI's to report. */
function pushShortcut(args: string[]): RunResult | undefined {
  if (args.length !== 3 || args[0] !== "push" || args[1] !== "-q" || args[2]!.startsWith("-")) return undefined;
  try {
    pushImage(args[2]!);
    return { code: 0, stdout: args[2]!, stderr: "" };
  } catch {
    return undefined;
  }
}

/** The docker CLI itself. */
function dockerCli(args: string[], input?: string): RunResult {
  const proc = Bun.spawnSync(["docker", "-H", sandbox().dockerHost, ...args], {
    // The sandbox's own CLI config (its login to the auth registry), never the user's ~/.docker.
    env: { ...process.env, DOCKER_CONFIG: sandbox().dockerConfig },
    stdin: input === undefined ? "ignore" : Buffer.from(input),
    stdout: "pipe",
    stderr: "pipe",
  });
  return { code: proc.exitCode ?? -1, stdout: proc.stdout.toString().trim(), stderr: proc.stderr.toString().trim() };
}

/** `docker inspect` of one object, parsed (through the Engine API where it can: `docker`). */
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
  const changes = [
    ...(options.changes ?? ['CMD ["/bin/sleep","3600"]']),
    `LABEL svc.test.build=${randomBytes(6).toString("hex")}`,
  ];
  const { repo } = splitReference(reference);
  const id = importImage(reference, changes, sandbox());
  let digest: string | null = null;
  if (options.push !== false) {
    docker(["push", "-q", reference]);
    const repoDigests = inspect(reference).RepoDigests as string[];
    digest = repoDigests.find((d) => d.startsWith(`${repo}@`))?.split("@")[1] ?? null;
  }
  return { id, digest };
}

/**
 * `docker import -c CHANGE... <rootfs> <reference>` through the Engine API of `engine` (the
 * sandbox's, or a test's own engine), answering the image ID.
 */
export function importImage(
  reference: string,
  changes: string[],
  engine: { socketPath: string; rootfs: string },
): string {
  const { repo, tag } = splitReference(reference);
  // What the CLI sends: the tar as the body, source "-".
  const query = [
    `fromSrc=-`,
    `repo=${encodeURIComponent(repo)}`,
    `tag=${encodeURIComponent(tag)}`,
    ...changes.map((c) => `changes=${encodeURIComponent(c)}`),
  ];
  const imported = engineStream(
    engineRequest("POST", `/images/create?${query.join("&")}`, {
      socketPath: engine.socketPath,
      bodyFile: engine.rootfs,
      headers: { "Content-Type": "application/x-tar" },
    }),
    `docker import ${reference}`,
  );
  const id = imported.findLast((line) => typeof line.status === "string" && line.status.startsWith("sha256:"))?.status;
  return String(
    id ?? engineJson("GET", `/images/${enginePathName(reference)}/json`, { socketPath: engine.socketPath }).Id,
  );
}

/**
 * `docker push <reference>`, through the Engine API (of the sandbox's engine unless `socketPath`
 * says another); the auth registry gets the sandbox's login.
 */
export function pushImage(reference: string, socketPath?: string): void {
  const { repo, tag } = splitReference(reference);
  const box = socketPath === undefined ? sandbox() : undefined;
  const auth =
    box && repo.startsWith(`${box.authRegistry}/`)
      ? { username: box.authUser, password: box.authPass, serveraddress: box.authRegistry }
      : {};
  const answer = engineRequest("POST", `/images/${enginePathName(repo)}/push?tag=${encodeURIComponent(tag)}`, {
    socketPath: socketPath ?? box!.socketPath,
    headers: { "X-Registry-Auth": registryAuthHeader(auth) },
  });
  engineStream(answer, `docker push ${reference}`);
}

/** `registry/name:tag` as repository and tag (`latest` when none is given). */
function splitReference(reference: string): { repo: string; tag: string } {
  const tagAt = reference.lastIndexOf(":");
  if (tagAt > reference.lastIndexOf("/")) return { repo: reference.slice(0, tagAt), tag: reference.slice(tagAt + 1) };
  return { repo: reference, tag: "latest" };
}

/**
 * Removes containers by name (or id), going on past those that are gone or already being removed
 * (`docker rm -f`, whose failures a cleanup ignores).
 */
export function removeContainers(...names: string[]): void {
  for (const name of names)
    engineRequest("DELETE", `/containers/${enginePathName(name)}?force=1`, { socketPath: sandbox().socketPath });
}

/** Every container whose name starts with `prefix` (also renamed leftovers), as the list call answers. */
function listContainersByPrefix(prefix: string): { Id: string; Names: string[]; State: string }[] {
  return engineJson("GET", `/containers/json?all=1&${engineFilters({ name: [`^/${prefix}`] })}`, {
    socketPath: sandbox().socketPath,
  });
}

/** Removes every container whose name starts with `prefix` (also renamed leftovers). */
export function removeContainersByPrefix(prefix: string): void {
  removeContainers(...listContainersByPrefix(prefix).map((c) => c.Id));
}

/**
 * Polls `predicate` until it returns true, or throws after `timeoutMs`. Between two polls it waits
 * twice as long as the poll took (a predicate that starts the docker CLI then takes at most a third
 * of a core, however loaded the machine is) and a twentieth of the time waited so far (a wait of a
 * minute, for svc to update itself, polls once a second, not ten times: the answer comes at most 5%
 * later), at least 100 ms, at most 1 s.
 */
export async function waitUntil(
  predicate: () => boolean | Promise<boolean>,
  timeoutMs = 20_000,
  what = "condition",
): Promise<void> {
  const begun = Date.now();
  const deadline = begun + timeoutMs;
  while (Date.now() < deadline) {
    const started = Date.now();
    if (await predicate()) return;
    const pause = Math.max(2 * (Date.now() - started), (Date.now() - begun) / 20);
    await Bun.sleep(Math.min(1_000, Math.max(100, pause)));
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
export async function portOpen(port: number, hostname = "127.0.0.1"): Promise<boolean> {
  try {
    const socket = await Bun.connect({ hostname, port, socket: { data() {} } });
    socket.end();
    return true;
  } catch {
    return false;
  }
}

/** Containers whose names start with `prefix`, as name -> state. */
export function containersByPrefix(prefix: string): Record<string, string> {
  return Object.fromEntries(
    listContainersByPrefix(prefix).map((c) => [c.Names[0]?.replace(/^\//, "") ?? c.Id, c.State]),
  );
}
