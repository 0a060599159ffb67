/**
 * Dry runs as a user asks for them: `svc --run-once --dry-run` from a shell, `POST /v1/check` and
 * `GET /v1/containers` over HTTP. Each says what an update would do and changes nothing: the
 * container keeps running as it was, nothing is pulled, no metric moves, no audit entry is written.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { docker, freePort, inspect, sandbox } from "../../harness.ts";
import {
  baseFlags,
  Fixture,
  parseJsonLines,
  reportsIn,
  runSvc,
  startSvc,
  stopAll,
  stopProcess,
  waitForPort,
} from "./support.ts";

const fx = new Fixture("e2e-dry");
const TOKEN = "e2e-dry-token-5b1c";
const REASON = "would be updated (dry run)";

afterAll(async () => {
  await stopAll();
  fx.cleanup();
}, 120_000);

/** A running container whose tag has a newer image in the registry, and not on the engine. */
function staleContainer(what: string): { name: string; ref: string; oldId: string; startedAt: string } {
  const v1 = fx.image(what);
  const name = fx.run(what, v1.ref);
  const v2 = fx.image(what);
  // the newer image only in the registry: a pull would bring it back
  docker(["rmi", v2.id]);
  const container = inspect(name);
  return { name, ref: v1.ref, oldId: container.Id, startedAt: container.State.StartedAt };
}

function untouched(c: { name: string; ref: string; oldId: string; startedAt: string }): void {
  const now = inspect(c.name);
  expect(now.Id).toBe(c.oldId);
  expect(now.State.StartedAt).toBe(c.startedAt);
  expect(now.State.Running).toBe(true);
  expect(docker(["image", "inspect", c.ref], { allowFailure: true }).code).not.toBe(0);
}

