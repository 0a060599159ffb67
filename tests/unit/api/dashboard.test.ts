/**
 * The dashboard through the API (docs/dashboard.md, docs/api.md): the page and its files without
 * a token, compressed and cached by content hash, under a Content-Security-Policy that allows
 * only its own scripts and styles; what it reads needs the token; what it changes needs
 * http_api.update.
 */
import { describe, expect, test } from "bun:test";
import { FIRST_LOAD_BUDGET_KIB } from "../../../src/ui/budget.ts";
import { DRY_RUN_REASON } from "../../../src/updater/types.ts";
import { emptyReport } from "../../support/report.ts";
import { bearer, makeApp } from "./fakes.ts";

const auth = bearer();

/** The page's script and style paths, as the page names them. */
function assetPaths(html: string): string[] {
  return [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((match) => match[1]!.replace(/^\.\//, "/"));
}

describe("the page", () => {
  test("is not served unless http_api.ui is on", async () => {
    const { request } = makeApp();
    expect((await request("/")).status).toBe(404);
  });

  test("GET / needs no token, names only files of its own origin, and carries the policy", async () => {
    const { request } = makeApp({ http_api: { ui: true } });
    const response = await request("/");
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("text/html; charset=utf-8");
    const csp = response.headers.get("content-security-policy")!;
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("style-src 'self'");
    expect(csp).not.toContain("unsafe-inline");
    expect(response.headers.get("cache-control")).toBe("no-cache");
    const html = await response.text();
    const paths = assetPaths(html);
    expect(paths.some((path) => path.endsWith(".js"))).toBe(true);
    expect(paths.some((path) => path.endsWith(".css"))).toBe(true);
    for (const path of paths) expect(path).toMatch(/^\/[A-Za-z0-9_-]+\.(js|css|svg)$/);
    // nothing inline for the policy to allow
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)/);
    expect(html).not.toContain("<style");
  });

  test("its files: gzipped when asked, cached for good under their hashed names, 304 when current", async () => {
    const { request } = makeApp({ http_api: { ui: true } });
    const paths = assetPaths(await (await request("/")).text());
    let compressed = 0;
    for (const path of paths) {
      const plain = await request(path);
      expect(plain.status).toBe(200);
      expect(plain.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
      expect(plain.headers.get("content-encoding")).toBeNull();
      const text = await plain.text();
      const gzipped = await request(path, { headers: { "accept-encoding": "gzip, br" } });
      expect(gzipped.headers.get("content-encoding")).toBe("gzip");
      const body = new Uint8Array(await gzipped.arrayBuffer());
      expect(new TextDecoder().decode(Bun.gunzipSync(body))).toBe(text);
      compressed += body.byteLength;
      const again = await request(path, { headers: { "if-none-match": plain.headers.get("etag")! } });
      expect(again.status).toBe(304);
    }
    // the first load's budget (docs/dashboard.md): well under 100 KiB compressed
    expect(compressed).toBeLessThan(100 * 1024);
  });

  test("the first load (page, script and style, gzipped) stays within its budget", async () => {
    const { request } = makeApp({ http_api: { ui: true } });
    const gzip = { "accept-encoding": "gzip" };
    const page = await request("/", { headers: gzip });
    let bytes = (await page.arrayBuffer()).byteLength;
    const html = new TextDecoder().decode(
      Bun.gunzipSync(new Uint8Array(await (await request("/", { headers: gzip })).arrayBuffer())),
    );
    for (const path of assetPaths(html))
      bytes += (await (await request(path, { headers: gzip })).arrayBuffer()).byteLength;
    expect(bytes / 1024).toBeLessThanOrEqual(FIRST_LOAD_BUDGET_KIB);
  });

  test("an unknown file is 404, another method 405, and API paths are unchanged", async () => {
    const { request } = makeApp({ http_api: { ui: true } });
    expect((await request("/chunk-doesnotexist.js")).status).toBe(404);
    expect((await request("/index.html")).status).toBe(404);
    expect((await request("/../etc/passwd.js")).status).toBe(404);
    const post = await request("/", { method: "POST" });
    expect(post.status).toBe(405);
    expect(post.headers.get("allow")).toBe("GET, HEAD");
    expect((await request("/v1/nothing")).status).toBe(404);
  });
});

describe("what the page reads", () => {
  test("with the page on and http_api.update off: the containers and the progress with the token, no action", async () => {
    const { request, runner } = makeApp({ http_api: { ui: true, update: false } });
    runner.report = (report) => ({
      ...report,
      containers: [
        {
          id: "a",
          name: "web",
          image: "r/web:1.2.3",
          new_image: "r/web:1.3.0",
          old_image_id: "sha256:1",
          new_image_id: null,
          old_digest: "sha256:old",
          new_digest: "sha256:new",
          state: "stale",
          reason: DRY_RUN_REASON,
          duration_ms: 1,
        },
      ],
    });
    expect((await request("/v1/containers")).status).toBe(401);
    const listed = await request("/v1/containers", { headers: auth });
    expect(listed.status).toBe(200);
    const body = (await listed.json()) as any;
    expect(body.update).toBe(false);
    expect(typeof body.host).toBe("string");
    expect(body.containers).toEqual([
      expect.objectContaining({
        name: "web",
        version: "1.2.3",
        available_version: "1.3.0",
        update_kind: "minor",
        would_update: true,
      }),
    ]);
    expect((await request("/v1/progress")).status).toBe(401);
    expect(await (await request("/v1/progress", { headers: auth })).json()).toEqual({ running: null, queued: [] });
    for (const path of ["/v1/update", "/v1/check", "/v1/skip", "/v1/snooze", "/v1/rollback"]) {
      expect((await request(path, { method: "POST", headers: auth })).status).toBe(404);
    }
  });

  test("neither is served when both update and ui are off", async () => {
    const { request } = makeApp({ http_api: { update: false } });
    expect((await request("/v1/containers", { headers: auth })).status).toBe(404);
    expect((await request("/v1/progress", { headers: auth })).status).toBe(404);
  });
});

describe("GET /v1/history", () => {
  test("the kept sessions newest first, without their fresh containers; one container's timeline; the last outcome beside each container", async () => {
    const web = {
      id: "a",
      name: "web",
      image: "r/web:1.2.3",
      new_image: "r/web:1.3.0",
      old_image_id: "sha256:1",
      new_image_id: "sha256:2",
      old_digest: "sha256:old",
      new_digest: "sha256:new",
      duration_ms: 1,
    };
    const reports = [
      emptyReport(
        "schedule",
        {},
        {
          id: "s1",
          finished_at: "2026-01-01T00:00:00.000Z",
          containers: [
            { ...web, state: "updated", reason: null },
            { ...web, name: "db", state: "fresh", reason: null },
          ],
        },
      ),
      emptyReport(
        "api",
        {},
        {
          id: "s2",
          finished_at: "2026-01-02T00:00:00.000Z",
          containers: [{ ...web, state: "rolled_back", reason: "unhealthy" }],
        },
      ),
    ];
    const { request, runner } = makeApp({ http_api: { ui: true } }, reports);
    expect((await request("/v1/history")).status).toBe(401);
    const list = (await (await request("/v1/history", { headers: auth })).json()) as any;
    expect(list.size).toBe(100);
    expect(list.reports.map((r: any) => [r.id, r.containers.map((c: any) => c.name)])).toEqual([
      ["s2", ["web"]],
      ["s1", ["web"]],
    ]);
    const timeline = (await (await request("/v1/history?container=web", { headers: auth })).json()) as any;
    expect(timeline.container).toBe("web");
    expect(timeline.timeline.map((e: any) => [e.state, e.from_version, e.to_version, e.reason])).toEqual([
      ["rolled_back", "1.2.3", "1.3.0", "unhealthy"],
      ["updated", "1.2.3", "1.3.0", null],
    ]);
    expect((await request("/v1/history?container=a,b", { headers: auth })).status).toBe(400);
    runner.report = (report) => ({
      ...report,
      containers: [{ ...web, state: "fresh", new_image: null, new_digest: null, reason: null }],
    });
    const listed = (await (await request("/v1/containers", { headers: auth })).json()) as any;
    expect(listed.containers[0]).toMatchObject({
      last_cycle: { at: "2026-01-02T00:00:00.000Z", state: "rolled_back", reason: "unhealthy" },
      last_update: { at: "2026-01-01T00:00:00.000Z", from_version: "1.2.3", to_version: "1.3.0" },
    });
  });
});

describe("POST /v1/snooze", () => {
  test("one container for a duration; without a duration, 400; anonymous, 401", async () => {
    const { request, runner } = makeApp();
    const response = await request("/v1/snooze", {
      method: "POST",
      headers: { ...auth, "content-type": "application/json" },
      body: JSON.stringify({ container: "web", for: "7d" }),
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ container: "web", until: "2026-01-08T00:00:00.000Z" });
    expect(runner.snoozes).toEqual([{ container: "web", ms: 7 * 86_400_000 }]);
    expect((await request("/v1/snooze?container=web&for=0s", { method: "POST", headers: auth })).status).toBe(200);
    expect(runner.snoozes.at(-1)).toEqual({ container: "web", ms: 0 });
    expect((await request("/v1/snooze?container=web", { method: "POST", headers: auth })).status).toBe(400);
    expect((await request("/v1/snooze?container=web&for=soon", { method: "POST", headers: auth })).status).toBe(400);
    expect((await request("/v1/snooze?container=a,b&for=1d", { method: "POST", headers: auth })).status).toBe(400);
    expect((await request("/v1/snooze?container=web&for=1d", { method: "POST" })).status).toBe(401);
  });
});

describe("roles, the session and the summary", () => {
  const stale = (report: ReturnType<typeof emptyReport>) => ({
    ...report,
    containers: [
      {
        id: "a",
        name: "web",
        image: "r/web:1.2.3",
        new_image: "r/web:2.0.0",
        old_image_id: "sha256:1",
        new_image_id: null,
        old_digest: "sha256:old",
        new_digest: "sha256:new",
        state: "stale" as const,
        reason: DRY_RUN_REASON,
        duration_ms: 1,
      },
      {
        id: "b",
        name: "db",
        image: "r/db:16",
        new_image: null,
        old_image_id: "sha256:2",
        new_image_id: null,
        old_digest: "sha256:o",
        new_digest: "sha256:n",
        state: "stale" as const,
        reason: "monitor only",
        duration_ms: 1,
      },
      {
        id: "c",
        name: "cache",
        image: "r/cache:7",
        new_image: null,
        old_image_id: "sha256:3",
        new_image_id: null,
        old_digest: "sha256:c",
        new_digest: null,
        state: "fresh" as const,
        reason: null,
        duration_ms: 1,
      },
    ],
  });

  test("a viewer token reads everything and every action is 403; the admin's actions are audited with who asked", async () => {
    const { request, runner, audit } = makeApp({ http_api: { ui: true, viewer_tokens: ["family"] } });
    runner.report = stale;
    const viewer = bearer("family");
    expect((await request("/v1/containers", { headers: viewer })).status).toBe(200);
    expect(await (await request("/v1/session", { headers: viewer })).json()).toEqual({
      role: "viewer",
      name: "viewer token 1",
      update: true,
    });
    for (const path of ["/v1/update", "/v1/check", "/v1/skip", "/v1/snooze", "/v1/rollback"]) {
      const refused = await request(path, { method: "POST", headers: viewer });
      expect(refused.status).toBe(403);
      expect(await refused.json()).toEqual({ error: "forbidden: this token (or user) may only read" });
    }
    expect(audit).toEqual([]);
    expect(await (await request("/v1/session", { headers: auth })).json()).toEqual({
      role: "admin",
      name: "admin token",
      update: true,
    });
    expect((await request("/v1/update", { method: "POST", headers: auth })).status).toBe(200);
    await Bun.sleep(1);
    expect(audit).toEqual([{ action: "request", trigger: "api", actor: "admin token", request: "POST /v1/update" }]);
    // refused past the token (a bad body): a second line says so
    expect((await request("/v1/snooze", { method: "POST", headers: auth })).status).toBe(400);
    await Bun.sleep(1);
    expect(audit.slice(1)).toEqual([
      { action: "request", trigger: "api", actor: "admin token", request: "POST /v1/snooze" },
      {
        action: "request",
        trigger: "api",
        actor: "admin token",
        request: "POST /v1/snooze",
        error: "answered 400: name exactly one container",
      },
    ]);
  });

  test("POST /v1/update?stack=NAME: a cycle over one compose project or Swarm stack (what Update stack is with curl)", async () => {
    const { request, runner } = makeApp();
    expect((await request("/v1/update?stack=shop", { method: "POST", headers: auth })).status).toBe(200);
    expect(runner.calls.at(-1)?.filter).toEqual({ stack: ["shop"] });
  });

  test("GET /v1/summary: the counts of one check, kept for the next asks; 401 without a token", async () => {
    const { request, runner } = makeApp({ http_api: { ui: true, viewer_tokens: ["family"] } });
    runner.report = stale;
    expect((await request("/v1/summary")).status).toBe(401);
    const body = (await (await request("/v1/summary", { headers: bearer("family") })).json()) as any;
    expect(body).toEqual({
      host: expect.any(String),
      checked_at: expect.any(String),
      containers: 3,
      updates: 2,
      by_kind: { major: 1, minor: 0, patch: 0, digest: 1, tag: 0 },
      held: 1,
      failed: 0,
    });
    const again = (await (await request("/v1/summary", { headers: auth })).json()) as any;
    expect(again.checked_at).toBe(body.checked_at);
  });
});
