/** Updates against the sandbox engine and registry: what a user sees after a cycle. */
import { afterAll, describe, expect, test } from "bun:test";
import { sandbox } from "../../harness.ts";
import { containersByPrefix, docker, entryOf, expectState, Fixture, inspect, makeUpdater } from "./support.ts";

const fx = new Fixture();
afterAll(() => fx.cleanup(), 120_000);

describe("an update", () => {
  test("changes the image, keeps the configuration, removes the old container; report, metrics and audit", async () => {
    const v1 = fx.image("app");
    const fresh = fx.image("fresh");
    const net = fx.network("net");
    const app = fx.run("app", v1.ref, {
      network: net,
      restart: "unless-stopped",
      hostname: "apphost",
      aliases: ["web"],
      labels: { team: "blue" },
      env: { MODE: "prod" },
      binds: [`${fx.name("data")}:/data`],
    });
    const same = fx.run("same", fresh.ref);
    const before = inspect(app);
    const v2 = fx.image("app");

    const h = await makeUpdater({ containers: [app, same] });
    const report = await h.updater.run("api");

    const entry = entryOf(report, app);
    expect(entry.state).toBe("updated");
    expect(entry.reason).toBeNull();
    expect(entry.old_image_id).toBe(v1.id);
    expect(entry.new_image_id).toBe(v2.id);
    expect(entry.new_digest).toBe(v2.digest);
    expect(entry.old_digest).toBe(v1.digest);
    expectState(report, same, "fresh");

    const after = inspect(app);
    expect(after.Id).toBe(entry.id);
    expect(after.Id).not.toBe(before.Id);
    expect(after.Image).toBe(v2.id);
    expect(after.State.Running).toBe(true);
    expect(after.Config.Env).toContain("MODE=prod");
    expect(after.Config.Labels.team).toBe("blue");
    expect(after.Config.Hostname).toBe("apphost");
    expect(after.HostConfig.RestartPolicy.Name).toBe("unless-stopped");
    expect(after.NetworkSettings.Networks[net].Aliases).toContain("web");
    expect(after.Mounts.map((m: any) => m.Name)).toContain(fx.name("data"));
    expect(Object.keys(containersByPrefix(app))).toEqual([app]);

    expect(report!.counts).toEqual({
      scanned: 2,
      updated: 1,
      failed: 0,
      skipped: 0,
      fresh: 1,
      stale: 0,
      pending: 0,
      rolled_back: 0,
      held: 0,
    });
    expect(h.metrics.snapshot()).toEqual({
      svc_scans_total: 1,
      svc_scans_skipped: 0,
      svc_containers_scanned: 2,
      svc_containers_updated: 1,
      svc_containers_failed: 0,
    });
    expect(h.published.map((r) => r.id)).toEqual([report!.id]);
    const actions = h.audit.entries.filter((e) => e.container === app).map((e) => e.action);
    expect(actions).toEqual(["pull", "rename", "stop", "create", "start", "remove"]);
    expect(h.audit.entries.every((e) => e.session_id === report!.id && e.trigger === "api" && !e.error)).toBe(true);
    docker(["volume", "rm", "-f", fx.name("data")], { allowFailure: true });
  }, 60_000);

  test("monitor_only reports stale and changes nothing", async () => {
    const v1 = fx.image("mon");
    const app = fx.run("mon", v1.ref);
    const before = inspect(app);
    const v2 = fx.image("mon");
    const h = await makeUpdater({ containers: [app], monitor_only: true });
    const report = await h.updater.run("api");
    const entry = entryOf(report, app);
    expect(entry.state).toBe("stale");
    expect(entry.new_digest).toBe(v2.digest);
    expect(inspect(app).Id).toBe(before.Id);
    expect(inspect(app).Image).toBe(v1.id);
    expect(h.metrics.snapshot().svc_containers_updated).toBe(0);
    expect(h.audit.entries).toEqual([]);
  }, 60_000);

  test("the svc.monitor_only label does the same for one container", async () => {
    const v1 = fx.image("monl");
    const app = fx.run("monl", v1.ref, { labels: { "svc.monitor_only": "true" } });
    fx.image("monl");
    const h = await makeUpdater({ containers: [app] });
    expectState(await h.updater.run("api"), app, "stale");
    expect(inspect(app).Image).toBe(v1.id);
  }, 60_000);

  test("no_pull updates from the local image for the tag, without asking the registry", async () => {
    // a registry that does not exist: any registry request would fail the check
    const v1 = fx.image("local", { registry: "127.0.0.1:9", push: false });
    const app = fx.run("local", v1.ref);
    const v2 = fx.image("local", { registry: "127.0.0.1:9", push: false });

    const withoutNoPull = await makeUpdater({ containers: [app], registry_timeout: 2000 });
    const skipped = entryOf(await withoutNoPull.updater.run("api"), app);
    expect(skipped.state).toBe("skipped");
    expect(skipped.reason).toBeTruthy();

    const h = await makeUpdater({ containers: [app], no_pull: true });
    const entry = entryOf(await h.updater.run("api"), app);
    expect(entry.state).toBe("updated");
    expect(inspect(app).Image).toBe(v2.id);
    expect(h.audit.entries.some((e) => e.action === "pull")).toBe(false);
  }, 60_000);

  test("a container pinned by digest is skipped", async () => {
    const v1 = fx.image("pin");
    const pinnedRef = `${v1.ref.replace(/:latest$/, "")}@${v1.digest}`;
    docker(["pull", "-q", pinnedRef]);
    const app = fx.run("pin", pinnedRef);
    fx.image("pin");
    const h = await makeUpdater({ containers: [app] });
    const entry = entryOf(await h.updater.run("api"), app);
    expect(entry.state).toBe("skipped");
    expect(entry.reason).toBe("pinned by digest");
  }, 60_000);

  test("cleanup removes the old image once no container uses it", async () => {
    const v1 = fx.image("clean");
    const app = fx.run("clean", v1.ref);
    const v2 = fx.image("clean");
    const h = await makeUpdater({ containers: [app], cleanup: true });
    expectState(await h.updater.run("api"), app, "updated");
    expect(docker(["image", "inspect", v1.id], { allowFailure: true }).code).not.toBe(0);
    expect(docker(["image", "inspect", v2.id]).code).toBe(0);
    expect(h.audit.entries.filter((e) => e.action === "image_remove").map((e) => e.image)).toEqual([v1.id]);
  }, 60_000);

  test("a stopped container is updated and started only with revive_stopped", async () => {
    const v1 = fx.image("stopped");
    const app = fx.run("stopped", v1.ref);
    docker(["stop", "-t", "0", app]);
    const v2 = fx.image("stopped");
    const without = await makeUpdater({ containers: [app] });
    expect((await without.updater.run("api"))!.containers).toEqual([]);
    const h = await makeUpdater({ containers: [app], revive_stopped: true });
    expectState(await h.updater.run("api"), app, "updated");
    const after = inspect(app);
    expect(after.Image).toBe(v2.id);
    expect(after.State.Running).toBe(true);
  }, 60_000);

  test("credentials of an authenticated registry are used for the pull", async () => {
    const { authRegistry, authUser, authPass } = sandbox();
    const v1 = fx.image("auth", { registry: authRegistry });
    const app = fx.run("auth", v1.ref);
    const v2 = fx.image("auth", { registry: authRegistry });
    docker(["rmi", v2.ref]); // the engine must really pull it
    const h = await makeUpdater({
      containers: [app],
      registry_credentials: [{ host: authRegistry, username: authUser, password: authPass }],
    });
    const entry = entryOf(await h.updater.run("api"), app);
    expect(entry.state).toBe("updated");
    expect(inspect(app).Image).toBe(v2.id);
  }, 60_000);
});