describe("dry runs", () => {
  test("svc --run-once --dry-run: exit 0, the report says what would be updated, the container and the engine's images are as they were", async () => {
    const c = staleContainer("once");
    const audit = join(fx.tempDir("audit"), "audit.log");
    const run = await runSvc([...baseFlags(), "--run-once", "--dry-run", "--audit-log", audit, c.name]);
    expect(run.code, run.svc.describe()).toBe(0);
    const report = reportsIn(run.svc.output).at(-1);
    expect(report?.dry_run, run.svc.describe()).toBe(true);
    expect(report?.containers).toEqual([
      expect.objectContaining({ name: c.name, state: "stale", reason: REASON, new_image_id: null }),
    ]);
    untouched(c);
    expect(existsSync(audit) ? readFileSync(audit, "utf8") : "").toBe("");
  }, 90_000);

  const composeWorks = docker(["compose", "version"], { allowFailure: true }).code === 0;
  test.skipIf(!composeWorks)(
    "a compose project: the start-up line says svc can write it, the dry run says which line it would write, and writes nothing",
    async () => {
      const v1 = fx.image("cmp", { tag: "1.0.0" });
      fx.image("cmp", { tag: "1.1.0" });
      const dir = fx.tempDir("cmp");
      const text = `services:\n  web:\n    image: ${v1.ref}\n    labels: { svc.tag_policy: "semver:minor" }\n`;
      writeFileSync(join(dir, "compose.yaml"), text);
      const project = fx.name("cmp").toLowerCase();
      const compose = (...args: string[]) => docker(["compose", "--project-directory", dir, "-p", project, ...args]);
      compose("up", "-d");
      try {
        const name = `${project}-web-1`;
        const run = await runSvc([
          ...baseFlags(),
          "--docker-config",
          sandbox().dockerConfig,
          "--run-once",
          "--dry-run",
          name,
        ]);
        expect(run.code, run.svc.describe()).toBe(0);
        const lines = parseJsonLines(run.svc.output).map((l) => String(l.message ?? l.msg ?? ""));
        expect(
          lines.find((l) => l.startsWith("compose: svc can write")),
          run.svc.describe(),
        ).toContain(project);
        const entry = reportsIn(run.svc.output)
          .at(-1)
          ?.containers.find((c: { name: string }) => c.name === name);
        expect(entry).toMatchObject({
          state: "stale",
          reason: REASON,
          compose: { changes: ["compose.yaml line 3: 1.0.0 -> 1.1.0"], written: false, recreates: null },
        });
        expect(readFileSync(join(dir, "compose.yaml"), "utf8")).toBe(text);
      } finally {
        compose("down", "--remove-orphans");
      }
    },
    90_000,
  );

  test("POST /v1/check and GET /v1/containers tell, POST /v1/update then does it", async () => {
    const c = staleContainer("api");
    const port = freePort();
    const svc = startSvc([
      ...baseFlags(),
      "--http-api-update",
      "--http-api-metrics",
      "--http-api-token",
      TOKEN,
      "--http-api-port",
      String(port),
    ]);
    await waitForPort(port, svc);
    const call = async (method: string, path: string) => {
      const response = await fetch(`http://127.0.0.1:${port}${path}`, {
        method,
        headers: { authorization: `Bearer ${TOKEN}`, accept: "application/json" },
      });
      return { status: response.status, body: (await response.json()) as any };
    };

    const check = await call("POST", `/v1/check?container=${c.name}`);
    expect(check.status, svc.describe()).toBe(200);
    expect(check.body.dry_run).toBe(true);
    expect(check.body.containers).toEqual([expect.objectContaining({ name: c.name, state: "stale", reason: REASON })]);

    const listed = await call("GET", `/v1/containers?container=${c.name}`);
    expect(listed.status).toBe(200);
    expect(listed.body.containers).toEqual([
      expect.objectContaining({
        name: c.name,
        image: c.ref,
        state: "stale",
        would_update: true,
        reason: REASON,
        available_digest: expect.stringMatching(/^sha256:/),
      }),
    ]);
    untouched(c);
    expect((await call("GET", "/v1/metrics")).body.svc_scans_total).toBe(0);
    const quiet = await (
      await fetch(`http://127.0.0.1:${port}/v1/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })
    ).text();
    expect(quiet).not.toContain("svc_update_available");

    const update = await call("POST", `/v1/update?container=${c.name}`);
    expect(update.body.dry_run).toBeUndefined();
    expect(update.body.containers).toEqual([expect.objectContaining({ name: c.name, state: "updated" })]);
    expect(inspect(c.name).Id).not.toBe(c.oldId);
    expect((await call("GET", "/v1/metrics")).body.svc_scans_total).toBe(1);
    const text = await (
      await fetch(`http://127.0.0.1:${port}/v1/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })
    ).text();
    expect(text).toContain(`svc_update_available{container="${c.name}"} 0\n`);
  }, 90_000);

  test("POST /v1/skip: the newer digest is not applied, also after a restart (state_dir); a newer image is", async () => {
    const c = staleContainer("skip");
    const stateDir = fx.tempDir("skip-state");
    const start = async () => {
      const port = freePort();
      const svc = startSvc([
        ...baseFlags(),
        "--http-api-update",
        "--http-api-token",
        TOKEN,
        "--http-api-port",
        String(port),
        "--state-dir",
        stateDir,
      ]);
      await waitForPort(port, svc);
      const post = async (path: string) => {
        const response = await fetch(`http://127.0.0.1:${port}${path}`, {
          method: "POST",
          headers: { authorization: `Bearer ${TOKEN}` },
        });
        return { status: response.status, body: (await response.json()) as any };
      };
      return { svc, post };
    };

    const first = await start();
    const skipped = await first.post(`/v1/skip?container=${c.name}`);
    expect(skipped.status, first.svc.describe()).toBe(200);
    expect(skipped.body).toEqual({ container: c.name, digest: expect.stringMatching(/^sha256:[0-9a-f]{64}$/) });
    const update = await first.post(`/v1/update?container=${c.name}`);
    expect(update.body.containers).toEqual([
      expect.objectContaining({
        name: c.name,
        state: "skipped",
        reason: `${skipped.body.digest} was skipped on request (POST /v1/skip); waiting for a newer image`,
      }),
    ]);
    untouched(c);
    await stopProcess(first.svc.proc);

    const second = await start();
    expect((await second.post(`/v1/update?container=${c.name}`)).body.containers[0].state, second.svc.describe()).toBe(
      "skipped",
    );
    untouched(c);
    const newest = fx.image("skip");
    const later = await second.post(`/v1/update?container=${c.name}`);
    expect(later.body.containers[0].state, second.svc.describe()).toBe("updated");
    expect(inspect(c.name).Image).toBe(newest.id);
  }, 120_000);
});
