/**
 * The fidelity corpus: real-world container configurations made with the docker CLI, updated
 * the way the updater does it (stop, rename the old one aside, createReplacement, start) onto a
 * newer image under the same tag. `docker inspect` of the replacement may differ from the old
 * one only in what an update must change; what the user set must survive exactly, and where the
 * user set nothing the new image's defaults must apply.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createDockerEngine, type Engine } from "../../../src/engine/index.ts";
import { silentLogger } from "../../../src/log/index.ts";
import { docker, freePort, inspect, sandbox, uniqueName } from "../../harness.ts";
import { disallowedDifferences } from "./inspect-diff.ts";

type Json = Record<string, any>;

const PREFIX = uniqueName("engfid");
const IMAGE = `${PREFIX}-img:latest`;

// The two versions of the image differ in every default a user may or may not override. Their
// health intervals are long: a probe is an exec, about 0.1 CPU s of the engine's, and the corpus's
// 30-odd containers live as long as the file; the replacement is about the configuration, which
// no probe reads.
const V1 = `FROM scratch
ADD rootfs.tar /
ENV IMG_ONLY=v1 IMG_OVERRIDDEN=v1 PATH=/bin
LABEL img.version=v1 img.stable=yes
EXPOSE 8080
WORKDIR /
VOLUME /data
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=30m CMD ["/bin/true"]
CMD ["/bin/sleep","3600"]
`;
const V2 = `FROM scratch
ADD rootfs.tar /
ENV IMG_ONLY=v2 IMG_OVERRIDDEN=v2 IMG_NEW=yes PATH=/bin
LABEL img.version=v2 img.stable=yes
EXPOSE 8081
WORKDIR /bin
VOLUME /data
STOPSIGNAL SIGINT
HEALTHCHECK --interval=31m CMD ["/bin/true","v2"]
CMD ["/bin/sleep","3601"]
`;

let engine: Engine;
let workDir: string;
let v1Id = "";
let v2Id = "";
const networks: { name: string; prefix: string }[] = [];
const volumes: string[] = [];
const names = (suffix: string) => `${PREFIX}-${suffix}`;

function buildImage(dockerfile: string): string {
  writeFileSync(join(workDir, "Dockerfile"), dockerfile);
  const proc = Bun.spawnSync(["docker", "-H", sandbox().dockerHost, "build", "-q", "-t", IMAGE, workDir], {
    env: { ...process.env, DOCKER_BUILDKIT: "0" },
    stdout: "pipe",
    stderr: "pipe",
  });
  if (proc.exitCode !== 0) throw new Error(`docker build failed: ${proc.stderr.toString()}`);
  return proc.stdout.toString().trim();
}

/** A user network on a random /24 (other tests create networks too: retry on overlap). */
function createNetwork(suffix: string): { name: string; prefix: string } {
  const name = names(suffix);
  for (let attempt = 0; attempt < 30; attempt++) {
    const prefix = `10.${200 + Math.floor(Math.random() * 50)}.${Math.floor(Math.random() * 256)}`;
    const result = docker(["network", "create", "--subnet", `${prefix}.0/24`, name], { allowFailure: true });
    if (result.code === 0) {
      const network = { name, prefix };
      networks.push(network);
      return network;
    }
    if (!/overlap/i.test(result.stderr)) throw new Error(result.stderr);
  }
  throw new Error("no free subnet found");
}

interface Case {
  name: string;
  /** docker run arguments between `--name X` and the image */
  run: () => string[];
  command?: string[];
  /** after the container runs (e.g. connect more networks, write data) */
  after?: (name: string) => void;
  /** assertions on the replacement, beyond "only allowed differences" */
  check: (fresh: Json, old: Json) => void;
}

let net1: { name: string; prefix: string };
let net2: { name: string; prefix: string };
let net3: { name: string; prefix: string };
let namedVolume = "";
let envFile = "";
let bindDir = "";
const tcpPort = freePort();
const udpPort = freePort();

