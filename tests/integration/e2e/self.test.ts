/**
 * Self-update with the real scratch image, as users run it on small hosts:
 *   docker run -d --network host -v /var/run/docker.sock:/var/run/docker.sock svc ...
 * svc finds its own container, updates it last, and exactly one svc remains, on the new image.
 * Nothing is overridden that a user would not set: the image's own HEALTHCHECK timing and the
 * default rollback startup_timeout are what the replacement is watched with.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { docker, freePort, inspect, sandbox, waitUntil } from "../../harness.ts";
import {
  buildSvcImage as buildSvcImageAs,
  classicBuild,
  compileSvc,
  containersByPrefix,
  Fixture,
  portOpen,
} from "./support.ts";

const fx = new Fixture("e2e-self");
let work: string;
let ref: string;

afterAll(() => fx.cleanup(), 120_000);

const buildSvcImage = (build: string): string => buildSvcImageAs(work, ref, build);

beforeAll(() => {
  work = fx.tempDir("build");
  compileSvc(work);
  ref = `${sandbox().registry}/${fx.name("svc")}:latest`;
}, 180_000);

/** `docker run -d` of the svc image on the host network, scoped to its own label. */
function runSvcContainer(what: string, env: Record<string, string>, dockerArgs: string[] = []): string {
  const name = fx.name(what);
  const scope = fx.name(`${what}-scope`);
  const envArgs = Object.entries({ SVC_SCOPE: scope, SVC_LOG_FORMAT: "json", ...env }).flatMap(([k, v]) => [
    "-e",
    `${k}=${v}`,
  ]);
  docker([
    "run",
    "-d",
    "--name",
    name,
    "--network",
    "host",
    "-l",
    `svc.scope=${scope}`,
    "-v",
    `${sandbox().socketPath}:/var/run/docker.sock`,
    ...dockerArgs,
    ...envArgs,
    ref,
  ]);
  return name;
}

const logsOf = (name: string) => {
  const out = docker(["logs", name], { allowFailure: true });
  return `${out.stdout}\n${out.stderr}`;
};

/** Waits until exactly one container of that name family is left, running `imageId`. */
async function selfUpdated(name: string, imageId: string, oldId: string): Promise<void> {
  await waitUntil(
    () => {
      const family = containersByPrefix(name);
      const current = docker(["inspect", "--format", "{{.Image}} {{.State.Running}}", name], {
        allowFailure: true,
      }).stdout;
      // the only svc left has exited: no svc runs any more, nothing will change
      if (Object.keys(family).length === 1 && family[name] === "exited")
        throw new Error(`the only svc container left has exited`);
      // the old instance rolled its own update back: it will not retry this image
      if (/"rolled_back":1\b/.test(logsOf(name))) throw new Error("svc rolled back its own update");
      return Object.keys(family).length === 1 && current === `${imageId} true`;
    },
    150_000,
    `${name} to run the new image alone`,
  ).catch((error) => {
    const family = containersByPrefix(name);
    const logs = Object.keys(family)
      .map((n) => `--- ${n} (${family[n]}) ---\n${logsOf(n)}`)
      .join("\n");
    const old =
      docker(["inspect", oldId], { allowFailure: true }).code === 0
        ? `--- old ${oldId.slice(0, 12)} ---\n${logsOf(oldId)}`
        : "";
    throw new Error(`${(error as Error).message}\n${JSON.stringify(family)}\n${logs}\n${old}`);
  });
}

