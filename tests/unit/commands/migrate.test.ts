import { expect, test } from "bun:test";
import { runMigrate } from "../../../src/commands/migrate.ts";
import type { Engine } from "../../../src/engine/port.ts";

/** The two engine calls svc migrate makes, answering for one Watchtower container run with `args`. */
function watchtowerEngine(args: string[]): Engine {
  const summary = {
    id: "wt1",
    name: "watchtower",
    image: "containrrr/watchtower",
    imageId: "sha256:x",
    state: "running" as const,
    labels: {},
  };
  return {
    listContainers: async () => [summary],
    inspectContainer: async () => ({ Config: { Env: [], Entrypoint: ["/watchtower"], Cmd: args, Labels: {} } }),
  } as unknown as Engine;
}

async function migrated(args: string[]): Promise<string> {
  let out = "";
  const job = {
    force: false,
    cwd: "/",
    stdout: { write: (text: string) => (out += text) },
    stderr: { write: () => {} },
  };
  expect(await runMigrate(watchtowerEngine(args), job)).toBe(0);
  return out;
}

test("svc migrate says whether lifecycle hooks run, and how to turn them on", async () => {
  const off = await migrated(["--interval", "300"]);
  expect(off).toContain(
    "# Lifecycle hooks stay off, as in this Watchtower; lifecycle_hooks = true turns them on (docs/policies.md).",
  );
  expect(off).not.toMatch(/^lifecycle_hooks = /m);
  const on = await migrated(["--interval", "300", "--enable-lifecycle-hooks"]);
  expect(on).toContain("# Lifecycle hooks run, as Watchtower's --enable-lifecycle-hooks had them");
  expect(on).toMatch(/^lifecycle_hooks = true$/m);
});

test("svc migrate says where Watchtower's schedule went, and that update_window says when restarts may happen", async () => {
  const cron = await migrated(["--schedule", "0 0 4 * * *"]);
  expect(cron).toMatch(
    /^# Watchtower's schedule is now schedule = "0 0 4 \* \* \*": when svc checks for newer images\. .*update_window/m,
  );
  expect(await migrated(["--interval", "300"])).toContain(
    "# Watchtower's schedule is now poll_interval: when svc checks",
  );
});
