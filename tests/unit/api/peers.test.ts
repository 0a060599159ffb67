/**
 * Peers through the API: GET /v1/peers asks each peer once with its own token and a bounded
 * wait; a slow peer is unreachable (with its last known state) without holding the others back;
 * /v1/peers/NAME/ENDPOINT forwards with the peer's token; svc_peer_up follows.
 */
import { afterAll, describe, expect, test } from "bun:test";
import type { Server } from "bun";
import { bearer, makeApp } from "./fakes.ts";

const auth = bearer();
const servers: Server<undefined>[] = [];
afterAll(() => servers.forEach((server) => server.stop(true)));

const CONTAINERS = { checked_at: "2026-01-01T00:00:00.000Z", host: "nas", update: true, containers: [{ name: "web", image: "r/web:1", state: "stale" }] };

/** A loopback stand-in for another svc: answers as svc does, records what it was asked. */
function peer(options: { delayMs?: number } = {}) {
  const seen: { method: string; path: string; authorization: string | null; body: string }[] = [];
  let down = false;
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      const url = new URL(request.url);
      seen.push({ method: request.method, path: url.pathname + url.search, authorization: request.headers.get("authorization"), body: await request.text() });
      if (down) return new Response(null, { status: 503 });
      if (options.delayMs) await Bun.sleep(options.delayMs);
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
    const { request } = makeApp({ http_api: { ui: true }, peer_timeout: 300, peers: [{ name: "nas", url: fast.url, token: "nas-token" }, { name: "pi", url: slow.url, token: "pi-token" }] });
    expect((await request("/v1/peers")).status).toBe(401);
    const answer = (await (await request("/v1/peers", { headers: auth })).json()) as any;
    const [nas, pi] = answer.peers;
    expect(nas).toMatchObject({ name: "nas", up: true, unreachable_since: null, data: CONTAINERS });
    expect(pi).toMatchObject({ name: "pi", up: false, data: null });
    // the slow peer's wait is bounded by peer_timeout, not its 3 s
    expect(pi.error).toContain("no answer within 300 ms");
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
    const response = await request("/v1/peers/nas/snooze?container=web", { method: "POST", headers: { ...auth, "content-type": "application/json" }, body: JSON.stringify({ for: "1d" }) });
    expect(response.status).toBe(200);
    expect(nas.seen.at(-1)).toEqual({ method: "POST", path: "/v1/snooze?container=web", authorization: "Bearer nas-token", body: '{"for":"1d"}' });
    expect((await request("/v1/peers/nas/snooze", { method: "POST" })).status).toBe(401);
    expect((await request("/v1/peers/nas/update", { headers: auth })).status).toBe(405);
    expect((await request("/v1/peers/other/containers", { headers: auth })).status).toBe(404);
    expect((await request("/v1/peers/nas/metrics", { headers: auth })).status).toBe(404);
    const readOnly = makeApp({ http_api: { ui: true, update: false }, peers });
    expect((await readOnly.request("/v1/peers/nas/update", { method: "POST", headers: auth })).status).toBe(404);
    expect((await readOnly.request("/v1/peers/nas/containers", { headers: auth })).status).toBe(200);
  });
});
