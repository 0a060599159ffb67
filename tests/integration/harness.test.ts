/**
 * The harness itself. A container the fixture made is seen by svc's engine client; and the
 * fixture's `run` (tests/support/fixture.ts: typed options into the create request the docker CLI
 * sends) makes what the CLI's own `docker run` of the same flags makes, so that the defaults it
 * sends stay honest: `docker inspect` of both is the same but for what the engine makes anew each
 * time (IDs, times, addresses, paths, an anonymous volume's name).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { defaultConfig } from "../../src/config/index.ts";
import { compareApiVersions } from "../../src/engine/clone.ts";
import { createDockerEngine } from "../../src/engine/index.ts";
import { silentLogger } from "../../src/log/index.ts";
import { docker, inspect, removeContainers, sandbox } from "../harness.ts";
import { EngineFixture, type RunOptions } from "../support/fixture.ts";

const fx = new EngineFixture("harness");
let image = "";
let network = "";
let peer = "";
let volume = "";
let bind = "";
beforeAll(() => {
  image = fx.image("app").ref;
  network = fx.network("net");
  volume = fx.volume("data");
  bind = fx.tempDir("bind");
  peer = fx.run("peer", image, { network });
});
afterAll(() => fx.cleanup());

test("a container created from a pushed image is seen by svc's engine client", async () => {
  const pushed = fx.image("seen");
  expect(pushed.digest).toMatch(/^sha256:[0-9a-f]{64}$/);
  const name = fx.run("seen", pushed.ref);

  const engine = await createDockerEngine(
    { ...defaultConfig().docker, host: `unix://${sandbox().socketPath}` },
    silentLogger,
  );
  const info = await engine.inspectContainer(name);
  expect(info.Name).toBe(`/${name}`);
  expect(info.State.Running).toBe(true);
  expect(info.Image).toBe(pushed.id);
});

test("an image only the registry has is pulled first, as `docker run` does", () => {
  const pushed = fx.image("pulled");
  docker(["rmi", "-f", pushed.ref]);
  const name = fx.run("pulled", pushed.ref);
  expect(inspect(name).Image).toBe(pushed.id);
  expect(inspect(name).State.Running).toBe(true);
});

/** The same container made by the CLI's `docker run -d` of `flags`, then by the fixture of `options`. */
function bothWays(flags: string[], options: RunOptions, cmd: string[] = []): { cli: unknown; fixture: unknown } {
  const viaCli = fx.name("cli");
  docker(["run", "-d", "--name", viaCli, ...flags, image, ...cmd]);
  const cli = comparable(viaCli);
  // one after the other: a published port is taken by one at a time
  removeContainers(viaCli);
  const viaFixture = fx.run("typed", image, { ...options, cmd });
  const fixture = comparable(viaFixture);
  removeContainers(viaFixture);
  return { cli, fixture };
}

const NETWORK_FIELDS_MADE_ANEW = [
  "NetworkID",
  "EndpointID",
  "Gateway",
  "IPAddress",
  "IPPrefixLen",
  "IPv6Gateway",
  "GlobalIPv6Address",
  "GlobalIPv6PrefixLen",
  "MacAddress",
  "DNSNames",
];

