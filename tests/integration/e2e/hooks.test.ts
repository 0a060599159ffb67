/**
 * Lifecycle hooks, run by svc inside real containers through the engine's exec API: a failing
 * pre_update (svc's label or Watchtower's) keeps the container as it was, a failing post_update
 * rolls the update back, passing hooks are in the audit log with the containers they ran in.
 * Hooks are off unless lifecycle_hooks is on; a label may shorten hook_timeout, never lengthen it.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { inspect } from "../../harness.ts";
import { baseFlags, Fixture, parseJsonLines, reportsIn, runSvc, stopAll } from "./support.ts";

const fx = new Fixture("e2e-hooks");

afterAll(async () => {
  await stopAll();
  fx.cleanup();
}, 120_000);

/** A running container with `labels` whose tag has a newer image. */
function staleWith(
  what: string,
  labels: Record<string, string>,
): { name: string; oldId: string; startedAt: string; newImage: string } {
  const name = fx.run(what, fx.image(what).ref, { labels });
  const newer = fx.image(what);
  const container = inspect(name);
  return { name, oldId: container.Id, startedAt: container.State.StartedAt, newImage: newer.id };
}

async function runOnce(name: string, flags = ["--lifecycle-hooks"]) {
  const audit = join(fx.tempDir(`${name}-audit`), "audit.log");
  const run = await runSvc([...baseFlags(), ...flags, "--run-once", "--audit-log", audit, name]);
  const entry = reportsIn(run.svc.output)
    .at(-1)
    ?.containers.find((c: any) => c.name === name);
  const entries = existsSync(audit) ? parseJsonLines(readFileSync(audit, "utf8")).map((line) => line.fields) : [];
  return { run, entry, audit: entries };
}

describe("lifecycle hooks", () => {
  test("a failing pre_update skips the update and touches nothing; so does Watchtower's label", async () => {
    for (const [what, label] of [
      ["pre", "svc.hooks.pre_update"],
      ["wt", "com.centurylinklabs.watchtower.lifecycle.pre-update"],
    ] as const) {
      const c = staleWith(what, { [label]: "echo not now >&2; exit 3" });
      const { run, entry, audit } = await runOnce(c.name);
      expect(run.code, run.svc.describe()).toBe(0);
      expect(entry?.state, run.svc.describe()).toBe("skipped");
      expect(entry?.reason).toBe("pre_update hook failed: exited with 3: not now");
      expect(inspect(c.name).Id).toBe(c.oldId);
      expect(inspect(c.name).State.StartedAt).toBe(c.startedAt);
      expect(audit.map((e: any) => [e.action, e.container_id, e.error])).toEqual([
        ["pre_update", c.oldId, "exited with 3: not now"],
      ]);
    }
  }, 120_000);

  test("off by default: a container's hook labels run nothing, and the update goes through", async () => {
    const c = staleWith("off", {
      "com.centurylinklabs.watchtower.lifecycle.pre-update": "exit 3",
      "svc.hooks.pre_check": "exit 1",
    });
    const { run, entry, audit } = await runOnce(c.name, []);
    expect(entry?.state, run.svc.describe()).toBe("updated");
    expect(audit.map((e: any) => e.action)).not.toContain("pre_update");
    expect(audit.map((e: any) => e.action)).not.toContain("pre_check");
  }, 120_000);

  test("a failing post_update rolls back: the old container runs again", async () => {
    const c = staleWith("post", { "svc.hooks.post_update": "test -f /not-in-this-image" });
    const { run, entry } = await runOnce(c.name);
    expect(run.code, run.svc.describe()).toBe(1);
    expect(entry?.state, run.svc.describe()).toBe("rolled_back");
    expect(entry?.reason).toStartWith("post_update hook failed: exited with 1");
    expect(inspect(c.name).Id).toBe(c.oldId);
    expect(inspect(c.name).State.Running).toBe(true);
  }, 120_000);

  test("passing hooks: the update goes through, each run in the audit log with the container it ran in", async () => {
    const c = staleWith("ok", {
      "svc.hooks.pre_check": "true",
      "svc.hooks.pre_update": "true",
      "svc.hooks.post_update": "test -d /proc/1",
      "svc.hooks.post_check": "echo fine",
    });
    const { run, entry, audit } = await runOnce(c.name);
    expect(run.code, run.svc.describe()).toBe(0);
    expect(entry?.state, run.svc.describe()).toBe("updated");
    const newId = inspect(c.name).Id;
    expect(inspect(c.name).Image).toBe(c.newImage);
    const hooks = audit
      .filter((e: any) => e.action.includes("_"))
      .map((e: any) => [e.action, e.container_id, e.error ?? null]);
    expect(hooks).toEqual([
      ["pre_check", c.oldId, null],
      ["pre_update", c.oldId, null],
      ["post_update", newId, null],
      ["post_check", newId, null],
    ]);
  }, 120_000);

  test("a pre_update that does not end within hook_timeout counts as failed, however long its label allows", async () => {
    const c = staleWith("slow", { "svc.hooks.pre_update": "sleep 30", "svc.hooks.timeout": "1h" });
    const { run, entry } = await runOnce(c.name, ["--lifecycle-hooks", "--hook-timeout", "1s"]);
    expect(run.code, run.svc.describe()).toBe(0);
    expect(entry?.state, run.svc.describe()).toBe("skipped");
    expect(entry?.reason).toBe("pre_update hook failed: did not end within 1 s");
    expect(inspect(c.name).Id).toBe(c.oldId);
  }, 120_000);
});
