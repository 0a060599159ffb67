/**
 * The scratch image: built from the checkout's Dockerfile with the classic builder against the
 * sandbox engine (no base image to pull), holding /svc, exactly the libraries ldd names, and /tmp.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { copyFileSync, readFileSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { docker, freePort, inspect, sandbox, uniqueName, waitUntil } from "../harness.ts";
import { commandBlock } from "../support/doc-blocks.ts";
import { build, ROOT, run, tempDir } from "./helpers.ts";

// Builds, qemu and the engine are slow on a busy 2-core machine; no test here is about speed.
setDefaultTimeout(60_000);

const tag = `${uniqueName("svc-image-test")}:test`;
const container = uniqueName("svc-image-test");
let work: string;
let versions: string[];

beforeAll(() => {
  work = tempDir("image");
  versions = build(work);
  const prepared = run(["bash", "scripts/image-context.sh", join(work, "svc"), join(work, "context/rootfs")]);
  if (prepared.code !== 0) throw new Error(`image-context.sh failed: ${prepared.stderr}`);
  const built = Bun.spawnSync(
    [
      "docker",
      "-H",
      sandbox().dockerHost,
      "build",
      "-q",
      "-f",
      join(ROOT, "Dockerfile"),
      "-t",
      tag,
      join(work, "context"),
    ],
    { env: { ...process.env, DOCKER_BUILDKIT: "0" }, stdout: "pipe", stderr: "pipe" },
  );
  if (built.exitCode !== 0) throw new Error(`docker build failed: ${built.stderr.toString()}`);
  // a compile and an image build, at a load of 40 and more (the release build's hooks have as long)
}, 300_000);

afterAll(() => {
  docker(["rm", "-f", container], { allowFailure: true });
  docker(["rmi", "-f", tag], { allowFailure: true });
  if (work) rmSync(work, { recursive: true, force: true });
}, 60_000);

test("docker run IMAGE --version prints the stamped version", () => {
  const result = docker(["run", "--rm", "--network", "none", tag, "--version"]);
  expect(versions).toContain(result.stdout);
}, 60_000);

test("it runs as a non-root user with a numeric uid:gid", () => {
  const result = docker(["run", "--rm", "--network", "none", "--user", "65532:65532", tag, "--version"]);
  expect(versions).toContain(result.stdout);
}, 60_000);

test("the entry point is /svc and the healthcheck calls the binary itself", () => {
  const config = JSON.parse(docker(["image", "inspect", tag]).stdout)[0].Config;
  expect(config.Entrypoint).toEqual(["/svc"]);
  expect(config.Healthcheck.Test).toEqual(["CMD", "/svc", "healthcheck"]);
  // The first probe comes one interval after start; a self-update waits for "healthy" at most
  // rollback.startup_timeout (default 30 s), so it must come well within that.
  const nanoseconds = 1e9;
  expect(config.Healthcheck.Interval + config.Healthcheck.Timeout).toBeLessThanOrEqual(20 * nanoseconds);
}, 60_000);

test("the image holds /svc, exactly the libraries ldd names, a world-writable /tmp (and the folders /var/empty and /var/lib/svc)", () => {
  const ldd = run(["ldd", join(work, "svc")]).stdout;
  const libraries = [...ldd.matchAll(/(?:=>\s+)?(\/\S+)\s+\(0x/g)].map((m) => m[1]!.slice(1));
  // The five C library files the image holds (docs/install.md): ld-linux, libc, libm, libpthread, libdl on glibc hosts.
  const names = libraries.map((path) => path.split("/").pop());
  for (const expected of ["libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2"]) expect(names).toContain(expected);
  expect(names.some((name) => name?.startsWith("ld-linux"))).toBe(true);

  docker(["create", "--name", container, "--network", "none", tag]);
  const listing = Bun.spawnSync(
    ["sh", "-c", `docker -H '${sandbox().dockerHost}' export '${container}' | tar -tvf -`],
    { stdout: "pipe" },
  ).stdout.toString();
  const entries = listing
    .trim()
    .split("\n")
    .map((line) => {
      const fields = line.trim().split(/\s+/);
      return { mode: fields[0]!, path: fields[5]!.replace(/^\.\//, "").replace(/\/$/, "") };
    });
  // The engine adds these to every container file system; they are not part of the image.
  const engineMade = /^(\.dockerenv|dev|proc|sys|etc|etc\/(hosts|hostname|resolv\.conf|mtab))(\/|$)/;
  const files = entries.filter((e) => !e.mode.startsWith("d") && !engineMade.test(e.path)).map((e) => e.path);
  expect(files.sort()).toEqual(["svc", ...libraries].sort());
  expect(entries.find((e) => e.path === "tmp")?.mode).toBe("drwxrwxrwt");
}, 60_000);

test("as a non-root user given the socket's group (--user, --group-add) it serves the API and the HEALTHCHECK reports healthy", async () => {
  const service = uniqueName("svc-image-service");
  const socketGroup = run(["stat", "-c", "%g", sandbox().socketPath]).stdout.trim();
  // Configured through the environment, as docs/install.md advises: the HEALTHCHECK runs `/svc healthcheck`
  // without the container's arguments, so it sees what the environment says, not what flags say.
  // Scoped to a label nobody uses, so this instance never touches another test's containers.
  docker([
    "run",
    "-d",
    "--name",
    service,
    "--network",
    "none",
    "--user",
    "65532:65532",
    "--group-add",
    socketGroup,
    "-v",
    `${sandbox().socketPath}:/var/run/docker.sock`,
    "-e",
    "SVC_HTTP_API_METRICS=true",
    "-e",
    "SVC_HTTP_API_METRICS_NO_AUTH=true",
    "-e",
    "SVC_POLL_INTERVAL=1h",
    "-e",
    `SVC_SCOPE=${service}`,
    "-e",
    "SVC_LOG_FORMAT=json",
    "-e",
    "SVC_HTTP_API_ADDRESS=0.0.0.0",
    "--health-interval",
    "1s",
    "--health-start-period",
    "30s",
    tag,
  ]);
  try {
    await waitUntil(
      () => {
        const state = inspect(service).State;
        if (!state.Running)
          throw new Error(
            `svc exited (${state.ExitCode}): ${docker(["logs", service], { allowFailure: true }).stderr}`,
          );
        return state.Health?.Status === "healthy";
      },
      60_000,
      "the container to become healthy",
    );
    // The check is real: asked about a port nothing listens on, it fails.
    const elsewhere = docker(["exec", "-e", "SVC_HTTP_API_PORT=9", service, "/svc", "healthcheck"], {
      allowFailure: true,
    });
    expect(elsewhere.code).not.toBe(0);
  } finally {
    docker(["rm", "-f", service], { allowFailure: true });
  }
}, 90_000);

test("the image declares /var/lib/svc, owned by its user 65532, as the state volume, and makes it state_dir's default", () => {
  const config = JSON.parse(docker(["image", "inspect", tag]).stdout)[0].Config;
  expect(Object.keys(config.Volumes ?? {})).toEqual(["/var/lib/svc"]);
  expect(config.Env).toContain("XDG_STATE_HOME=/var/lib");
  const probe = uniqueName("svc-image-state");
  docker(["create", "--name", probe, "--network", "none", tag]);
  try {
    const listing = Bun.spawnSync(
      ["sh", "-c", `docker -H '${sandbox().dockerHost}' export '${probe}' | tar -tvf - --numeric-owner var/lib/svc`],
      { stdout: "pipe" },
    ).stdout.toString();
    expect(listing.trim()).toMatch(/^d\S+ 65532\/65532 .* var\/lib\/svc\/?$/);
  } finally {
    docker(["rm", "-f", probe], { allowFailure: true });
  }
}, 60_000);

/**
 * docs/install.md, "The container image": the token, the docker run line and docs/compose.yaml, run as
 * written on the sandbox's engine with this image. The sandbox's changes: its socket stands where
 * the host's /var/run/docker.sock is, the image is this build's tag, the name, the state volume
 * and the port are unique to the test, and the container joins a network of its own (the
 * sandbox's engine has no default bridge network).
 */
