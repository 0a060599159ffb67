/** Dependency ordering, observed through the engine's own event stream. */
import { afterAll, describe, expect, test } from "bun:test";
import { entryOf, expectState, Fixture, inspect, makeUpdater, recordEvents } from "./support.ts";

const fx = new Fixture();
afterAll(() => fx.cleanup(), 120_000);

describe("dependency order", () => {
  test("links, svc.depends_on and compose depends_on: dependents stopped first, started last, restarted for the dependency", async () => {
    const dbImage = fx.image("db");
    const appImage = fx.image("web");
    const net = fx.network("net");
    const db = fx.run("db", dbImage.ref, {
      network: net,
      labels: { "com.docker.compose.project": fx.prefix, "com.docker.compose.service": "database" },
    });
    const web = fx.run("web", appImage.ref, { network: net, links: [`${db}:db`] });
    const proxy = fx.run("proxy", appImage.ref, { network: net, labels: { "svc.depends_on": web } });
    const worker = fx.run("worker", appImage.ref, {
      network: net,
      labels: {
        "com.docker.compose.project": fx.prefix,
        "com.docker.compose.depends_on": "database:service_started:false",
      },
    });
    const webBefore = inspect(web).Id;
    const newDb = fx.image("db");

    const h = await makeUpdater({ containers: [db, web, proxy, worker] });
    const recording = recordEvents([db, web, proxy, worker], ["stop", "start"]);
    const report = await h.updater.run("api");
    const events = await recording.stop();

    expectState(report, db, "updated");
    for (const name of [web, proxy, worker]) {
      expectState(report, name, "fresh");
      expect(entryOf(report, name).reason).toBe("restarted for dependency");
      expect(inspect(name).State.Running).toBe(true);
    }
    expect(inspect(web).Id).toBe(webBefore);
    expect(inspect(db).Image).toBe(newDb.id);

    const at = (event: string) => {
      const index = events.indexOf(event);
      if (index < 0) throw new Error(`${event} is not among the engine's events: ${events.join(", ")}`);
      return index;
    };
    // stops: every dependent before what it depends on; starts: the other way round
    expect(at(`stop:${proxy}`)).toBeLessThan(at(`stop:${web}`));
    expect(at(`stop:${web}`)).toBeLessThan(at(`stop:${db}`));
    expect(at(`stop:${worker}`)).toBeLessThan(at(`stop:${db}`));
    expect(at(`start:${db}`)).toBeLessThan(at(`start:${web}`));
    expect(at(`start:${web}`)).toBeLessThan(at(`start:${proxy}`));
    expect(at(`start:${db}`)).toBeLessThan(at(`start:${worker}`));
    expect(at(`stop:${db}`)).toBeLessThan(at(`start:${db}`));
    expect(h.metrics.snapshot()).toMatchObject({
      svc_containers_scanned: 4,
      svc_containers_updated: 1,
      svc_containers_failed: 0,
    });
  }, 90_000);

  test("a dependency cycle skips its members, naming the cycle; others are still updated", async () => {
    const image = fx.image("cyc");
    const a = fx.run("cyc-a", image.ref, { labels: { "svc.depends_on": fx.name("cyc-b") } });
    const b = fx.run("cyc-b", image.ref, { labels: { "svc.depends_on": fx.name("cyc-a") } });
    const c = fx.run("cyc-c", image.ref);
    const newer = fx.image("cyc");
    const h = await makeUpdater({ containers: [a, b, c] });
    const report = await h.updater.run("api");
    expectState(report, a, "skipped");
    expect(entryOf(report, a).reason).toBe(`dependency cycle: ${a} -> ${b} -> ${a}`);
    expectState(report, b, "skipped");
    expectState(report, c, "updated");
    expect(inspect(c).Image).toBe(newer.id);
    expect(inspect(a).Image).toBe(image.id);
  }, 60_000);

  test("network_mode container:X: the dependent is recreated to join the new X, on its own image", async () => {
    const hostImage = fx.image("nethost");
    const sideImage = fx.image("netside");
    const net = fx.network("pairnet");
    const host = fx.run("nethost", hostImage.ref, { network: net, aliases: ["front"] });
    const side = fx.run("netside", sideImage.ref, { network: `container:${host}`, env: { ROLE: "sidecar" } });
    const sideBefore = inspect(side);
    const newHost = fx.image("nethost");

    const h = await makeUpdater({ containers: [host, side] });
    const report = await h.updater.run("api");
    expectState(report, host, "updated");
    expectState(report, side, "fresh");
    expect(entryOf(report, side).reason).toBe("restarted for dependency");

    const hostAfter = inspect(host);
    const sideAfter = inspect(side);
    expect(hostAfter.Image).toBe(newHost.id);
    expect(hostAfter.NetworkSettings.Networks[net].Aliases).toContain("front");
    expect(sideAfter.Id).not.toBe(sideBefore.Id);
    expect(sideAfter.Image).toBe(sideImage.id);
    expect(sideAfter.State.Running).toBe(true);
    expect(sideAfter.HostConfig.NetworkMode).toBe(`container:${hostAfter.Id}`);
    expect(sideAfter.Config.Env).toContain("ROLE=sidecar");
    expect(entryOf(report, side).id).toBe(sideAfter.Id);
  }, 60_000);

  test("independent containers are updated in the same cycle, each on its new image", async () => {
    const images = [1, 2, 3, 4, 5].map((i) => fx.image(`par${i}`));
    const containers = images.map((img, i) => fx.run(`par${i + 1}`, img.ref));
    const newer = [1, 2, 3, 4, 5].map((i) => fx.image(`par${i}`));
    const h = await makeUpdater({ containers });
    const report = await h.updater.run("api");
    expect(report!.counts.updated).toBe(5);
    for (const [i, name] of containers.entries()) expect(inspect(name).Image).toBe(newer[i]!.id);
  }, 90_000);
});
