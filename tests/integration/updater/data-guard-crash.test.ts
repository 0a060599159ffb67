/**
 * The data guard under kill -9 (docs/data-guard.md, "Crash safety"): svc killed while it copies a
 * volume, and while it puts a copy back (the mount already emptied); the next start's crash
 * recovery leaves v1 running on its own data, byte for byte, and no incomplete copy behind.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { MIGRATE_V2, manifestOf, WRITE_V1, waitForVersion } from "./data-guard-support.ts";
import { containersByPrefix, docker, entryOf, Fixture, inspect, makeUpdater } from "./support.ts";

const fx = new Fixture();
afterAll(() => fx.cleanup(), 120_000);

const CHILD = join(import.meta.dir, "crash-child.ts");
const V1_CHANGES = [`CMD ${JSON.stringify(["/bin/sh", "-c", `${WRITE_V1}; exec sleep 3600`])}`];
const V2_CHANGES = [
  "HEALTHCHECK --interval=1s --retries=1 CMD false",
  `CMD ${JSON.stringify(["/bin/sh", "-c", `${MIGRATE_V2}; exec sleep 3600`])}`,
];

async function runChild(name: string, fault: string, dir: string): Promise<boolean> {
  const child = Bun.spawn(["bun", CHILD, name, fault], {
    stdout: "pipe",
    stderr: "pipe",
    env: { ...process.env, SVC_TEST_DATA_GUARD_DIR: dir },
  });
  const [out, err, code] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ]);
  if (child.signalCode !== "SIGKILL" && code !== 137)
    throw new Error(`the update process was not killed at ${fault}: ${out} ${err}`);
  return true;
}

describe("killed during the data guard's work, repaired by the next start", () => {
  for (const fault of ["during-copy", "during-restore"]) {
    test(fault, async () => {
      const volume = fx.volume(`${fault}-vol`);
      const v1 = fx.image(fault, { changes: V1_CHANGES });
      const name = fx.run(fault, v1.ref, { binds: [`${volume}:/data`] });
      await waitForVersion(name, "v1");
      const before = manifestOf(name);
      fx.image(fault, { changes: V2_CHANGES });
      const dir = join(fx.tempDir(`${fault}-copies`), "copies");

      await runChild(name, fault, dir);
      const left = Object.keys(containersByPrefix(name));
      expect(left.some((n) => n.includes(".svc-old-"))).toBe(true);
      if (fault === "during-copy") {
        // a copy folder without its manifest
        const [copyId] = readdirSync(join(dir, name));
        expect(readdirSync(join(dir, name, copyId!))).not.toContain("manifest.json");
      } else {
        // the mount emptied, its copy marked as being restored
        const [copyId] = readdirSync(join(dir, name));
        // (and the tokens of the restore in the engine, svc's own: docs/data-guard.md)
        expect(
          readdirSync(join(dir, name, copyId!))
            .filter((f) => !f.startsWith("."))
            .sort(),
        ).toEqual(["manifest.json", "mount-0.tar", "restoring.json"]);
      }

      const h = await makeUpdater({
        containers: [name],
        data_guard: "volumes",
        data_guard_dir: dir,
        rollback: { startup_timeout: 20_000 },
      });
      await h.updater.recover();
      expect(Object.keys(containersByPrefix(name))).toEqual([name]);
      expect(inspect(name).State.Running).toBe(true);
      expect(inspect(name).Image).toBe(v1.id);
      expect(docker(["exec", name, "cat", "/data/version"]).stdout.trim()).toBe("v1");
      expect(manifestOf(name)).toEqual(before);
      if (fault === "during-copy") {
        expect(existsSync(dir) ? readdirSync(join(dir, name)) : []).toEqual([]);
      } else {
        expect(h.audit.entries.some((e) => e.action === "data_restore" && e.container === name && !e.error)).toBe(true);
        const [copyId] = readdirSync(join(dir, name));
        expect(readdirSync(join(dir, name, copyId!))).not.toContain("restoring.json");
      }

      // the next cycle tries again, and rolls back with the data
      const entry = entryOf(await h.updater.run("schedule"), name);
      expect(entry.state).toBe("rolled_back");
      expect(entry.data_guard).toMatchObject({ restored: true });
      expect(manifestOf(name)).toEqual(before);
    }, 240_000);
  }
});
