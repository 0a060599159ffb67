/**
 * Peers through the API: GET /v1/peers asks each peer once with its own token and a bounded
 * wait; a slow peer is unreachable (with its last known state) without holding the others back;
 * /v1/peers/NAME/ENDPOINT forwards with the peer's token; svc_peer_up follows.
 */
import { afterAll, describe, expect, test } from "bun:test";
import type { Server } from "bun";
import { type ContainerReport, DRY_RUN_REASON } from "../../../src/updater/types.ts";
import { emptyReport } from "../../support/report.ts";
import { bearer, makeApp } from "./fakes.ts";

const WEB: ContainerReport = {
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
};

const auth = bearer();
const servers: Server<undefined>[] = [];
afterAll(() => {
  for (const server of servers) server.stop(true);
});

/** What another svc answers to GET /v1/containers: this svc's own answer, as the API builds it. */
const CONTAINERS = await (async () => {
  const { request, runner } = makeApp({ http_api: { ui: true } }, [
    emptyReport(
      "schedule",
      {},
      { finished_at: "2026-01-01T00:00:00.000Z", containers: [{ ...WEB, state: "updated", reason: null }] },
    ),
  ]);
  runner.report = (report) => ({ ...report, containers: [{ ...WEB, name: "db" }, WEB] });
  const answer = (await (await request("/v1/containers", { headers: auth })).json()) as any;
  return { ...answer, host: "nas" };
})();

/** A loopback stand-in for another svc: answers as svc does (or as `answer` says), records what it was asked. */
function peer(options: { delayMs?: number; answer?: (url: URL) => Response | undefined } = {}) {
  const seen: { method: string; path: string; authorization: string | null; body: string }[] = [];
  let down = false;
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      const url = new URL(request.url);
      seen.push({
        method: request.method,
        path: url.pathname + url.search,
        authorization: request.headers.get("authorization"),
        body: await request.text(),
      });
      if (down) return new Response(null, { status: 503 });
      if (options.delayMs) await Bun.sleep(options.delayMs);
      const given = options.answer?.(url);
      if (given) return given;
      if (url.pathname === "/v1/containers") return Response.json(CONTAINERS);
      return Response.json({ container: "web", until: null });
    },
  });
  servers.push(server);
  return { url: `http://127.0.0.1:${server.port}`, seen, setDown: (value: boolean) => (down = value) };
}