const cases: Case[] = [
  {
    name: "ports",
    run: () => [
      "--network",
      net1.name,
      "-p",
      `127.0.0.1:${tcpPort}:80`,
      "-p",
      `127.0.0.1:${udpPort}:53/udp`,
      "--expose",
      "9000",
    ],
    check: (fresh, old) => {
      expect(fresh.HostConfig.PortBindings).toEqual({
        "80/tcp": [{ HostIp: "127.0.0.1", HostPort: String(tcpPort) }],
        "53/udp": [{ HostIp: "127.0.0.1", HostPort: String(udpPort) }],
      });
      expect(Object.keys(fresh.Config.ExposedPorts).sort()).toEqual(["53/udp", "80/tcp", "8081/tcp", "9000/tcp"]);
      expect(old.Config.ExposedPorts["8080/tcp"]).toEqual({});
    },
  },
  {
    name: "env",
    run: () => [
      "--network",
      "none",
      "-e",
      "USER_A=1",
      "-e",
      "IMG_OVERRIDDEN=user",
      "-e",
      "WITH_EQUALS=a=b",
      "--env-file",
      envFile,
    ],
    check: (fresh) => {
      expect([...fresh.Config.Env].sort()).toEqual(
        [
          "FILE_X=1",
          "FILE_Y=two words",
          "IMG_NEW=yes",
          "IMG_ONLY=v2",
          "IMG_OVERRIDDEN=user",
          "PATH=/bin",
          "USER_A=1",
          "WITH_EQUALS=a=b",
        ].sort(),
      );
    },
  },
  {
    name: "image-defaults",
    run: () => ["--network", "none"],
    check: (fresh) => {
      expect(fresh.Config.Cmd).toEqual(["/bin/sleep", "3601"]);
      expect(fresh.Config.Healthcheck).toEqual({ Test: ["CMD", "/bin/true", "v2"], Interval: 1_860_000_000_000 });
      expect(fresh.Config.Labels["img.version"]).toBe("v2");
      expect(fresh.Config.StopSignal).toBe("SIGINT");
      expect(fresh.Config.WorkingDir).toBe("/bin");
      expect(fresh.Config.Hostname).toBe(fresh.Id.slice(0, 12));
    },
  },
  {
    name: "volumes",
    run: () => [
      "--network",
      "none",
      "-v",
      `${bindDir}:/bind:ro`,
      "-v",
      `${namedVolume}:/named`,
      "--mount",
      `type=bind,src=${bindDir},dst=/bind2`,
      "-v",
      "/anon",
    ],
    after: (name) => {
      docker(["exec", name, "sh", "-c", "echo named > /named/f && echo image-volume > /data/f && echo anon > /anon/f"]);
    },
    check: (fresh, old) => {
      // the engine keeps binds in no fixed order either: compare them as sets
      expect([...fresh.HostConfig.Binds].sort()).toEqual([`${bindDir}:/bind:ro`, `${namedVolume}:/named`].sort());
      expect([...fresh.HostConfig.Binds].sort()).toEqual([...old.HostConfig.Binds].sort());
      // the user's --mount first, then the anonymous volumes mounted again by name
      // (the engine lists a container's mounts in no fixed order)
      const [userMount, ...anonymous] = fresh.HostConfig.Mounts as Json[];
      expect([userMount]).toEqual(old.HostConfig.Mounts);
      expect(anonymous.sort((a, b) => a.Target.localeCompare(b.Target))).toEqual([
        { Type: "volume", Source: mountAt(old, "/anon").Name, Target: "/anon" },
        { Type: "volume", Source: mountAt(old, "/data").Name, Target: "/data" },
      ]);
      const byDest = (c: Json) =>
        Object.fromEntries((c.Mounts as Json[]).map((m) => [m.Destination, m.Name ?? m.Source]));
      expect(byDest(fresh)).toEqual(byDest(old));
      // the data in the named volume, the image's VOLUME and the anonymous -v survived
      expect(docker(["exec", fresh.Id, "cat", "/named/f", "/data/f", "/anon/f"]).stdout).toBe(
        "named\nimage-volume\nanon",
      );
    },
  },
  {
    name: "volumes-from",
    run: () => ["--network", "none", "--volumes-from", `${names("link-target")}:ro`],
    check: (fresh) => {
      expect(fresh.HostConfig.VolumesFrom).toEqual([`${names("link-target")}:ro`]);
      const source = mountAt(inspect(names("link-target")), "/data");
      expect(mountAt(fresh, "/data").Name).toBe(source.Name);
      expect(mountAt(fresh, "/data").RW).toBe(false);
    },
  },
  {
    name: "tmpfs",
    run: () => ["--network", "none", "--tmpfs", "/run:rw,size=1m", "--mount", "type=tmpfs,dst=/t2,tmpfs-size=2097152"],
    check: (fresh) => {
      expect(fresh.HostConfig.Tmpfs).toEqual({ "/run": "rw,size=1m" });
      expect(fresh.HostConfig.Mounts[0]).toEqual({
        Type: "tmpfs",
        Target: "/t2",
        TmpfsOptions: { SizeBytes: 2097152 },
      });
    },
  },
  {
    name: "networks",
    run: () => [
      "--network",
      net1.name,
      "--ip",
      `${net1.prefix}.10`,
      "--network-alias",
      "web",
      "--network-alias",
      "www",
    ],
    after: (name) => {
      docker(["network", "connect", "--alias", "api", "--ip", `${net2.prefix}.20`, net2.name, name]);
      docker(["network", "connect", "--alias", "metrics", net3.name, name]);
    },
    check: (fresh) => {
      const n = fresh.NetworkSettings.Networks;
      expect(Object.keys(n).sort()).toEqual([net1.name, net2.name, net3.name].sort());
      expect(n[net1.name].IPAddress).toBe(`${net1.prefix}.10`);
      expect(n[net1.name].IPAMConfig).toEqual({ IPv4Address: `${net1.prefix}.10` });
      expect(n[net2.name].IPAddress).toBe(`${net2.prefix}.20`);
      const userAliases = (e: Json) => (e.Aliases as string[]).filter((a) => a !== fresh.Id.slice(0, 12)).sort();
      expect(userAliases(n[net1.name])).toEqual(["web", "www"]);
      expect(userAliases(n[net2.name])).toEqual(["api"]);
      expect(userAliases(n[net3.name])).toEqual(["metrics"]);
      expect(fresh.HostConfig.NetworkMode).toBe(net1.name);
    },
  },
  {
    name: "alias-own-name",
    run: () => ["--network", net2.name, "--network-alias", names("alias-own-name"), "--network-alias", "svc-b"],
    check: (fresh) => {
      const aliases = (fresh.NetworkSettings.Networks[net2.name].Aliases as string[]).filter(
        (a) => a !== fresh.Id.slice(0, 12),
      );
      expect(aliases.sort()).toEqual([names("alias-own-name"), "svc-b"].sort());
    },
  },
  {
    name: "network-by-id",
    run: () => [
      "--network",
      docker(["network", "inspect", "-f", "{{.Id}}", net3.name]).stdout.slice(0, 12),
      "--network-alias",
      "by-id",
      "--ip",
      `${net3.prefix}.30`,
    ],
    check: (fresh) => {
      expect(fresh.NetworkSettings.Networks[net3.name].IPAddress).toBe(`${net3.prefix}.30`);
      expect(fresh.NetworkSettings.Networks[net3.name].Aliases).toContain("by-id");
    },
  },
  {
    name: "hostname",
    run: () => ["--network", net1.name, "--hostname", "myhost", "--domainname", "example.org"],
    check: (fresh) => {
      expect(fresh.Config.Hostname).toBe("myhost");
      expect(fresh.Config.Domainname).toBe("example.org");
    },
  },
  {
    name: "restart-on-failure",
    run: () => ["--network", "none", "--restart", "on-failure:3"],
    check: (fresh) => expect(fresh.HostConfig.RestartPolicy).toEqual({ Name: "on-failure", MaximumRetryCount: 3 }),
  },
  {
    name: "restart-unless-stopped",
    run: () => ["--network", "none", "--restart", "unless-stopped"],
    check: (fresh) => expect(fresh.HostConfig.RestartPolicy).toEqual({ Name: "unless-stopped", MaximumRetryCount: 0 }),
  },
  {
    name: "healthcheck",
    run: () => [
      "--network",
      "none",
      "--health-cmd",
      "/bin/true user",
      "--health-interval",
      "5m",
      "--health-retries",
      "2",
      "--health-start-period",
      "1s",
    ],
    check: (fresh) =>
      expect(fresh.Config.Healthcheck).toEqual({
        Test: ["CMD-SHELL", "/bin/true user"],
        Interval: 300_000_000_000,
        StartPeriod: 1_000_000_000,
        Retries: 2,
      }),
  },
  {
    // the engine shows the image's test command merged into a user's --health-interval: the
    // replacement must keep the user's interval and take the NEW image's command
    name: "healthcheck-interval-only",
    run: () => ["--network", "none", "--health-interval", "5m"],
    check: (fresh) =>
      expect(fresh.Config.Healthcheck).toEqual({ Test: ["CMD", "/bin/true", "v2"], Interval: 300_000_000_000 }),
  },
  {
    name: "caps",
    run: () => [
      "--network",
      "none",
      "--cap-add",
      "NET_ADMIN",
      "--cap-drop",
      "CHOWN",
      "--security-opt",
      "no-new-privileges",
    ],
    check: (fresh) => {
      const bare = (caps: string[]) => caps.map((c) => c.replace(/^CAP_/, ""));
      expect(bare(fresh.HostConfig.CapAdd)).toEqual(["NET_ADMIN"]);
      expect(bare(fresh.HostConfig.CapDrop)).toEqual(["CHOWN"]);
      expect(fresh.HostConfig.SecurityOpt).toEqual(["no-new-privileges"]);
    },
  },
  {
    name: "devices",
    run: () => ["--network", "none", "--device", "/dev/null:/dev/mynull:rwm", "--device-cgroup-rule", "c 1:3 mr"],
    check: (fresh) => {
      expect(fresh.HostConfig.Devices).toEqual([
        { PathOnHost: "/dev/null", PathInContainer: "/dev/mynull", CgroupPermissions: "rwm" },
      ]);
      expect(fresh.HostConfig.DeviceCgroupRules).toEqual(["c 1:3 mr"]);
    },
  },
  {
    name: "ulimits",
    run: () => ["--network", "none", "--ulimit", "nofile=1024:2048", "--ulimit", "nproc=512"],
    check: (fresh) =>
      expect(fresh.HostConfig.Ulimits).toEqual([
        { Name: "nofile", Hard: 2048, Soft: 1024 },
        { Name: "nproc", Hard: 512, Soft: 512 },
      ]),
  },
  {
    name: "log-options",
    run: () => [
      "--network",
      "none",
      "--log-driver",
      "json-file",
      "--log-opt",
      "max-size=1m",
      "--log-opt",
      "max-file=2",
    ],
    check: (fresh) =>
      expect(fresh.HostConfig.LogConfig).toEqual({ Type: "json-file", Config: { "max-file": "2", "max-size": "1m" } }),
  },
  {
    name: "compose-labels",
    run: () => [
      "--network",
      net1.name,
      "--network-alias",
      "svc-a",
      "--label",
      "app=demo",
      "--label",
      "img.stable=user",
      "--label",
      "com.docker.compose.project=demo",
      "--label",
      "com.docker.compose.service=svc-a",
      "--label",
      "com.docker.compose.container-number=1",
      "--label",
      "com.docker.compose.config-hash=abc123",
      "--label",
      "com.docker.compose.depends_on=db:service_started:false",
    ],
    check: (fresh) => {
      expect(fresh.Config.Labels).toEqual({
        app: "demo",
        "img.stable": "user",
        "img.version": "v2",
        "com.docker.compose.project": "demo",
        "com.docker.compose.service": "svc-a",
        "com.docker.compose.container-number": "1",
        "com.docker.compose.config-hash": "abc123",
        "com.docker.compose.depends_on": "db:service_started:false",
      });
    },
  },
  {
    name: "read-only",
    run: () => ["--network", "none", "--read-only", "--tmpfs", "/tmp"],
    check: (fresh) => {
      expect(fresh.HostConfig.ReadonlyRootfs).toBe(true);
      expect(fresh.HostConfig.Tmpfs).toEqual({ "/tmp": "" });
    },
  },
  {
    name: "entrypoint",
    run: () => ["--network", "none", "--entrypoint", "/bin/sleep"],
    command: ["3000"],
    check: (fresh) => {
      expect(fresh.Config.Entrypoint).toEqual(["/bin/sleep"]);
      expect(fresh.Config.Cmd).toEqual(["3000"]);
      expect(fresh.Path).toBe("/bin/sleep");
      expect(fresh.Args).toEqual(["3000"]);
    },
  },
  {
    name: "command",
    run: () => ["--network", "none"],
    command: ["/bin/sleep", "2999"],
    check: (fresh) => expect(fresh.Config.Cmd).toEqual(["/bin/sleep", "2999"]),
  },
  {
    name: "workdir-user",
    run: () => ["--network", "none", "-w", "/tmp", "-u", "1000:1000"],
    check: (fresh) => {
      expect(fresh.Config.WorkingDir).toBe("/tmp");
      expect(fresh.Config.User).toBe("1000:1000");
    },
  },
  {
    name: "init",
    run: () => ["--network", "none", "--init"],
    check: (fresh) => expect(fresh.HostConfig.Init).toBe(true),
  },
  {
    name: "dns-hosts",
    run: () => [
      "--network",
      net1.name,
      "--dns",
      "127.0.0.53",
      "--dns-search",
      "example.org",
      "--dns-option",
      "ndots:2",
      "--add-host",
      "db.local:127.0.0.2",
    ],
    check: (fresh) => {
      expect(fresh.HostConfig.Dns).toEqual(["127.0.0.53"]);
      expect(fresh.HostConfig.DnsSearch).toEqual(["example.org"]);
      expect(fresh.HostConfig.DnsOptions).toEqual(["ndots:2"]);
      expect(fresh.HostConfig.ExtraHosts).toEqual(["db.local:127.0.0.2"]);
    },
  },
  {
    name: "resources",
    run: () => [
      "--network",
      "none",
      "--memory",
      "64m",
      "--memory-reservation",
      "32m",
      "--cpu-shares",
      "512",
      "--pids-limit",
      "100",
      "--shm-size",
      "16m",
      "--oom-score-adj",
      "100",
    ],
    check: (fresh) => {
      expect(fresh.HostConfig.Memory).toBe(64 * 1024 * 1024);
      expect(fresh.HostConfig.MemoryReservation).toBe(32 * 1024 * 1024);
      expect(fresh.HostConfig.CpuShares).toBe(512);
      expect(fresh.HostConfig.PidsLimit).toBe(100);
      expect(fresh.HostConfig.ShmSize).toBe(16 * 1024 * 1024);
      expect(fresh.HostConfig.OomScoreAdj).toBe(100);
    },
  },
  {
    name: "stop-settings",
    run: () => ["--network", "none", "--stop-signal", "SIGUSR1", "--stop-timeout", "7"],
    check: (fresh) => {
      expect(fresh.Config.StopSignal).toBe("SIGUSR1");
      expect(fresh.Config.StopTimeout).toBe(7);
    },
  },
  {
    name: "tty-interactive",
    run: () => ["--network", "none", "-t", "-i"],
    check: (fresh) => {
      expect(fresh.Config.Tty).toBe(true);
      expect(fresh.Config.OpenStdin).toBe(true);
    },
  },
  {
    name: "link",
    run: () => ["--network", net1.name, "--link", `${names("link-target")}:db`],
    check: (fresh) => expect(fresh.NetworkSettings.Networks[net1.name].Links).toEqual([`${names("link-target")}:db`]),
  },
];

