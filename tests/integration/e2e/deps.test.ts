/**
 * A sidecar sharing its network namespace with an app (`--network container:app`), as users run
 * VPN or proxy sidecars: when svc updates the app, the sidecar must end up running in the NEW
 * app container's network namespace (not in the dead one of the old container).
 *
 * While the app is watched, the sidecar is parked under its `.svc-old-` name with no container
 * under its own name: exactly what any other svc instance's startup recovery takes for a crash
 * leftover (recovery is not scoped), so on the shared engine these tests fail whenever another
 * svc starts at that moment. On a private engine they pass every time.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { docker, inspect } from "../../harness.ts";
import { baseFlags, containersByPrefix, Fixture, runSvc, stopAll } from "./support.ts";

const fx = new Fixture("e2e-deps");

afterAll(async () => {
  await stopAll();
  fx.cleanup();
}, 120_000);

const netns = (container: string) => docker(["exec", container, "/bin/busybox", "readlink", "/proc/1/ns/net"]).stdout;

describe("network_mode container:<app>", () => {
  test("updating the app restarts the sidecar into the new app's network namespace", async () => {
    const app = fx.name("app");
    const sidecar = fx.name("sidecar");
    const network = fx.network("net");
    fx.run("app", fx.image("app").ref, { network });
    fx.run("sidecar", fx.image("sidecar").ref, { network: `container:${app}` });
    expect(netns(sidecar)).toBe(netns(app));
    const v2 = fx.image("app");

    const run = await runSvc([...baseFlags(), "--run-once", app, sidecar]);
    expect(run.code, run.svc.describe()).toBe(0);
    expect(inspect(app).Image).toBe(v2.id);
    const side = inspect(sidecar);
    expect(side.State.Running, run.svc.describe()).toBe(true);
    expect(netns(sidecar), "the sidecar is not in the new app container's network namespace").toBe(netns(app));
    expect(Object.keys(containersByPrefix(fx.prefix)).sort()).toEqual([app, sidecar].sort());
  }, 90_000);

  test("updating the app alone (`svc --run-once app`) still takes its dependent sidecar along", async () => {
    const app = fx.name("app3");
    const sidecar = fx.name("sidecar3");
    fx.run("app3", fx.image("app3").ref);
    fx.run("sidecar3", fx.image("sidecar3").ref, { network: `container:${app}` });
    const v2 = fx.image("app3");
    const run = await runSvc([...baseFlags(), "--run-once", app]);
    expect(run.code, run.svc.describe()).toBe(0);
    expect(inspect(app).Image).toBe(v2.id);
    expect(inspect(sidecar).State.Running, run.svc.describe()).toBe(true);
    expect(netns(sidecar), "the sidecar was left in the removed container's network namespace").toBe(netns(app));
  }, 90_000);

  test("updating the sidecar alone keeps it attached to the app", async () => {
    const app = fx.name("app2");
    const sidecar = fx.name("sidecar2");
    fx.run("app2", fx.image("app2").ref);
    fx.run("sidecar2", fx.image("sidecar2").ref, { network: `container:${app}` });
    const v2 = fx.image("sidecar2");
    const run = await runSvc([...baseFlags(), "--run-once", sidecar]);
    expect(run.code, run.svc.describe()).toBe(0);
    const side = inspect(sidecar);
    expect(side.Image).toBe(v2.id);
    expect(side.State.Running).toBe(true);
    expect(netns(sidecar)).toBe(netns(app));
  }, 90_000);
});
