/**
 * What the Podman set's files share (podman.test.ts, units.test.ts): the leg's Podman, its CLI, the
 * report's entry of a container, and a data-guarded app whose new version fails.
 */
import { expect } from "bun:test";
import { docker, inspect, sandbox } from "../../harness.ts";
import { type Fixture, reportsIn, type runSvc } from "../e2e/support.ts";
import { decorate, MIGRATE_V2, manifestOf, WRITE_V1, waitForVersion } from "../updater/data-guard-support.ts";

export type Json = Record<string, any>;

const engine = process.env.SVC_TEST_ENGINE ?? "";
export const onPodman = engine.startsWith("podman");
export const how = engine.endsWith("-rootless") ? "rootless" : "rootful";
/** the Podman of the leg: Debian 12's, or sid's in its own root (scripts/sandbox.sh, podman5) */
export const version = engine.startsWith("podman5") ? "5.8" : "4.3.1";

/** `podman` itself (the remote client of Debian 12's package) against the sandbox's socket. */
export function podman(args: string[]): string {
  const proc = Bun.spawnSync(["podman", "--url", sandbox().dockerHost, ...args], { stdout: "pipe", stderr: "pipe" });
  if (proc.exitCode !== 0) throw new Error(`podman ${args.join(" ")} failed: ${proc.stderr.toString()}`);
  return proc.stdout.toString().trim();
}

export function entryIn(output: string, name: string): Json | undefined {
  return reportsIn(output)
    .at(-1)
    ?.containers.find((c: Json) => c.name === name);
}

/**
 * A container whose v1 wrote its data on a volume (decorated with extended attributes); its v2,
 * pushed, migrates the data, then fails (Podman's import takes no HEALTHCHECK change).
 */
export async function guardedApp(fx: Fixture, what: string) {
  const name = fx.name(what);
  const v1 = fx.image(what, { changes: [`CMD ${JSON.stringify(["/bin/sh", "-c", `${WRITE_V1}; exec sleep 3600`])}`] });
  fx.run(what, v1.ref, { binds: [`${fx.volume(what)}:/data`] });
  await waitForVersion(name, "v1");
  const before = decorate(name);
  fx.image(what, { changes: [`CMD ${JSON.stringify(["/bin/sh", "-c", `${MIGRATE_V2}; exit 3`])}`] });
  return { name, v1, before };
}

/** The update rolled back with the data guard: v1 runs on its own data again, byte for byte. */
export function expectDataBack(run: Awaited<ReturnType<typeof runSvc>>, app: Awaited<ReturnType<typeof guardedApp>>) {
  const entry = entryIn(run.svc.output, app.name);
  expect(entry?.state, run.svc.describe()).toBe("rolled_back");
  expect(entry?.data_guard).toMatchObject({ restored: true });
  expect(inspect(app.name).Image).toBe(app.v1.id);
  expect(docker(["exec", app.name, "cat", "/data/version"]).stdout.trim()).toBe("v1");
  expect(manifestOf(app.name)).toEqual(app.before);
}
