/** Health, metrics, 404 / 405 and HEAD through app.handle (docs/api.md). */
import { describe, expect, test } from "bun:test";
import { createApp } from "../../../src/api/index.ts";
import { silentLogger } from "../../../src/log/index.ts";
import { PROMETHEUS_CONTENT_TYPE } from "../../../src/metrics/index.ts";
import {
  newOwnerNonce,
  OWNER_CHALLENGE_HEADER,
  OWNER_PROOF_HEADER,
  OWNER_REQUEST_HEADER,
  ownerProof,
  signOwnerRequest,
} from "../../../src/state/owner.ts";
import { bearer, makeApp } from "./fakes.ts";

describe("GET /v1/health", () => {
  const configs = {
    "every feature on": {},
    "every feature off, no token": { http_api: { update: false, metrics: false, token: undefined } },
  };
  for (const [name, overrides] of Object.entries(configs)) {
    test(`200 {"status":"ok"} without auth (${name})`, async () => {
      const { request } = makeApp(overrides);
      const response = await request("/v1/health");
      expect(response.status).toBe(200);
      expect(response.headers.get("content-type")).toBe("application/json");
      expect(await response.text()).toBe('{"status":"ok"}');
    });
  }

  test("a wrong token does not matter", async () => {
    const response = await makeApp().request("/v1/health", { headers: bearer("wrong") });
    expect(response.status).toBe(200);
  });

  test("query parameters are ignored", async () => {
    expect((await makeApp().request("/v1/health?x=1")).status).toBe(200);
  });

  test("with the owner's nonce, a challenge is answered with its proof (svc rollback's check of who listens); none without either", async () => {
    const { config, runner, metrics } = makeApp();
    const nonce = newOwnerNonce();
    const app = createApp({ config, runner, metrics, log: silentLogger, ownerNonce: nonce });
    const challenge = newOwnerNonce();
    const ask = (headers: Record<string, string>) => app.handle(new Request("http://localhost/v1/health", { headers }));
    expect((await ask({ [OWNER_CHALLENGE_HEADER]: challenge })).headers.get(OWNER_PROOF_HEADER)).toBe(
      ownerProof(nonce, challenge),
    );
    expect((await ask({})).headers.get(OWNER_PROOF_HEADER)).toBeNull();
    expect((await ask({ [OWNER_CHALLENGE_HEADER]: "not-a-challenge" })).headers.get(OWNER_PROOF_HEADER)).toBeNull();
    expect(
      (await makeApp().request("/v1/health", { headers: { [OWNER_CHALLENGE_HEADER]: challenge } })).headers.get(
        OWNER_PROOF_HEADER,
      ),
    ).toBeNull();
  });

  test("svc rollback's handover: POST /v1/rollback proven with the owner's nonce, no token, no body, once; nothing else", async () => {
    const { config, runner, metrics } = makeApp();
    const nonce = newOwnerNonce();
    const app = createApp({ config, runner, metrics, log: silentLogger, ownerNonce: nonce });
    const post = (path: string, headers: Record<string, string>, body?: string) =>
      app.handle(new Request(`http://127.0.0.1${path}`, { method: "POST", headers, body }));
    const path = "/v1/rollback?container=web";
    const signed = signOwnerRequest(nonce, "POST", path);
    expect((await post(path, signed)).status).toBe(200);
    expect(runner.rollbacks).toEqual(["web"]);
    // the same request again (a relay that kept it), another container, another endpoint, a body, another nonce
    expect((await post(path, signed)).status).toBe(401);
    expect((await post("/v1/rollback?container=db", signOwnerRequest(nonce, "POST", path))).status).toBe(401);
    expect((await post("/v1/update", signOwnerRequest(nonce, "POST", "/v1/update"))).status).toBe(401);
    expect(
      (
        await post(
          path,
          { ...signOwnerRequest(nonce, "POST", path), "content-type": "application/json" },
          '{"container":"db"}',
        )
      ).status,
    ).toBe(401);
    expect((await post(path, signOwnerRequest(newOwnerNonce(), "POST", path))).status).toBe(401);
    expect((await post(path, signOwnerRequest(nonce, "POST", path, Date.now() - 5 * 60_000))).status).toBe(401);
    expect((await post(path, { [OWNER_REQUEST_HEADER]: "v1 1 2 3" })).status).toBe(401);
    expect(runner.rollbacks).toEqual(["web"]);
    // without an owner nonce (no state_dir), no proof is taken
    const { request } = makeApp();
    expect((await request(path, { method: "POST", headers: signOwnerRequest(nonce, "POST", path) })).status).toBe(401);
  });

  test("svc accept-signer's handover: POST /v1/signers/accept proven the same way, said to come from the command line", async () => {
    const { config, runner, metrics } = makeApp();
    const nonce = newOwnerNonce();
    const app = createApp({ config, runner, metrics, log: silentLogger, ownerNonce: nonce });
    const post = (path: string, headers: Record<string, string>) =>
      app.handle(new Request(`http://127.0.0.1${path}`, { method: "POST", headers }));
    const path = "/v1/signers/accept?container=web";
    expect((await post(path, signOwnerRequest(nonce, "POST", path))).status).toBe(200);
    expect(runner.accepted).toEqual(["web"]);
    expect(runner.acceptedBy).toEqual(["run_once"]);
    // a proof made for a rollback is no proof for this endpoint, nor this one's for a rollback
    expect((await post(path, signOwnerRequest(nonce, "POST", "/v1/rollback?container=web"))).status).toBe(401);
    expect((await post("/v1/rollback?container=web", signOwnerRequest(nonce, "POST", path))).status).toBe(401);
    expect(runner.accepted).toEqual(["web"]);
  });

  test("HEAD behaves like GET without a body", async () => {
    const response = await makeApp().request("/v1/health", { method: "HEAD" });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("application/json");
    expect(await response.text()).toBe("");
  });
});

