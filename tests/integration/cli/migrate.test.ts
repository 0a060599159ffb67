/**
 * `svc migrate` against the real engine: a container set up as a Watchtower user runs it (its
 * variables, arguments and labels) becomes an svc.toml that svc loads, with every setting it could
 * not carry over listed.
 */
import { afterAll, expect, test } from "bun:test";
import { existsSync, lstatSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { loadConfig } from "../../../src/config/index.ts";
import { buildImage, docker, sandbox, uniqueName } from "../../harness.ts";
import { commandBlock, runBlockUntil, svcOnPath } from "../../support/doc-blocks.ts";
import { tempDir } from "../../temp.ts";
import { runSvc, userEnv } from "../e2e/support.ts";

const name = uniqueName("watchtower");
const image = `${sandbox().registry}/${uniqueName("wt-img")}:latest`;
afterAll(() => {
  docker(["rm", "-f", name], { allowFailure: true });
  docker(["rmi", "-f", image], { allowFailure: true });
});

test("a Watchtower container's variables, arguments and labels become a loadable svc.toml; the rest is listed", async () => {
  buildImage(image, { push: false });
  // the command Watchtower's image runs, after a shell that keeps the container up
  docker([
    "run",
    "-d",
    "--name",
    name,
    "--network",
    "none",
    "-l",
    "com.centurylinklabs.watchtower=true",
    "-l",
    "com.centurylinklabs.watchtower.lifecycle.pre-update=/backup.sh",
    "-e",
    "WATCHTOWER_CLEANUP=true",
    "-e",
    "WATCHTOWER_SCOPE=prod",
    "-e",
    "WATCHTOWER_ROLLING_RESTART=true",
    "-e",
    "WATCHTOWER_HTTP_API_TOKEN=s3cret-token",
    "-e",
    "WATCHTOWER_HTTP_API_UPDATE=true",
    "-e",
    "REPO_USER=me",
    "--entrypoint",
    "/bin/sh",
    image,
    "-c",
    "sleep 3600",
    "/watchtower",
    "--interval",
    "300",
    "--enable-lifecycle-hooks",
    "--monitor-only",
    "--debug",
    "-x",
    "db",
    "web",
    "worker",
  ]);
  const dir = tempDir("svc-migrate-");
  const run = await runSvc(["migrate", name, "--output", "svc.toml", "--docker-host", sandbox().dockerHost], {
    cwd: dir,
    env: userEnv(),
  });
  expect(run.stderr).toContain(`read ${name}`);
  expect(run.code).toBe(0);
  expect(run.stderr).toContain("not carried over: WATCHTOWER_ROLLING_RESTART:");
  expect(run.stderr).toContain("com.centurylinklabs.watchtower.lifecycle.pre-update");

  const { config, warnings } = await loadConfig({ argv: ["--config", join(dir, "svc.toml")], env: {}, cwd: dir });
  expect(warnings).toEqual([]);
  expect(config).toMatchObject({
    poll_interval: 300_000,
    cleanup: true,
    monitor_only: true,
    lifecycle_hooks: true,
    log_level: "debug",
    scope: "prod",
    disable_containers: ["db"],
    containers: ["web", "worker"],
    registry_username: "me",
    http_api: { update: true, token: "s3cret-token" },
  });
  expect(readFileSync(join(dir, "svc.toml"), "utf8")).toContain("# Not carried over:");
  expect(readFileSync(join(dir, "svc.toml"), "utf8")).toContain(
    "# Lifecycle hooks run, as Watchtower's --enable-lifecycle-hooks had them",
  );

  // an existing file is kept unless --force
  const again = await runSvc(["migrate", name, "--output", "svc.toml", "--docker-host", sandbox().dockerHost], {
    cwd: dir,
    env: userEnv(),
  });
  expect(again.code).toBe(2);
  expect(again.stderr).toContain("already exists; add --force");
  expect(existsSync(join(dir, "svc.toml"))).toBe(true);

  // it holds Watchtower's secrets: its user's only, and --force replaces a symlink, never writes through it
  expect(statSync(join(dir, "svc.toml")).mode & 0o777).toBe(0o600);
  const victim = join(dir, "victim");
  writeFileSync(victim, "untouched", { mode: 0o644 });
  rmSync(join(dir, "svc.toml"));
  symlinkSync(victim, join(dir, "svc.toml"));
  const forced = await runSvc(
    ["migrate", name, "--output", "svc.toml", "--force", "--docker-host", sandbox().dockerHost],
    { cwd: dir, env: userEnv() },
  );
  expect(forced.code).toBe(0);
  expect(readFileSync(victim, "utf8")).toBe("untouched");
  expect(lstatSync(join(dir, "svc.toml")).isSymbolicLink()).toBe(false);
  expect(statSync(join(dir, "svc.toml")).mode & 0o777).toBe(0o600);

  // to stdout, its notes are TOML comments: a file that caught both streams (2>&1) still loads
  const printed = await runSvc(["migrate", name, "--docker-host", sandbox().dockerHost], { cwd: dir, env: userEnv() });
  expect(printed.code).toBe(0);
  expect(printed.stderr).toContain("# svc migrate: read");
  expect(
    printed.stderr
      .trimEnd()
      .split("\n")
      .every((line) => line.startsWith("#")),
  ).toBe(true);
  writeFileSync(join(dir, "both.toml"), printed.stderr + printed.stdout);
  const both = await loadConfig({ argv: ["--config", join(dir, "both.toml")], env: {}, cwd: dir });
  expect(both.config.scope).toBe("prod");
}, 60_000);

test("without a name it finds the one Watchtower container, and says so when there is none to read", async () => {
  const missing = await runSvc(["migrate", "no-such-container", "--docker-host", sandbox().dockerHost], {
    env: userEnv(),
  });
  expect(missing.code).toBe(2);
  expect(missing.stderr).toContain("no container named no-such-container");
}, 60_000);

test("docs/migrating-from-watchtower.md, Switching over, as written: the file, a dry run, Watchtower stopped and removed, svc running and saying when it checks", async () => {
  const watchtower = uniqueName("wt-switch");
  const scope = uniqueName("wt-switch-scope");
  buildImage(image, { push: false });
  docker([
    "run",
    "-d",
    "--name",
    watchtower,
    "--network",
    "none",
    "-l",
    "com.centurylinklabs.watchtower=true",
    "-e",
    "WATCHTOWER_POLL_INTERVAL=21600",
    "-e",
    `WATCHTOWER_SCOPE=${scope}`,
    "--entrypoint",
    "/bin/sh",
    image,
    "-c",
    "sleep 3600",
    "/watchtower",
  ]);
  const dir = tempDir("svc-switch-");
  // the sandbox's changes: its engine is the user's (DOCKER_HOST), and the container has a unique name
  const script = commandBlock("switch-over").text.replaceAll(/\bwatchtower\b(?=[ \n])/g, watchtower);
  const env = userEnv({
    PATH: `${svcOnPath(dir)}:${process.env.PATH}`,
    DOCKER_HOST: sandbox().dockerHost,
    DOCKER_CONFIG: sandbox().dockerConfig,
    NO_COLOR: "1",
  });
  const run = await runBlockUntil(script, { cwd: dir, env }, (output) => /next check at \d\d:\d\d/.test(output));
  try {
    expect(run.output()).toContain(`docker stop ${watchtower} && docker rm ${watchtower}`); // migrate's own last lines
    expect(docker(["ps", "-a", "--filter", `name=^${watchtower}$`, "--format", "{{.Names}}"]).stdout).toBe("");
    expect(run.output()).toMatch(/next check at \d\d:\d\d \(in 6 h\)/);
  } finally {
    await run.stop();
    docker(["rm", "-f", watchtower], { allowFailure: true });
  }
}, 180_000);