describe("svc updates its own container (real image, host network)", () => {
  /** Polls every 3s; returns after the new svc runs alone, or throws with every instance's logs. */
  async function scheduledSelfUpdate(what: string, build: number, dockerArgs: string[]): Promise<void> {
    buildSvcImage(`${build}`);
    const name = runSvcContainer(what, { SVC_POLL_INTERVAL: "3s", SVC_STOP_TIMEOUT: "5s" }, dockerArgs);
    const oldId = inspect(name).Id as string;
    const v2 = buildSvcImage(`${build + 1}`);
    await selfUpdated(name, v2, oldId);
    const now = inspect(name);
    expect(now.Id).not.toBe(oldId);
    expect(now.Config.Env).toContain("SVC_POLL_INTERVAL=3s");
    expect(now.HostConfig.NetworkMode).toBe("host");
    docker(["rm", "-f", name], { allowFailure: true });
  }

  test("with everything at its default (the image's HEALTHCHECK, rollback.startup_timeout): the new svc takes over", async () => {
    // The image probes every 30s and Docker 20.10 runs the first probe one interval after start;
    // the default startup_timeout is also 30s: the replacement is still "starting" when it ends.
    await scheduledSelfUpdate("defaults", 10, []);
  }, 240_000);

  test("with a container health interval of 2s: the new svc takes over, exactly one svc remains", async () => {
    await scheduledSelfUpdate("poll", 20, ["--health-interval", "2s"]);
  }, 240_000);

  // The replacement starts while the old instance still holds the port (host network). Seen at
  // 21:51 (before the API listened first): it could not listen, lingered, its HEALTHCHECK was
  // answered by the OLD instance, the old one stopped itself, the new one exited 2: no svc left.
  // Seen at 21:58: it exits 2 at once and the update is rolled back (safe, but never updates).
  test("with the update API on the host network: POST /v1/update updates svc itself and the new one serves the port", async () => {
    buildSvcImage("30");
    const port = freePort();
    const token = "self-api-token-0b7e";
    const name = runSvcContainer(
      "api",
      {
        SVC_HTTP_API_UPDATE: "true",
        SVC_HTTP_API_TOKEN: token,
        SVC_HTTP_API_PORT: String(port),
        SVC_STOP_TIMEOUT: "5s",
      },
      ["--health-interval", "2s"],
    );
    const oldId = inspect(name).Id as string;
    await waitUntil(() => portOpen(port), 60_000, "the API to listen");
    const v2 = buildSvcImage("31");
    const response = await fetch(`http://127.0.0.1:${port}/v1/update`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}` },
    });
    const body = await response.text();
    expect(response.status, body).toBe(200);
    expect(JSON.parse(body).containers.find((c: any) => c.name === name)?.state, body).toBe("updated");
    await selfUpdated(name, v2, oldId);
    // the new instance must be the one answering now (the old one has stopped)
    await waitUntil(
      () => {
        const state = inspect(name).State;
        if (!state.Running) throw new Error(`the new svc exited (${state.ExitCode}):\n${logsOf(name)}`);
        return portOpen(port);
      },
      60_000,
      "the new svc to listen",
    );
    expect((await fetch(`http://127.0.0.1:${port}/v1/health`)).status).toBe(200);
    expect(logsOf(name)).not.toContain("already in use");
    docker(["rm", "-f", name], { allowFailure: true });
  }, 240_000);
});

/**
 * svc in a container that publishes its API port, the usual way to run it off the host network:
 *   docker run -d -p 127.0.0.1:8080:8080 -v /var/run/docker.sock:/var/run/docker.sock svc
 * The replacement cannot start while the old container holds the port binding; a handover
 * container from the new image stops the old svc, starts and watches the new one.
 */