describe("peers", () => {
  test("each peer is asked once with its own token; a slow one is unreachable, the other answers; svc_peer_up says which", async () => {
    const fast = peer();
    const slow = peer({ delayMs: 3_000 });
    const { request } = makeApp({
      http_api: { ui: true },
      peer_timeout: 1_500,
      peers: [
        { name: "nas", url: fast.url, token: "nas-token" },
        { name: "pi", url: slow.url, token: "pi-token" },
      ],
    });
    expect((await request("/v1/peers")).status).toBe(401);
    const answer = (await (await request("/v1/peers", { headers: auth })).json()) as any;
    const [nas, pi] = answer.peers;
    expect(nas).toMatchObject({ name: "nas", up: true, unreachable_since: null, data: CONTAINERS });
    expect(pi).toMatchObject({ name: "pi", up: false, data: null });
    // the slow peer's wait is bounded by peer_timeout, not its 3 s
    expect(pi.error).toContain("no answer within 1.5 s");
    expect(fast.seen).toEqual([{ method: "GET", path: "/v1/containers", authorization: "Bearer nas-token", body: "" }]);
    expect(JSON.stringify(answer)).not.toContain("nas-token");
    const metrics = await (await request("/v1/metrics", { headers: auth })).text();
    expect(metrics).toContain('svc_peer_up{peer="nas"} 1');
    expect(metrics).toContain('svc_peer_up{peer="pi"} 0');
  });

  test("a peer that goes down keeps its last known state, and since when it is unreachable", async () => {
    const nas = peer();
    const { request } = makeApp({ http_api: { ui: true }, peers: [{ name: "nas", url: nas.url, token: "t" }] });
    await request("/v1/peers", { headers: auth });
    nas.setDown(true);
    const first = ((await (await request("/v1/peers", { headers: auth })).json()) as any).peers[0];
    expect(first).toMatchObject({ up: false, data: CONTAINERS });
    expect(first.error).toContain("answered 503");
    const second = ((await (await request("/v1/peers", { headers: auth })).json()) as any).peers[0];
    expect(second.unreachable_since).toBe(first.unreachable_since);
  });

  test("/v1/peers/NAME/ENDPOINT forwards method, query and body with the peer's token; actions need http_api.update here", async () => {
    const nas = peer();
    const peers = [{ name: "nas", url: nas.url, token: "nas-token" }];
    const { request } = makeApp({ http_api: { ui: true }, peers });
    const response = await request("/v1/peers/nas/snooze?container=web", {
      method: "POST",
      headers: { ...auth, "content-type": "application/json" },
      body: JSON.stringify({ for: "1d" }),
    });
    expect(response.status).toBe(200);
    expect(nas.seen.at(-1)).toEqual({
      method: "POST",
      path: "/v1/snooze?container=web",
      authorization: "Bearer nas-token",
      body: '{"for":"1d"}',
    });
    expect((await request("/v1/peers/nas/snooze", { method: "POST" })).status).toBe(401);
    expect((await request("/v1/peers/nas/update", { headers: auth })).status).toBe(405);
    expect((await request("/v1/peers/other/containers", { headers: auth })).status).toBe(404);
    expect((await request("/v1/peers/nas/metrics", { headers: auth })).status).toBe(404);
    const readOnly = makeApp({ http_api: { ui: true, update: false }, peers });
    expect((await readOnly.request("/v1/peers/nas/update", { method: "POST", headers: auth })).status).toBe(404);
    expect((await readOnly.request("/v1/peers/nas/containers", { headers: auth })).status).toBe(200);
  });

  test("a peer's data guard copies are read through it, with svc's own answer's schema; deleting one is forwarded as an action", async () => {
    const copy = {
      container: "db",
      id: "20260101T000000Z",
      bytes: 4096,
      created_at: "2026-01-01T00:00:00.000Z",
      age_seconds: 60,
      version: "1.2.3",
      image: "r/db:1.2.3",
      image_id: "sha256:1",
      superseded_at: null,
      expires_at: null,
      restoring: false,
      mounts: [{ destination: "/data", type: "volume", name: "db-data", bytes: 4096 }],
    };
    const hostile = [
      { ...copy, id: "extra", onclick: "steal()" },
      { ...copy, id: "huge", version: "x".repeat(100_000) },
      { ...copy, id: "typed", bytes: "4096" },
      "not a copy",
    ];
    const nas = peer({
      answer: (url) =>
        url.pathname !== "/v1/data-guard"
          ? undefined
          : url.search
            ? new Response(null, { status: 204 })
            : Response.json({ copies: [copy, ...hostile] }),
    });
    const peers = [{ name: "nas", url: nas.url, token: "nas-token" }];
    const { request } = makeApp({ http_api: { ui: true }, peers });
    const response = await request("/v1/peers/nas/data-guard", { headers: auth });
    expect(response.status).toBe(200);
    // the copy that fits, its unknown field left out; the others dropped
    expect(await response.json()).toEqual({ copies: [copy, { ...copy, id: "extra" }] });
    expect(nas.seen.at(-1)).toMatchObject({ method: "GET", path: "/v1/data-guard", authorization: "Bearer nas-token" });

    const query = "?container=db&id=20260101T000000Z";
    const deleted = await request(`/v1/peers/nas/data-guard${query}`, { method: "DELETE", headers: auth });
    expect(deleted.status).toBe(204);
    expect(nas.seen.at(-1)).toMatchObject({
      method: "DELETE",
      path: `/v1/data-guard${query}`,
      authorization: "Bearer nas-token",
    });
    expect((await request("/v1/peers/nas/data-", { headers: auth })).status).toBe(404);
    expect((await request("/v1/peers/nas/containers", { method: "DELETE", headers: auth })).status).toBe(405);
    // a read-only dashboard reads the peer's copies and deletes none of them
    const readOnly = makeApp({ http_api: { ui: true, update: false }, peers });
    expect((await readOnly.request("/v1/peers/nas/data-guard", { headers: auth })).status).toBe(200);
    const refused = await readOnly.request(`/v1/peers/nas/data-guard${query}`, { method: "DELETE", headers: auth });
    expect(refused.status).toBe(405);
    // a viewer reads them too, and deletes none
    const family = makeApp({ http_api: { ui: true, viewer_tokens: ["family"] }, peers });
    const viewer = { authorization: "Bearer family" };
    expect((await family.request("/v1/peers/nas/data-guard", { headers: viewer })).status).toBe(200);
    const forbidden = await family.request(`/v1/peers/nas/data-guard${query}`, { method: "DELETE", headers: viewer });
    expect(forbidden.status).toBe(403);
    expect(nas.seen.filter((seen) => seen.method === "DELETE")).toHaveLength(1);
  });

  test("a peer's answer that is no list of copies is a 502 naming the peer", async () => {
    const nas = peer({
      answer: (url) => (url.pathname === "/v1/data-guard" ? Response.json({ copies: "all" }) : undefined),
    });
    const { request } = makeApp({ http_api: { ui: true }, peers: [{ name: "nas", url: nas.url, token: "t" }] });
    const response = await request("/v1/peers/nas/data-guard", { headers: auth });
    expect(response.status).toBe(502);
    expect(((await response.json()) as { error: string }).error).toContain("peer nas did not answer as svc does");
  });
});

