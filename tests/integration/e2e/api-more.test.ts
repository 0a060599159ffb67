/**
 * More of the API as operators use it: configured through SVC_* environment variables (token
 * from a secret file), image-prefix filters in a form body, metrics without auth, access events
 * on stdout, `svc healthcheck` as a container HEALTHCHECK would run it, and SIGINT.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { freePort, inspect, sandbox, waitUntil } from "../../harness.ts";
import { Fixture, portOpen, runSvc, type SvcProcess, startSvc, stopAll, userEnv, waitForPort } from "./support.ts";

const fx = new Fixture("e2e-api2");
const TOKEN = "env-file-token-c4f1a27e";

afterAll(async () => {
  await stopAll();
  fx.cleanup();
}, 120_000);

describe("svc configured by environment variables", () => {
  let svc: SvcProcess;
  let port: number;
  let env: Record<string, string>;
  const a = fx.name("alpha");
  const b = fx.name("beta");
  const url = (path: string) => `http://127.0.0.1:${port}${path}`;

  beforeAll(async () => {
    fx.run("alpha", fx.image("alpha").ref);
    fx.run("beta", fx.image("beta").ref);
    const dir = fx.tempDir("secret");
    const tokenFile = join(dir, "token");
    writeFileSync(tokenFile, `${TOKEN}\n`);
    port = freePort();
    env = userEnv({
      SVC_DOCKER_HOST: sandbox().dockerHost,
      SVC_HTTP_API_UPDATE: "true",
      SVC_HTTP_API_METRICS: "yes",
      SVC_HTTP_API_METRICS_NO_AUTH: "1",
      SVC_HTTP_API_TOKEN: tokenFile,
      SVC_HTTP_API_PORT: String(port),
      SVC_LOG_ACCESS_TO_STDOUT: "true",
      SVC_STOP_TIMEOUT: "1s",
      SVC_ROLLBACK_STARTUP_TIMEOUT: "3s",
      SVC_LOG_FORMAT: "json",
      // every cycle limited to this test's two containers
      SVC_CONTAINERS: `${a},${b}`,
    });
    svc = startSvc([], { env });
    await waitForPort(port, svc);
  }, 60_000);

  test("the token read from the file works; the file path itself is not a token", async () => {
    const ok = await fetch(url("/v1/update"), { method: "POST", headers: { authorization: `Bearer ${TOKEN}` } });
    expect(ok.status, svc.describe()).toBe(200);
    const report = (await ok.json()) as any;
    expect(report.containers.map((c: any) => c.name).sort()).toEqual([a, b].sort());
    expect(report.containers.every((c: any) => c.state === "fresh")).toBe(true);
    const byPath = await fetch(url("/v1/update"), {
      method: "POST",
      headers: { authorization: `Bearer ${env.SVC_HTTP_API_TOKEN}` },
    });
    expect(byPath.status).toBe(401);
  }, 60_000);

  test("a form body with an image prefix updates only the containers whose image matches", async () => {
    const v2 = fx.image("beta");
    const oldAlpha = inspect(a).Id;
    fx.image("alpha"); // alpha is stale too, but outside the filter
    const response = await fetch(url("/v1/update"), {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ image: `${sandbox().registry}/${b}` }).toString(),
    });
    expect(response.status, svc.describe()).toBe(200);
    const report = (await response.json()) as any;
    expect(report.filter.image).toEqual([`${sandbox().registry}/${b}`]);
    expect(report.containers.map((c: any) => [c.name, c.state])).toEqual([[b, "updated"]]);
    expect(inspect(b).Image).toBe(v2.id);
    expect(inspect(a).Id).toBe(oldAlpha);
  }, 60_000);

  test("metrics without a token (metrics_no_auth); update still needs one", async () => {
    const metrics = await fetch(url("/v1/metrics"));
    expect(metrics.status).toBe(200);
    expect(await metrics.text()).toMatch(/^svc_scans_total 2$/m);
    const update = await fetch(url("/v1/update"), { method: "POST" });
    expect(update.status).toBe(401);
    expect(update.headers.get("www-authenticate")).toContain("Bearer");
  });

  test("a rolled-back update: the report says why, and the metrics count it as failed", async () => {
    const before = inspect(a);
    fx.image("alpha", { changes: [`CMD ["/bin/sh","-c","exit 7"]`] });
    const response = await fetch(url(`/v1/update?container=${a}`), {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(response.status, svc.describe()).toBe(200);
    const report = (await response.json()) as any;
    expect(report.containers).toHaveLength(1);
    expect(report.containers[0]).toMatchObject({ name: a, state: "rolled_back", id: before.Id });
    expect(report.containers[0].reason).toContain("7");
    expect(report.counts).toMatchObject({ scanned: 1, updated: 0, rolled_back: 1 });
    const text = await (await fetch(url("/v1/metrics"))).text();
    expect(text).toMatch(/^svc_containers_failed 1$/m);
    expect(text).toMatch(/^svc_containers_updated 0$/m);
    expect(text).toMatch(/^svc_scans_total 3$/m);
    const now = inspect(a);
    expect(now.Id).toBe(before.Id);
    expect(now.State.Running).toBe(true);
  }, 60_000);

  test("access events go to stdout with the credential redacted", async () => {
    await waitUntil(
      () => svc.records().some((r) => r.target === "svc::access" && r.fields?.method === "POST"),
      10_000,
      "access events",
    ).catch(() => {});
    const events = svc.records().filter((r) => r.target === "svc::access");
    const post = events.find((r) => r.fields?.method === "POST" && r.fields?.status === 200);
    expect(post, svc.describe()).toBeDefined();
    expect(post.fields.authorization).toBe("Bearer [redacted]");
    const anonymous = events.find((r) => r.fields?.path === "/v1/metrics");
    expect(anonymous?.fields.authorization).toBe("");
    expect(svc.output).not.toContain(TOKEN);
  });

  test("`svc healthcheck` with the same configuration exits 0 while svc runs", async () => {
    const check = await runSvc(["healthcheck"], { env });
    expect(check.code, check.svc.describe()).toBe(0);
  }, 30_000);

  test("SIGINT: exit 0, port closed, and `svc healthcheck` now exits 1", async () => {
    svc.signal("SIGINT");
    expect(await svc.exit(30_000), svc.describe()).toBe(0);
    expect(await portOpen(port)).toBe(false);
    const check = await runSvc(["healthcheck"], { env });
    expect(check.code, check.svc.describe()).toBe(1);
  }, 60_000);
});

describe("a token given as a path relative to the configuration file", () => {
  // /etc/svc/svc.toml says `token = "secrets/api_token"` next to it; svc is started from another
  // directory (systemd's default is /). The literal path must never become the token.
  test("is read from next to the file, or svc refuses to start; `Bearer <the path>` never works", async () => {
    const root = fx.tempDir("relative");
    const etc = join(root, "etc");
    const secret = "relative-file-token-6d0f";
    Bun.spawnSync(["mkdir", "-p", join(etc, "secrets")]);
    writeFileSync(join(etc, "secrets", "api_token"), `${secret}\n`);
    const port = freePort();
    writeFileSync(
      join(etc, "svc.toml"),
      ["[http_api]", "update = true", 'token = "secrets/api_token"', `port = ${port}`, ""].join("\n"),
    );
    const svc = startSvc(
      [
        "-c",
        join(etc, "svc.toml"),
        "--docker-host",
        sandbox().dockerHost,
        "--scope",
        fx.name("nothing"),
        "--log-format",
        "json",
      ],
      { cwd: "/" },
    );
    const listening = await waitForPort(port, svc).then(
      () => true,
      () => false,
    );
    if (!listening) {
      // refusing to start is acceptable, with a configuration error that names the option
      expect(await svc.exit(10_000)).toBe(2);
      expect(svc.stderr).toContain("http_api.token");
      return;
    }
    const byPath = await fetch(`http://127.0.0.1:${port}/v1/update`, {
      method: "POST",
      headers: { authorization: "Bearer secrets/api_token" },
    });
    expect(byPath.status, "the literal path was taken as the token").toBe(401);
    const byContents = await fetch(`http://127.0.0.1:${port}/v1/update`, {
      method: "POST",
      headers: { authorization: `Bearer ${secret}` },
    });
    expect(byContents.status).toBe(200);
    svc.signal("SIGTERM");
    expect(await svc.exit(30_000)).toBe(0);
  }, 60_000);
});
