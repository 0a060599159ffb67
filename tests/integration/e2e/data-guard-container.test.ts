/**
 * The data guard with svc in its own container, as most users run it (docs/data-guard.md,
 * "In the engine"): `docker run -v /var/run/docker.sock:... -v svc-state:/state
 * -e SVC_STATE_DIR=/state svc`. The copies' folder is inside svc's container, not at that path on the engine's host: svc
 * finds it in its own container's mounts and the helper mounts that volume in turn, so the copy is
 * made in the engine (its manifest says `through: "helper"`), and the rollback of an update that
 * migrated the data and failed brings it back byte for byte.
 */
import { afterAll, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { docker, engineJson, inspect, sandbox, waitUntil } from "../../harness.ts";
import { decorate, MIGRATE_V2, manifestOf, WRITE_V1, waitForVersion } from "../updater/data-guard-support.ts";
import { buildSvcImage, compileSvc, Fixture, reportsIn } from "./support.ts";

const fx = new Fixture("e2e-dg-own");
afterAll(() => fx.cleanup(), 120_000);

test("svc in a container, its state on a named volume: copied in the engine, the data back with the rollback", async () => {
  const work = fx.tempDir("build");
  compileSvc(work);
  const ref = `${sandbox().registry}/${fx.name("svc")}:latest`;
  buildSvcImage(work, ref, "data-guard");
  const scope = fx.name("scope");
  const v1 = fx.image("app", { changes: [`CMD ${JSON.stringify(["/bin/sh", "-c", `${WRITE_V1}; exec sleep 3600`])}`] });
  const app = fx.run("app", v1.ref, { labels: { "svc.scope": scope }, binds: [`${fx.volume("app-data")}:/data`] });
  await waitForVersion(app, "v1");
  const before = decorate(app);
  // v2 migrates the data, then never becomes healthy
  fx.image("app", {
    changes: [
      "HEALTHCHECK --interval=1s --retries=1 CMD false",
      `CMD ${JSON.stringify(["/bin/sh", "-c", `${MIGRATE_V2}; exec sleep 3600`])}`,
    ],
  });

  const state = fx.volume("svc-state");
  const svc = fx.name("svc");
  docker([
    "run",
    "-d",
    "--name",
    svc,
    "--network",
    "host",
    "-v",
    `${sandbox().socketPath}:/var/run/docker.sock`,
    // svc runs as root here (the sandbox's socket is root's alone), and a folder it writes copies
    // into must be its own user's (docs/security.md): the image's /var/lib/svc belongs to its
    // user, 65532, so this root svc keeps its state on a volume of its own at /state
    "-v",
    `${state}:/state`,
    ...Object.entries({
      SVC_STATE_DIR: "/state",
      SVC_SCOPE: scope,
      SVC_RUN_ONCE: "true",
      SVC_DATA_GUARD: "volumes",
      SVC_STOP_TIMEOUT: "1s",
      SVC_ROLLBACK_STARTUP_TIMEOUT: "20s",
      SVC_LOG_FORMAT: "json",
    }).flatMap(([key, value]) => ["-e", `${key}=${value}`]),
    ref,
  ]);
  await waitUntil(() => !inspect(svc).State.Running, 180_000, "svc's run to end");
  const logs = docker(["logs", svc], { allowFailure: true });
  const output = `${logs.stdout}\n${logs.stderr}`;
  const entry = reportsIn(output)
    .flatMap((report) => report.containers)
    .find((c: { name: string }) => c.name === app);
  expect(`${entry?.state}: ${entry?.reason ?? ""}`, output.slice(-3000)).toStartWith("rolled_back");
  expect(entry.data_guard).toMatchObject({ restored: true });

  // the copy, in svc's state volume, was made by the helper in the engine
  const stateOnHost = engineJson<{ Mountpoint: string }>("GET", `/volumes/${state}`).Mountpoint;
  const copies = join(stateOnHost, "data-guard", app);
  const manifests = readdirSync(copies).map((id) =>
    JSON.parse(readFileSync(join(copies, id, "manifest.json"), "utf8")),
  );
  expect(manifests.map((m) => m.through)).toEqual(["helper"]);

  expect(inspect(app).Image).toBe(v1.id);
  expect(docker(["exec", app, "cat", "/data/version"]).stdout.trim()).toBe("v1");
  expect(manifestOf(app)).toEqual(before);
}, 240_000);