describe("docs/install.md: svc in a container, as written", () => {
  const dir = tempDir("readme-run");
  const token = () => readFileSync(join(dir, "svc-token"), "utf8").trim();
  const name = uniqueName("svc-readme-run");
  const volume = uniqueName("svc-readme-state");
  const network = uniqueName("svc-readme-net");
  const project = uniqueName("svc-readme-compose");
  const forSandbox = (text: string, port: number) =>
    text
      .replaceAll(/\/var\/run\/docker\.sock(?=[:)"])/g, sandbox().socketPath)
      .replace(/^( *)svc$/m, `$1${tag}`)
      .replaceAll("--name svc", `--name ${name}`)
      .replaceAll("docker logs svc", `docker logs ${name}`)
      .replaceAll(/\bsvc-state\b/g, volume)
      .replace("-p 8080:8080", `--network ${network} -p 127.0.0.1:${port}:8080`);

  beforeAll(() => {
    docker(["network", "create", network]);
    const made = Bun.spawnSync(["bash", "-e", "-c", commandBlock("token").text], {
      cwd: dir,
      stdout: "pipe",
      stderr: "pipe",
    });
    if (made.exitCode !== 0) throw new Error(`the token commands failed: ${made.stderr}`);
  });

  afterAll(() => {
    docker(["rm", "-f", name], { allowFailure: true });
    docker(["compose", "--project-directory", dir, "-p", project, "down", "-v"], { allowFailure: true });
    docker(["volume", "rm", "-f", volume], { allowFailure: true });
    docker(["network", "rm", network], { allowFailure: true });
  }, 60_000);

  test("the token: 64 hex digits, readable by 65532 only", () => {
    expect(token()).toMatch(/^[0-9a-f]{64}$/);
    const stat = statSync(join(dir, "svc-token"));
    expect([stat.uid, stat.mode & 0o777]).toEqual([65532, 0o600]);
  });

  test("docker run: svc starts as 65532 with the state volume, says when it checks, and the dashboard's API takes the token", async () => {
    const port = freePort();
    const script = forSandbox(commandBlock("docker-run").text, port);
    const ran = Bun.spawnSync(["bash", "-e", "-c", script], {
      cwd: dir,
      env: { ...process.env, DOCKER_HOST: sandbox().dockerHost, DOCKER_CONFIG: sandbox().dockerConfig },
      stdout: "pipe",
      stderr: "pipe",
    });
    expect(ran.exitCode, ran.stderr.toString()).toBe(0);
    await waitUntil(
      () =>
        docker(["logs", name], { allowFailure: true }).stderr.includes("next check at") ||
        docker(["logs", name], { allowFailure: true }).stdout.includes("next check at"),
      60_000,
      "the next-check line",
    );
    const logs = `${docker(["logs", name]).stdout}\n${docker(["logs", name]).stderr}`;
    expect(logs).not.toContain("cannot be used");
    expect(inspect(name).Config.User).toStartWith("65532:");
    const answer = await fetch(`http://127.0.0.1:${port}/v1/containers`, {
      headers: { authorization: `Bearer ${token()}` },
    });
    expect(answer.status).toBe(200);
    expect((await fetch(`http://127.0.0.1:${port}/`)).status).toBe(200);
    // docs/install.md, "Upgrade and uninstall": nothing of svc is left
    const removed = Bun.spawnSync(
      [
        "bash",
        "-e",
        "-c",
        forSandbox(commandBlock("uninstall-container").text, port).replace("docker rm -f svc", `docker rm -f ${name}`),
      ],
      {
        env: { ...process.env, DOCKER_HOST: sandbox().dockerHost, DOCKER_CONFIG: sandbox().dockerConfig },
        stdout: "pipe",
        stderr: "pipe",
      },
    );
    expect(removed.exitCode, removed.stderr.toString()).toBe(0);
    expect(docker(["ps", "-a", "--filter", `name=^${name}$`, "-q"]).stdout).toBe("");
    expect(docker(["volume", "ls", "-q", "--filter", `name=^${volume}$`]).stdout).toBe("");
  }, 120_000);

  test("docs/compose.yaml: the same, with docker compose", async () => {
    const port = freePort();
    copyFileSync(join(ROOT, "docs", "compose.yaml"), join(dir, "compose.yaml"));
    const script = forSandbox(commandBlock("compose").text, port).replaceAll(
      "docker compose",
      `docker compose -p ${project}`,
    );
    const env = {
      ...process.env,
      DOCKER_HOST: sandbox().dockerHost,
      DOCKER_CONFIG: sandbox().dockerConfig,
      IMAGE: tag,
      DOCKER_SOCKET: sandbox().socketPath,
      HTTP_PORT: `127.0.0.1:${port}`,
    };
    const ran = Bun.spawnSync(["bash", "-e", "-c", script], { cwd: dir, env, stdout: "pipe", stderr: "pipe" });
    expect(ran.exitCode, ran.stderr.toString()).toBe(0);
    expect(readFileSync(join(dir, ".env"), "utf8")).toMatch(/^DOCKER_GID=\d+\n$/);
    const logs = () =>
      docker(["compose", "--project-directory", dir, "-p", project, "logs", "svc"], { allowFailure: true }).stdout;
    await waitUntil(() => logs().includes("next check at"), 60_000, "the next-check line");
    expect(logs()).not.toContain("cannot be used");
    const answer = await fetch(`http://127.0.0.1:${port}/v1/containers`, {
      headers: { authorization: `Bearer ${token()}` },
    });
    expect(answer.status).toBe(200);
  }, 120_000);
});
