/** The fidelity corpus's judge must itself catch what an update must not change. */
import { describe, expect, test } from "bun:test";
import { disallowedDifferences } from "../../integration/engine/inspect-diff.ts";

async function fixture(name: string): Promise<{ container: any; image: any }> {
  return Bun.file(new URL(`./fixtures/${name}.json`, import.meta.url)).json();
}

/** As the engine does: the short-id (and hostname) aliases follow the container. */
function renameAlias(inspect: any, from: string, to: string): void {
  for (const endpoint of Object.values(inspect.NetworkSettings.Networks) as any[]) {
    endpoint.Aliases = endpoint.Aliases.map((a: string) => (a === from ? to : a));
  }
}

async function pair() {
  const { container, image } = await fixture("multi");
  const fresh = structuredClone(container);
  fresh.Id = "f".repeat(64);
  fresh.Created = "2030-01-01T00:00:00Z";
  fresh.State = { ...fresh.State, StartedAt: "2030-01-01T00:00:01Z", Pid: 4242 };
  renameAlias(fresh, container.Id.slice(0, 12), fresh.Id.slice(0, 12));
  return { old: container, fresh, image };
}

describe("disallowedDifferences", () => {
  test("ids, timestamps and state may change", async () => {
    const { old, fresh, image } = await pair();
    expect(disallowedDifferences({ old, new: fresh, oldImage: image, newImage: image })).toEqual([]);
  });

  test("a lost user env entry, a moved static IP, a lost alias and a changed restart policy are caught", async () => {
    const { old, fresh, image } = await pair();
    fresh.Config.Env = fresh.Config.Env.filter((e: string) => e !== "U=1");
    const net1 = Object.keys(fresh.NetworkSettings.Networks)[0]!;
    fresh.NetworkSettings.Networks[net1].IPAddress = "172.31.250.99";
    fresh.NetworkSettings.Networks[net1].Aliases = ["www", fresh.Id.slice(0, 12)];
    fresh.HostConfig.RestartPolicy = { Name: "no", MaximumRetryCount: 0 };
    expect(disallowedDifferences({ old, new: fresh, oldImage: image, newImage: image })).toEqual([
      'Config.Env.U: "1" -> "<missing>"',
      'HostConfig.RestartPolicy.Name: "unless-stopped" -> "no"',
      'NetworkSettings.Networks.engx-net1.Aliases[0]: "web" -> "www"',
      'NetworkSettings.Networks.engx-net1.Aliases[1]: "www" -> "<missing>"',
      'NetworkSettings.Networks.engx-net1.IPAddress: "172.31.250.10" -> "172.31.250.99"',
    ]);
  });

  test("a Config value may follow the new image only where the old one was the old image's", async () => {
    const { old, fresh, image } = await pair();
    const newImage = structuredClone(image);
    newImage.Config.Cmd = ["/bin/sleep", "1"];
    newImage.Config.Env = ["IMG_ONLY=v2", "IMG_OVERRIDDEN=v2", "PATH=/bin"];
    fresh.Config.Cmd = ["/bin/sleep", "1"];
    fresh.Config.Env = ["IMG_OVERRIDDEN=v2", "U=1", "PATH=/bin", "IMG_ONLY=v2"];
    // Cmd and IMG_ONLY came from the image: allowed. IMG_OVERRIDDEN was the user's: caught.
    expect(disallowedDifferences({ old, new: fresh, oldImage: image, newImage })).toEqual([
      'Config.Env.IMG_OVERRIDDEN: "user" -> "v2"',
    ]);
  });

  test("an engine-generated hostname may change, a user-set one may not", async () => {
    const { old, fresh, image } = await pair();
    fresh.Config.Hostname = fresh.Id.slice(0, 12);
    renameAlias(fresh, "myhost", fresh.Config.Hostname);
    expect(disallowedDifferences({ old, new: fresh, oldImage: image, newImage: image })).toEqual([
      `Config.Hostname: "myhost" -> "${fresh.Id.slice(0, 12)}"`,
    ]);
  });
});
