/**
 * replacementSpec on inspect JSON recorded from a real engine (API 1.41, Docker 20.10), with
 * image engx-fix:1 = ENV IMG_ONLY=v1 IMG_OVERRIDDEN=v1 PATH=/bin, LABEL img.version=v1
 * img.stable=yes, EXPOSE 8080, WORKDIR /, VOLUME /data, STOPSIGNAL SIGTERM, HEALTHCHECK,
 * CMD sleep 3600.
 */
import { describe, expect, test } from "bun:test";
import {
  isGeneratedHostname,
  normalizeLink,
  replacementSpec,
  sameValue,
  settingsBeyondApi,
} from "../../../src/engine/clone.ts";
import type { ContainerInspect, ImageInspect } from "../../../src/engine/port.ts";

interface Fixture {
  container: ContainerInspect;
  image: ImageInspect;
}

async function fixture(name: string): Promise<Fixture> {
  return (await Bun.file(new URL(`./fixtures/${name}.json`, import.meta.url)).json()) as Fixture;
}

const OLD_API = "1.41";
const NEW_API = "1.44";

function body(spec: ReturnType<typeof replacementSpec>): Record<string, any> {
  return spec.createBody as Record<string, any>;
}

describe("replacementSpec: what came from the image is dropped", () => {
  test("a container with no overrides keeps nothing from the old image's defaults", async () => {
    const { container, image } = await fixture("plain");
    const b = body(replacementSpec(container, image, { name: "engx-plain", image: "engx-fix:1", apiVersion: OLD_API }));
    for (const key of [
      "Cmd",
      "Entrypoint",
      "WorkingDir",
      "User",
      "Healthcheck",
      "StopSignal",
      "Labels",
      "ExposedPorts",
      "Volumes",
      "Hostname",
    ]) {
      expect(b[key]).toBeUndefined();
    }
    expect(b.Env).toEqual([]);
    expect(b.Image).toBe("engx-fix:1");
  });

  test("a healthcheck is compared field by field: a user interval stays, the image's test command goes", async () => {
    const { container, image } = await fixture("plain");
    const imageCheck = (image.Config as any).Healthcheck;
    expect(imageCheck?.Test?.length).toBeGreaterThan(0);
    const merged = structuredClone(container) as any;
    merged.Config.Healthcheck = { ...imageCheck, Interval: 7_000_000_000 };
    const b = body(replacementSpec(merged, image, { name: "engx-plain", image: "engx-fix:1", apiVersion: OLD_API }));
    expect(b.Healthcheck).toEqual({ Interval: 7_000_000_000 });
  });

  test("a user healthcheck command and --no-healthcheck are kept", async () => {
    const { container, image } = await fixture("plain");
    for (const check of [{ Test: ["CMD-SHELL", "true"] }, { Test: ["NONE"] }]) {
      const custom = structuredClone(container) as any;
      custom.Config.Healthcheck = { ...(image.Config as any).Healthcheck, ...check };
      const b = body(replacementSpec(custom, image, { name: "engx-plain", image: "engx-fix:1", apiVersion: OLD_API }));
      expect(b.Healthcheck).toEqual(check);
    }
  });

  test("user env entries, user labels and compose labels stay; image entries go one by one", async () => {
    const { container, image } = await fixture("multi");
    const b = body(replacementSpec(container, image, { name: "engx-multi", image: "engx-fix:1", apiVersion: OLD_API }));
    expect(b.Env).toEqual(["IMG_OVERRIDDEN=user", "U=1"]);
    expect(b.Labels).toEqual({ "com.docker.compose.project": "p", "img.stable": "user" });
    // the -p 80 port is the user's; the image's EXPOSE 8080 is not
    expect(b.ExposedPorts).toEqual({ "80/tcp": {} });
    expect(b.Cmd).toBeUndefined();
  });

  test("a user entrypoint keeps the user's Cmd exactly, and user workdir and user stay", async () => {
    const { container, image } = await fixture("entry");
    const b = body(replacementSpec(container, image, { name: "engx-entry", image: "engx-fix:1", apiVersion: OLD_API }));
    expect(b.Entrypoint).toEqual(["/bin/sleep"]);
    expect(b.Cmd).toEqual(["3000"]);
    expect(b.WorkingDir).toBe("/tmp");
    expect(b.User).toBe("1000:1000");
  });

  test("with a user entrypoint, a Cmd equal to the image's is still kept (the engine would not merge it)", async () => {
    const { container, image } = await fixture("entry");
    const c = structuredClone(container);
    c.Config.Cmd = [...(image.Config.Cmd ?? [])];
    const b = body(replacementSpec(c, image, { name: "x", image: "engx-fix:1", apiVersion: OLD_API }));
    expect(b.Cmd).toEqual(image.Config.Cmd);
  });

  test("without the old image nothing can be told apart, so everything but the generated hostname is kept", async () => {
    const { container } = await fixture("plain");
    const b = body(replacementSpec(container, null, { name: "engx-plain", image: "engx-fix:2", apiVersion: OLD_API }));
    expect(b.Cmd).toEqual(container.Config.Cmd);
    expect(b.Env).toEqual(container.Config.Env);
    expect(b.Hostname).toBeUndefined();
    expect(b.Image).toBe("engx-fix:2");
  });
});

