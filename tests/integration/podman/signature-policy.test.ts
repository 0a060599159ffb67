/**
 * Podman enforces its signature policy (containers-policy.json(5)) at every pull, the pulls of its
 * Docker-compatible API too: an update whose image the policy refuses is held, with Podman's own
 * reason, never failed, and the container stays on its image (docs/verification.md).
 *
 * The policy a Podman service reads, at each pull, is its user's `~/.config/containers/policy.json`
 * when there is one, else `/etc/containers/policy.json` (containers/image, signature/
 * policy_config.go); `--signature-policy` is a flag of Podman's own commands, not of its service,
 * and containers.conf names no policy file. So only the service's start chooses it, by its HOME:
 * - a rootless service's home is the sandbox's own (scripts/sandbox.sh): the policy is written there;
 * - a rootful one's is root's, in a root every sandbox on the machine shares: on the `podman5` leg
 *   the test starts a Podman service of its own in the sandbox's Podman namespace (the same sid
 *   root and configuration, its own storage, socket and HOME), and writes the policy in that HOME.
 * The policy refuses the test's repository alone.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { chownSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { inspect, sandbox, waitUntil } from "../../harness.ts";
import { baseFlags, Fixture, runSvc, stopAll, track } from "../e2e/support.ts";
import { entryIn, onPodman, version } from "./support.ts";

const engine = process.env.SVC_TEST_ENGINE ?? "";
const rootless = onPodman && engine.endsWith("-rootless");
const dir = process.env.SVC_SANDBOX_DIR ?? "";

const fx = new Fixture("podman-policy");
const cleanups: (() => void | Promise<void>)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  await stopAll();
  fx.cleanup();
}, 120_000);

/** In `home`, a policy that accepts everything but `repository`, which it rejects; readable by the home's user. */
function writePolicy(home: string, repository: string): string {
  const owner = statSync(home);
  const folder = join(home, ".config", "containers");
  mkdirSync(folder, { recursive: true });
  chownSync(join(home, ".config"), owner.uid, owner.gid);
  chownSync(folder, owner.uid, owner.gid);
  const file = join(folder, "policy.json");
  const policy = {
    default: [{ type: "insecureAcceptAnything" }],
    transports: { docker: { [repository]: [{ type: "reject" }] } },
  };
  writeFileSync(file, JSON.stringify(policy), { mode: 0o644 });
  chownSync(file, owner.uid, owner.gid);
  cleanups.push(() => rmSync(file, { force: true }));
  return file;
}

/**
 * A container of `engineHost`'s on v1, v2 pushed, the policy in `home` refusing the repository:
 * svc holds the update with Podman's reason; the policy lifted, it updates.
 */
async function refusedThenLifted(engineHost: string, home: string, run: (name: string, ref: string) => void) {
  const v1 = fx.image("app");
  const name = fx.name("app");
  run(name, v1.ref);
  const before = inspectOn(engineHost, name);
  const v2 = fx.image("app");
  const repository = v1.ref.slice(0, v1.ref.lastIndexOf(":"));
  expect(repository.startsWith(`${sandbox().registry}/`)).toBe(true);
  const policy = writePolicy(home, repository);
  const flags = [...baseFlags(), "--docker-host", engineHost];

  const held = await runSvc([...flags, "--run-once", "--state-dir", fx.tempDir("state"), name]);
  const entry = entryIn(held.svc.output, name);
  expect(entry?.state, held.svc.describe()).toBe("held");
  expect(entry?.reason).toStartWith("refused by Podman's signature policy (policy.json): Running image docker://");
  expect(entry?.reason).toContain("is rejected by policy");
  expect(held.code, held.svc.describe()).toBe(0);
  const after = inspectOn(engineHost, name);
  expect(after.Id).toBe(before.Id);
  expect(after.State.Running).toBe(true);

  // the policy lifted, the same update goes ahead
  rmSync(policy);
  const again = await runSvc([...flags, "--run-once", "--state-dir", fx.tempDir("state-after"), name]);
  expect(entryIn(again.svc.output, name)?.state, again.svc.describe()).toBe("updated");
  expect(inspectOn(engineHost, name).Image).toBe(v2.id);
}

/** `docker inspect` of a container on `engineHost`. */
function inspectOn(engineHost: string, name: string): any {
  if (engineHost === sandbox().dockerHost) return inspect(name);
  return JSON.parse(cli(engineHost, ["inspect", name]))[0];
}

function cli(engineHost: string, args: string[]): string {
  const proc = Bun.spawnSync(["docker", "-H", engineHost, ...args], {
    env: { ...process.env, DOCKER_CONFIG: sandbox().dockerConfig },
    stdout: "pipe",
    stderr: "pipe",
  });
  if (proc.exitCode !== 0) throw new Error(`docker ${args.join(" ")} failed: ${proc.stderr.toString()}`);
  return proc.stdout.toString().trim();
}

