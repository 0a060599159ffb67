/**
 * API mode, as a user runs it: svc with the update and metrics endpoints, a token, an audit log
 * and an access log, no schedule. Cycles run only when asked over HTTP.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { freePort, inspect, waitUntil } from "../../harness.ts";
import {
  baseFlags,
  Fixture,
  parseJsonLines,
  portOpen,
  type SvcProcess,
  startSvc,
  stopAll,
  waitForPort,
} from "./support.ts";

const fx = new Fixture("e2e-api");
const TOKEN = "e2e-api-token-0f3a9c1d";

afterAll(async () => {
  await stopAll();
  fx.cleanup();
}, 120_000);

describe("svc --http-api-update --http-api-metrics --http-api-token ... (no schedule)", () => {
  const app = fx.name("app");
  const slow = fx.name("slow");
  let port: number;
  let svc: SvcProcess;
  let auditFile: string;
  let accessFile: string;
  let v1: { id: string; digest: string | null };
  let v2: { id: string; digest: string | null };
  let oldAppId: string;
  let first: { status: number; body: any };

  const url = (path: string) => `http://127.0.0.1:${port}${path}`;
  const auth = { authorization: `Bearer ${TOKEN}` };
  const postUpdate = async (query: string) => {
    const response = await fetch(url(`/v1/update?${query}`), { method: "POST", headers: auth });
    const text = await response.text();
    return { status: response.status, text, body: text ? JSON.parse(text) : null, headers: response.headers };
  };
  const audit = () => (existsSync(auditFile) ? parseJsonLines(readFileSync(auditFile, "utf8")) : []);
  const access = () => (existsSync(accessFile) ? parseJsonLines(readFileSync(accessFile, "utf8")) : []);

  beforeAll(async () => {
    const built = fx.image("app");
    v1 = built;
    fx.run("app", built.ref);
    oldAppId = inspect(app).Id;
    v2 = fx.image("app");
    const s1 = fx.image("slow");
    fx.run("slow", s1.ref);

    const logs = fx.tempDir("logs");
    auditFile = join(logs, "audit.log");
    accessFile = join(logs, "access.log");
    port = freePort();
    svc = startSvc([
      ...baseFlags(),
      "--http-api-update",
      "--http-api-metrics",
      "--http-api-token",
      TOKEN,
      "--http-api-port",
      String(port),
      "--audit-log",
      auditFile,
      "--http-api-access-log",
      accessFile,
    ]);
    await waitForPort(port, svc);
    first = await postUpdate(`container=${app}`);
  }, 120_000);

  test("POST /v1/update?container=NAME answers 200 with a SessionReport saying the container was updated", () => {
    expect(first.status, svc.describe()).toBe(200);
    expect(first.body.trigger).toBe("api");
    expect(first.body.filter.container).toEqual([app]);
    expect(first.body.counts).toMatchObject({ scanned: 1, updated: 1, failed: 0, rolled_back: 0 });
    expect(first.body.containers).toHaveLength(1);
    expect(first.body.containers[0]).toMatchObject({
      name: app,
      state: "updated",
      old_image_id: v1.id,
      new_image_id: v2.id,
      new_digest: v2.digest,
      reason: null,
    });
    expect(first.body.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(first.body.started_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(first.body.finished_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(Number.isInteger(first.body.duration_ms)).toBe(true);
  });

  test("the container really runs the new image, and the report names the new container's id", () => {
    const now = inspect(app);
    expect(now.Image).toBe(v2.id);
    expect(now.Id).not.toBe(oldAppId);
    expect(now.State.Running).toBe(true);
    expect(first.body.containers[0].id).toBe(now.Id);
  });

  test("the filter kept the cycle to that container: the other one was not touched", () => {
    expect(first.body.containers.map((c: any) => c.name)).not.toContain(slow);
  });

  test("GET /v1/metrics (text) reflects the cycle: scans_total 1, updated 1", async () => {
    const response = await fetch(url("/v1/metrics"), { headers: auth });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toContain("text/plain");
    const text = await response.text();
    expect(text).toMatch(/^svc_scans_total 1$/m);
    expect(text).toMatch(/^svc_containers_scanned 1$/m);
    expect(text).toMatch(/^svc_containers_updated 1$/m);
    expect(text).toMatch(/^svc_containers_failed 0$/m);
    expect(text).toMatch(/^# TYPE svc_scans_total counter$/m);
  });

  test("GET /v1/metrics (JSON) reflects the same cycle", async () => {
    const response = await fetch(url("/v1/metrics"), { headers: { ...auth, accept: "application/json" } });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({
      svc_scans_total: 1,
      svc_scans_skipped: 0,
      svc_containers_scanned: 1,
      svc_containers_updated: 1,
      svc_containers_failed: 0,
    });
  });

  test("without the token: 401, and health stays open", async () => {
    const denied = await fetch(url("/v1/update"), { method: "POST" });
    expect(denied.status).toBe(401);
    const health = await fetch(url("/v1/health"));
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: "ok" });
  });

  test("the audit log has stop, rename, create, start and remove for the container, with trigger api and the report's session id", async () => {
    // the file is appended asynchronously: wait for the last action of the update to arrive
    await waitUntil(
      () => audit().some((e) => e.fields?.container === app && e.fields?.action === "remove"),
      10_000,
      "the audit remove entry",
    ).catch(() => {});
    const entries = audit().filter((e) => e.fields?.container === app);
    const actions = entries.map((e) => e.fields.action);
    for (const action of ["stop", "rename", "create", "start", "remove"])
      expect(actions, JSON.stringify(entries)).toContain(action);
    for (const entry of entries) {
      expect(entry.target).toBe("svc::audit");
      expect(entry.fields.trigger).toBe("api");
      expect(entry.fields.session_id).toBe(first.body.id);
    }
    expect(readFileSync(auditFile, "utf8")).not.toContain(TOKEN);
  });

  test("the access log has the POST with the authorization redacted", async () => {
    const isPost = (e: any) =>
      e.fields?.method === "POST" && e.fields?.path === "/v1/update" && e.fields?.status === 200;
    await waitUntil(() => access().some(isPost), 10_000, "the access-log entry").catch(() => {});
    const post = access().find(
      (e) => e.fields?.method === "POST" && e.fields?.path === "/v1/update" && e.fields?.status === 200,
    );
    expect(post, readFileSync(accessFile, "utf8")).toBeDefined();
    expect(post.target).toBe("svc::access");
    expect(post.fields.authorization).toBe("Bearer [redacted]");
    expect(post.fields.uri).toContain(`container=${app}`);
    expect(readFileSync(accessFile, "utf8")).not.toContain(TOKEN);
  });

  test("a second POST while a cycle runs is queued (202, listed by /v1/progress) and runs after the first, which gets its report", async () => {
    fx.image("slow"); // a newer image: the cycle has real work (stop, create, start, watch)
    const running = postUpdate(`container=${slow}`);
    // The first cycle is under way once it has stopped the old container (seen in the audit log).
    await waitUntil(
      () => audit().some((e) => e.fields?.container === slow && e.fields?.action === "stop"),
      30_000,
      "the slow update to start",
    );
    const second = await postUpdate(`container=${slow}`);
    expect(second.status).toBe(202);
    expect(second.body.queued).toMatchObject({ trigger: "api", filter: { container: [slow], image: [] } });
    const progress = (await (await fetch(url("/v1/progress"), { headers: auth })).json()) as any;
    expect(progress.running).not.toBeNull();
    expect(progress.queued).toEqual([second.body.queued]);
    const done = await running;
    expect(done.status).toBe(200);
    expect(done.body.containers[0]).toMatchObject({ name: slow, state: "updated" });

    const metrics = async () =>
      (await (await fetch(url("/v1/metrics"), { headers: { ...auth, accept: "application/json" } })).json()) as any;
    await waitUntil(async () => (await metrics()).svc_scans_total === 3, 30_000, "the queued update to run");
    expect((await metrics()).svc_scans_skipped).toBe(0);
    // it ran after the first, on the image the first put in place: nothing left to do
    const history = (await (await fetch(url("/v1/history"), { headers: auth })).json()) as any;
    expect(history.reports[0]).toMatchObject({ trigger: "api", counts: { scanned: 1, fresh: 1, updated: 0 } });
    expect(history.reports[1]).toMatchObject({ trigger: "api", counts: { updated: 1 } });
    expect((await (await fetch(url("/v1/progress"), { headers: auth })).json()) as any).toEqual({
      running: null,
      queued: [],
    });
  }, 60_000);

  test("the token never appears in svc's own output", () => {
    expect(svc.output).not.toContain(TOKEN);
  });

  test("SIGTERM: svc exits 0 and the port closes", async () => {
    svc.signal("SIGTERM");
    expect(await svc.exit(30_000), svc.describe()).toBe(0);
    expect(await portOpen(port)).toBe(false);
  }, 40_000);
});
