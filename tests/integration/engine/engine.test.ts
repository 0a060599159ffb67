/**
 * The Engine port against the sandbox's real engine and registries: listing, pulls with
 * credentials, stop signals and grace periods, idempotent start/stop/remove, logs, and a clear
 * error when the engine cannot be reached.
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { isSvcError } from "../../../src/core/errors.ts";
import { createDockerEngine, type Engine } from "../../../src/engine/index.ts";
import { silentLogger } from "../../../src/log/index.ts";
import { buildImage, docker, freePort, inspect, sandbox, uniqueName, waitUntil } from "../../harness.ts";
import { type RunOptions, runContainer } from "../../support/fixture.ts";
import { endOfTest, startEngineProxy } from "../safety/support.ts";

const PREFIX = uniqueName("engport");
const name = (suffix: string) => `${PREFIX}-${suffix}`;
const LOCAL_IMAGE = `${PREFIX}-local:1`;
let engine: Engine;
const images: string[] = [];

/** The started container `<prefix>-<what>` of `image`, without a network: the tests' setup (runContainer). */
function run(what: string, image: string, options: RunOptions = {}): void {
  runContainer(name(what), image, { network: "none", ...options }, { socketPath: sandbox().socketPath });
}

async function rejection(promise: Promise<unknown>): Promise<{ kind: string; message: string }> {
  try {
    await promise;
  } catch (error) {
    if (!isSvcError(error)) throw error;
    return { kind: error.kind, message: error.message };
  }
  throw new Error("did not reject");
}

beforeAll(async () => {
  engine = await createDockerEngine({ host: sandbox().dockerHost, tls_verify: false }, silentLogger);
  images.push(buildImage(LOCAL_IMAGE, { push: false }).id);
});

afterEach(endOfTest);

afterAll(() => {
  const ids = docker(["ps", "-aq", "--filter", `name=^/${PREFIX}`], { allowFailure: true })
    .stdout.split("\n")
    .filter(Boolean);
  if (ids.length) docker(["rm", "-fv", ...ids], { allowFailure: true });
  for (const image of images) docker(["rmi", "-f", image], { allowFailure: true });
});

describe("connection", () => {
  test("the API version is negotiated with the engine (min of ours and its own)", async () => {
    const server = docker(["version", "--format", "{{.Server.APIVersion}}"]).stdout;
    const info = await engine.info();
    expect(info.apiVersion).toBe(server);
    expect(info.product).toBe(`Docker ${docker(["version", "--format", "{{.Server.Version}}"]).stdout}`);
    expect(await engine.platform()).toEqual({
      os: "linux",
      architecture: docker(["version", "--format", "{{.Server.Arch}}"]).stdout,
    });
  });

  test("the engine's ping tells which it is; /version is asked only for its platform", async () => {
    const proxy = startEngineProxy(sandbox().socketPath);
    const through = await createDockerEngine({ host: proxy.dockerHost, tls_verify: false }, silentLogger);
    expect((await through.info()).apiVersion).toBe(docker(["version", "--format", "{{.Server.APIVersion}}"]).stdout);
    await through.listContainers();
    expect(proxy.seen.filter((r) => !r.includes("/containers/"))).toEqual(["GET /_ping"]);
    expect((await through.platform()).os).toBe("linux");
    expect(proxy.seen.filter((r) => r.endsWith("/version"))).toEqual(["GET /version"]);
  });

  test("a proxy that refuses the ping (docker-socket-proxy's PING=0: 403): /version tells it all", async () => {
    const proxy = startEngineProxy(sandbox().socketPath);
    proxy.intercept = (_request, url) =>
      url.pathname.endsWith("/_ping") ? new Response("Forbidden", { status: 403 }) : undefined;
    const through = await createDockerEngine({ host: proxy.dockerHost, tls_verify: false }, silentLogger);
    expect((await through.info()).product).toBe(
      `Docker ${docker(["version", "--format", "{{.Server.Version}}"]).stdout}`,
    );
    expect((await through.platform()).os).toBe("linux");
    expect(proxy.seen).toEqual(["GET /_ping", "GET /version"]);
  });

  test("docker.api_version overrides the negotiation, and requests still work with it", async () => {
    const pinned = await createDockerEngine(
      { host: sandbox().dockerHost, tls_verify: false, api_version: "1.40" },
      silentLogger,
    );
    expect((await pinned.info()).apiVersion).toBe("1.40");
    expect(Array.isArray(await pinned.listImages())).toBe(true);
  });

  test("a missing socket is an engine error naming the socket and the fix, at once", async () => {
    const host = `unix://${sandbox().dir}/${PREFIX}-missing.sock`;
    const missing = await createDockerEngine({ host, tls_verify: false }, silentLogger);
    const error = await rejection(missing.listContainers());
    expect(error.kind).toBe("engine");
    expect(error.message).toBe(
      `no Docker socket at ${host.slice("unix://".length)}: start the Docker engine, or set --docker-host or DOCKER_HOST to where its socket is`,
    );
  });

  test("a closed TCP port is an engine error naming the address and the fix", async () => {
    const host = `tcp://127.0.0.1:${freePort()}`;
    const closed = await createDockerEngine({ host, tls_verify: false }, silentLogger);
    const error = await rejection(closed.info());
    expect(error.kind).toBe("engine");
    expect(error.message).toBe(
      `nothing answers at ${host.slice("tcp://".length)}: start the engine there, or set --docker-host or DOCKER_HOST`,
    );
  });
});

