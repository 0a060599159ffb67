/**
 * The data guard in a real update (docs/data-guard.md): v1 writes its data, v2 rewrites it
 * irreversibly and then fails its healthcheck; after the automatic rollback v1 reads its own data
 * and the volume's manifest (paths, owners, modes, times, link targets, hard links, extended
 * attributes, contents' hashes) equals the one taken before the update. Named and anonymous volumes, bind mounts with
 * `all`, the size cap (hold and skip), a destination too small for the copy, and an engine that
 * does not see the copies' folder.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { docker } from "../../harness.ts";
import type { RunOptions } from "../../support/fixture.ts";
import { decorate, MIGRATE_V2, manifestOf, WRITE_V1, waitForVersion } from "./data-guard-support.ts";
import { entryOf, expectState, Fixture, inspect, makeUpdater } from "./support.ts";

const fx = new Fixture();
const mounted: string[] = [];
afterAll(() => {
  for (const dir of mounted) Bun.spawnSync(["umount", dir]);
  fx.cleanup();
}, 120_000);

/** v1 writes its data when the volume has none (the image's own command: a replacement keeps a container's own) */
const V1_CHANGES = [`CMD ${JSON.stringify(["/bin/sh", "-c", `${WRITE_V1}; exec sleep 3600`])}`];
/** v2 migrates the data, then never becomes healthy (the skip and `volumes` cases show the migration happens) */
const V2_CHANGES = [
  "HEALTHCHECK --interval=1s --retries=1 CMD false",
  `CMD ${JSON.stringify(["/bin/sh", "-c", `${MIGRATE_V2}; exec sleep 3600`])}`,
];

/** v1 running with its data on `mounts`, v2 pushed; returns what an update needs. */
async function setUp(what: string, mounts: RunOptions) {
  const v1 = fx.image(what, { changes: V1_CHANGES });
  const app = fx.run(what, v1.ref, mounts);
  await waitForVersion(app, "v1");
  const before = decorate(app);
  const v2 = fx.image(what, { changes: V2_CHANGES });
  return { app, v1, v2, before, id: inspect(app).Id as string, dir: join(fx.tempDir(`${what}-copies`), "copies") };
}

/** The manifests of the copies kept for `app`. */
function copyManifests(dir: string, app: string): { through?: string }[] {
  return readdirSync(join(dir, app)).map((id) => JSON.parse(readFileSync(join(dir, app, id, "manifest.json"), "utf8")));
}

function readsOwnData(app: string): string {
  return docker(["exec", app, "cat", "/data/version"]).stdout.trim();
}