describe.skipIf(!rootless)(`Podman ${version}'s signature policy at pull, rootless`, () => {
  test("an image policy.json rejects: the update held with Podman's reason, the container left on its image", async () => {
    // scripts/sandbox.sh: start_podman_rootless, start_podman5_rootless
    const home = engine.startsWith("podman5") ? join(dir, "podman", "home") : join(dir, "podman-home");
    await refusedThenLifted(sandbox().dockerHost, home, (_name, ref) => fx.run("app", ref));
  }, 240_000);
});

/**
 * A rootful Podman service of the test's own, in a mount namespace the test makes as the sandbox
 * makes its Podman 5's (scripts/sandbox.sh, start_podman5): the sid root, with the sandbox's
 * containers.conf and registries.conf at /svc, and its own storage, runtime folder, socket and
 * HOME under the sandbox's podman folder (/svc/policy-test there).
 */
async function ownPodmanService(): Promise<{ host: string; home: string }> {
  const root = process.env.SVC_TEST_PODMAN5_ROOT ?? "";
  const svcFolder = join(dir, "podman");
  const own = join(svcFolder, "policy-test");
  rmSync(own, { recursive: true, force: true });
  for (const sub of ["home", "root", "tmp"]) mkdirSync(join(own, sub), { recursive: true });
  // a short runroot (Podman refuses one past 50 characters); /tmp is the host's in the namespace
  const runroot = shortRunroot(`svc-pp-${process.pid}`);
  const namespace = [
    'mount --make-rprivate / && mount --bind "$1" "$1" && mount --rbind /dev "$1/dev" && mount -t proc proc "$1/proc" &&',
    'mount --rbind /sys "$1/sys" && mount --bind "$2" "$1/svc" && mount --rbind /tmp "$1/tmp" && mkdir -p "$1/.host" &&',
    'cd "$1" && pivot_root . .host && umount -l /.host || exit 1; shift 2; exec "$@"',
  ].join(" ");
  const service: Subprocess = track(
    Bun.spawn(
      [
        "unshare",
        "--mount",
        "--propagation",
        "private",
        "sh",
        "-c",
        namespace,
        "sh",
        root,
        svcFolder,
        "/usr/bin/env",
        "-i",
        "PATH=/usr/sbin:/usr/bin:/sbin:/bin",
        "HOME=/svc/policy-test/home",
        "TMPDIR=/svc/policy-test/tmp",
        "CONTAINERS_CONF=/svc/containers.conf",
        "CONTAINERS_STORAGE_CONF=/svc/storage.conf",
        "CONTAINERS_REGISTRIES_CONF=/svc/registries.conf",
        "podman",
        "--root",
        "/svc/policy-test/root",
        "--runroot",
        runroot,
        "--tmpdir",
        "/svc/policy-test/tmp",
        "system",
        "service",
        "--time=0",
        "unix:///svc/policy-test/podman.sock",
      ],
      { stdin: "ignore", stdout: "ignore", stderr: Bun.file(join(own, "podman.log")) },
    ),
  );
  const host = `unix://${join(own, "podman.sock")}`;
  cleanups.push(async () => {
    // its containers first: their monitors outlive the service otherwise
    Bun.spawnSync(["docker", "-H", host, "rm", "-f", fx.name("app")], { stdout: "ignore", stderr: "ignore" });
    service.kill("SIGTERM");
    await service.exited;
    rmSync(runroot, { recursive: true, force: true });
  });
  // a hang limit: on a loaded machine Podman's first start (its storage made) takes long; what it
  // said goes with a failure
  await waitUntil(
    async () => {
      if (service.exitCode !== null) return true;
      if (!existsSync(join(own, "podman.sock"))) return false;
      const ping = Bun.spawnSync(["curl", "-sSf", "--unix-socket", join(own, "podman.sock"), "http://podman/_ping"]);
      return ping.exitCode === 0;
    },
    180_000,
    "the test's own Podman service",
  ).catch((error) => {
    throw new Error(`${error.message}; its log: ${readFileSync(join(own, "podman.log"), "utf8").slice(-2000)}`);
  });
  if (service.exitCode !== null)
    throw new Error(
      `the test's own Podman service ended (${service.exitCode}): ${readFileSync(join(own, "podman.log"), "utf8").slice(-2000)}`,
    );
  return { host, home: join(own, "home") };
}

describe.skipIf(engine !== "podman5")(`Podman ${version}'s signature policy at pull, rootful`, () => {
  test("an image policy.json rejects: the update held with Podman's reason, the container left on its image", async () => {
    const own = await ownPodmanService();
    await refusedThenLifted(own.host, own.home, (name, ref) => {
      cli(own.host, ["run", "-d", "--name", name, "--network", "none", ref]);
    });
  }, 420_000);
});

function shortRunroot(name: string): string {
  const inRun = join(tmpdir(), name);
  return inRun.length <= 50 && inRun.startsWith("/tmp/") ? inRun : `/tmp/${name}`;
}
