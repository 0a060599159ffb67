/**
 * Update windows on the sandbox's engine (docs/windows.md): outside its window a stale container
 * is pulled ahead, reported pending and not restarted, and updated without a pull once the
 * window opens (within a minute and a half: the window arithmetic itself is unit-tested); a label
 * narrows the host's window; an update asked for by name applies at once.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { serviceTimeZone, wallClock } from "../../../src/config/window.ts";
import { silentLogger } from "../../../src/log/index.ts";
import { createScheduler } from "../../../src/scheduler/index.ts";
import { waitUntil } from "../../harness.ts";
import type { RunOptions } from "../../support/fixture.ts";
import { docker, entryOf, expectState, Fixture, inspect, makeUpdater } from "./support.ts";

const fx = new Fixture();
afterAll(() => fx.cleanup(), 120_000);

const MINUTE = 60_000;
/** "HH:MM" of a moment on the wall clock svc reads windows in (TZ). */
function hhmm(at: number): string {
  const { minute } = wallClock(at, serviceTimeZone());
  return `${String(Math.floor(minute / 60)).padStart(2, "0")}:${String(minute % 60).padStart(2, "0")}`;
}
/** A window from `from` to `to` (whole minutes on the wall clock). */
const windowOf = (from: number, to: number) => `${hhmm(from)}-${hhmm(to)}`;
/**
 * A window closed now, opening at the start of a minute 30 to 90 s from now, for 20 minutes: the
 * first cycle (a pull) ends long before it opens, and the test waits no longer than it must.
 */
function windowAhead(): { text: string; opensAt: number } {
  const opensAt = Math.ceil((Date.now() + MINUTE / 2) / MINUTE) * MINUTE;
  return { text: windowOf(opensAt, opensAt + 20 * MINUTE), opensAt };
}
/** A window that never holds now: from an hour ahead for an hour. */
const closedNow = () => windowOf(Date.now() + 60 * MINUTE, Date.now() + 120 * MINUTE);
/** Open now and for the next hour. */
const openNow = () => windowOf(Date.now() - MINUTE, Date.now() + 60 * MINUTE);

/** A container on v1 with v2 pushed and not on the engine (the pull is what pre_pull does ahead). */
function staleContainer(what: string, options: RunOptions = {}) {
  const v1 = fx.image(what);
  const app = fx.run(what, v1.ref, options);
  const v2 = fx.image(what);
  docker(["rmi", v2.ref]);
  return { app, v1, v2 };
}

const actionsOf = (
  audit: { entries: { container?: string; action: string; session_id?: string }[] },
  name: string,
  session: string,
) => audit.entries.filter((e) => e.container === name && e.session_id === session).map((e) => e.action);

describe("an update window", () => {
  test("outside it: pulled ahead, pending with when it applies, not restarted; when it opens: updated, with no pull", async () => {
    const { app, v1, v2 } = staleContainer("win");
    const before = inspect(app);
    const window = windowAhead();
    const h = await makeUpdater({ containers: [app], update_window: window.text });

    const waiting = await h.updater.run("schedule");
    const pending = expectState(waiting, app, "pending");
    expect(pending.applies_at).toBe(new Date(window.opensAt).toISOString());
    expect(pending.reason).toContain(`outside its update window (${window.text}); applies `);
    expect(waiting!.counts.pending).toBe(1);
    expect(h.metrics.toPrometheus()).toMatch(/^svc_containers_pending 1$/m);
    // pulled ahead: the newer image is on the engine; the container still runs the old one
    expect(actionsOf(h.audit, app, waiting!.id)).toEqual(["pull"]);
    expect(inspect(v2.ref).Id).toBe(v2.id);
    expect(inspect(app).Id).toBe(before.Id);
    expect(inspect(app).Image).toBe(v1.id);

    // a daily check would miss a short window: the scheduler runs a cycle as the window opens
    expect(Date.now(), "the window opened before the scheduler started: the first cycle took 30 s").toBeLessThan(
      window.opensAt,
    );
    const scheduler = createScheduler({
      config: { poll_interval: 24 * 60 * MINUTE, update_on_start: false, update_window: window.text },
      runner: h.updater,
      log: silentLogger,
    });
    scheduler.start();
    await waitUntil(() => h.published.length === 2, 3 * MINUTE, "the cycle as the window opens");
    await scheduler.stop();
    const applied = h.published[1]!;
    expect(Date.parse(applied.started_at)).toBeGreaterThanOrEqual(window.opensAt);
    expectState(applied, app, "updated");
    expect(inspect(app).Image).toBe(v2.id);
    // the window holds only the stop and the start
    expect(actionsOf(h.audit, app, applied.id)).toEqual(["rename", "stop", "create", "start", "remove"]);
    expect(applied.counts.pending).toBe(0);
  }, 240_000);

  test("an image pulled ahead and superseded before its window is removed, as cleanup removes what updates leave", async () => {
    const { app, v1, v2 } = staleContainer("super");
    const h = await makeUpdater({ containers: [app], update_window: closedNow(), cleanup: true });
    const first = await h.updater.run("schedule");
    expectState(first, app, "pending");
    expect(inspect(v2.ref).Id).toBe(v2.id);
    const v3 = fx.image("super");
    docker(["rmi", v3.ref]);
    const second = await h.updater.run("schedule");
    expect(expectState(second, app, "pending").new_digest).toBe(v3.digest);
    expect(actionsOf(h.audit, app, second!.id)).toEqual(["pull", "image_remove"]);
    expect(inspect(v3.ref).Id).toBe(v3.id);
    expect(docker(["image", "inspect", v2.id], { allowFailure: true }).code).not.toBe(0);
    expect(inspect(app).Image).toBe(v1.id);
  }, 120_000);

  test("a label narrows the host's window: its container waits while the others are updated", async () => {
    const narrowed = staleContainer("narrow", { labels: { "svc.update_window": closedNow() } });
    const plain = staleContainer("plain");
    const h = await makeUpdater({
      containers: [narrowed.app, plain.app],
      update_window: "00:00-24:00",
      pre_pull: false,
    });
    const report = await h.updater.run("schedule");
    expect(expectState(report, narrowed.app, "pending").reason).toContain(" within ");
    expectState(report, plain.app, "updated");
    expect(inspect(narrowed.app).Image).toBe(narrowed.v1.id);
    // pre_pull off: nothing pulled for the pending one
    expect(actionsOf(h.audit, narrowed.app, report!.id)).toEqual([]);
  }, 120_000);

  test("a label cannot widen it: one that never meets the host's window skips the container, naming the label", async () => {
    const { app, v1 } = staleContainer("widen", { labels: { "svc.update_window": openNow() } });
    const h = await makeUpdater({ containers: [app], update_window: closedNow() });
    const entry = expectState(await h.updater.run("schedule"), app, "skipped");
    expect(entry.reason).toContain("never meets the host's update_window");
    expect(inspect(app).Image).toBe(v1.id);
  }, 120_000);

  test("an update asked for by name applies at once; a dry run still says pending", async () => {
    const { app, v2 } = staleContainer("asked");
    const h = await makeUpdater({ containers: [app], update_window: closedNow() });
    expectState(await h.updater.run("api", { container: [app] }, { dryRun: true }), app, "pending");
    const report = await h.updater.run("api", { container: [app] });
    expectState(report, app, "updated");
    expect(entryOf(report, app).new_digest).toBe(v2.digest);
    expect(inspect(app).Image).toBe(v2.id);
  }, 120_000);
});