describe("data guard in an update rolled back", () => {
  for (const [kind, args] of [
    ["named", (volume: string): RunOptions => ({ binds: [`${volume}:/data`] })],
    ["anonymous", (): RunOptions => ({ volumes: ["/data"] })],
  ] as const) {
    test(`${kind === "named" ? "a named" : "an anonymous"} volume: v1 runs again on its own data, byte for byte`, async () => {
      const volume = fx.volume(`${kind}-vol`);
      const s = await setUp(kind, args(volume));
      const h = await makeUpdater({
        containers: [s.app],
        data_guard: "volumes",
        data_guard_dir: s.dir,
        rollback: { startup_timeout: 20_000 },
      });
      const entry = expectState(await h.updater.run("api"), s.app, "rolled_back");
      expect(entry.reason).toContain("unhealthy");
      expect(entry.data_guard).toMatchObject({ restored: true });
      expect(entry.data_guard!.bytes).toBeGreaterThan(2 * 1024 * 1024);
      expect(entry.data_guard!.duration_ms).toBeGreaterThanOrEqual(0);
      expect(inspect(s.app).Id).toBe(s.id);
      expect(inspect(s.app).Image).toBe(s.v1.id);
      expect(readsOwnData(s.app)).toBe("v1");
      expect(manifestOf(s.app)).toEqual(s.before);
      expect(
        h.audit.entries
          .filter((e) => e.container === s.app && e.action.startsWith("data_"))
          .map((e) => `${e.action}${e.error ? "!" : ""}`),
      ).toEqual(["data_copy", "data_restore"]);
      // the copy stays listed for svc rollback --with-data, with the version it belongs to
      expect(readdirSync(join(s.dir, s.app))).toHaveLength(1);
      // made in the engine, which sees the copies' folder here (svc on the engine's host)
      expect(copyManifests(s.dir, s.app).map((m) => m.through)).toEqual(["helper"]);
    }, 240_000);
  }

  test("bind mounts: left alone with `volumes`, copied and restored with `all`", async () => {
    const host = fx.tempDir("bind-src");
    const s = await setUp("bind", { binds: [`${host}:/data`] });
    const only = await makeUpdater({
      containers: [s.app],
      data_guard: "volumes",
      data_guard_dir: s.dir,
      rollback: { startup_timeout: 20_000 },
    });
    const first = expectState(await only.updater.run("api"), s.app, "rolled_back");
    // nothing copied where the operator did not ask: v2's migration stays
    expect(first.data_guard).toBeUndefined();
    expect(readsOwnData(s.app)).toBe("v2");
    expect(existsSync(join(s.dir, s.app))).toBe(false);

    docker(["exec", s.app, "sh", "-c", `rm -rf /data/* /data/.hidden; ${WRITE_V1}`]);
    const before = decorate(s.app);
    fx.image("bind", { changes: V2_CHANGES });
    const all = await makeUpdater({
      containers: [s.app],
      data_guard: "all",
      data_guard_dir: s.dir,
      rollback: { startup_timeout: 20_000 },
    });
    const second = expectState(await all.updater.run("api"), s.app, "rolled_back");
    expect(second.data_guard).toMatchObject({ restored: true });
    expect(readsOwnData(s.app)).toBe("v1");
    expect(manifestOf(s.app)).toEqual(before);
    // two updates, each rolled back: the other files' one-update tests have 180 s
  }, 240_000);

  test("the label svc.data_guard turns it on for one container", async () => {
    const volume = fx.volume("label-vol");
    const s = await setUp("label", { labels: { "svc.data_guard": "volumes" }, binds: [`${volume}:/data`] });
    const h = await makeUpdater({ containers: [s.app], data_guard_dir: s.dir, rollback: { startup_timeout: 20_000 } });
    const entry = expectState(await h.updater.run("api"), s.app, "rolled_back");
    expect(entry.data_guard).toMatchObject({ restored: true });
    expect(readsOwnData(s.app)).toBe("v1");
  }, 180_000);
});

describe("data guard: a copy that does not fit", () => {
  test("over data_guard_max_size with hold: the update waits, untouched, with the numbers", async () => {
    const volume = fx.volume("hold-vol");
    const s = await setUp("hold", { binds: [`${volume}:/data`] });
    const h = await makeUpdater({
      containers: [s.app],
      data_guard: "volumes",
      data_guard_dir: s.dir,
      data_guard_max_size: "1MiB",
    });
    const entry = expectState(await h.updater.run("api"), s.app, "held");
    expect(entry.reason).toContain("more than 1 MiB (data_guard_max_size 1 MiB)");
    expect(inspect(s.app).Id).toBe(s.id);
    expect(inspect(s.app).State.StartedAt).toBe(inspect(s.app).State.StartedAt);
    expect(h.audit.entries.filter((e) => e.container === s.app).map((e) => e.action)).not.toContain("stop");
    expect(readsOwnData(s.app)).toBe("v1");
    expect(existsSync(join(s.dir, s.app))).toBe(false);
  }, 180_000);

  test("over data_guard_max_size with skip: updated without a copy, said in the report", async () => {
    const volume = fx.volume("skip-vol");
    const s = await setUp("skip", { binds: [`${volume}:/data`] });
    const h = await makeUpdater({
      containers: [s.app],
      data_guard: "volumes",
      data_guard_dir: s.dir,
      data_guard_max_size: "1MiB",
      data_guard_over: "skip",
      rollback: { startup_timeout: 20_000 },
    });
    const entry = expectState(await h.updater.run("api"), s.app, "rolled_back");
    expect(entry.data_guard).toMatchObject({ bytes: 0, restored: false });
    expect(entry.data_guard!.problem).toContain("updated without a copy");
    expect(readsOwnData(s.app)).toBe("v2");
  }, 180_000);

  test("a destination too small (a 2 MiB filesystem of the test's own): held, nothing left in it", async () => {
    const volume = fx.volume("small-vol");
    const s = await setUp("small", { binds: [`${volume}:/data`] });
    const small = fx.tempDir("small-fs");
    const mountedFs = Bun.spawnSync(["mount", "-t", "tmpfs", "-o", "size=2m,mode=0700", "tmpfs", small], {
      stderr: "pipe",
    });
    if (mountedFs.exitCode !== 0) throw new Error(`mount tmpfs: ${mountedFs.stderr.toString()}`);
    mounted.push(small);
    mkdirSync(join(small, "copies"));
    const h = await makeUpdater({ containers: [s.app], data_guard: "volumes", data_guard_dir: join(small, "copies") });
    const entry = expectState(await h.updater.run("api"), s.app, "held");
    expect(entry.reason).toContain("the room left in");
    expect(inspect(s.app).Id).toBe(s.id);
    expect(readsOwnData(s.app)).toBe("v1");
    expect(readdirSync(join(small, "copies"))).toEqual([]);
  }, 180_000);
});

