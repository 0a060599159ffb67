/** POST /v1/check and GET /v1/containers: dry runs through the same auth, filters and statuses as /v1/update. */
import { describe, expect, test } from "bun:test";
import { DRY_RUN_REASON } from "../../../src/updater/types.ts";
import { makeApp, TOKEN } from "./fakes.ts";

const auth = { authorization: `Bearer ${TOKEN}` };

describe("POST /v1/check", () => {
  test("runs a dry run with the request's filter and answers its report", async () => {
    const { request, runner } = makeApp();
    const response = await request("/v1/check?container=web,db", { method: "POST", headers: auth });
    expect(response.status).toBe(200);
    expect(((await response.json()) as { trigger: string }).trigger).toBe("api");
    expect(runner.calls).toEqual([{ trigger: "api", filter: { container: ["web", "db"] }, options: { dryRun: true } }]);
  });

  test("the update endpoint's statuses: 401 without the token, 404 with the update API off, 405 for GET, 409 while a cycle runs", async () => {
    const { request, runner } = makeApp();
    expect((await request("/v1/check", { method: "POST" })).status).toBe(401);
    expect((await request("/v1/check", { method: "GET", headers: auth })).status).toBe(405);
    let release = () => {};
    runner.gate = new Promise((resolve) => (release = resolve));
    const first = request("/v1/check", { method: "POST", headers: auth });
    const second = await request("/v1/check", { method: "POST", headers: auth });
    expect(second.status).toBe(409);
    release();
    expect((await first).status).toBe(200);
    const off = makeApp({ http_api: { update: false, metrics: true } });
    expect((await off.request("/v1/check", { method: "POST", headers: auth })).status).toBe(404);
  });

  test("a bad filter is a 400 before any cycle runs", async () => {
    const { request, runner } = makeApp();
    expect((await request("/v1/check?container=", { method: "POST", headers: auth })).status).toBe(400);
    expect(runner.calls).toEqual([]);
  });
});

describe("GET /v1/containers", () => {
  test("lists each watched container and Swarm service from a dry run: its kind, state, digests, whether it would be updated and why", async () => {
    const { request, runner } = makeApp();
    runner.report = (report) => ({
      ...report,
      dry_run: true,
      containers: [
        {
          id: "a",
          name: "web",
          image: "r/web:1",
          new_image: "r/web:2",
          old_image_id: "sha256:1",
          new_image_id: null,
          old_digest: "sha256:old",
          new_digest: "sha256:new",
          state: "stale",
          reason: DRY_RUN_REASON,
          duration_ms: 1,
        },
        {
          id: "b",
          name: "db",
          image: "r/db:1",
          new_image: null,
          old_image_id: "sha256:2",
          new_image_id: null,
          old_digest: "sha256:db",
          new_digest: null,
          state: "fresh",
          reason: null,
          duration_ms: 1,
        },
        {
          kind: "service",
          id: "c",
          name: "api",
          image: "r/api:1",
          new_image: null,
          old_image_id: "sha256:3",
          new_image_id: null,
          old_digest: "sha256:3",
          new_digest: "sha256:4",
          state: "stale",
          reason: DRY_RUN_REASON,
          duration_ms: 1,
        },
      ],
    });
    const response = await request("/v1/containers?image=r/", { headers: auth });
    expect(response.status).toBe(200);
    const body = (await response.json()) as { containers: unknown[]; checked_at: unknown };
    expect(body.containers).toEqual([
      expect.objectContaining({
        kind: "container",
        name: "web",
        image: "r/web:1",
        state: "stale",
        would_update: true,
        current_digest: "sha256:old",
        available_digest: "sha256:new",
        available_image: "r/web:2",
        reason: DRY_RUN_REASON,
      }),
      expect.objectContaining({
        kind: "container",
        name: "db",
        image: "r/db:1",
        state: "fresh",
        would_update: false,
        current_digest: "sha256:db",
        available_digest: null,
        available_image: null,
        reason: null,
      }),
      expect.objectContaining({
        kind: "service",
        name: "api",
        image: "r/api:1",
        state: "stale",
        would_update: true,
        current_digest: "sha256:3",
        available_digest: "sha256:4",
        available_image: null,
        reason: DRY_RUN_REASON,
      }),
    ]);
    expect(typeof body.checked_at).toBe("string");
    expect(runner.calls).toEqual([{ trigger: "api", filter: { image: ["r/"] }, options: { dryRun: true } }]);
    expect((await request("/v1/containers")).status).toBe(401);
    expect((await request("/v1/containers", { method: "HEAD", headers: auth })).status).toBe(200);
  });
});

