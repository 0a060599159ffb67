/**
 * More of what run-once users do: notifications from a cron job (sent before svc exits, even
 * with a delay), monitor-only, a private registry with credentials from a file, DOCKER_HOST and
 * ./svc.toml picked up by themselves, API flags ignored, machine-readable output.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { buildImage, docker, freePort, inspect, removeContainers, sandbox, waitUntil } from "../../harness.ts";
import {
  baseFlags,
  containersByPrefix,
  Fixture,
  parseJsonLines,
  portOpen,
  receiver,
  reportedStates,
  reportsIn,
  runSvc,
  startSvc,
  stopAll,
  stopReceivers,
  userEnv,
} from "./support.ts";

const fx = new Fixture("e2e-once2");

afterAll(async () => {
  await stopAll();
  stopReceivers();
  fx.cleanup();
}, 120_000);

describe("run-once extras", () => {
  test("notifications of a run-once cycle are sent before svc exits, even with a delay", async () => {
    const name = fx.name("notify");
    fx.run("notify", fx.image("notify").ref);
    fx.image("notify");
    const { bodies, server } = receiver();
    const run = await runSvc([
      ...baseFlags(),
      "--run-once",
      "--notifications-webhook-url",
      `http://127.0.0.1:${server.port}/`,
      "--notifications-delay",
      "30s",
      name,
    ]);
    expect(run.code, run.svc.describe()).toBe(0);
    // svc has exited: the report must already have arrived
    expect(bodies, run.svc.describe()).toHaveLength(1);
    const report = JSON.parse(bodies[0]!);
    expect(report.trigger).toBe("run_once");
    expect(report.containers[0]).toMatchObject({ name, state: "updated" });
  }, 90_000);

  test("--monitor-only: exit 0, the container is left alone, and the user is told it is stale", async () => {
    const name = fx.name("monitor");
    fx.run("monitor", fx.image("monitor").ref);
    const before = inspect(name);
    fx.image("monitor");
    const run = await runSvc([...baseFlags(), "--run-once", "--monitor-only", name]);
    expect(run.code, run.svc.describe()).toBe(0);
    const now = inspect(name);
    expect(now.Id).toBe(before.Id);
    expect(now.State.StartedAt).toBe(before.State.StartedAt);
    const finished = run.svc.records().find((r) => r.message === "cycle finished");
    expect(finished?.fields?.stale, run.svc.describe()).toBe(1);
    expect(reportedStates(run.svc.output, name), run.svc.describe()).toContain("stale");
  }, 90_000);

  test("a private registry: credentials from a file (--registry-credentials) update the container; the password is never printed", async () => {
    const { authRegistry, authUser, authPass } = sandbox();
    const name = fx.name("private");
    const ref = `${authRegistry}/${name}:latest`;
    buildImage(ref, { changes: [`CMD ["/bin/sh","-c","trap 'exit 0' TERM; sleep 3600 & wait"]`] });
    fx.run("private", ref);
    const v2 = buildImage(ref, { changes: [`CMD ["/bin/sh","-c","trap 'exit 0' TERM; sleep 3600 & wait"]`] });
    const dir = fx.tempDir("cred");
    const passwordFile = join(dir, "password");
    writeFileSync(passwordFile, `${authPass}\n`);
    const run = await runSvc([
      ...baseFlags(),
      "--run-once",
      "--log-level",
      "debug",
      "--registry-credentials",
      `host=${authRegistry},username=${authUser},password=${passwordFile}`,
      name,
    ]);
    expect(run.code, run.svc.describe()).toBe(0);
    expect(inspect(name).Image).toBe(v2.id);
    expect(run.svc.output).not.toContain(authPass);
  }, 90_000);

  test("a private registry without credentials: the container is skipped with a reason, not failed (exit 0)", async () => {
    const { authRegistry, authPass } = sandbox();
    const name = fx.name("nocred");
    const ref = `${authRegistry}/${name}:latest`;
    buildImage(ref, { changes: [`CMD ["/bin/sh","-c","trap 'exit 0' TERM; sleep 3600 & wait"]`] });
    fx.run("nocred", ref);
    const before = inspect(name);
    buildImage(ref, { changes: [`CMD ["/bin/sh","-c","trap 'exit 0' TERM; sleep 3600 & wait"]`] });
    // no `docker login` either: an empty Docker CLI config
    const run = await runSvc([...baseFlags(), "--run-once", name], {
      env: userEnv({ DOCKER_CONFIG: fx.tempDir("nodockercfg") }),
    });
    expect(run.code, run.svc.describe()).toBe(0);
    expect(inspect(name).Id).toBe(before.Id);
    const finished = run.svc.records().find((r) => r.message === "cycle finished");
    expect(finished?.fields?.skipped, run.svc.describe()).toBe(1);
    expect(run.svc.output).not.toContain(authPass);
  }, 90_000);

  test("a private registry after `docker login` (the Docker CLI's config.json): updated, the password never printed", async () => {
    const { authRegistry, authUser, authPass } = sandbox();
    const name = fx.name("dockerlogin");
    const ref = `${authRegistry}/${name}:latest`;
    buildImage(ref, { changes: [`CMD ["/bin/sh","-c","trap 'exit 0' TERM; sleep 3600 & wait"]`] });
    fx.run("dockerlogin", ref);
    const v2 = buildImage(ref, { changes: [`CMD ["/bin/sh","-c","trap 'exit 0' TERM; sleep 3600 & wait"]`] });
    const dockerConfig = fx.tempDir("dockercfg");
    const auth = Buffer.from(`${authUser}:${authPass}`).toString("base64");
    writeFileSync(join(dockerConfig, "config.json"), JSON.stringify({ auths: { [authRegistry]: { auth } } }));
    const run = await runSvc([...baseFlags(), "--run-once", "--log-level", "debug", name], {
      env: userEnv({ DOCKER_CONFIG: dockerConfig }),
    });
    expect(run.code, run.svc.describe()).toBe(0);
    expect(inspect(name).Image).toBe(v2.id);
    expect(run.svc.output).not.toContain(authPass);
    expect(run.svc.output).not.toContain(auth);
  }, 90_000);

  test("DOCKER_HOST and ./svc.toml are picked up without flags", async () => {
    const name = fx.name("envhost");
    fx.run("envhost", fx.image("envhost").ref);
    const v2 = fx.image("envhost");
    const dir = fx.tempDir("cwd");
    writeFileSync(
      join(dir, "svc.toml"),
      ["run_once = true", 'stop_timeout = "1s"', `containers = ["${name}"]`, ""].join("\n"),
    );
    const run = await runSvc([], { cwd: dir, env: userEnv({ DOCKER_HOST: sandbox().dockerHost }) });
    expect(run.code, run.svc.describe()).toBe(0);
    expect(inspect(name).Image).toBe(v2.id);
  }, 90_000);

  test("API flags with --run-once: a warning, no port opened, the cycle still runs", async () => {
    const name = fx.name("apiflags");
    fx.run("apiflags", fx.image("apiflags").ref);
    const port = freePort();
    const svc = startSvc([
      ...baseFlags(),
      "--run-once",
      "--http-api-update",
      "--http-api-token",
      "t0k3n-e2e",
      "--http-api-port",
      String(port),
      name,
    ]);
    let opened = false;
    while (svc.running) {
      opened ||= await portOpen(port);
      await Bun.sleep(50);
    }
    expect(await svc.exit(), svc.describe()).toBe(0);
    expect(opened).toBe(false);
    expect(svc.records().some((r) => r.level === "warn" && /run_once/.test(r.message))).toBe(true);
    expect(svc.output).not.toContain("t0k3n-e2e");
  }, 90_000);

  test("the audit log of a run-once cycle says trigger run_once and the session id", async () => {
    const name = fx.name("audit");
    fx.run("audit", fx.image("audit").ref);
    fx.image("audit");
    const file = join(fx.tempDir("audit"), "audit.log");
    const run = await runSvc([...baseFlags(), "--run-once", "--audit-log", file, name]);
    expect(run.code, run.svc.describe()).toBe(0);
    expect(existsSync(file)).toBe(true);
    const entries = parseJsonLines(readFileSync(file, "utf8")).filter((e) => e.fields?.container === name);
    expect(entries.map((e) => e.fields.action)).toEqual(
      expect.arrayContaining(["pull", "stop", "rename", "create", "start", "remove"]),
    );
    const sessionId = run.svc.records().find((r) => r.message === "cycle finished")?.fields?.session_id;
    expect(sessionId).toBeDefined();
    for (const entry of entries) {
      expect(entry.fields.trigger).toBe("run_once");
      expect(entry.fields.session_id).toBe(sessionId);
    }
    const reports = reportsIn(run.svc.output);
    if (reports.length > 0) expect(reports.at(-1).id).toBe(sessionId);
  }, 90_000);

  test("piped output: every line on stdout and stderr is one JSON log record", async () => {
    const name = fx.name("json");
    fx.run("json", fx.image("json").ref);
    fx.image("json");
    const run = await runSvc(["--docker-host", sandbox().dockerHost, "--stop-timeout", "1s", "--run-once", name]);
    expect(run.code, run.svc.describe()).toBe(0);
    const lines = `${run.stdout}\n${run.stderr}`.split("\n").filter((l) => l.trim() !== "");
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines) {
      const record = JSON.parse(line);
      expect(Object.keys(record)).toEqual(expect.arrayContaining(["timestamp", "level", "target", "message"]));
    }
  }, 90_000);

  test("a wrong registry password: the container is skipped, exit 0, and the password shows nowhere (even at debug level)", async () => {
    const { authRegistry, authUser } = sandbox();
    const wrong = "wrong-password-d41c7a";
    const name = fx.name("wrongpw");
    const ref = `${authRegistry}/${name}:latest`;
    buildImage(ref, { changes: [`CMD ["/bin/sh","-c","trap 'exit 0' TERM; sleep 3600 & wait"]`] });
    fx.run("wrongpw", ref);
    const before = inspect(name);
    buildImage(ref, { changes: [`CMD ["/bin/sh","-c","trap 'exit 0' TERM; sleep 3600 & wait"]`] });
    const run = await runSvc(
      [
        ...baseFlags(),
        "--run-once",
        "--log-level",
        "trace",
        "--head-warn-strategy",
        "always",
        "--registry-credentials",
        `host=${authRegistry},username=${authUser},password=${wrong}`,
        name,
      ],
      { env: userEnv({ DOCKER_CONFIG: fx.tempDir("nodockercfg") }) },
    );
    expect(run.code, run.svc.describe()).toBe(0);
    expect(inspect(name).Id).toBe(before.Id);
    expect(run.svc.output).not.toContain(wrong);
    expect(run.svc.output).not.toContain(Buffer.from(`${authUser}:${wrong}`).toString("base64"));
  }, 90_000);

  test("a new image that cannot even start: exit 1, the old container runs again", async () => {
    const name = fx.name("nostart");
    const v1 = fx.image("nostart");
    fx.run("nostart", v1.ref);
    fx.image("nostart", { changes: [`CMD ["/no/such/binary"]`] });
    const run = await runSvc([...baseFlags(), "--run-once", name]);
    expect(run.code, run.svc.describe()).toBe(1);
    const now = inspect(name);
    expect(now.Image).toBe(v1.id);
    expect(now.State.Running).toBe(true);
    expect(Object.keys(containersByPrefix(name))).toEqual([name]);
    const finished = run.svc.records().find((r) => r.message === "cycle finished");
    expect((finished?.fields?.failed ?? 0) + (finished?.fields?.rolled_back ?? 0), run.svc.describe()).toBe(1);
  }, 90_000);

  test("a notification channel that is down does not change the outcome: exit 0, an error line, svc still exits", async () => {
    const name = fx.name("hookdown");
    fx.run("hookdown", fx.image("hookdown").ref);
    const v2 = fx.image("hookdown");
    const closed = freePort();
    const run = await runSvc(
      [...baseFlags(), "--run-once", "--notifications-webhook-url", `http://127.0.0.1:${closed}/hook`, name],
      {},
      120_000,
    );
    expect(run.code, run.svc.describe()).toBe(0);
    expect(inspect(name).Image).toBe(v2.id);
    expect(
      run.svc.records().some((r) => (r.level === "error" || r.level === "warn") && r.target === "svc::notify"),
      run.svc.describe(),
    ).toBe(true);
  }, 150_000);

  test("a new image that turns the container's healthcheck unhealthy is rolled back: exit 1, the healthy old container runs", async () => {
    const name = fx.name("health");
    // v1 writes the file the healthcheck reads; v2 does not
    const v1 = fx.image("health", {
      changes: [`CMD ["/bin/sh","-c","echo ok > /ok; trap 'exit 0' TERM; sleep 3600 & wait"]`],
    });
    fx.run("health", v1.ref, { healthcheck: { cmd: "cat /ok", intervalMs: 1000, retries: 1, timeoutMs: 1000 } });
    await waitUntil(() => inspect(name).State.Health?.Status === "healthy", 20_000, "v1 to be healthy");
    fx.image("health");
    const run = await runSvc([...baseFlags(), "--rollback-startup-timeout", "10s", "--run-once", name]);
    expect(run.code, run.svc.describe()).toBe(1);
    const now = inspect(name);
    expect(now.Image).toBe(v1.id);
    expect(now.State.Running).toBe(true);
    expect(now.Config.Healthcheck?.Test).toEqual(["CMD-SHELL", "cat /ok"]);
    expect(Object.keys(containersByPrefix(name))).toEqual([name]);
    const finished = run.svc.records().find((r) => r.message === "cycle finished");
    expect(finished?.fields?.rolled_back, run.svc.describe()).toBe(1);
    // its probe every second (an exec each, about 0.1 CPU s of the engine's) would go on to the
    // file's end
    removeContainers(name);
  }, 90_000);

  test("--cleanup: after the update the old image is gone from the engine, the new one stays", async () => {
    const name = fx.name("cleanup");
    const v1 = fx.image("cleanup");
    fx.run("cleanup", v1.ref);
    const v2 = fx.image("cleanup");
    const run = await runSvc([...baseFlags(), "--run-once", "--cleanup", name]);
    expect(run.code, run.svc.describe()).toBe(0);
    expect(inspect(name).Image).toBe(v2.id);
    await waitUntil(
      () => docker(["image", "inspect", v1.id], { allowFailure: true }).code !== 0,
      10_000,
      "the old image to be removed",
    ).catch(() => {});
    expect(docker(["image", "inspect", v1.id], { allowFailure: true }).code, run.svc.describe()).not.toBe(0);
    expect(docker(["image", "inspect", v2.id], { allowFailure: true }).code).toBe(0);
  }, 90_000);

  test("a template path written in the config file is read from next to that file (as secret paths are)", async () => {
    const name = fx.name("tpl");
    fx.run("tpl", fx.image("tpl").ref);
    fx.image("tpl");
    const etc = fx.tempDir("tpl-etc");
    writeFileSync(join(etc, "report.mustache"), "custom template: {{#containers}}{{name}} {{/containers}}\n");
    const { bodies: pushes, server } = receiver(() => Response.json({ status: 1, request: "tpl" }));
    writeFileSync(
      join(etc, "svc.toml"),
      [
        "run_once = true",
        'stop_timeout = "1s"',
        `containers = ["${name}"]`,
        "[docker]",
        `host = "${sandbox().dockerHost}"`,
        "[notifications]",
        'template = "report.mustache"',
        "[notifications.pushover]",
        'token = "tpl-token-e2e"',
        'user_key = "tpl-user-e2e"',
        `api_url = "http://127.0.0.1:${server.port}"`,
        "",
      ].join("\n"),
    );
    const run = await runSvc(["-c", join(etc, "svc.toml")], { cwd: "/" });
    expect(run.code, run.svc.describe()).toBe(0);
    expect(pushes).toHaveLength(1);
    expect(new URLSearchParams(pushes[0]!).get("message")).toContain(`custom template: ${name}`);
  }, 90_000);

  test("--label-enable: only the container labelled svc.enable=true is updated; per-container svc.monitor_only is honoured", async () => {
    const on = fx.name("lbl-on");
    const off = fx.name("lbl-off");
    const watched = fx.name("lbl-watch");
    fx.run("lbl-on", fx.image("lbl-on").ref, { labels: { "svc.enable": "true" } });
    fx.run("lbl-off", fx.image("lbl-off").ref);
    fx.run("lbl-watch", fx.image("lbl-watch").ref, { labels: { "svc.enable": "true", "svc.monitor_only": "true" } });
    const offId = inspect(off).Id;
    const watchedId = inspect(watched).Id;
    const v2 = fx.image("lbl-on");
    fx.image("lbl-off");
    fx.image("lbl-watch");
    const run = await runSvc([...baseFlags(), "--run-once", "--label-enable", on, off, watched]);
    expect(run.code, run.svc.describe()).toBe(0);
    expect(inspect(on).Image).toBe(v2.id);
    expect(inspect(off).Id).toBe(offId);
    expect(inspect(watched).Id).toBe(watchedId);
    const report = reportsIn(run.svc.output).at(-1);
    expect(report?.containers.map((c: any) => [c.name, c.state]).sort(), run.svc.describe()).toEqual(
      [
        [on, "updated"],
        [watched, "stale"],
      ].sort(),
    );
  }, 90_000);
});