describe("404 and 405", () => {
  const notFound: [string, string][] = [
    ["GET", "/"],
    ["GET", "/v1"],
    ["GET", "/v2/health"],
    ["GET", "/v1/health/"],
    ["GET", "/V1/HEALTH"],
    ["POST", "/v1/updates"],
    ["DELETE", "/nothing/here?x=1"],
  ];
  for (const [method, path] of notFound) {
    test(`${method} ${path} -> 404 {"error":"not found"}`, async () => {
      const response = await makeApp().request(path, { method, headers: bearer() });
      expect(response.status).toBe(404);
      expect(await response.json()).toEqual({ error: "not found" });
    });
  }

  const wrongMethod: [string, string, string][] = [
    ["POST", "/v1/health", "GET, HEAD"],
    ["DELETE", "/v1/health", "GET, HEAD"],
    ["PUT", "/v1/metrics", "GET, HEAD"],
    ["GET", "/v1/update", "POST"],
    ["HEAD", "/v1/update", "POST"],
    ["OPTIONS", "/v1/update", "POST"],
    ["PATCH", "/v1/update", "POST"],
  ];
  for (const [method, path, allow] of wrongMethod) {
    for (const [tokenState, headers] of [
      ["no token", {}],
      ["right token", bearer()],
    ] as const) {
      test(`${method} ${path} (${tokenState}) -> 405 with Allow: ${allow}`, async () => {
        const response = await makeApp().request(path, { method, headers });
        expect(response.status).toBe(405);
        expect(response.headers.get("allow")).toBe(allow);
        if (method !== "HEAD") expect(await response.json()).toEqual({ error: "method not allowed" });
      });
    }
  }

  test("a disabled endpoint is 404 whatever the method and token", async () => {
    const { request } = makeApp({ http_api: { update: false, metrics: false } });
    for (const [method, path] of [
      ["POST", "/v1/update"],
      ["GET", "/v1/update"],
      ["GET", "/v1/metrics"],
      ["POST", "/v1/metrics"],
    ]) {
      const response = await request(path!, { method, headers: bearer() });
      expect(response.status).toBe(404);
    }
  });
});