function mountAt(container: Json, destination: string): Json {
  const mount = (container.Mounts as Json[]).find((m) => m.Destination === destination);
  if (!mount) throw new Error(`${container.Name} has no mount at ${destination}`);
  return mount;
}

/** Runs what the updater will run: stop, rename aside, create the replacement, start. */
async function replace(
  name: string,
  networkContainer?: string,
): Promise<{ old: Json; oldImage: Json; fresh: Json; newImage: Json }> {
  const old = inspect(name);
  const oldImage = (await engine.inspectImage(old.Image)) as Json;
  expect(oldImage).not.toBeNull();
  await engine.stopContainer(old.Id, { timeoutMs: 0 });
  await engine.renameContainer(old.Id, `${name}.svc-old-${old.Id.slice(0, 12)}`);
  const id = await engine.createReplacement(old as any, oldImage as any, {
    name,
    image: old.Config.Image,
    networkContainer,
  });
  await engine.startContainer(id);
  const fresh = inspect(id);
  const newImage = inspect(fresh.Image);
  return { old, oldImage, fresh, newImage };
}

function expectOnlyAllowedDifferences(ctx: {
  old: Json;
  new: Json;
  oldImage: Json;
  newImage: Json;
  networkContainerId?: string;
}): void {
  const bad = disallowedDifferences(ctx);
  if (bad.length > 0) console.error(`${ctx.old.Name}: differences an update must not make:\n  ${bad.join("\n  ")}`);
  expect(bad).toEqual([]);
}

