/**
 * Decisions that survive a restart (`state_dir`): a digest rolled back by one svc is not tried
 * again by the next, a newer image waits out min_image_age from when svc first saw it, and a stale
 * digest announced once is not announced again after a restart.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { inspect } from "../../harness.ts";
import {
  baseFlags,
  FAILING_CMD,
  Fixture,
  parseJsonLines,
  receiver,
  reportsIn,
  runSvc,
  stopAll,
  stopReceivers,
  userEnv,
} from "./support.ts";

const fx = new Fixture("e2e-state");

afterAll(async () => {
  await stopAll();
  stopReceivers();
  fx.cleanup();
}, 120_000);

function entryIn(output: string, name: string): any {
  return reportsIn(output)
    .at(-1)
    ?.containers.find((c: any) => c.name === name);
}

describe("state_dir", () => {
  test("a digest rolled back by one run is skipped by the next, which touches nothing", async () => {
    const name = fx.name("app");
    fx.run("app", fx.image("app").ref);
    const bad = fx.image("app", { changes: [FAILING_CMD] });
    const stateDir = join(fx.tempDir("state"), "svc");
    const first = await runSvc([...baseFlags(), "--run-once", "--state-dir", stateDir, name]);
    expect(first.code, first.svc.describe()).toBe(1);
    expect(entryIn(first.svc.output, name)?.state, first.svc.describe()).toBe("rolled_back");
    const afterRollback = inspect(name);
    expect(JSON.parse(readFileSync(join(stateDir, "state.json"), "utf8")).rolled_back[name]).toStartWith("sha256:");

    const second = await runSvc([...baseFlags(), "--run-once", "--state-dir", stateDir, name]);
    expect(second.code, second.svc.describe()).toBe(0);
    const entry = entryIn(second.svc.output, name);
    expect(entry?.state, second.svc.describe()).toBe("skipped");
    expect(entry?.reason).toContain("was rolled back before");
    expect(inspect(name).Id).toBe(afterRollback.Id);
    expect(inspect(name).State.StartedAt).toBe(afterRollback.State.StartedAt);
    expect(inspect(name).Image).not.toBe(bad.id);
  }, 120_000);

  test("by default (no state_dir given), a digest rolled back is still skipped after a restart", async () => {
    const name = fx.name("plain");
    fx.run("plain", fx.image("plain").ref);
    const bad = fx.image("plain", { changes: [FAILING_CMD] });
    // a user's own folder for state: $XDG_STATE_HOME (else ~/.local/state, or /var/lib/svc as root)
    const env = userEnv({ XDG_STATE_HOME: fx.tempDir("xdg") });
    const first = await runSvc([...baseFlags(), "--run-once", name], { env });
    expect(first.code, first.svc.describe()).toBe(1);
    expect(entryIn(first.svc.output, name)?.state, first.svc.describe()).toBe("rolled_back");
    expect(
      JSON.parse(readFileSync(join(env.XDG_STATE_HOME!, "svc", "state.json"), "utf8")).rolled_back[name],
    ).toStartWith("sha256:");
    const second = await runSvc([...baseFlags(), "--run-once", name], { env });
    const entry = entryIn(second.svc.output, name);
    expect(entry?.state, second.svc.describe()).toBe("skipped");
    expect(entry?.reason).toContain("was rolled back before");
    expect(inspect(name).Image).not.toBe(bad.id);
  }, 120_000);

  test("a default folder that cannot be written is said once at start, with what will not survive; the cycle runs", async () => {
    const name = fx.name("nowhere");
    fx.run("nowhere", fx.image("nowhere").ref);
    const blocker = join(fx.tempDir("blocked"), "a-file");
    writeFileSync(blocker, "");
    const run = await runSvc([...baseFlags(), "--run-once", name], { env: userEnv({ XDG_STATE_HOME: blocker }) });
    expect(run.code, run.svc.describe()).toBe(0);
    const warnings = parseJsonLines(run.svc.output).filter(
      (r) => r.level === "warn" && String(r.message).includes("cannot be used"),
    );
    expect(warnings.map((r) => r.message)).toEqual([
      expect.stringContaining(`state_dir ${blocker}/svc cannot be used`),
    ]);
    expect(warnings[0].message).toContain("digests rolled back or skipped");
    expect(entryIn(run.svc.output, name)?.state).toBe("fresh");
  }, 120_000);

  test("min_image_age: a newer image waits, counted from when svc first saw it, across a restart, then is applied", async () => {
    const name = fx.name("aged");
    fx.run("aged", fx.image("aged").ref);
    const newer = fx.image("aged");
    const stateDir = fx.tempDir("aged-state");
    const before = inspect(name);
    const flags = [...baseFlags(), "--run-once", "--state-dir", stateDir, "--min-image-age", "3s", name];
    const first = await runSvc(flags);
    expect(first.code, first.svc.describe()).toBe(0);
    const held = entryIn(first.svc.output, name);
    expect(held?.state, first.svc.describe()).toBe("stale");
    expect(held?.reason).toMatch(
      /^newer image sha256:[0-9a-f]{64} first seen .+; applied once it is 3s old, from .+ \(min_image_age\)$/,
    );
    expect(inspect(name).Id).toBe(before.Id);
    await Bun.sleep(3_000);
    const second = await runSvc(flags);
    expect(second.code, second.svc.describe()).toBe(0);
    expect(entryIn(second.svc.output, name)?.state, second.svc.describe()).toBe("updated");
    expect(inspect(name).Image).toBe(newer.id);
  }, 120_000);

  test("monitor-only: a stale digest announced before a restart is not announced again", async () => {
    const name = fx.name("watched");
    fx.run("watched", fx.image("watched").ref);
    fx.image("watched");
    const { bodies, url } = receiver();
    const stateDir = fx.tempDir("watch-state");
    const flags = [
      ...baseFlags(),
      "--run-once",
      "--monitor-only",
      "--state-dir",
      stateDir,
      "--notifications-webhook-url",
      url,
      name,
    ];
    const first = await runSvc(flags);
    expect(first.code, first.svc.describe()).toBe(0);
    expect(bodies, first.svc.describe()).toHaveLength(1);
    const second = await runSvc(flags);
    expect(second.code, second.svc.describe()).toBe(0);
    expect(entryIn(second.svc.output, name)?.state).toBe("stale");
    expect(bodies, second.svc.describe()).toHaveLength(1);
  }, 120_000);

  test("svc rollback NAME: the container goes back to the image it ran before svc updated it (kept by cleanup_delay), and the next cycle leaves it there", async () => {
    const name = fx.name("back");
    const v1 = fx.image("back");
    fx.run("back", v1.ref);
    const v2 = fx.image("back");
    const stateDir = fx.tempDir("back-state");
    // cleanup on: cleanup_delay keeps the image the update leaves, for the rollback
    const once = [...baseFlags(), "--run-once", "--cleanup", "--cleanup-delay", "1h", "--state-dir", stateDir, name];
    const update = await runSvc(once);
    expect(entryIn(update.svc.output, name)?.state, update.svc.describe()).toBe("updated");
    expect(inspect(name).Image).toBe(v2.id);
    expect(inspect(v1.id).Id).toBe(v1.id);

    const audit = join(fx.tempDir("back-audit"), "audit.log");
    const back = await runSvc(["rollback", name, ...baseFlags(), "--state-dir", stateDir, "--audit-log", audit]);
    expect(back.code, back.svc.describe()).toBe(0);
    expect(inspect(name).Image).toBe(v1.id);
    // a one-off command, not an API request: its audit entries say so
    const entries = parseJsonLines(readFileSync(audit, "utf8")).map((line) => line.fields);
    expect(entries.map((e: any) => e.action)).toContain("create");
    expect(new Set(entries.map((e: any) => e.trigger))).toEqual(new Set(["run_once"]));
    expect(inspect(name).State.Running).toBe(true);
    const runningSince = inspect(name).State.StartedAt;

    const next = await runSvc(once);
    expect(next.code, next.svc.describe()).toBe(0);
    expect(entryIn(next.svc.output, name)?.state, next.svc.describe()).toBe("skipped");
    expect(inspect(name).Image).toBe(v1.id);
    expect(inspect(name).State.StartedAt).toBe(runningSince);

    fx.run("never-updated", v1.ref);
    const nothing = await runSvc(["rollback", fx.name("never-updated"), ...baseFlags(), "--state-dir", stateDir]);
    expect(nothing.code, nothing.svc.describe()).not.toBe(0);
    expect(nothing.svc.output).toContain(`svc knows no earlier image of ${fx.name("never-updated")}`);
    const missing = await runSvc(["rollback", fx.name("no-such"), ...baseFlags(), "--state-dir", stateDir]);
    expect(missing.code, missing.svc.describe()).not.toBe(0);
    expect(missing.svc.output).toContain(`no container or service named ${fx.name("no-such")}`);
  }, 120_000);
});