describe("listing", () => {
  test("listContainers gives the reference the container was created with, also after its tag moved on", async () => {
    const reference = `${PREFIX}-moving:1`;
    const first = buildImage(reference, { push: false }).id;
    images.push(first);
    run("moving", reference, { labels: { x: "1" } });
    images.push(buildImage(reference, { push: false }).id);
    // the engine's own list now shows the old image's ID instead of the reference
    const raw = docker([
      "ps",
      "-a",
      "--no-trunc",
      "--filter",
      `name=^/${name("moving")}$`,
      "--format",
      "{{.Image}}",
    ]).stdout;
    expect(raw).not.toBe(reference);

    const row = (await engine.listContainers()).find((c) => c.name === name("moving"));
    expect(row).toEqual({
      id: inspect(name("moving")).Id,
      name: name("moving"),
      image: reference,
      imageId: first,
      state: "running",
      labels: expect.objectContaining({ x: "1" }),
    });
  });

  test("listContainers includes stopped and created containers with their state", async () => {
    docker(["create", "--name", name("created"), "--network", "none", LOCAL_IMAGE]);
    const row = (await engine.listContainers()).find((c) => c.name === name("created"));
    expect(row?.state).toBe("created");
    expect(row?.image).toBe(LOCAL_IMAGE);
  });

  test("listImages and inspectImage", async () => {
    const row = (await engine.listImages()).find((i) => i.repoTags.includes(LOCAL_IMAGE));
    expect(row?.id).toBe(images[0]!);
    expect((await engine.inspectImage(LOCAL_IMAGE))?.Id).toBe(images[0]!);
    expect(await engine.inspectImage(`${PREFIX}-absent:1`)).toBeNull();
  });

  test("listImages of repositories: every tagged image of those, one pushed to a registry and named by its familiar name too, none of another", async () => {
    const local = `${PREFIX}-repo`;
    const pushed = `${sandbox().registry}/${PREFIX}-repo`;
    const ids = [buildImage(`${local}:1`, { push: false }).id, buildImage(`${local}:2`, { push: false }).id];
    const pushedId = buildImage(`${pushed}:1`).id;
    images.push(...ids, pushedId);
    const listed = await engine.listImages({ repositories: [local, pushed] });
    const ours = listed.filter((i) => i.repoTags.some((t) => t.startsWith(`${local}:`) || t.startsWith(`${pushed}:`)));
    expect(ours.map((i) => i.id).sort()).toEqual([...ids, pushedId].sort());
    expect(listed.some((i) => i.repoTags.includes(LOCAL_IMAGE))).toBe(false);
    // the whole list still holds every one
    const whole = (await engine.listImages()).map((i) => i.id);
    for (const id of [...ids, pushedId, images[0]!]) expect(whole).toContain(id);
  });

  test("listImages of the untagged images: an image whose tag moved on, pushed or not, and none that a tag names", async () => {
    const local = `${PREFIX}-moved:1`;
    const pushed = `${sandbox().registry}/${PREFIX}-moved:1`;
    const before = [buildImage(local, { push: false }).id, buildImage(pushed).id];
    const after = [buildImage(local, { push: false }).id, buildImage(pushed).id];
    images.push(...before, ...after);
    const untagged = (await engine.listImages({ dangling: true })).map((i) => i.id);
    for (const id of before) expect(untagged).toContain(id);
    for (const id of [...after, images[0]!]) expect(untagged).not.toContain(id);
  });
});

