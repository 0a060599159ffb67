/**
 * Run-once, as a user does it: generate the sample configuration, edit three lines, run
 * `svc -c svc.toml`, and look at the exit code, the containers (docker inspect) and what svc
 * printed about the session.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { docker, freePort, inspect, sandbox } from "../../harness.ts";
import {
  baseFlags,
  containersByPrefix,
  FAILING_CMD,
  Fixture,
  reportedStates,
  reportsIn,
  runSvc,
  stopAll,
} from "./support.ts";

const fx = new Fixture("e2e-once");

afterAll(async () => {
  await stopAll();
  fx.cleanup();
}, 120_000);

/** The user's three edits to the generated sample: docker.host, run_once and the container name. */
function editSample(sample: string, container: string): string {
  const edits: [RegExp, string][] = [
    [/^# run_once = false$/m, "run_once = true"],
    [/^# containers = \[\]$/m, `containers = ["${container}"]`],
    [/^# \[docker\]$/m, "[docker]"],
    [/^# host = "unix:\/\/\/var\/run\/docker\.sock"$/m, `host = "${sandbox().dockerHost}"`],
  ];
  let text = sample;
  for (const [pattern, replacement] of edits) {
    if (!pattern.test(text)) throw new Error(`the generated sample has no line matching ${pattern}`);
    text = text.replace(pattern, replacement);
  }
  return text;
}

describe("svc --generate-config, three edits, svc -c svc.toml", () => {
  const name = fx.name("web");
  let network: string;
  let volume: string;
  let hostPort: number;
  let v1: { ref: string; id: string };
  let v2: { ref: string; id: string };
  let oldId: string;
  let run: Awaited<ReturnType<typeof runSvc>>;
  let dir: string;

  beforeAll(async () => {
    network = fx.network("net");
    volume = fx.volume("data");
    hostPort = freePort();
    v1 = fx.image("web");
    fx.run("web", v1.ref, {
      network,
      restart: "unless-stopped",
      aliases: ["web-alias"],
      labels: { "com.example.team": "ops" },
      env: { GREETING: "hello world" },
      binds: [`${volume}:/data`],
      ports: [{ hostIp: "127.0.0.1", hostPort, containerPort: 8080 }],
    });
    oldId = inspect(name).Id;
    v2 = fx.image("web"); // a newer image under the same tag

    dir = fx.tempDir("cfg");
    const generated = await runSvc(["--generate-config"], { cwd: dir });
    expect(generated.code).toBe(0);
    writeFileSync(join(dir, "svc.toml"), editSample(generated.stdout, name));
    run = await runSvc(["-c", "svc.toml"], { cwd: dir });
  }, 120_000);

  test("exits 0", () => {
    expect(run.code, run.svc.describe()).toBe(0);
  });

  test("the container now runs the new image, under the same name", () => {
    const now = inspect(name);
    expect(now.Image).toBe(v2.id);
    expect(now.Id).not.toBe(oldId);
    expect(now.State.Running).toBe(true);
    expect(now.Config.Image).toBe(v1.ref);
  });

  test("with the same configuration: env, labels, network alias, port binding, volume, restart policy", () => {
    const now = inspect(name);
    expect(now.Config.Env).toContain("GREETING=hello world");
    expect(now.Config.Labels["com.example.team"]).toBe("ops");
    expect(now.NetworkSettings.Networks[network]?.Aliases ?? []).toContain("web-alias");
    expect(now.HostConfig.PortBindings["8080/tcp"]).toEqual([{ HostIp: "127.0.0.1", HostPort: String(hostPort) }]);
    const mount = (now.Mounts as any[]).find((m) => m.Destination === "/data");
    expect(mount?.Type).toBe("volume");
    expect(mount?.Name).toBe(volume);
    expect(now.HostConfig.RestartPolicy.Name).toBe("unless-stopped");
  });

  test("the old container is gone: exactly one container of that name family is left", () => {
    const left = Object.keys(containersByPrefix(name));
    expect(left).toEqual([name]);
  });

  test("the user is told the container was updated (the session report is printed)", () => {
    const states = reportedStates(run.svc.output, name);
    expect(states, `svc printed no report saying ${name} was updated\n${run.svc.describe()}`).toContain("updated");
  });

  test("the printed session report has the run_once trigger and counts updated 1", () => {
    const reports = reportsIn(run.svc.output);
    expect(reports.length, `no SessionReport in svc's output\n${run.svc.describe()}`).toBeGreaterThan(0);
    const report = reports.at(-1);
    expect(report.trigger).toBe("run_once");
    expect(report.counts.updated).toBe(1);
  });

  test("the generated file still reads as the user left it (svc did not rewrite it)", () => {
    expect(readFileSync(join(dir, "svc.toml"), "utf8")).toContain(`containers = ["${name}"]`);
  });
});

describe("run-once with nothing to update", () => {
  const name = fx.name("fresh");
  let oldId: string;
  let run: Awaited<ReturnType<typeof runSvc>>;

  beforeAll(async () => {
    const image = fx.image("fresh");
    fx.run("fresh", image.ref);
    oldId = inspect(name).Id;
    run = await runSvc([...baseFlags(), "--run-once", name]);
  }, 120_000);

  test("exits 0 and leaves the container as it was", () => {
    expect(run.code, run.svc.describe()).toBe(0);
    const now = inspect(name);
    expect(now.Id).toBe(oldId);
    expect(now.State.Running).toBe(true);
  });

  test("the user is told the container is fresh", () => {
    expect(reportedStates(run.svc.output, name), run.svc.describe()).toContain("fresh");
  });
});

describe("run-once with a new image that fails at once", () => {
  const name = fx.name("bad");
  let v1: { ref: string; id: string };
  let oldId: string;
  let run: Awaited<ReturnType<typeof runSvc>>;

  beforeAll(async () => {
    v1 = fx.image("bad");
    fx.run("bad", v1.ref, { env: { KEEP: "me" } });
    oldId = inspect(name).Id;
    fx.image("bad", { changes: [FAILING_CMD] });
    run = await runSvc([...baseFlags(), "--run-once", name]);
  }, 120_000);

  test("exits 1", () => {
    expect(run.code, run.svc.describe()).toBe(1);
  });

  test("the old container runs again, on the old image, with its configuration", () => {
    const now = inspect(name);
    expect(now.State.Running).toBe(true);
    expect(now.Image).toBe(v1.id);
    expect(now.Id).toBe(oldId);
    expect(now.Config.Env).toContain("KEEP=me");
  });

  test("no leftover (renamed old or failed new) container remains", () => {
    expect(Object.keys(containersByPrefix(name))).toEqual([name]);
  });

  test("the user is told the container was rolled back", () => {
    expect(reportedStates(run.svc.output, name), run.svc.describe()).toContain("rolled_back");
  });
});

test("docker is reachable (sanity)", () => {
  expect(docker(["version", "--format", "{{.Server.APIVersion}}"]).stdout).toMatch(/^\d+\.\d+$/);
});
