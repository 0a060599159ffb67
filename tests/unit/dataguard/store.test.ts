/** The copies on disk: complete only with a manifest, the restore mark, data_guard_keep (docs/data-guard.md). */
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { defaultConfig } from "../../../src/config/index.ts";
import { CopyStore, DataGuard, dataGuardOptions, type Manifest } from "../../../src/dataguard/index.ts";

const root = mkdtempSync(join(tmpdir(), "svc-dg-store-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const DAY = 86_400_000;

function complete(store: CopyStore, container: string, id: string, at: Date, superseded: Date | null) {
  const begun = store.begin(container, id, at);
  writeFileSync(join(begun.dir, "mount-0.tar"), "x");
  const manifest: Manifest = {
    format: 1,
    container,
    container_id: id,
    image: "app:1",
    image_id: null,
    version: "1",
    created_at: at.toISOString(),
    duration_ms: 1,
    bytes: 1,
    superseded_at: superseded?.toISOString() ?? null,
    mounts: [
      { destination: "/data", type: "volume", source: "", file: "mount-0.tar", bytes: 1, sha256: "0".repeat(64) },
    ],
  };
  store.complete(begun.dir, manifest);
  return store.read(container, begun.id)!;
}

test("a restore mark names the container it goes into; data_guard_keep counts from the next version's start", () => {
  const now = { t: Date.parse("2026-03-10T00:00:00Z") };
  const config = defaultConfig({ data_guard: "volumes", data_guard_dir: join(root, "keep"), data_guard_keep: 2 * DAY });
  const guard = new DataGuard(null as never, dataGuardOptions(config), () => new Date(now.t));
  const store = guard.store!;
  const old = complete(store, "web", "aaaaaaaaaaaa0000", new Date(now.t - 3 * DAY), new Date(now.t - 3 * DAY));
  const recent = complete(store, "db", "bbbbbbbbbbbb0000", new Date(now.t - 3 * DAY), new Date(now.t - DAY));
  const unfinished = complete(store, "cache", "cccccccccccc0000", new Date(now.t - 30 * DAY), null);

  guard.beginRestore(recent, "bbbbbbbbbbbb");
  expect(guard.restoringInto("bbbbbbbbbbbb0000ffff")?.id).toBe(recent.id);
  expect(guard.restoringInto("aaaaaaaaaaaa")).toBeNull();
  guard.endRestore(recent);
  expect(guard.restoringInto("bbbbbbbbbbbb")).toBeNull();

  expect(guard.copyOf("aaaaaaaaaaaa0000")?.id).toBe(old.id);
  expect(guard.prune()).toEqual([`web/${old.id}`]);
  expect(
    store
      .list()
      .map((c) => c.manifest.container)
      .sort(),
  ).toEqual(["cache", "db"]);
  expect(unfinished.manifest.superseded_at).toBeNull();
});

test("without a folder (no state_dir, no data_guard_dir) nothing is kept, and the update follows data_guard_over", async () => {
  const guard = new DataGuard(
    null as never,
    dataGuardOptions(defaultConfig({ data_guard: "volumes", data_guard_over: "skip" })),
  );
  expect(guard.store).toBeNull();
  const inspect = {
    Id: "a".repeat(64),
    Name: "/web",
    Config: { Labels: {} },
    Mounts: [{ Type: "volume", Name: "v", Source: "", Destination: "/data", RW: true }],
  };
  expect(await guard.prepare(inspect as never)).toEqual({
    kind: "over",
    action: "skip",
    reason: "data_guard: no folder to keep copies in (set state_dir or data_guard_dir)",
  });
  expect(guard.tidy()).toEqual([]);
});

test("a manifest that is not svc's is no copy", () => {
  const store = new CopyStore(join(root, "bad"));
  const begun = store.begin("web", "dddddddddddd0000", new Date());
  writeFileSync(join(begun.dir, "manifest.json"), JSON.stringify({ format: 1, container: "other" }));
  expect(store.list()).toEqual([]);
  expect(store.sweep()).toEqual([`web/${begun.id}`]);
});