test("the report of an update that passes: the copy's size and the downtime it added", async () => {
  const volume = fx.volume("pass-vol");
  const v1 = fx.image("pass", { changes: V1_CHANGES });
  const app = fx.run("pass", v1.ref, { binds: [`${volume}:/data`] });
  await waitForVersion(app, "v1");
  const v2 = fx.image("pass", { changes: V1_CHANGES });
  const dir = join(fx.tempDir("pass-copies"), "copies");
  const h = await makeUpdater({ containers: [app], data_guard: "volumes", data_guard_dir: dir });
  const entry = entryOf(await h.updater.run("api"), app);
  expect(entry.state).toBe("updated");
  expect(entry.data_guard).toMatchObject({ restored: false });
  expect(entry.data_guard!.bytes).toBeGreaterThan(2 * 1024 * 1024);
  expect(inspect(app).Image).toBe(v2.id);
  expect(readdirSync(join(dir, app))).toHaveLength(1);
}, 180_000);

// svc in a container, or beside a remote engine: the copies' folder svc sees is not the engine's.
// Here svc runs in a mount namespace of its own with a tmpfs over data_guard_dir (util-linux's
// unshare), so the engine mounts another folder at that path: the copier says so before the stop,
// and the update is held untouched, the reason saying what gives the engine the folder.
const unshareWorks = Bun.spawnSync(["unshare", "--mount", "true"]).exitCode === 0;
test.skipIf(!unshareWorks)(
  "where the engine does not see the copies' folder: held before anything stops, the reason naming the mount",
  async () => {
    const volume = fx.volume("apart-vol");
    const s = await setUp("apart", { binds: [`${volume}:/data`] });
    const startedAt = inspect(s.app).State.StartedAt;
    mkdirSync(s.dir, { recursive: true });
    const script = `mount -t tmpfs -o mode=0700 tmpfs "$1" && bun "$2" "$3" none && echo && echo --- && ls -A "$1"`;
    const child = Bun.spawn(
      [
        "unshare",
        "--mount",
        "--propagation",
        "private",
        "sh",
        "-c",
        script,
        "sh",
        s.dir,
        join(import.meta.dir, "crash-child.ts"),
        s.app,
      ],
      { stdout: "pipe", stderr: "pipe", env: { ...process.env, SVC_TEST_DATA_GUARD_DIR: s.dir } },
    );
    const [out, err, code] = await Promise.all([
      new Response(child.stdout).text(),
      new Response(child.stderr).text(),
      child.exited,
    ]);
    if (code !== 0) throw new Error(`the update in its own namespace failed: ${err}`);
    const [report, left] = out.split("\n---\n");
    const entry = entryOf(JSON.parse(report!), s.app);
    expect(entry.state).toBe("held");
    expect(entry.reason).toContain(`the engine does not see data_guard_dir ${s.dir} where svc does`);
    expect(entry.reason).toContain("run svc on the engine's host");
    // never stopped: the same container, started once, on v1 and its data
    expect(inspect(s.app).Id).toBe(s.id);
    expect(inspect(s.app).State.StartedAt).toBe(startedAt);
    expect(inspect(s.app).Image).toBe(s.v1.id);
    expect(readsOwnData(s.app)).toBe("v1");
    // nothing left of the copy on either side, nor of its helper
    expect(left!.trim()).toBe("");
    expect(readdirSync(s.dir)).toEqual([]);
    expect(docker(["ps", "-aq", "--filter", "label=svc.data-guard-helper"]).stdout.trim()).toBe("");
  },
  180_000,
);
