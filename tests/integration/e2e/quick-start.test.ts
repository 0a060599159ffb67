/**
 * The README's Quick start, run as written with the binary (`svc` on PATH is this checkout's
 * src/main.ts): generate the sample, choose when svc runs as the sample's top says (the editor
 * sets poll_interval = "6h"), try it with --run-once --dry-run, update `web`, then start the service
 * and read when the first check comes. The sandbox's changes: DOCKER_HOST is the sandbox's engine
 * (a user's shell points at theirs), and `web` is a uniquely named container.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { inspect, sandbox } from "../../harness.ts";
import { commandBlock, type RunningBlock, runBlockUntil, svcOnPath } from "../../support/doc-blocks.ts";
import { Fixture, userEnv } from "./support.ts";

const fx = new Fixture("e2e-quick");

describe("README: Quick start, as written", () => {
  const web = fx.name("web");
  let dir: string;
  let v2: { ref: string; id: string };
  let run: RunningBlock | undefined;

  beforeAll(async () => {
    const v1 = fx.image("web");
    fx.run("web", v1.ref, { network: "none" });
    v2 = fx.image("web");
    dir = fx.tempDir("quick");
    const bin = svcOnPath(dir);
    // the person's edit: the first choice the sample's top offers
    writeFileSync(join(bin, "editor"), `#!/bin/sh\nsed -i 's/^# poll_interval = .*/poll_interval = "6h"/' "$1"\n`);
    chmodSync(join(bin, "editor"), 0o755);
    const block = commandBlock("quick-start").text.replace(/\bweb\b/g, web);
    const env = userEnv({
      PATH: `${bin}:${process.env.PATH}`,
      EDITOR: join(bin, "editor"),
      DOCKER_HOST: sandbox().dockerHost,
      NO_COLOR: "1",
    });
    run = await runBlockUntil(block, { cwd: dir, env }, (output) => /next check at \d\d:\d\d/.test(output));
  }, 180_000);

  afterAll(async () => {
    await run?.stop();
    fx.cleanup();
  }, 60_000);

  test("the sample is written for svc's user only", () => {
    expect(statSync(join(dir, "svc.toml")).mode & 0o777).toBe(0o600);
  });

  test("--run-once replaces the file's poll_interval for that run, saying so in one line", () => {
    expect(run!.output()).toContain("--run-once given on the command line replaces svc.toml:");
    expect(run!.output()).not.toContain("mutually exclusive");
  });

  test("svc --run-once web updated web", () => {
    expect(inspect(web).Image).toBe(v2.id);
  });

  test("the service says when the first check comes, six hours on", () => {
    expect(run!.output()).toMatch(/next check at \d\d:\d\d \(in 6 h\)/);
  });
});