describe("pull", () => {
  test("pulls a tag for a platform from a plain registry", async () => {
    const reference = `${sandbox().registry}/${PREFIX}-pull:1`;
    const pushed = buildImage(reference);
    docker(["rmi", "-f", pushed.id]);
    const { architecture } = await engine.platform();
    await engine.pullImage(reference, { platform: { os: "linux", architecture } });
    const pulled = await engine.inspectImage(reference);
    expect(pulled?.Id).toBe(pushed.id);
    images.push(pushed.id);
  });

  test("credentials go in X-Registry-Auth: without them the authenticated registry refuses, with them it serves", async () => {
    const s = sandbox();
    const reference = `${s.authRegistry}/${PREFIX}-auth:1`;
    const pushed = buildImage(reference);
    docker(["rmi", "-f", pushed.id]);
    images.push(pushed.id);

    const anonymous = await rejection(engine.pullImage(reference));
    expect(anonymous.kind).toBe("engine");
    expect(anonymous.message).toStartWith(`pull ${reference}: `);
    expect(anonymous.message).toMatch(/auth/i);

    const wrong = await rejection(
      engine.pullImage(reference, {
        auth: { username: s.authUser, password: "not-the-password", serveraddress: s.authRegistry },
      }),
    );
    expect(wrong.message).not.toContain("not-the-password");

    await engine.pullImage(reference, {
      auth: { username: s.authUser, password: s.authPass, serveraddress: s.authRegistry },
    });
    expect((await engine.inspectImage(reference))?.Id).toBe(pushed.id);
  });

  test("a tag the registry does not have fails with the registry's message", async () => {
    const error = await rejection(engine.pullImage(`${sandbox().registry}/${PREFIX}-nothing:9`));
    expect(error.kind).toBe("engine");
    expect(error.message).toContain("not found");
  });
});