describe("replacementSpec: host config", () => {
  test("the host config is carried whole: binds, port bindings, restart policy", async () => {
    const { container, image } = await fixture("multi");
    const b = body(replacementSpec(container, image, { name: "engx-multi", image: "engx-fix:1", apiVersion: OLD_API }));
    expect(b.HostConfig.PortBindings).toEqual({ "80/tcp": [{ HostIp: "127.0.0.1", HostPort: "18081" }] });
    expect(b.HostConfig.RestartPolicy).toEqual({ Name: "unless-stopped", MaximumRetryCount: 0 });
    expect(b.HostConfig.NetworkMode).toBe("engx-net1");
    expect(b.HostConfig.MaskedPaths).toEqual(container.HostConfig.MaskedPaths);
  });

  test("an anonymous volume is mounted again by name so its data survives; named volumes and binds stay as written", async () => {
    const { container, image } = await fixture("entry");
    const anonymous = container.Mounts.find((m) => m.Destination === "/data")!;
    const b = body(replacementSpec(container, image, { name: "engx-entry", image: "engx-fix:1", apiVersion: OLD_API }));
    expect(b.HostConfig.Binds).toEqual(["engx-vol:/named", "/tmp:/bind:ro"]);
    expect(b.HostConfig.Mounts).toEqual([{ Type: "volume", Source: anonymous.Name, Target: "/data" }]);
  });

  test("network_mode container:<id> becomes container:<name> of the container named by the updater", async () => {
    const { container, image } = await fixture("cmode");
    const b = body(
      replacementSpec(container, image, {
        name: "engx-cmode",
        image: "engx-fix:1",
        networkContainer: "engx-multi",
        apiVersion: OLD_API,
      }),
    );
    expect(b.HostConfig.NetworkMode).toBe("container:engx-multi");
    // inherited from the other container: the engine refuses these in this mode
    expect(b.Hostname).toBeUndefined();
    expect(b.ExposedPorts).toBeUndefined();
    expect(b.NetworkingConfig).toBeUndefined();
  });

  test("network_mode container:<id> without a name is refused rather than guessed", async () => {
    const { container, image } = await fixture("cmode");
    expect(() =>
      replacementSpec(container, image, { name: "engx-cmode", image: "engx-fix:1", apiVersion: OLD_API }),
    ).toThrow(/must be named/);
  });

  test("links in inspect form (/target:/container/alias) lose the old container's name", () => {
    expect(normalizeLink("/db:/web/database")).toBe("db:database");
    expect(normalizeLink("db:database")).toBe("db:database");
    expect(normalizeLink("/db")).toBe("db:db");
  });
});

