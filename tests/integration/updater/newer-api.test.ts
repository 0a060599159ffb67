/**
 * Settings only newer engines hold (API >= 1.48): a gateway priority, a mount of type image, the
 * MAC address of a second network. An update keeps them; with `docker.api_version` set below
 * what they need, the container is skipped with the settings named, and nothing is touched.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { compareApiVersions } from "../../../src/engine/clone.ts";
import { docker, expectState, Fixture, inspect, makeUpdater } from "./support.ts";

const fx = new Fixture();
afterAll(() => fx.cleanup(), 120_000);

const api = docker(["version", "--format", "{{.Server.APIVersion}}"]).stdout;
const MAC = "02:aa:bb:cc:dd:02";

describe.skipIf(compareApiVersions(api, "1.48") < 0)(`an engine speaking API ${api}`, () => {
  test("an update keeps the gateway priority, the image mount and the second network's MAC", async () => {
    const seed = fx.image("seed");
    const v1 = fx.image("app");
    const front = fx.network("front");
    const back = fx.network("back");
    const app = fx.run("app", v1.ref, {
      network: front,
      moreNetworks: { [back]: { gwPriority: 10, macAddress: MAC } },
      mounts: [{ Type: "image", Source: seed.ref, Target: "/seed" }],
    });
    const before = inspect(app);
    expect(before.NetworkSettings.Networks[back].GwPriority).toBe(10);
    const v2 = fx.image("app");

    const pinned = await makeUpdater({ containers: [app], docker: { api_version: "1.47" } });
    const skipped = expectState(await pinned.updater.run("api"), app, "skipped");
    expect(skipped.reason).toContain("a mount of type image needs API 1.48");
    expect(skipped.reason).toContain(`the gateway priority on network ${back} needs API 1.48`);
    expect(inspect(app).Id).toBe(before.Id);
    expect(pinned.audit.entries).toEqual([]);

    const h = await makeUpdater({ containers: [app] });
    expectState(await h.updater.run("api"), app, "updated");
    const after = inspect(app);
    expect(after.Image).toBe(v2.id);
    expect(after.NetworkSettings.Networks[back].GwPriority).toBe(10);
    expect(after.NetworkSettings.Networks[back].MacAddress).toBe(MAC);
    expect(after.NetworkSettings.Networks[front].GwPriority ?? 0).toBe(0);
    expect(after.HostConfig.Mounts).toEqual(before.HostConfig.Mounts);
    expect(after.ImageManifestDescriptor?.platform).toEqual(before.ImageManifestDescriptor?.platform);
    expect(docker(["exec", app, "ls", "/seed/bin/busybox"]).stdout).toBe("/seed/bin/busybox");
  }, 90_000);
});