function runContainer(name: string, args: string[], command: string[] = []): void {
  docker(["run", "-d", "--name", name, ...args, IMAGE, ...command]);
}

/** The CLI refuses --mac-address on a network below API 1.44: create that one through the API itself. */
async function createWithMac(name: string, network: string, mac: string): Promise<void> {
  const response = await fetch(`http://engine/v1.41/containers/create?name=${encodeURIComponent(name)}`, {
    unix: sandbox().socketPath,
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ Image: IMAGE, MacAddress: mac, HostConfig: { NetworkMode: network } }),
  } as RequestInit);
  if (response.status !== 201) throw new Error(`create ${name}: ${response.status} ${await response.text()}`);
  docker(["start", name]);
}

const USER_MAC = "02:42:0a:fe:00:99";

beforeAll(async () => {
  workDir = mkdtempSync(join(tmpdir(), "svc-engfid-"));
  copyFileSync(sandbox().rootfs, join(workDir, "rootfs.tar"));
  bindDir = mkdtempSync(join(tmpdir(), "svc-engfid-bind-"));
  envFile = join(workDir, "app.env");
  writeFileSync(envFile, "# comment\nFILE_X=1\nFILE_Y=two words\n");

  v1Id = buildImage(V1);
  net1 = createNetwork("net1");
  net2 = createNetwork("net2");
  net3 = createNetwork("net3");
  namedVolume = names("vol");
  docker(["volume", "create", namedVolume]);
  volumes.push(namedVolume);

  runContainer(names("link-target"), ["--network", net1.name]);
  for (const c of cases) {
    runContainer(names(c.name), c.run(), c.command);
    c.after?.(names(c.name));
  }
  runContainer(names("provider"), ["--network", net1.name, "--hostname", "provider", "--network-alias", "prov"]);
  runContainer(names("consumer"), ["--network", `container:${names("provider")}`]);
  runContainer(names("consumer-only"), ["--network", `container:${names("link-target")}`]);
  await createWithMac(names("mac"), net1.name, USER_MAC);

  // the tag moves to a newer image, as after a pull
  v2Id = buildImage(V2);
  // About 30 containers made one after another (their order matters: links, fixed addresses); on
  // Docker 20.10's vfs store under the CI's parallel legs each `docker run` can take 4 s.
}, 300_000);