describe("lifecycle", () => {
  // PID 1 reports the signal it got and exits 0: only the right signal gives that log line
  const TRAP = [
    "sh",
    "-c",
    'trap "echo got USR1; exit 0" USR1; trap "echo got TERM; exit 0" TERM; echo ready; while true; do sleep 0.2; done',
  ];

  test("stop sends the given signal (the engine's API 1.41 has no signal on stop: kill, wait, then SIGKILL)", async () => {
    run("signal", LOCAL_IMAGE, { cmd: TRAP });
    await waitUntil(
      async () => (await engine.containerLogs(name("signal"), 10)).includes("ready"),
      20_000,
      "the trap to be set",
    );
    await engine.stopContainer(name("signal"), { timeoutMs: 30_000, signal: "SIGUSR1" });
    const state = inspect(name("signal")).State;
    expect(state.Running).toBe(false);
    expect(state.ExitCode).toBe(0);
    expect(await engine.containerLogs(name("signal"), 1)).toBe("got USR1");
  });

  test("stop without a signal uses the container's stop signal", async () => {
    run("term", LOCAL_IMAGE, { cmd: TRAP });
    await waitUntil(
      async () => (await engine.containerLogs(name("term"), 10)).includes("ready"),
      20_000,
      "the trap to be set",
    );
    await engine.stopContainer(name("term"), { timeoutMs: 30_000 });
    expect(await engine.containerLogs(name("term"), 1)).toBe("got TERM");
  });

  test("stopping with another signal does not let the restart policy bring the container back, and keeps the policy", async () => {
    for (const policy of ["always", "on-failure"] as const) {
      const container = name(`restart-${policy}`);
      run(`restart-${policy}`, LOCAL_IMAGE, { init: true, restart: policy, cmd: ["/bin/sleep", "3600"] });
      // the init forwards signals once it has started its child: one sent before is ignored by
      // the kernel (a namespace's PID 1 without a handler), seen at load as exit 137 after 30 s
      await waitUntil(
        () => docker(["top", container], { allowFailure: true }).stdout.includes("sleep 3600"),
        20_000,
        "the init to start its child",
      );
      await engine.stopContainer(container, { timeoutMs: 30_000, signal: "SIGUSR1" });
      const after = inspect(container);
      expect(after.State.Running).toBe(false);
      expect(after.State.ExitCode).toBe(128 + 10); // SIGUSR1 (10), forwarded by the init process
      expect(after.RestartCount).toBe(0);
      expect(after.HostConfig.RestartPolicy.Name).toBe(policy);
    }
  });

  test("a signal equal to the container's own stop signal goes through the stop API", async () => {
    run("own-signal", LOCAL_IMAGE, { restart: "always", stopSignal: "SIGUSR1", cmd: TRAP });
    await waitUntil(
      async () => (await engine.containerLogs(name("own-signal"), 10)).includes("ready"),
      20_000,
      "the trap to be set",
    );
    await engine.stopContainer(name("own-signal"), { timeoutMs: 30_000, signal: "usr1" });
    const after = inspect(name("own-signal"));
    expect(after.State.Running).toBe(false);
    expect(after.RestartCount).toBe(0);
    expect(await engine.containerLogs(name("own-signal"), 1)).toBe("got USR1");
  });

  test("a container ignoring its stop signal is killed when the grace period ends", async () => {
    // sleep as PID 1 has no handlers: the kernel ignores SIGTERM and SIGUSR1 for it
    run("stubborn", LOCAL_IMAGE, { cmd: ["/bin/sleep", "3600"] });
    await engine.stopContainer(name("stubborn"), { timeoutMs: 1_000, signal: "SIGUSR1" });
    expect(inspect(name("stubborn")).State.ExitCode).toBe(137);
    docker(["start", name("stubborn")]);
    await engine.stopContainer(name("stubborn"), { timeoutMs: 1_000 });
    expect(inspect(name("stubborn")).State.ExitCode).toBe(137);
  });

  test("stopping a stopped container, starting a started one and removing a removed one succeed", async () => {
    docker(["create", "--name", name("idem"), "--network", "none", LOCAL_IMAGE]);
    await engine.stopContainer(name("idem"), { timeoutMs: 0 });
    await engine.startContainer(name("idem"));
    await engine.startContainer(name("idem"));
    expect(inspect(name("idem")).State.Running).toBe(true);
    await engine.stopContainer(name("idem"), { timeoutMs: 0 });
    await engine.stopContainer(name("idem"), { timeoutMs: 0 });
    await engine.renameContainer(name("idem"), name("idem2"));
    expect(inspect(name("idem2")).State.Running).toBe(false);
    await engine.removeContainer(name("idem2"));
    await engine.removeContainer(name("idem2"));
    expect(docker(["inspect", name("idem2")], { allowFailure: true }).code).not.toBe(0);
  });

  test("removing a running container needs force; the error says why", async () => {
    run("running", LOCAL_IMAGE);
    const error = await rejection(engine.removeContainer(name("running")));
    expect(error.kind).toBe("engine");
    expect(error.message).toStartWith(`remove container ${name("running")}: `);
    await engine.removeContainer(name("running"), { force: true });
    expect(docker(["inspect", name("running")], { allowFailure: true }).code).not.toBe(0);
  });

  test("removeImage removes an unused image, and an absent one is no error", async () => {
    const reference = `${PREFIX}-unused:1`;
    const id = buildImage(reference, { push: false }).id;
    await engine.removeImage(id);
    expect(await engine.inspectImage(reference)).toBeNull();
    await engine.removeImage(id);
  });
});