describe("GET /v1/metrics", () => {
  test("Prometheus text 0.0.4 by default", async () => {
    const response = await makeApp().request("/v1/metrics", { headers: bearer() });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe(PROMETHEUS_CONTENT_TYPE);
    expect(await response.text()).toContain("# TYPE svc_scans_total counter\n");
  });

  const negotiation: [string | undefined, "json" | "text"][] = [
    [undefined, "text"],
    ["*/*", "text"],
    ["text/plain", "text"],
    ["application/json", "json"],
    ["Application/JSON; charset=utf-8", "json"],
    ["application/json, */*;q=0.5", "json"],
    ["application/json, text/plain", "text"],
    ["text/plain;version=0.0.4, application/json", "text"],
    ["application/json;q=0", "text"],
    ["application/openmetrics-text", "text"],
  ];
  for (const [accept, format] of negotiation) {
    test(`Accept: ${accept ?? "(none)"} -> ${format}`, async () => {
      const headers: Record<string, string> = { ...bearer() };
      if (accept !== undefined) headers.accept = accept;
      const response = await makeApp().request("/v1/metrics", { headers });
      expect(response.headers.get("content-type")).toBe(
        format === "json" ? "application/json" : PROMETHEUS_CONTENT_TYPE,
      );
    });
  }

  test("HEAD: same status and content type, no body; auth still applies", async () => {
    const { request } = makeApp();
    const ok = await request("/v1/metrics", { method: "HEAD", headers: bearer() });
    expect(ok.status).toBe(200);
    expect(ok.headers.get("content-type")).toBe(PROMETHEUS_CONTENT_TYPE);
    expect(await ok.text()).toBe("");
    expect((await request("/v1/metrics", { method: "HEAD" })).status).toBe(401);
  });
});

describe("answers that need the token", () => {
  // every endpoint that needs the token, with a request it answers 200 to (and one it refuses)
  const calls: [string, string, RequestInit][] = [
    ["POST", "/v1/update", {}],
    ["POST", "/v1/check", {}],
    ["POST", "/v1/skip", { body: JSON.stringify({ container: "web", digest: `sha256:${"a".repeat(64)}` }) }],
    ["POST", "/v1/rollback", { body: JSON.stringify({ container: "web" }) }],
    ["POST", "/v1/signers/accept", { body: JSON.stringify({ container: "web" }) }],
    ["POST", "/v1/snooze", { body: JSON.stringify({ container: "web", for: "1d" }) }],
    ["GET", "/v1/containers", {}],
    ["GET", "/v1/progress", {}],
    ["GET", "/v1/history", {}],
    ["GET", "/v1/peers", {}],
    ["GET", "/v1/metrics", {}],
    ["HEAD", "/v1/containers", {}],
  ];
  for (const [method, path, init] of calls) {
    test(`${method} ${path}: Cache-Control: no-store and X-Content-Type-Options: nosniff, answered or refused`, async () => {
      const { request } = makeApp({ http_api: { ui: true } });
      const headers = { ...bearer(), ...(init.body ? { "content-type": "application/json" } : {}) };
      for (const response of [
        await request(path, { method, ...init, headers }),
        await request(path, { method, ...init }),
        await request(path, { method, body: init.body ? "{" : undefined, headers }),
      ]) {
        expect(response.headers.get("cache-control")).toBe("no-store");
        expect(response.headers.get("x-content-type-options")).toBe("nosniff");
      }
      expect((await request(path, { method, ...init, headers })).status).toBe(200);
    });
  }

  test("what needs no token is not marked so: health, and the page's files keep their own caching", async () => {
    const { request } = makeApp({ http_api: { ui: true } });
    expect((await request("/v1/health")).headers.get("cache-control")).toBeNull();
  });
});
