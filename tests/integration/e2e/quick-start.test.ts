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
import { inspect, sandbox, waitUntil } from "../../harness.ts";
import { commandBlock } from "../../support/doc-blocks.ts";
import { Fixture, MAIN, userEnv } from "./support.ts";

const fx = new Fixture("e2e-quick");

describe("README: Quick start, as written", () => {
  const web = fx.name("web");
  let dir: string;
  let output = "";
  let exitCode: number | null = null;
  let v2: { ref: string; id: string };
  let proc: ReturnType<typeof Bun.spawn> | undefined;

  beforeAll(async () => {
    const v1 = fx.image("web");
    fx.run("web", v1.ref, ["--network", "none"]);
    v2 = fx.image("web");
    dir = fx.tempDir("quick");
    const bin = join(dir, "bin");
    Bun.spawnSync(["mkdir", "-p", bin]);
    writeFileSync(join(bin, "svc"), `#!/bin/sh\nexec bun ${MAIN} "$@"\n`);
    chmodSync(join(bin, "svc"), 0o755);
    // the person's edit: the first choice the sample's top offers
    writeFileSync(join(bin, "editor"), `#!/bin/sh\nsed -i 's/^# poll_interval = .*/poll_interval = "6h"/' "$1"\n`);
    chmodSync(join(bin, "editor"), 0o755);
    const block = commandBlock("quick-start").text.replace(/\bweb\b/g, web);
    const env = userEnv({ PATH: `${bin}:${process.env.PATH}`, EDITOR: join(bin, "editor"), DOCKER_HOST: sandbox().dockerHost, NO_COLOR: "1" });
    // its own process group: the last line (the service) is stopped with the shell
    proc = Bun.spawn(["setsid", "bash", "-e", "-c", block], { cwd: dir, env, stdout: "pipe", stderr: "pipe" });
    const collect = async (stream: ReadableStream<Uint8Array>) => {
      for await (const chunk of stream) output += new TextDecoder().decode(chunk);
    };
    void collect(proc.stdout as ReadableStream<Uint8Array>);
    void collect(proc.stderr as ReadableStream<Uint8Array>);
    void proc.exited.then((code) => (exitCode = code));
    await waitUntil(() => {
      if (exitCode !== null) throw new Error(`the Quick start stopped with ${exitCode}:\n${output}`);
      return output.includes("next check at");
    }, 120_000, "the service's next-check line");
  }, 180_000);

  afterAll(async () => {
    if (proc && exitCode === null) {
      process.kill(-proc.pid, "SIGTERM");
      await proc.exited;
    }
    fx.cleanup();
  }, 60_000);

  test("the sample is written for svc's user only", () => {
    expect(statSync(join(dir, "svc.toml")).mode & 0o777).toBe(0o600);
  });

  test("--run-once replaces the file's poll_interval for that run, saying so in one line", () => {
    expect(output).toContain("--run-once given on the command line replaces svc.toml:");
    expect(output).not.toContain("mutually exclusive");
  });

  test("svc --run-once web updated web", () => {
    expect(inspect(web).Image).toBe(v2.id);
  });

  test("the service says when the first check comes, six hours on", () => {
    expect(output).toMatch(/next check at \d\d:\d\d \(in 6 h\)/);
  });
});