/** `docker inspect` without what differs from one container to the next of the same settings. */
function comparable(name: string): any {
  const info = inspect(name);
  const text = JSON.stringify(info)
    .replaceAll(info.Id, "<id>")
    .replaceAll(info.Id.slice(0, 12), "<id>")
    .replaceAll(name, "<name>");
  const copy = JSON.parse(text);
  for (const key of [
    "Created",
    "State",
    "ResolvConfPath",
    "HostnamePath",
    "HostsPath",
    "LogPath",
    "GraphDriver",
    "Storage",
  ])
    delete copy[key];
  // the CLI gathers -e and -v through a Go map: what a container is given, not its order, must agree
  copy.Config?.Env?.sort();
  copy.HostConfig?.Binds?.sort();
  copy.Mounts?.sort((a: { Destination: string }, b: { Destination: string }) =>
    a.Destination.localeCompare(b.Destination),
  );
  for (const mount of copy.Mounts ?? [])
    if (mount.Type === "volume" && /^[0-9a-f]{64}$/.test(mount.Name)) mount.Name = mount.Source = "<anonymous>";
  for (const settings of Object.values<Record<string, unknown>>(copy.NetworkSettings?.Networks ?? {}))
    for (const key of NETWORK_FIELDS_MADE_ANEW) {
      // a MAC address the test chose is the test's, not the engine's
      if (key === "MacAddress" && settings[key] === MAC) continue;
      delete settings[key];
    }
  for (const key of [
    ...NETWORK_FIELDS_MADE_ANEW,
    "SandboxID",
    "SandboxKey",
    "Ports",
    "Bridge",
    "HairpinMode",
    "LinkLocalIPv6Address",
    "LinkLocalIPv6PrefixLen",
    "SecondaryIPAddresses",
    "SecondaryIPv6Addresses",
  ])
    delete copy.NetworkSettings?.[key];
  return copy;
}

const MAC = "02:aa:bb:cc:dd:03";

describe("the fixture's `run` makes what the CLI's `docker run` of the same flags makes", () => {
  test("nothing given but the fixture's own: no network", () => {
    const { cli, fixture } = bothWays(["--network", "none"], {});
    expect(fixture).toEqual(cli);
  });

  test("every setting the tests give, on a user network", () => {
    const { cli, fixture } = bothWays(
      [
        ...["--network", network, "--network-alias", "web", "--network-alias", "w2", "--link", `${peer}:db`],
        ...["-l", "svc.scope=x", "--label", "team=blue", "-e", "MODE=prod", "--env=EMPTY="],
        ...["--restart", "on-failure:3", "--hostname", "apphost", "--user", "65534:65534", "--init", "-t"],
        ...["-v", `${volume}:/data`, "-v", `${bind}:/host:ro`, "-v", "/anon", "-p", "127.0.0.1:0:8080"],
        ...["--health-cmd", "test ! -e /broken", "--health-interval", "1s", "--health-timeout", "2s"],
        ...["--health-retries", "1", "--stop-timeout", "0", "--stop-signal", "SIGUSR1"],
      ],
      {
        network,
        aliases: ["web", "w2"],
        links: [`${peer}:db`],
        labels: { "svc.scope": "x", team: "blue" },
        env: { MODE: "prod", EMPTY: "" },
        restart: "on-failure:3",
        hostname: "apphost",
        user: "65534:65534",
        init: true,
        tty: true,
        binds: [`${volume}:/data`, `${bind}:/host:ro`],
        volumes: ["/anon"],
        ports: [{ hostIp: "127.0.0.1", hostPort: 0, containerPort: 8080 }],
        healthcheck: { cmd: "test ! -e /broken", intervalMs: 1000, timeoutMs: 2000, retries: 1 },
        stopTimeout: 0,
        stopSignal: "SIGUSR1",
      },
      ["sh", "-c", "sleep 3600"],
    );
    expect(fixture).toEqual(cli);
  });

  test("another container's network", () => {
    const { cli, fixture } = bothWays(["--network", `container:${peer}`, "-e", "ROLE=sidecar"], {
      network: `container:${peer}`,
      env: { ROLE: "sidecar" },
    });
    expect(fixture).toEqual(cli);
  });

  const api = docker(["version", "--format", "{{.Server.APIVersion}}"]).stdout;
  test.skipIf(compareApiVersions(api, "1.48") < 0)(
    "a second network with its endpoint's settings, and a mount of type image (API 1.48)",
    () => {
      const back = fx.network("back");
      const { cli, fixture } = bothWays(
        [
          ...["--network", `name=${network}`, "--network", `name=${back},gw-priority=10,mac-address=${MAC}`],
          ...["--mount", `type=image,source=${image},target=/seed`],
        ],
        {
          network,
          moreNetworks: { [back]: { gwPriority: 10, macAddress: MAC } },
          mounts: [{ Type: "image", Source: image, Target: "/seed" }],
        },
      );
      expect(fixture).toEqual(cli);
    },
  );
});