describe("replacementSpec: networks", () => {
  test("API < 1.44: the first network at create, the others connected after, with static IPs and user aliases only", async () => {
    const { container, image } = await fixture("multi");
    const spec = replacementSpec(container, image, { name: "engx-multi", image: "engx-fix:1", apiVersion: OLD_API });
    expect(body(spec).NetworkingConfig).toEqual({
      EndpointsConfig: { "engx-net1": { IPAMConfig: { IPv4Address: "172.31.250.10" }, Aliases: ["web", "www"] } },
    });
    expect(spec.extraNetworks).toEqual([
      { network: "engx-net2", endpoint: { IPAMConfig: { IPv4Address: "172.31.251.20" }, Aliases: ["api"] } },
    ]);
  });

  test("a NetworkMode naming the network by id still puts that network first", async () => {
    const { container, image } = await fixture("multi");
    const c = structuredClone(container);
    const net2Id = c.NetworkSettings.Networks["engx-net2"]!.NetworkID;
    c.HostConfig.NetworkMode = net2Id.slice(0, 12);
    const spec = replacementSpec(c, image, { name: "engx-multi", image: "engx-fix:1", apiVersion: OLD_API });
    expect(Object.keys(body(spec).NetworkingConfig.EndpointsConfig)).toEqual([net2Id.slice(0, 12)]);
    expect(body(spec).HostConfig.NetworkMode).toBe(net2Id.slice(0, 12));
    expect(spec.extraNetworks.map((n) => n.network)).toEqual(["engx-net1"]);
  });

  test("API >= 1.44: every network at create", async () => {
    const { container, image } = await fixture("multi");
    const spec = replacementSpec(container, image, { name: "engx-multi", image: "engx-fix:1", apiVersion: NEW_API });
    expect(Object.keys(body(spec).NetworkingConfig.EndpointsConfig)).toEqual(["engx-net1", "engx-net2"]);
    expect(spec.extraNetworks).toEqual([]);
  });

  test("the short-id alias (also the generated hostname) is dropped, links on a user network are kept", async () => {
    const { container, image } = await fixture("link");
    const spec = replacementSpec(container, image, { name: "engx-link", image: "engx-fix:1", apiVersion: OLD_API });
    expect(body(spec).NetworkingConfig).toEqual({ EndpointsConfig: { "engx-net1": { Links: ["engx-plain:db"] } } });
  });

  test("a user MAC goes to Config.MacAddress below API 1.44 and to the first endpoint from 1.44; a generated one never", async () => {
    const { container, image } = await fixture("multi");
    expect(
      body(replacementSpec(container, image, { name: "m", image: "i", apiVersion: OLD_API })).MacAddress,
    ).toBeUndefined();
    const withMac = structuredClone(container);
    (withMac.Config as any).MacAddress = "02:42:ac:1f:fa:99";
    const old = body(replacementSpec(withMac, image, { name: "m", image: "i", apiVersion: OLD_API }));
    expect(old.MacAddress).toBe("02:42:ac:1f:fa:99");
    const next = replacementSpec(withMac, image, { name: "m", image: "i", apiVersion: NEW_API });
    expect(body(next).MacAddress).toBeUndefined();
    expect(body(next).NetworkingConfig.EndpointsConfig["engx-net1"].MacAddress).toBe("02:42:ac:1f:fa:99");
    expect(body(next).NetworkingConfig.EndpointsConfig["engx-net2"].MacAddress).toBeUndefined();
  });

  test("host and none modes carry no endpoint settings", async () => {
    const { container, image } = await fixture("entry");
    expect(container.HostConfig.NetworkMode).toBe("none");
    const spec = replacementSpec(container, image, { name: "e", image: "i", apiVersion: OLD_API });
    expect(body(spec).NetworkingConfig).toBeUndefined();
    expect(body(spec).HostConfig.NetworkMode).toBe("none");
    const host = structuredClone(container);
    host.HostConfig.NetworkMode = "host";
    host.Config.Hostname = "the-host-name";
    host.NetworkSettings.Networks = { host: { Aliases: null } as any };
    const hostBody = body(replacementSpec(host, image, { name: "e", image: "i", apiVersion: OLD_API }));
    expect(hostBody.NetworkingConfig).toBeUndefined();
    expect(hostBody.Hostname).toBeUndefined();
  });

  test("driver options and IPv6 static addresses are carried", async () => {
    const { container, image } = await fixture("multi");
    const c = structuredClone(container);
    const net2 = c.NetworkSettings.Networks["engx-net2"]!;
    net2.IPAMConfig = { IPv4Address: "172.31.251.20", IPv6Address: "fd00::20" } as any;
    (net2 as any).DriverOpts = { "com.example.opt": "1" };
    const spec = replacementSpec(c, image, { name: "engx-multi", image: "engx-fix:1", apiVersion: OLD_API });
    expect(spec.extraNetworks[0]!.endpoint).toEqual({
      IPAMConfig: { IPv4Address: "172.31.251.20", IPv6Address: "fd00::20" },
      Aliases: ["api"],
      DriverOpts: { "com.example.opt": "1" },
    });
  });
});

