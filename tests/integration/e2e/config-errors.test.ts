/**
 * Configuration mistakes as users make them: svc exits 2, names the problem as the user wrote
 * it, and touches nothing (the stale container is left exactly as it was).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { freePort, inspect, sandbox } from "../../harness.ts";
import { baseFlags, Fixture, portOpen, runSvc, stopAll } from "./support.ts";

const fx = new Fixture("e2e-cfg");

afterAll(async () => {
  await stopAll();
  fx.cleanup();
}, 120_000);

describe("configuration errors exit 2 and touch nothing", () => {
  const name = fx.name("app");
  let before: any;

  beforeAll(() => {
    const v1 = fx.image("app");
    fx.run("app", v1.ref);
    fx.image("app"); // stale: any cycle that ran would update it
    before = inspect(name);
  });

  const unchanged = () => {
    const now = inspect(name);
    expect(now.Id).toBe(before.Id);
    expect(now.Image).toBe(before.Image);
    expect(now.State.StartedAt).toBe(before.State.StartedAt);
    expect(now.State.Running).toBe(true);
  };

  test("a typo in a key (`prot = 8080`) names the file line and suggests `port`", async () => {
    const dir = fx.tempDir("typo");
    const port = freePort();
    writeFileSync(
      join(dir, "svc.toml"),
      [
        `run_once = true`,
        `containers = ["${name}"]`,
        "",
        "[docker]",
        `host = "${sandbox().dockerHost}"`,
        "",
        "[http_api]",
        `prot = ${port}`,
        "",
      ].join("\n"),
    );
    const run = await runSvc(["-c", "svc.toml"], { cwd: dir });
    expect(run.code, run.svc.describe()).toBe(2);
    expect(run.stderr).toContain("svc.toml:8");
    expect(run.stderr).toMatch(/prot/);
    expect(run.stderr).toMatch(/did you mean[^\n]*port/i);
    unchanged();
  }, 60_000);

  test("with --log-format pretty the same typo reads as a plain line naming file, line and suggestion", async () => {
    const dir = fx.tempDir("typo-pretty");
    writeFileSync(join(dir, "svc.toml"), ["run_once = true", "", "[http_api]", "prot = 8080", ""].join("\n"));
    const run = await runSvc(
      ["-c", "svc.toml", "--log-format", "pretty", "--docker-host", sandbox().dockerHost, name],
      { cwd: dir },
    );
    expect(run.code, run.svc.describe()).toBe(2);
    expect(run.stderr).toMatch(/svc\.toml:4.*prot.*did you mean.*port/is);
    unchanged();
  }, 60_000);

  test("--http-api-update without a token: exit 2, no port opened, container untouched", async () => {
    const port = freePort();
    const run = await runSvc([
      ...baseFlags(),
      "--http-api-update",
      "--http-api-port",
      String(port),
      "--poll-interval",
      "1s",
      name,
    ]);
    expect(run.code, run.svc.describe()).toBe(2);
    expect(run.stderr).toMatch(/token/);
    expect(run.stderr).toContain("--http-api-update");
    expect(await portOpen(port)).toBe(false);
    unchanged();
  }, 60_000);

  test("a token path with a typo, or a folder where the token file should be: exit 2 naming the option and the path, no port opened", async () => {
    const folder = fx.tempDir("token-folder"); // what Docker creates when a bind-mounted file is missing
    for (const token of ["/run/secrets/svc-tokn", folder]) {
      const port = freePort();
      const run = await runSvc([
        ...baseFlags(),
        "--http-api-update",
        "--http-api-token",
        token,
        "--http-api-port",
        String(port),
        "--poll-interval",
        "1h",
        name,
      ]);
      expect(run.code, run.svc.describe()).toBe(2);
      expect(run.stderr).toContain(`--http-api-token: the secret file ${token} cannot be read`);
      expect(await portOpen(port)).toBe(false);
    }
    unchanged();
  }, 60_000);

  test("a state_dir other users can write to: exit 2 naming it, container untouched", async () => {
    const dir = fx.tempDir("state-open");
    chmodSync(dir, 0o777);
    const run = await runSvc([...baseFlags(), "--state-dir", dir, "--run-once", name]);
    expect(run.code, run.svc.describe()).toBe(2);
    expect(run.stderr).toContain(`state_dir ${dir} can be written by other users (mode 0777)`);
    unchanged();
  }, 60_000);

  test("several mistakes at once are all reported", async () => {
    const run = await runSvc([...baseFlags(), "--poll-interval", "soon", "--run-once", "--stop-timeout", "-3s", name]);
    expect(run.code, run.svc.describe()).toBe(2);
    expect(run.stderr).toContain("--poll-interval");
    expect(run.stderr).toContain("--stop-timeout");
    unchanged();
  }, 60_000);

  test("a config file named with -c that does not exist: exit 2", async () => {
    const run = await runSvc(["-c", "/nonexistent/svc.toml", ...baseFlags(), "--run-once", name]);
    expect(run.code, run.svc.describe()).toBe(2);
    expect(run.stderr).toContain("/nonexistent/svc.toml");
    unchanged();
  }, 60_000);
});