describe("POST /v1/signers/accept", () => {
  test("one container: the answer names the signer now pinned; 401, 400 and 404 as documented", async () => {
    const { request, runner } = makeApp();
    const accepted = await request("/v1/signers/accept", {
      method: "POST",
      headers: { ...auth, "content-type": "application/json" },
      body: JSON.stringify({ container: "web" }),
    });
    expect(accepted.status).toBe(200);
    expect(await accepted.json()).toEqual({
      container: "web",
      repository: "ghcr.io/acme/app",
      signer: "key SHA256:abc",
    });
    expect(runner.accepted).toEqual(["web"]);
    expect((await request("/v1/signers/accept?container=web", { method: "POST" })).status).toBe(401);
    expect((await request("/v1/signers/accept", { method: "POST", headers: auth })).status).toBe(400);
    expect((await request("/v1/signers/accept?container=missing", { method: "POST", headers: auth })).status).toBe(404);
  });
});

describe("POST /v1/skip", () => {
  test("one container, and a digest or none (the updater then finds the newer one); the answer names what is skipped", async () => {
    const { request, runner } = makeApp();
    const digest = `sha256:${"1".repeat(64)}`;
    const given = await request(`/v1/skip?container=web&digest=${digest}`, { method: "POST", headers: auth });
    expect(given.status).toBe(200);
    expect(await given.json()).toEqual({ container: "web", digest });
    const found = await request("/v1/skip", {
      method: "POST",
      headers: { ...auth, "content-type": "application/json" },
      body: JSON.stringify({ container: "db" }),
    });
    expect(await found.json()).toEqual({ container: "db", digest: `sha256:${"e".repeat(64)}` });
    const tag = await request("/v1/skip", {
      method: "POST",
      headers: { ...auth, "content-type": "application/json" },
      body: JSON.stringify({ container: "web", tag: "1.3.0" }),
    });
    expect(await tag.json()).toEqual({ container: "web", image: "r/web:1.3.0" });
    expect(runner.skips).toEqual([
      { container: "web", digest },
      { container: "db" },
      { container: "web", tag: "1.3.0" },
    ]);
    expect(
      (await request(`/v1/skip?container=web&tag=1.3.0&digest=${digest}`, { method: "POST", headers: auth })).status,
    ).toBe(400);
  });

  test("statuses: 401 without the token, 400 without exactly one container, 400 for an unknown field, 404 with the update API off", async () => {
    const { request, runner } = makeApp();
    expect((await request("/v1/skip?container=web", { method: "POST" })).status).toBe(401);
    expect((await request("/v1/skip", { method: "POST", headers: auth })).status).toBe(400);
    expect((await request("/v1/skip?container=web,db", { method: "POST", headers: auth })).status).toBe(400);
    expect((await request("/v1/skip?container=web&image=x", { method: "POST", headers: auth })).status).toBe(400);
    expect(runner.skips).toEqual([]);
    const off = makeApp({ http_api: { update: false, metrics: true } });
    expect((await off.request("/v1/skip?container=web", { method: "POST", headers: auth })).status).toBe(404);
  });
});

describe("POST /v1/rollback", () => {
  test("one container: the answer says what it was put back on; 400 without exactly one, 401 without the token", async () => {
    const { request, runner } = makeApp();
    const response = await request("/v1/rollback?container=web", { method: "POST", headers: auth });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({
      container: "web",
      from_image_id: "sha256:new",
      to_image_id: "sha256:old",
      state: "updated",
      reason: null,
    });
    expect((await request("/v1/rollback", { method: "POST", headers: auth })).status).toBe(400);
    expect((await request("/v1/rollback?container=web", { method: "POST" })).status).toBe(401);
    expect(runner.rollbacks).toEqual(["web"]);
  });
});
