/**
 * Podman enforces its signature policy (containers-policy.json(5)) at every pull, the pulls of its
 * Docker-compatible API too: an update whose image the policy refuses is held, with Podman's own
 * reason, never failed, and the container stays on its image (docs/verification.md).
 *
 * The policy a Podman service reads for each pull is its user's `~/.config/containers/policy.json`
 * when there is one, else `/etc/containers/policy.json` (containers/image, signature/
 * policy_config.go); `--signature-policy` is a flag of Podman's own commands, not of its service.
 * A rootless service's home is the sandbox's own (scripts/sandbox.sh), so the test writes its
 * policy there, refusing its own repository only; a rootful service's is root's, which every
 * sandbox on the machine shares: the test runs on the rootless legs (podman-rootless,
 * podman5-rootless) and is skipped elsewhere.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { chownSync, mkdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { inspect, sandbox } from "../../harness.ts";
import { baseFlags, Fixture, runSvc, stopAll } from "../e2e/support.ts";
import { entryIn, onPodman, version } from "./support.ts";

const engine = process.env.SVC_TEST_ENGINE ?? "";
const rootless = onPodman && engine.endsWith("-rootless");
/** The rootless service's home (scripts/sandbox.sh: start_podman_rootless, start_podman5_rootless). */
const home = () => {
  const dir = process.env.SVC_SANDBOX_DIR ?? "";
  return engine.startsWith("podman5") ? join(dir, "podman", "home") : join(dir, "podman-home");
};
const policyFile = () => join(home(), ".config", "containers", "policy.json");

const fx = new Fixture("podman-policy");
afterAll(async () => {
  if (rootless) rmSync(policyFile(), { force: true });
  await stopAll();
  fx.cleanup();
}, 120_000);

/** A policy that accepts everything but `repository`, which it rejects; readable by the service's user. */
function writePolicy(repository: string): void {
  const owner = statSync(home());
  const folder = join(home(), ".config", "containers");
  mkdirSync(folder, { recursive: true });
  chownSync(join(home(), ".config"), owner.uid, owner.gid);
  chownSync(folder, owner.uid, owner.gid);
  const policy = {
    default: [{ type: "insecureAcceptAnything" }],
    transports: { docker: { [repository]: [{ type: "reject" }] } },
  };
  writeFileSync(policyFile(), JSON.stringify(policy), { mode: 0o644 });
  chownSync(policyFile(), owner.uid, owner.gid);
}

describe.skipIf(!rootless)(`Podman ${version}'s signature policy at pull`, () => {
  test("an image policy.json rejects: the update held with Podman's reason, the container left on its image", async () => {
    const v1 = fx.image("app");
    const name = fx.run("app", v1.ref);
    const v2 = fx.image("app");
    const repository = v1.ref.slice(0, v1.ref.lastIndexOf(":"));
    expect(repository.startsWith(`${sandbox().registry}/`)).toBe(true);
    writePolicy(repository);

    const run = await runSvc([...baseFlags(), "--run-once", "--state-dir", fx.tempDir("state"), name]);
    const entry = entryIn(run.svc.output, name);
    expect(entry?.state, run.svc.describe()).toBe("held");
    expect(entry?.reason).toStartWith("refused by Podman's signature policy (policy.json): Running image docker://");
    expect(entry?.reason).toContain("is rejected by policy");
    expect(run.code, run.svc.describe()).toBe(0);
    expect(inspect(name).Image).toBe(v1.id);
    expect(inspect(name).State.Running).toBe(true);

    // the policy lifted, the same update goes ahead
    rmSync(policyFile());
    const again = await runSvc([...baseFlags(), "--run-once", "--state-dir", fx.tempDir("state-after"), name]);
    expect(entryIn(again.svc.output, name)?.state, again.svc.describe()).toBe("updated");
    expect(inspect(name).Image).toBe(v2.id);
  }, 240_000);
});
