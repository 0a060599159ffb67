/**
 * `svc accept-signer NAME` as an admin types it: a repository first seen signed keyless by its
 * release workflow (a private Sigstore on loopback, its trusted root given to svc) publishes an
 * image signed by another identity; `svc --run-once` holds it, the command accepts the new signer
 * (exit 0, said on its output, an audit line), and the next check updates the container. Once with
 * no service running (the command writes the state file), once handed to the service that runs on
 * the same state_dir with its update API.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { inspect, waitUntil } from "../../harness.ts";
import { attachBundle, type Sigstore, startSigstore, trustedRootJson } from "../../support/sigstore.ts";
import { baseFlags, Fixture, parseJsonLines, reportsIn, runSvc, startServiceOnState, stopAll } from "../e2e/support.ts";

const RELEASE = "https://github.com/acme/app/.github/workflows/release.yml@refs/tags/v1";
const FORK = "https://github.com/mallory/app/.github/workflows/release.yml@refs/tags/v1";

const fx = new Fixture("accept-signer");
let sigstore: Sigstore;
let rootFile = "";

beforeAll(async () => {
  sigstore = await startSigstore();
  rootFile = join(fx.tempDir("root"), "trusted_root.json");
  writeFileSync(rootFile, trustedRootJson(sigstore.root));
}, 120_000);

afterAll(async () => {
  await stopAll();
  sigstore?.stop();
  fx.cleanup();
}, 120_000);

const repositoryOf = (ref: string) => ref.slice(0, ref.lastIndexOf(":"));

/** A container first updated to an image its release workflow signed (pinned), then offered one a fork signed. */
async function heldForItsSigner(what: string, stateDir: string) {
  const v1 = fx.image(what);
  const name = fx.run(what, v1.ref);
  const repository = repositoryOf(v1.ref);
  const v2 = fx.image(what);
  await attachBundle(repository, v2.digest!, await sigstore.sign(v2.digest!, { identity: RELEASE }));
  const first = await check(name, stateDir);
  expect(first.entry?.state, first.describe).toBe("updated");
  expect(first.entry?.signature).toMatchObject({
    status: "verified",
    signer: `${RELEASE} (https://token.actions.githubusercontent.com)`,
  });

  const v3 = fx.image(what);
  await attachBundle(repository, v3.digest!, await sigstore.sign(v3.digest!, { identity: FORK }));
  const held = await check(name, stateDir);
  expect(held.entry?.state, held.describe).toBe("held");
  expect(held.entry?.reason).toStartWith(`signer changed: ${RELEASE}`);
  expect(inspect(name).Image).toBe(v2.id);
  return { name, v3 };
}

/** `svc --run-once NAME`: the container's entry in the report. */
async function check(name: string, stateDir: string) {
  const run = await runSvc([...baseFlags(), "--run-once", "--state-dir", stateDir, "--trusted-root", rootFile, name]);
  const entry = reportsIn(run.svc.output)
    .at(-1)
    ?.containers.find((c: { name: string }) => c.name === name);
  return { entry, describe: run.svc.describe() };
}

function accept(name: string, stateDir: string, ...more: string[]) {
  return runSvc(["accept-signer", name, ...baseFlags(), "--state-dir", stateDir, "--trusted-root", rootFile, ...more]);
}

describe("svc accept-signer NAME", () => {
  test("without a name, or naming no container: said so, and a failing exit", async () => {
    const unnamed = await runSvc(["accept-signer", ...baseFlags()]);
    expect(unnamed.code).toBe(2);
    expect(unnamed.stderr).toContain("svc accept-signer: name the container: svc accept-signer NAME [options]");
    const unknown = await accept(fx.name("no-such-container"), fx.tempDir("state-unknown"));
    expect(unknown.code, unknown.svc.describe()).toBe(1);
    expect(unknown.svc.output).toContain(`no container or service named ${fx.name("no-such-container")}`);
  }, 60_000);

  test("no service running: the held signer accepted in the state file, audited, and the next check updates", async () => {
    const stateDir = fx.tempDir("state");
    const auditLog = join(fx.tempDir("audit"), "audit.log");
    const { name, v3 } = await heldForItsSigner("alone", stateDir);

    const accepted = await accept(name, stateDir, "--audit-log", auditLog);
    expect(accepted.code, accepted.svc.describe()).toBe(0);
    expect(accepted.svc.output).toContain(`${name}: `);
    expect(accepted.svc.output).toContain(`is now expected to be signed by ${FORK}`);
    const audit = parseJsonLines(readFileSync(auditLog, "utf8")).map((line) => line.fields ?? line);
    expect(audit).toContainEqual(
      expect.objectContaining({
        action: "signer_accept",
        container: name,
        trigger: "run_once",
        change: expect.stringContaining(`-> ${FORK}`),
      }),
    );
    // nothing more is held: a second accept says so, and fails
    const again = await accept(name, stateDir);
    expect(again.code, again.svc.describe()).toBe(1);
    expect(again.svc.output).toContain(`${name} has no update held for its signer`);

    const next = await check(name, stateDir);
    expect(next.entry?.state, next.describe).toBe("updated");
    expect(next.entry?.signature).toMatchObject({ status: "verified", policy: "pinned" });
    expect(next.entry?.signature?.signer).toStartWith(FORK);
    expect(inspect(name).Image).toBe(v3.id);
  }, 240_000);

  test("a service runs on the state_dir with its update API: handed to it, which updates at its next check", async () => {
    const stateDir = fx.tempDir("state");
    const { name, v3 } = await heldForItsSigner("handed", stateDir);
    const { service, port } = await startServiceOnState(
      stateDir,
      "a-token-the-command-never-sends",
      [name],
      ["--trusted-root", rootFile],
    );
    // the API listens before the service claims the state folder (its owner file)
    await waitUntil(() => existsSync(join(stateDir, "state.json.owner")), 60_000);

    const accepted = await accept(name, stateDir);
    expect(accepted.code, accepted.svc.describe()).toBe(0);
    expect(accepted.svc.output).toContain(`handed to svc (pid ${service.proc.pid})`);
    expect(accepted.svc.output).toContain(`is now expected to be signed by ${FORK}`);

    // the service's own next check (asked of its API) updates to the image the fork signed
    const update = await fetch(`http://127.0.0.1:${port}/v1/update?container=${name}`, {
      method: "POST",
      headers: { authorization: "Bearer a-token-the-command-never-sends" },
    });
    expect(update.status).toBe(200);
    const report = (await update.json()) as { containers: { name: string; state: string }[] };
    expect(report.containers.find((c) => c.name === name)?.state).toBe("updated");
    expect(inspect(name).Image).toBe(v3.id);
  }, 240_000);
});
