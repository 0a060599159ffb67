/**
 * The developer's tools leave the machine as they found it: `eval "$(bash scripts/sandbox.sh env)"`
 * gives a working `docker compose` on the sandbox, and scripts/demo.sh keeps svc's state in its
 * own sandbox's folder, removed with it. The demo brings up a sandbox of its own: it runs only with
 * SVC_TEST_DEMO=1 (ports SVC_DEMO_REGISTRY_PORT and the next one, 5200 by default).
 */
import { expect, test } from "bun:test";
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ROOT, run, tempDir } from "./helpers.ts";

const sandboxUp = existsSync(`${process.env.SVC_SANDBOX_DIR ?? join(ROOT, ".sandbox")}/docker.sock`);

test.if(sandboxUp)(
  'eval "$(bash scripts/sandbox.sh env)" gives `docker compose`, on the sandbox\'s engine',
  () => {
    const shell =
      'eval "$(bash scripts/sandbox.sh env)" && docker compose version && docker compose ls -a --format json';
    // a shell as a developer's: none of the variables the test run set
    const env = {
      PATH: "/usr/sbin:/usr/bin:/sbin:/bin",
      HOME: process.env.HOME,
      SVC_SANDBOX_DIR: process.env.SVC_SANDBOX_DIR,
    };
    const result = run(["bash", "-c", shell], { cwd: ROOT, env });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain("Docker Compose version");
  },
  60_000,
);

test.if(process.env.SVC_TEST_DEMO === "1")(
  "scripts/demo.sh updates its container and leaves no state behind",
  () => {
    const sandbox = join(tempDir("demo"), "sandbox");
    // where svc would keep its state without a state_dir of the demo's own
    const xdg = tempDir("demo-state");
    try {
      const result = run(["bash", "scripts/demo.sh"], {
        env: { ...process.env, SVC_DEMO_SANDBOX_DIR: sandbox, XDG_STATE_HOME: xdg },
      });
      expect(result.code, result.stdout + result.stderr).toBe(0);
      expect(result.stdout).toContain("svc-demo-app: updated");
      expect(existsSync(sandbox)).toBe(false);
      expect(readdirSync(xdg)).toEqual([]);
    } finally {
      rmSync(xdg, { recursive: true, force: true });
    }
  },
  600_000,
);

test("`sandbox.sh down` on a folder holding another sandbox that is up does nothing, and names it", () => {
  const outer = tempDir("sandbox-outer");
  const inner = join(outer, "dev");
  mkdirSync(inner, { recursive: true });
  // a process standing in for the inner sandbox's engine: its pid file is what `up` writes
  const engine = Bun.spawn(["sleep", "120"]);
  try {
    writeFileSync(join(inner, "dockerd.pid"), `${engine.pid}\n`);
    const result = run(["bash", "scripts/sandbox.sh", "down"], {
      cwd: ROOT,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, SVC_SANDBOX_DIR: outer },
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`holds another sandbox that is up, ${inner}`);
    expect(existsSync(join(inner, "dockerd.pid"))).toBe(true);
    expect(engine.killed || engine.exitCode !== null).toBe(false);
  } finally {
    engine.kill();
    rmSync(outer, { recursive: true, force: true });
  }
});