describe("logs", () => {
  const PRINT = ["sh", "-c", "for i in 1 2 3 4 5; do echo out$i; echo err$i >&2; done; sleep 3600"];

  test("without a TTY: stdout and stderr demultiplexed, the last N lines", async () => {
    run("logs", LOCAL_IMAGE, { cmd: PRINT });
    await waitUntil(async () => (await engine.containerLogs(name("logs"), 100)).includes("err5"), 20_000, "the output");
    const all = await engine.containerLogs(name("logs"), 100);
    expect(all.split("\n").sort()).toEqual([
      "err1",
      "err2",
      "err3",
      "err4",
      "err5",
      "out1",
      "out2",
      "out3",
      "out4",
      "out5",
    ]);
    const last = await engine.containerLogs(name("logs"), 3);
    expect(last.split("\n")).toHaveLength(3);
    // biome-ignore lint/suspicious/noControlCharactersInRegex: the frame headers' bytes must not leak into the text
    expect(last).not.toMatch(/[\x00-\x08]/);
  });

  test("exec: a command that prints without end is read to its end, its output kept up to 1 MiB", async () => {
    run("exec", LOCAL_IMAGE, { cmd: ["sleep", "3600"] });
    const line = "x".repeat(999);
    const ran = await engine.exec(
      name("exec"),
      `echo first; i=0; while [ $i -lt 3000 ]; do echo ${line}; i=$((i+1)); done; exit 4`,
      60_000,
    );
    expect(ran.exitCode).toBe(4);
    expect(ran.output.startsWith("first\n")).toBe(true);
    expect(ran.output.length).toBeLessThanOrEqual(1024 * 1024);
    expect(ran.output.length).toBeGreaterThan(512 * 1024);
  });

  test("with a TTY: the raw text", async () => {
    run("tty", LOCAL_IMAGE, { tty: true, cmd: ["sh", "-c", "echo one; echo two; sleep 3600"] });
    await waitUntil(async () => (await engine.containerLogs(name("tty"), 10)).includes("two"), 20_000, "the output");
    expect(await engine.containerLogs(name("tty"), 2)).toBe("one\ntwo");
  });
});

describe("archives", () => {
  test("readArchive streams the engine's tar of a folder, byte for byte what the engine sends", async () => {
    run("archive", LOCAL_IMAGE, {
      cmd: [
        "sh",
        "-c",
        "mkdir /data && busybox dd if=/dev/urandom of=/data/blob bs=1024 count=3000 2>/dev/null && echo hi > /data/small && sleep 3600",
      ],
    });
    await waitUntil(
      () => docker(["exec", name("archive"), "test", "-e", "/data/small"], { allowFailure: true }).code === 0,
      20_000,
      "the data",
    );
    const expected = new Uint8Array(
      Bun.spawnSync(["docker", "-H", sandbox().dockerHost, "cp", `${name("archive")}:/data`, "-"]).stdout,
    );
    const read = new Uint8Array(await new Response(await engine.readArchive(name("archive"), "/data")).arrayBuffer());
    expect(read.byteLength).toBeGreaterThan(3000 * 1024);
    expect(Bun.hash(read)).toBe(Bun.hash(expected));
  });

  test("a path the container does not have is the engine's error, with its message", async () => {
    run("archive-missing", LOCAL_IMAGE, { cmd: ["sleep", "3600"] });
    const error = await rejection(engine.readArchive(name("archive-missing"), "/no-such-folder"));
    expect(error.kind).toBe("engine");
    expect(error.message).toContain("no-such-folder");
  });
});
