/** GET and DELETE /v1/data-guard: the data guard's copies as the API lists them (docs/api.md, docs/data-guard.md). */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createApp } from "../../../src/api/index.ts";
import { defaultConfig } from "../../../src/config/index.ts";
import { CopyList, CopyStore, type Manifest } from "../../../src/dataguard/index.ts";
import { silentLogger } from "../../../src/log/index.ts";
import { Metrics } from "../../../src/metrics/index.ts";
import { bearer, FakeRunner, TOKEN } from "./fakes.ts";

const root = mkdtempSync(join(tmpdir(), "svc-dg-api-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const DAY = 86_400_000;
const created = new Date("2026-03-01T04:00:00Z");

function copyOf(store: CopyStore, container: string, superseded: string | null): string {
  const { id, dir } = store.begin(container, "0123456789ab0123456789ab", created);
  writeFileSync(join(dir, "mount-0.tar"), "x".repeat(1024));
  const manifest: Manifest = {
    format: 1,
    container,
    container_id: "0123456789ab0123456789ab",
    image: "app:1.2",
    image_id: "sha256:1111",
    version: "1.2",
    created_at: created.toISOString(),
    duration_ms: 40,
    bytes: 1024,
    superseded_at: superseded,
    mounts: [
      {
        destination: "/data",
        type: "volume",
        name: "app-data",
        source: "/var/lib/docker/volumes/app-data/_data",
        file: "mount-0.tar",
        bytes: 1024,
        sha256: "a".repeat(64),
      },
    ],
  };
  store.complete(dir, manifest);
  return id;
}

function appWith(store: CopyStore, now: Date) {
  const config = defaultConfig({ http_api: { update: true, token: TOKEN } });
  const metrics = new Metrics();
  const app = createApp({
    config,
    runner: new FakeRunner(metrics),
    metrics,
    log: silentLogger,
    dataCopies: new CopyList(store, 7 * DAY, () => now),
  });
  return (path: string, init: RequestInit = {}) =>
    app.handle(new Request(`http://localhost${path}`, { ...init, headers: { ...bearer(), ...init.headers } }));
}

describe("/v1/data-guard", () => {
  const store = new CopyStore(join(root, "copies"));
  const id = copyOf(store, "web", "2026-03-01T04:01:00Z");
  const request = appWith(store, new Date(created.getTime() + DAY));

  test("GET lists each copy with its container, size, age, version and when it goes", async () => {
    const response = await request("/v1/data-guard");
    expect(response.status).toBe(200);
    const body = (await response.json()) as { copies: Record<string, unknown>[] };
    expect(body.copies).toEqual([
      {
        container: "web",
        id,
        bytes: 1024,
        created_at: "2026-03-01T04:00:00.000Z",
        age_seconds: 86_400,
        version: "1.2",
        image: "app:1.2",
        image_id: "sha256:1111",
        superseded_at: "2026-03-01T04:01:00Z",
        expires_at: "2026-03-08T04:01:00.000Z",
        restoring: false,
        mounts: [{ destination: "/data", type: "volume", name: "app-data", bytes: 1024 }],
      },
    ]);
  });

  test("without a token: 401", async () => {
    const config = defaultConfig({ http_api: { update: true, token: TOKEN } });
    const metrics = new Metrics();
    const app = createApp({
      config,
      runner: new FakeRunner(metrics),
      metrics,
      log: silentLogger,
      dataCopies: new CopyList(store, DAY),
    });
    expect((await app.handle(new Request("http://localhost/v1/data-guard"))).status).toBe(401);
  });

  test("DELETE names the copy: 400 without, 404 for one that is not there, 409 while it is restored, 204 once removed", async () => {
    expect((await request("/v1/data-guard?container=web", { method: "DELETE" })).status).toBe(400);
    expect(
      (await request("/v1/data-guard?container=web&id=20260301T040000Z-000000000000", { method: "DELETE" })).status,
    ).toBe(404);
    const copy = store.read("web", id)!;
    store.markRestoring(copy, "0123456789ab");
    expect((await request(`/v1/data-guard?container=web&id=${id}`, { method: "DELETE" })).status).toBe(409);
    store.clearRestoring(copy);
    expect((await request(`/v1/data-guard?container=web&id=${id}`, { method: "DELETE" })).status).toBe(204);
    expect(((await (await request("/v1/data-guard")).json()) as { copies: unknown[] }).copies).toEqual([]);
    expect((await request(`/v1/data-guard?container=web&id=${id}`, { method: "DELETE" })).status).toBe(404);
  });

  test("a folder without a manifest (a copy a crash interrupted) is never listed, and the sweep removes it", async () => {
    const other = new CopyStore(join(root, "swept"));
    const { dir } = other.begin("db", "fedcba987654fedcba987654", created);
    writeFileSync(join(dir, "mount-0.tar"), "partial");
    expect(new CopyList(other, DAY).list()).toEqual([]);
    expect(other.sweep()).toEqual([`db/${dir.split("/").pop()}`]);
  });
});
