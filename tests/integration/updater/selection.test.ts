/**
 * Selection rules and per-container options against the real engine. The cycles run with
 * monitor_only (nothing changes), so the report shows exactly which containers were considered.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { waitUntil } from "../../harness.ts";
import {
  docker,
  entryOf,
  expectState,
  Fixture,
  inspect,
  makeUpdater,
  names,
  recordEvents,
  TEST_SCOPE,
} from "./support.ts";

const fx = new Fixture();
let image: { ref: string; id: string };
let other: { ref: string; id: string };
const all: string[] = [];

beforeAll(() => {
  image = fx.image("sel");
  other = fx.image("other");
  all.push(
    fx.run("plain", image.ref),
    fx.run("enabled", image.ref, { labels: { "svc.enable": "true" } }),
    fx.run("disabled", image.ref, { labels: { "svc.enable": "false" } }),
    fx.run("scoped", image.ref, { labels: { "svc.scope": "blue" } }),
    fx.run("otherimg", other.ref),
  );
  const stopped = fx.run("stopped", image.ref);
  docker(["stop", "-t", "0", stopped]);
  docker(["create", "--name", fx.name("created"), "-l", `svc.scope=${TEST_SCOPE}`, "--network", "none", image.ref]);
  all.push(stopped, fx.name("created"));
  fx.image("sel"); // every container on `sel` is now stale
}, 60_000);
afterAll(() => fx.cleanup(), 120_000);

async function considered(
  options: Record<string, unknown> = {},
  filter?: { container?: string[]; image?: string[] },
): Promise<string[]> {
  const h = await makeUpdater({ containers: all, monitor_only: true, ...options });
  return names(await h.updater.run("api", filter));
}

const short = (list: string[]) => list.map((n) => n.slice(fx.prefix.length + 1));

describe("selection", () => {
  test("running containers only by default; svc.enable=false and other scopes excluded", async () => {
    expect(short(await considered())).toEqual(["enabled", "otherimg", "plain"]);
  });
  test("revive_stopped adds exited and created containers", async () => {
    expect(short(await considered({ revive_stopped: true }))).toEqual([
      "created",
      "enabled",
      "otherimg",
      "plain",
      "stopped",
    ]);
  });
  test("label_enable: only svc.enable=true", async () => {
    expect(short(await considered({ label_enable: true }))).toEqual(["enabled"]);
  });
  test("disable_containers", async () => {
    expect(short(await considered({ disable_containers: [fx.name("plain")] }))).toEqual(["enabled", "otherimg"]);
  });
  test("containers (positional names) restrict the cycle", async () => {
    const h = await makeUpdater({ containers: [fx.name("plain")], monitor_only: true });
    expect(short(names(await h.updater.run("api")))).toEqual(["plain"]);
  });
  test("scope: only containers labelled with it", async () => {
    expect(short(await considered({ scope: "blue" }))).toEqual(["scoped"]);
  });
  test("API filter by container name", async () => {
    expect(short(await considered({}, { container: [fx.name("enabled")] }))).toEqual(["enabled"]);
  });
  test("API filter by image prefix, on the written reference", async () => {
    expect(short(await considered({}, { image: [other.ref.replace(/:latest$/, "")] }))).toEqual(["otherimg"]);
  });
  test("a filter naming no container gives an empty report", async () => {
    const h = await makeUpdater({ containers: all, monitor_only: true });
    const report = await h.updater.run("api", { container: ["no-such-container"] });
    expect(report!.containers).toEqual([]);
    expect(report!.filter).toEqual({ container: ["no-such-container"], image: [] });
  });
  test("stale and fresh come from the registry; the report counts them", async () => {
    const h = await makeUpdater({ containers: all, monitor_only: true });
    const report = await h.updater.run("api");
    expect(entryOf(report, fx.name("plain")).state).toBe("stale");
    expect(entryOf(report, fx.name("otherimg")).state).toBe("fresh");
    expect(report!.counts).toMatchObject({ scanned: 3, stale: 2, fresh: 1 });
    expect(h.metrics.snapshot()).toMatchObject({
      svc_containers_scanned: 3,
      svc_containers_updated: 0,
      svc_containers_failed: 0,
    });
  });
});

describe("per-container options", () => {
  test("include_restarting picks a container in the restarting state", async () => {
    // exits at once: after a few restarts the engine's back-off keeps it "restarting" for seconds
    const img = fx.image("restarting", { changes: ['CMD ["/bin/sh","-c","exit 1"]'] });
    const app = fx.run("restarting", img.ref, { restart: "always" });
    fx.image("restarting");
    const backingOff = () => {
      const state = inspect(app);
      return state.State.Restarting === true && state.RestartCount >= 5;
    };
    await waitUntil(backingOff, 30_000, "restarting state");
    const without = await makeUpdater({ containers: [app], monitor_only: true });
    const h = await makeUpdater({ containers: [app], monitor_only: true, include_restarting: true });
    expect(names(await h.updater.run("api"))).toEqual([app]);
    await waitUntil(backingOff, 30_000, "restarting state");
    expect(names(await without.updater.run("api"))).toEqual([]);
  }, 60_000);

  test("svc.stop_signal and svc.stop_timeout labels; the container's own --stop-timeout wins", async () => {
    // SIGHUP ends the container after 2 s: far within the label's 20 s, but never before a 0 s
    // grace period's SIGKILL (a prompt exit raced that SIGKILL on a loaded machine)
    const img = fx.image("signal", {
      changes: ['CMD ["/bin/sh","-c","trap \\"sleep 2; exit 0\\" HUP; while true; do sleep 0.2; done"]'],
    });
    const byLabel = fx.run("signal", img.ref, { labels: { "svc.stop_signal": "SIGHUP", "svc.stop_timeout": "20s" } });
    const own = fx.run("own", img.ref, {
      stopTimeout: 0,
      labels: { "svc.stop_signal": "SIGHUP", "svc.stop_timeout": "20s" },
    });
    fx.image("signal");
    const h = await makeUpdater({ containers: [byLabel, own], stop_timeout: 30_000 });
    const recording = recordEvents([byLabel, own], ["kill"]);
    const report = await h.updater.run("api");
    expectState(report, byLabel, "updated");
    expectState(report, own, "updated");
    const kills = await recording.stop();
    // the label's SIGHUP ends it within the label's 20 s: no SIGKILL follows
    expect(kills.filter((e) => e.endsWith(`:${byLabel}`))).toEqual([`kill(1):${byLabel}`]);
    // the container's own stop timeout of 0 s wins over the label: SIGKILL right after SIGHUP
    expect(kills.filter((e) => e.endsWith(`:${own}`))).toEqual([`kill(1):${own}`, `kill(9):${own}`]);
  }, 60_000);

  test("labels override globals (svc.monitor_only=false, svc.no_pull=true) unless global_takes_precedence", async () => {
    const v1 = fx.image("labels");
    const app = fx.run("labels", v1.ref, { labels: { "svc.monitor_only": "false" } });
    const local = fx.image("labelslocal", { registry: "127.0.0.1:9", push: false });
    const offline = fx.run("labelslocal", local.ref, { labels: { "svc.no_pull": "true" } });
    const v2 = fx.image("labels");
    const local2 = fx.image("labelslocal", { registry: "127.0.0.1:9", push: false });

    const globalWins = await makeUpdater({
      containers: [app, offline],
      monitor_only: true,
      global_takes_precedence: true,
      registry_timeout: 2000,
    });
    const first = await globalWins.updater.run("api");
    expectState(first, app, "stale");
    expectState(first, offline, "skipped"); // no_pull label ignored: the unreachable registry is asked
    expect(inspect(app).Image).toBe(v1.id);

    const labelsWin = await makeUpdater({ containers: [app, offline], monitor_only: true });
    const second = await labelsWin.updater.run("api");
    expectState(second, app, "updated");
    expectState(second, offline, "stale"); // no_pull from its label, monitor_only from the global option
    expect(inspect(app).Image).toBe(v2.id);
    expect(inspect(offline).Image).toBe(local.id);
    expect(local2.id).not.toBe(local.id);
  }, 60_000);
});