describe("svc updates its own container (real image, published port)", () => {
  const token = "self-port-token-5c21";

  /** `docker run -d -p 127.0.0.1:<port>:8080` of the svc image on a network of its own, with the update API on. */
  function runPublished(what: string, port: number, dockerArgs: string[]): string {
    const name = fx.name(what);
    const scope = fx.name(`${what}-scope`);
    const network = fx.network(`${what}-net`);
    // no_pull: the sandbox registry listens on the host's loopback, out of reach from a bridge
    // network; the new image is built on the engine under the same tag instead
    const env = {
      SVC_SCOPE: scope,
      SVC_LOG_FORMAT: "json",
      SVC_HTTP_API_UPDATE: "true",
      SVC_HTTP_API_TOKEN: token,
      SVC_STOP_TIMEOUT: "5s",
      SVC_NO_PULL: "true",
    };
    const envArgs = Object.entries(env).flatMap(([k, v]) => ["-e", `${k}=${v}`]);
    docker([
      "run",
      "-d",
      "--name",
      name,
      "--network",
      network,
      "-p",
      `127.0.0.1:${port}:8080`,
      "--restart",
      "unless-stopped",
      ...dockerArgs,
      "-l",
      `svc.scope=${scope}`,
      "-v",
      `${sandbox().socketPath}:/var/run/docker.sock`,
      ...envArgs,
      ref,
    ]);
    return name;
  }

  async function postUpdate(port: number, name: string): Promise<void> {
    const post = async () => {
      const response = await fetch(`http://127.0.0.1:${port}/v1/update`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}` },
      });
      const body = await response.text();
      expect(response.status, body).toBe(200);
      return {
        body,
        state: JSON.parse(body).containers.find((c: any) => c.name === name)?.state as string | undefined,
      };
    };
    let answer = await post();
    if (answer.state === "fresh") {
      // Seen once on the containerd image store: svc, in the container, found the tag still on
      // the image it runs although the CLI already showed the new one. Say what the engine held,
      // then ask once more (the next cycle is what a user would get).
      const tagged = docker(["image", "inspect", "--format", "{{.Id}}", ref], { allowFailure: true }).stdout;
      const running = docker(["inspect", "--format", "{{.Image}}", name], { allowFailure: true }).stdout;
      console.warn(
        `self-update: first POST said fresh; tag ${ref} -> ${tagged}, ${name} runs ${running}; asking again`,
      );
      await Bun.sleep(2000);
      answer = await post();
    }
    expect(answer.state, answer.body).toBe("updated");
  }

  /** Exactly one container of the family, under `name`, running `imageId` (the handover container gone too). */
  async function aloneOn(name: string, imageId: string, oldId: string, what: string): Promise<void> {
    await waitUntil(
      () => {
        const family = containersByPrefix(name);
        const current = docker(["inspect", "--format", "{{.Image}} {{.State.Running}}", name], {
          allowFailure: true,
        }).stdout;
        return Object.keys(family).length === 1 && current === `${imageId} true`;
      },
      150_000,
      what,
    ).catch((error) => {
      const family = containersByPrefix(name);
      const logs = Object.keys(family)
        .map((n) => `--- ${n} (${family[n]}) ---\n${logsOf(n)}`)
        .join("\n");
      throw new Error(`${(error as Error).message}\n${JSON.stringify(family)}\n${logs}\n--- old ---\n${logsOf(oldId)}`);
    });
  }

  async function serves(port: number, name: string): Promise<void> {
    await waitUntil(
      async () => {
        if (!inspect(name).State.Running) throw new Error(`${name} exited:\n${logsOf(name)}`);
        return (
          (await fetch(`http://127.0.0.1:${port}/v1/health`)
            .then((r) => r.status)
            .catch(() => 0)) === 200
        );
      },
      60_000,
      `${name} to serve /v1/health on the published port`,
    );
    expect(inspect(name).HostConfig.PortBindings).toEqual({
      "8080/tcp": [{ HostIp: "127.0.0.1", HostPort: String(port) }],
    });
  }

  test("POST /v1/update: exactly one svc remains, on the new image, serving the published port", async () => {
    buildSvcImage("40");
    const port = freePort();
    const name = runPublished("port", port, ["--health-interval", "2s"]);
    const oldId = inspect(name).Id as string;
    await waitUntil(() => portOpen(port), 60_000, "the API to listen");
    const v2 = buildSvcImage("41");
    await postUpdate(port, name);
    await aloneOn(name, v2, oldId, `${name} to run the new image alone`);
    expect(inspect(name).Id).not.toBe(oldId);
    expect(inspect(name).HostConfig.RestartPolicy.Name).toBe("unless-stopped");
    await serves(port, name);
    docker(["rm", "-f", name], { allowFailure: true });
  }, 240_000);

  test("a new image whose healthcheck fails: the old svc runs again, alone, serving the published port", async () => {
    const v1 = buildSvcImage("50");
    const port = freePort();
    // no health option of its own: a container's health options keep the image's probe it was created with
    const name = runPublished("port-fail", port, []);
    const oldId = inspect(name).Id as string;
    const firstStart = inspect(name).State.StartedAt as string;
    await waitUntil(() => portOpen(port), 60_000, "the API to listen");
    // the same svc, but its HEALTHCHECK asks a port nothing listens on: never healthy
    classicBuild(
      ref,
      ["-"],
      `FROM ${ref}\nHEALTHCHECK --interval=2s --timeout=2s --retries=1 CMD ["/svc", "healthcheck", "--http-api-port=1"]\nLABEL svc.e2e.build=51\n`,
    );
    docker(["push", "-q", ref]);
    // svc answers "updated" once the replacement holds the name and the handover container watches
    // it; not asked of the engine here: at load the handover's rollback can be done before a
    // `docker inspect` answers
    await postUpdate(port, name);
    await aloneOn(name, v1, oldId, `the old ${name} to run alone again`);
    expect(inspect(name).Id).toBe(oldId);
    // stopped by the handover for the replacement, then started again by its rollback
    expect(inspect(name).State.StartedAt).not.toBe(firstStart);
    await serves(port, name);
    docker(["rm", "-f", name], { allowFailure: true });
  }, 240_000);
});