beforeAll(async () => {
  engine = await createDockerEngine({ host: sandbox().dockerHost, tls_verify: false }, silentLogger);
});

afterAll(() => {
  const ids = docker(["ps", "-aq", "--filter", `name=^/${PREFIX}`], { allowFailure: true })
    .stdout.split("\n")
    .filter(Boolean);
  // -v: the anonymous volumes the corpus made (each shared by an old container and its replacement)
  if (ids.length) docker(["rm", "-fv", ...ids], { allowFailure: true });
  for (const network of networks) docker(["network", "rm", network.name], { allowFailure: true });
  for (const volume of volumes) docker(["volume", "rm", volume], { allowFailure: true });
  for (const id of [v1Id, v2Id]) if (id) docker(["rmi", "-f", id], { allowFailure: true });
  if (workDir) rmSync(workDir, { recursive: true, force: true });
  if (bindDir) rmSync(bindDir, { recursive: true, force: true });
}, 120_000);

describe("a replacement is the old container on the new image", () => {
  for (const c of cases) {
    test(c.name, async () => {
      const { old, oldImage, fresh, newImage } = await replace(names(c.name));
      expect(oldImage.Id).toBe(v1Id);
      expect(fresh.Image).toBe(v2Id);
      expect(fresh.Name).toBe(`/${names(c.name)}`);
      expect(fresh.State.Running).toBe(true);
      expectOnlyAllowedDifferences({ old, new: fresh, oldImage, newImage });
      c.check(fresh, old);
    }, 60_000);
  }

  test("network_mode container: pair, the provider updated first, the consumer joining the new provider by name", async () => {
    const provider = await replace(names("provider"));
    expectOnlyAllowedDifferences({
      old: provider.old,
      new: provider.fresh,
      oldImage: provider.oldImage,
      newImage: provider.newImage,
    });
    const consumer = await replace(names("consumer"), names("provider"));
    expect(consumer.fresh.HostConfig.NetworkMode).toBe(`container:${provider.fresh.Id}`);
    expect(consumer.fresh.Config.Hostname).toBe("provider");
    expectOnlyAllowedDifferences({ ...consumer, new: consumer.fresh, networkContainerId: provider.fresh.Id });
  }, 60_000);

  test("a user-set MAC address survives (a generated one is the engine's: see every other case on a network)", async () => {
    const mac = await replace(names("mac"));
    expect(mac.old.NetworkSettings.Networks[net1.name].MacAddress).toBe(USER_MAC);
    expect(mac.fresh.NetworkSettings.Networks[net1.name].MacAddress).toBe(USER_MAC);
    expect(mac.fresh.Config.MacAddress).toBe(USER_MAC);
    expectOnlyAllowedDifferences({ ...mac, new: mac.fresh });
  }, 60_000);

  test("network_mode container:<id> without a name given is resolved to that container's current name", async () => {
    const target = inspect(names("link-target"));
    const consumer = await replace(names("consumer-only"));
    expect(consumer.fresh.HostConfig.NetworkMode).toBe(`container:${target.Id}`);
    expectOnlyAllowedDifferences({ ...consumer, new: consumer.fresh });
  }, 60_000);
});

test("the corpus holds at least 15 configurations", () => {
  expect(cases.length + 2).toBeGreaterThanOrEqual(15);
});
