/**
 * A run-once cycle as a person at a terminal reads it (`--log-format pretty`, what `auto` picks on
 * a terminal): the steps as they happen, one line per container, the summary on stderr at warn
 * when something went wrong, and no JSON.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { baseFlags, FAILING_CMD, Fixture, runSvc, stopAll } from "./support.ts";

const fx = new Fixture("e2e-tty");

afterAll(async () => {
  await stopAll();
  fx.cleanup();
}, 120_000);

const pretty = () => [
  ...baseFlags().filter((flag) => flag !== "json" && flag !== "--log-format"),
  "--log-format",
  "pretty",
];
const short = (digest: string | null) => digest!.slice(7, 19);
const lastPart = (ref: string) => ref.slice(ref.lastIndexOf("/") + 1);

describe("run-once on a terminal", () => {
  test("a dry run says what it would update; the update says each step, one line per container, and the summary at warn after a rollback", async () => {
    const good = fx.name("good");
    const bad = fx.name("bad");
    const g1 = fx.image("good");
    fx.run("good", g1.ref);
    fx.run("bad", fx.image("bad").ref);
    const g2 = fx.image("good");
    fx.image("bad", { changes: [FAILING_CMD] });

    const dry = await runSvc([...pretty(), "--run-once", "--dry-run", good, bad]);
    expect(dry.code, dry.svc.describe()).toBe(0);
    expect(dry.stdout).toContain(
      `${good}: would update ${lastPart(g1.ref)} (sha256:${short(g1.digest)} -> ${short(g2.digest)})`,
    );
    expect(dry.stdout).toContain("dry run finished: 2 would be updated");
    expect(dry.svc.output).not.toContain("stale");

    const run = await runSvc([...pretty(), "--run-once", good, bad]);
    expect(run.code, run.svc.describe()).toBe(1);
    const lines = run.stdout.split("\n");
    const at = (text: string) => lines.findIndex((line) => line.includes(text));
    for (const step of [
      "pulling the newer image",
      "stopping",
      "starting the new container",
      "watching the new container",
    ]) {
      expect(at(`${good}: ${step}`), run.svc.describe()).toBeGreaterThanOrEqual(0);
    }
    expect(at(`${good}: pulling`)).toBeLessThan(at(`${good}: updated`));
    // a rollback says what it does: the new container goes, the old one starts again
    expect(at(`${bad}: removing the new container`), run.svc.describe()).toBeGreaterThanOrEqual(0);
    expect(at(`${bad}: starting the old container again`)).toBeGreaterThan(at(`${bad}: removing the new container`));
    expect(at(`${bad}: removing the old container`)).toBe(-1);
    expect(lines.filter((line) => line.includes(`${bad}: starting the new container`))).toHaveLength(1);
    expect(run.stdout).toContain(
      `${good}: updated ${lastPart(g1.ref)} (sha256:${short(g1.digest)} -> ${short(g2.digest)})`,
    );
    expect(run.stderr).toMatch(new RegExp(`\\[warn\\].*${bad}: rolled back to \\S+, the new image failed: `));
    expect(run.stderr).toMatch(/\[warn\].*cycle finished: 1 updated, 1 rolled back/);
    // nothing for machines on a terminal: no JSON record, no escaped report
    expect(run.svc.output).not.toContain('{"');
  }, 120_000);

  test("no engine: one message with the cause and the fix, exit 1", async () => {
    const socket = `${fx.tempDir("no-engine")}/docker.sock`;
    for (const command of [["--run-once"], ["rollback", "web"]]) {
      const run = await runSvc([...command, "--docker-host", `unix://${socket}`, "--log-format", "pretty"]);
      expect(run.code, run.svc.describe()).toBe(1);
      expect(run.stdout).toBe("");
      expect(run.stderr).toBe(
        `svc: no Docker socket at ${socket}: start the Docker engine, or set --docker-host or DOCKER_HOST to where its socket is\n`,
      );
    }
  }, 60_000);

  test("a name that matches nothing is named with a close one; with only such names run-once exits 1", async () => {
    const name = fx.name("typo");
    fx.run("typo", fx.image("typo").ref);
    const typo = name.replace(/typo$/, "tpyo");
    const alone = await runSvc([...pretty(), "--run-once", "--dry-run", typo]);
    expect(alone.code, alone.svc.describe()).toBe(1);
    expect(alone.stderr).toContain(`no container or compose project is named ${typo} (did you mean ${name}?)`);
    const beside = await runSvc([...pretty(), "--run-once", "--dry-run", typo, name]);
    expect(beside.code, beside.svc.describe()).toBe(0);
    expect(beside.stderr).toContain(`no container or compose project is named ${typo}`);
    expect(beside.stdout).toContain(`${name}: up to date`);
  }, 60_000);
});
