/**
 * The fixture's `run` creates its containers through the Engine API (tests/support/docker-run.ts)
 * instead of starting the docker CLI: here, on each engine of the matrix, both ways run the same
 * arguments and `docker inspect` must show the same container, but for what the engine makes anew
 * each time (IDs, times, addresses, paths, an anonymous volume's name).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { docker, inspect, removeContainers, sandbox } from "../../harness.ts";
import { parseRun, runShortcut } from "../../support/docker-run.ts";
import { EngineFixture } from "../../support/fixture.ts";

const fx = new EngineFixture("dockerrun");
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
  peer = fx.run("peer", image, ["--network", network]);
});
afterAll(() => fx.cleanup());

const login = () => ({ registry: sandbox().authRegistry, username: sandbox().authUser, password: sandbox().authPass });

/** The same `docker run` both ways, one after the other (a published port is taken by one at a time). */
function bothWays(args: (name: string) => string[]): { cli: unknown; api: unknown } {
  const viaCli = fx.name("cli");
  docker(args(viaCli));
  const cli = comparable(viaCli);
  removeContainers(viaCli);
  const viaApi = fx.name("api");
  expect(runShortcut(args(viaApi), sandbox().socketPath, login())).toMatch(/^[0-9a-f]{64}$/);
  const api = comparable(viaApi);
  removeContainers(viaApi);
  return { cli, api };
}

/** `docker inspect` without what differs from one container to the next of the same arguments. */
function comparable(name: string): unknown {
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
  // the CLI's own order of -e and -v varies from run to run (it goes through a map): what a
  // container is given, not its order, is what must agree
  copy.Config?.Env?.sort();
  copy.HostConfig?.Binds?.sort();
  for (const settings of Object.values<Record<string, unknown>>(copy.NetworkSettings?.Networks ?? {})) {
    for (const key of [
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
    ])
      delete settings[key];
  }
  for (const key of [
    "SandboxID",
    "SandboxKey",
    "Ports",
    "Bridge",
    "HairpinMode",
    "LinkLocalIPv6Address",
    "LinkLocalIPv6PrefixLen",
    "SecondaryIPAddresses",
    "SecondaryIPv6Addresses",
    "EndpointID",
    "Gateway",
    "GlobalIPv6Address",
    "GlobalIPv6PrefixLen",
    "IPAddress",
    "IPPrefixLen",
    "IPv6Gateway",
    "MacAddress",
  ]) {
    delete copy.NetworkSettings?.[key];
  }
  for (const mount of copy.Mounts ?? [])
    if (mount.Type === "volume" && /^[0-9a-f]{64}$/.test(mount.Name)) mount.Name = mount.Source = "<anonymous>";
  // the CLI gathers -v from a Go map: its order of binds differs from run to run
  copy.HostConfig.Binds?.sort();
  if (copy.Mounts)
    copy.Mounts.sort((a: { Destination: string }, b: { Destination: string }) =>
      a.Destination.localeCompare(b.Destination),
    );
  return copy;
}

describe("the fixture's docker run through the Engine API makes what the CLI makes", () => {
  const cases: [string, (name: string) => string[]][] = [
    ["no network", (name) => ["run", "-d", "--name", name, "--network", "none", image]],
    [
      "labels, env, restart, hostname, stop timeout and signal, a command",
      (name) => [
        "run",
        "-d",
        "--name",
        name,
        "--network",
        "none",
        "-l",
        "svc.scope=x",
        "--label",
        "team=blue",
        "-e",
        "MODE=prod",
        "--env=EMPTY=",
        "--restart",
        "unless-stopped",
        "--hostname",
        "apphost",
        "--stop-timeout",
        "0",
        "--stop-signal",
        "SIGUSR1",
        image,
        "sh",
        "-c",
        "sleep 3600",
      ],
    ],
    [
      "a user network with aliases and a link",
      (name) => [
        "run",
        "-d",
        "--name",
        name,
        "--network",
        network,
        "--network-alias",
        "web",
        "--network-alias",
        "w2",
        "--link",
        `${peer}:db`,
        image,
      ],
    ],
    [
      "another container's network",
      (name) => ["run", "-d", "--name", name, "--network", `container:${peer}`, "-e", "ROLE=sidecar", image],
    ],
    [
      "volumes: named, bound, read-only, anonymous",
      (name) => [
        "run",
        "-d",
        "--name",
        name,
        "--network",
        "none",
        "-v",
        `${volume}:/data`,
        "-v",
        `${bind}:/host:ro`,
        "-v",
        "/anon",
        image,
      ],
    ],
    [
      "healthcheck flags, init, tty, user, restart on failure",
      (name) => [
        "run",
        "-d",
        "--name",
        name,
        "--network",
        "none",
        "--health-cmd",
        "test ! -e /broken",
        "--health-interval",
        "1s",
        "--health-retries",
        "1",
        "--init",
        "-t",
        "--user",
        "65534:65534",
        "--restart",
        "on-failure:3",
        image,
      ],
    ],
    [
      "a published port",
      (name) => ["run", "-d", "--name", name, "--network", network, "-p", "127.0.0.1:0:8080", image],
    ],
  ];
  for (const [what, args] of cases) {
    test(what, () => {
      const { cli, api } = bothWays(args);
      expect(api).toEqual(cli);
    });
  }

  test("an image only the registry has is pulled first, as the CLI does", () => {
    const pushed = fx.image("pulled");
    docker(["rmi", "-f", pushed.ref]);
    const name = fx.name("pulled");
    runShortcut(["run", "-d", "--name", name, "--network", "none", pushed.ref], sandbox().socketPath, login());
    expect(inspect(name).Image).toBe(pushed.id);
    expect(inspect(name).State.Running).toBe(true);
  });

  test("flags it does not translate, and a failed start, are left to the CLI", () => {
    expect(parseRun(["run", "-d", "--name", "x", "--privileged", image])).toBeUndefined();
    expect(parseRun(["run", "--name", "x", image])).toBeUndefined();
    expect(parseRun(["run", "-d", "--name", "x", "-e", "FROM_ENV", image])).toBeUndefined();
    expect(parseRun(["run", "-d", "--name", "x", "--network", "none", "--network-alias", "a", image])).toBeUndefined();
    const name = fx.name("nostart");
    // the command does not exist: the engine creates it, the start fails, the CLI must report that
    expect(
      runShortcut(
        ["run", "-d", "--name", name, "--network", "none", image, "/no/such/command"],
        sandbox().socketPath,
        login(),
      ),
    ).toBeUndefined();
    expect(docker(["ps", "-aq", "--filter", `name=^/${name}$`]).stdout).toBe("");
  });
});