describe("what a peer answers is the peer's", () => {
  const one = (entry: Record<string, unknown>) => ({ ...CONTAINERS.containers[1], ...entry });
  const hostile = {
    ...CONTAINERS,
    surplus: { nested: "x" },
    containers: [
      { ...CONTAINERS.containers[0], onclick: "steal()", policy: { ...CONTAINERS.containers[0].policy, extra: 1 } },
      one({ name: "hooks", policy: { ...CONTAINERS.containers[1].policy, hooks: "pre_update" } }),
      one({ name: "typed", would_update: "yes" }),
      one({ name: "huge", reason: "x".repeat(100_000) }),
      "not an entry",
      one({ name: "ok" }),
    ],
  };

  test("a peer's containers are read with svc's own answer's schema: entries that fail it are dropped and named, unknown fields left out", async () => {
    const nas = peer({ answer: (url) => (url.pathname === "/v1/containers" ? Response.json(hostile) : undefined) });
    const { request, logs } = makeApp({ http_api: { ui: true }, peers: [{ name: "nas", url: nas.url, token: "t" }] });
    const view = ((await (await request("/v1/peers", { headers: auth })).json()) as any).peers[0];
    expect(view.up).toBe(true);
    expect(view.data.containers.map((c: any) => c.name)).toEqual(["db", "ok"]);
    expect(view.data.containers[0]).toEqual(CONTAINERS.containers[0]);
    expect(view.data.surplus).toBeUndefined();
    expect(view.dropped).toEqual([
      "container hooks: policy.hooks: Invalid input: expected array, received string",
      "container typed: would_update: Invalid input: expected boolean, received string",
      "container huge: reason: Too big: expected string to have <=8192 characters",
      "container #5: entry: Invalid input: expected object, received string",
    ]);
    expect(logs.find((l) => l.message.startsWith("entries of a peer's answer left out"))?.fields).toMatchObject({
      peer: "nas",
      dropped: view.dropped,
    });
    // the same through the forward the page checks one container with
    const forwarded = await request("/v1/peers/nas/containers", { headers: auth });
    expect(forwarded.status).toBe(200);
    expect((((await forwarded.json()) as any).containers as any[]).map((c) => c.name)).toEqual(["db", "ok"]);
  });

  test("an answer past what 500 containers need is refused: the peer is unreachable, its size said", async () => {
    const big = {
      ...CONTAINERS,
      containers: Array.from({ length: 2_000 }, (_, i) => one({ name: `c${i}`, reason: "r".repeat(1_500) })),
    };
    const nas = peer({ answer: () => Response.json(big) });
    const { request } = makeApp({ http_api: { ui: true }, peers: [{ name: "nas", url: nas.url, token: "t" }] });
    const view = ((await (await request("/v1/peers", { headers: auth })).json()) as any).peers[0];
    expect(view).toMatchObject({ up: false, data: null, error: "peer nas answered more than 2 MiB" });
    expect((await request("/v1/peers/nas/history", { headers: auth })).status).toBe(502);
    // 500 containers with every field filled fit
    const fleet = {
      ...CONTAINERS,
      containers: Array.from({ length: 500 }, (_, i) => one({ name: `c${i}`, reason: "r".repeat(300) })),
    };
    const full = peer({ answer: (url) => (url.pathname === "/v1/containers" ? Response.json(fleet) : undefined) });
    const app = makeApp({ http_api: { ui: true }, peers: [{ name: "nas", url: full.url, token: "t" }] });
    const read = ((await (await app.request("/v1/peers", { headers: auth })).json()) as any).peers[0];
    expect(read.data.containers).toHaveLength(500);
  });

  test("a peer's 401 is a 502 naming the peer, never a 401 that signs the page out", async () => {
    const nas = peer({
      answer: (url) =>
        url.pathname === "/v1/snooze"
          ? Response.json(
              { error: "unauthorized" },
              { status: 401, headers: { "www-authenticate": 'Bearer realm="svc"' } },
            )
          : undefined,
    });
    const { request } = makeApp({ http_api: { ui: true }, peers: [{ name: "nas", url: nas.url, token: "t" }] });
    const response = await request("/v1/peers/nas/snooze", {
      method: "POST",
      headers: { ...auth, "content-type": "application/json" },
      body: JSON.stringify({ container: "web", for: "1d" }),
    });
    expect(response.status).toBe(502);
    expect(response.headers.get("www-authenticate")).toBeNull();
    expect(((await response.json()) as any).error).toBe(
      "peer nas refused the token svc holds for it (401): its token in peers is not the one it expects",
    );
  });

  test("a forwarded answer is always JSON: one of another type is written again as JSON, one that is not JSON is a 502", async () => {
    const nas = peer({
      answer: (url) => {
        if (url.pathname === "/v1/history")
          return new Response('{"size":1,"reports":[]}', { headers: { "content-type": "text/html" } });
        if (url.pathname === "/v1/progress")
          return new Response("<script>alert(1)</script>", { headers: { "content-type": "text/html" } });
        return undefined;
      },
    });
    const { request } = makeApp({ http_api: { ui: true }, peers: [{ name: "nas", url: nas.url, token: "t" }] });
    const history = await request("/v1/peers/nas/history", { headers: auth });
    expect(history.status).toBe(200);
    expect(history.headers.get("content-type")).toBe("application/json");
    expect(await history.json()).toEqual({ size: 1, reports: [] });
    const progress = await request("/v1/peers/nas/progress", { headers: auth });
    expect(progress.status).toBe(502);
    expect(progress.headers.get("content-type")).toBe("application/json");
    expect(((await progress.json()) as any).error).toBe("peer nas did not answer JSON (is the url an svc API?)");
  });
});
