/**
 * The data guard's copy and restore on the sandbox's engine, made in it by svc's helper
 * (docs/data-guard.md): what v1 wrote comes back exactly (owners, modes, times, symlinks, hard
 * links, fifos, extended attributes, contents) after another container rewrote it, for a named and
 * an anonymous volume.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  CopyStore,
  copyInEngine,
  guardedMounts,
  prepareCopier,
  restoreInEngine,
} from "../../../src/dataguard/index.ts";
import { createDockerEngine } from "../../../src/engine/index.ts";
import { silentLogger } from "../../../src/log/index.ts";
import { docker, sandbox } from "../../harness.ts";
import type { RunOptions } from "../../support/fixture.ts";
import { decorate, MIGRATE_V2, manifestOf, runOn, WRITE_V1, waitForVersion } from "./data-guard-support.ts";
import { Fixture, inspect } from "./support.ts";

const fx = new Fixture();
afterAll(() => fx.cleanup(), 120_000);

async function roundTrip(what: string, mounts: RunOptions) {
  const engine = await createDockerEngine({ host: sandbox().dockerHost } as never, silentLogger);
  const image = fx.image(what);
  const app = fx.run(what, image.ref, { ...mounts, cmd: ["sh", "-c", `${WRITE_V1}; exec sleep 3600`] });
  await waitForVersion(app, "v1");
  const before = decorate(app);
  docker(["stop", "-t", "0", app]);

  const store = new CopyStore(join(fx.tempDir(`${what}-copies`), "copies"));
  const guarded = guardedMounts(inspect(app), "volumes");
  if (!("mounts" in guarded)) throw new Error(guarded.problem);
  expect(guarded.mounts.map((m) => m.destination)).toEqual(["/data"]);
  const request = {
    container: app,
    containerId: inspect(app).Id,
    image: image.ref,
    imageId: image.id,
    version: "1",
    mounts: guarded.mounts,
    limit: { bytes: 1024 ** 3, why: "test" },
  };
  const copier = await prepareCopier(engine, store, request, new Date());
  if ("problem" in copier) throw new Error(copier.problem);
  const outcome = await copyInEngine(engine, store, copier, request, () => new Date());
  if (outcome === "again" || outcome.kind !== "copied") throw new Error(JSON.stringify(outcome));
  expect(outcome.copy.manifest.bytes).toBeGreaterThan(2 * 1024 * 1024);
  expect(store.list(app).map((c) => c.id)).toEqual([outcome.copy.id]);

  runOn(app, image.ref, MIGRATE_V2);
  const migrated = manifestOf(app);
  expect(migrated).not.toEqual(before);
  expect(Object.keys(migrated)).toContain("new/deep/file");

  await restoreInEngine(engine, store, outcome.copy);
  expect(manifestOf(app)).toEqual(before);
  expect(readdirSync(outcome.copy.dir).sort()).toEqual([".svc-copy", "manifest.json", "mount-0.tar"]);

  // the old container reads its own data again
  docker(["start", app]);
  expect(docker(["exec", app, "cat", "/data/version"]).stdout.trim()).toBe("v1");
  return { engine, store, copy: outcome.copy, app };
}

describe("data guard: copy and restore in the engine", () => {
  test("a named volume comes back exactly as v1 left it", async () => {
    const volume = fx.volume("named");
    await roundTrip("named", { binds: [`${volume}:/data`] });
  }, 180_000);

  test("an anonymous volume too; a damaged copy is refused before anything is touched", async () => {
    const { engine, store, copy, app } = await roundTrip("anon", { volumes: ["/data"] });
    docker(["stop", "-t", "0", app]);
    const before = manifestOf(app);
    writeFileSync(join(copy.dir, copy.manifest.mounts[0]!.file), "not the archive");
    await expect(restoreInEngine(engine, store, copy)).rejects.toThrow("does not match its checksum");
    expect(manifestOf(app)).toEqual(before);
  }, 180_000);
});