describe("replacementSpec: settings of newer engines", () => {
  const API_148 = "1.48";

  test("a random MAC on another network is kept from 1.44 (configured and generated look alike); one derived from the address is not", async () => {
    const { container, image } = await fixture("multi");
    const random = structuredClone(container);
    (random.NetworkSettings.Networks as any)["engx-net2"].MacAddress = "3a:11:22:33:44:55";
    const next = body(replacementSpec(random, image, { name: "m", image: "i", apiVersion: NEW_API }));
    expect(next.NetworkingConfig.EndpointsConfig["engx-net2"].MacAddress).toBe("3a:11:22:33:44:55");
    const derived = body(replacementSpec(container, image, { name: "m", image: "i", apiVersion: NEW_API }));
    expect(derived.NetworkingConfig.EndpointsConfig["engx-net2"].MacAddress).toBeUndefined();
  });

  test("a gateway priority is carried from API 1.48, and refused as a lost setting below it", async () => {
    const { container, image } = await fixture("multi");
    const prioritised = structuredClone(container);
    (prioritised.NetworkSettings.Networks as any)["engx-net2"].GwPriority = 10;
    const spec = body(replacementSpec(prioritised, image, { name: "m", image: "i", apiVersion: API_148 }));
    expect(spec.NetworkingConfig.EndpointsConfig["engx-net2"].GwPriority).toBe(10);
    expect(spec.NetworkingConfig.EndpointsConfig["engx-net1"].GwPriority).toBeUndefined();
    expect(settingsBeyondApi(prioritised, API_148)).toEqual([]);
    expect(settingsBeyondApi(prioritised, "1.47")).toEqual([
      "the gateway priority on network engx-net2 needs API 1.48",
    ]);
    expect(settingsBeyondApi(container, "1.41")).toEqual([]);
  });

  test("a network Docker 28 lists twice (under the id the user gave and under its name) is attached once, under the id the user gave", async () => {
    const { container, image } = await fixture("multi");
    const twice = structuredClone(container) as any;
    const net1 = twice.NetworkSettings.Networks["engx-net1"];
    const idPrefix = String(net1.NetworkID).slice(0, 12);
    twice.NetworkSettings.Networks = { [idPrefix]: net1, ...twice.NetworkSettings.Networks };
    twice.HostConfig.NetworkMode = idPrefix;
    const spec = body(replacementSpec(twice, image, { name: "m", image: "i", apiVersion: NEW_API }));
    expect(Object.keys(spec.NetworkingConfig.EndpointsConfig).sort()).toEqual([idPrefix, "engx-net2"].sort());
    expect(spec.HostConfig.NetworkMode).toBe(idPrefix);
  });

  test("an image mount needs API 1.48", async () => {
    const { container } = await fixture("plain");
    const withImageMount = structuredClone(container);
    (withImageMount.HostConfig as any).Mounts = [{ Type: "image", Source: "data:1", Target: "/seed" }];
    expect(settingsBeyondApi(withImageMount, "1.47")).toEqual(["a mount of type image needs API 1.48"]);
    expect(settingsBeyondApi(withImageMount, "1.51")).toEqual([]);
  });

  test("compose's image label names the new image id; other containers get no such label", async () => {
    const { container, image } = await fixture("plain");
    const composed = structuredClone(container);
    (composed.Config as any).Labels = { ...(composed.Config as any).Labels, "com.docker.compose.image": "sha256:old" };
    const spec = body(
      replacementSpec(composed, image, { name: "c", image: "i", apiVersion: OLD_API, imageId: "sha256:new" }),
    );
    expect(spec.Labels["com.docker.compose.image"]).toBe("sha256:new");
    const plain = body(
      replacementSpec(container, image, { name: "c", image: "i", apiVersion: OLD_API, imageId: "sha256:new" }),
    );
    expect(plain.Labels?.["com.docker.compose.image"]).toBeUndefined();
  });

  test("the platform is the one the engine recorded for the container, else its image's", async () => {
    const { container, image } = await fixture("plain");
    expect(replacementSpec(container, image, { name: "c", image: "i", apiVersion: OLD_API }).platform).toBe(
      `${image.Os}/${image.Architecture}`,
    );
    const recorded = structuredClone(container) as any;
    recorded.ImageManifestDescriptor = {
      digest: "sha256:x",
      platform: { os: "linux", architecture: "arm64", variant: "v8" },
    };
    expect(replacementSpec(recorded, image, { name: "c", image: "i", apiVersion: "1.48" }).platform).toBe(
      "linux/arm64/v8",
    );
    expect(replacementSpec(container, null, { name: "c", image: "i", apiVersion: OLD_API }).platform).toBeUndefined();
  });
});

describe("helpers", () => {
  test("the generated hostname is the short id", async () => {
    const { container } = await fixture("plain");
    expect(isGeneratedHostname(container)).toBe(true);
    expect(isGeneratedHostname((await fixture("multi")).container)).toBe(false);
  });

  test("sameValue treats null, empty list and empty object as unset, and compares deeply", () => {
    expect(sameValue(null, [])).toBe(true);
    expect(sameValue(undefined, {})).toBe(true);
    expect(sameValue(["a"], ["a"])).toBe(true);
    expect(sameValue(["a"], ["b"])).toBe(false);
    expect(sameValue({ Test: ["CMD", "true"], Interval: 1 }, { Interval: 1, Test: ["CMD", "true"] })).toBe(true);
    expect(sameValue("", null)).toBe(false);
  });
});
