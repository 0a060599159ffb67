/**
 * A compose v2 project updated by svc, then handed back to compose: `docker compose up -d` must
 * find nothing to recreate that svc already updated, `ps` must show the new images, `down` must
 * leave nothing behind, and each replacement must keep its configuration (inspect diff).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { compareApiVersions } from "../../../src/engine/clone.ts";
import { sandbox } from "../../harness.ts";
import { tempDir } from "../../temp.ts";
import { disallowedDifferences } from "../engine/inspect-diff.ts";
import { docker, entryOf, Fixture, inspect, makeUpdater, TEST_SCOPE } from "./support.ts";

const fx = new Fixture();
const project = fx.name("proj");
const dir = tempDir("svc-compose-");
const composeWorks = docker(["compose", "version"], { allowFailure: true }).code === 0;
// compose sets a MAC per network only from API 1.44 (Docker 25); older engines get none
// and a healthcheck's start_interval
const api144 = compareApiVersions(docker(["version", "--format", "{{.Server.APIVersion}}"]).stdout, "1.44") >= 0;

function compose(...args: string[]): string {
  return docker(["compose", "--project-directory", dir, "-p", project, ...args]).stdout;
}

/** Service name -> container id, as compose sees the project. */
function serviceIds(): Record<string, string> {
  const lines = compose("ps", "-a", "--format", "{{.Service}} {{.ID}} {{.Image}}").split("\n").filter(Boolean);
  return Object.fromEntries(
    lines.map((line) => line.split(" ")).map(([service, id]) => [service!, inspect(id!).Id as string]),
  );
}

const MAC = "02:aa:bb:cc:dd:01";
// A process that ends on SIGTERM and reports healthy once it has written its marker.
const CMD = ["/bin/sh", "-c", "trap 'exit 0' TERM; touch /tmp/ready; while true; do sleep 3600 & wait; done"];

function writeProject(dbImage: string, appImage: string): void {
  mkdirSync(join(dir, "bind"), { recursive: true });
  writeFileSync(join(dir, "bind", "kept.txt"), "bind mount\n");
  writeFileSync(join(dir, "app.conf"), "setting=1\n");
  writeFileSync(join(dir, "secret.txt"), "s3cret\n");
  const service = (image: string) => ({
    image,
    command: CMD,
    labels: { "svc.scope": TEST_SCOPE },
    stop_grace_period: "2s",
  });
  const file = {
    name: project,
    services: {
      db: {
        ...service(dbImage),
        healthcheck: {
          test: ["CMD", "test", "-f", "/tmp/ready"],
          // a probe is an exec, some 0.15 CPU s of the engine's: every second during the start
          // period only where the engine has start_interval (API 1.44), every second on older ones;
          // at a load of 40 and more one can take seconds (docs/testing.md)
          // (a start_period after these would end the start period after 1 s: then the next probe
          // came an hour later, and a db not ready within that second stayed "starting")
          ...(api144
            ? { interval: "1h", start_period: "10m", start_interval: "1s" }
            : { interval: "1s", start_period: "1s" }),
          timeout: "10s",
          retries: 30,
        },
        volumes: ["data:/data", "./bind:/bind"],
        networks: {
          front: { aliases: ["db-front"] },
          back: { aliases: ["db-back"], ...(api144 ? { mac_address: MAC } : {}) },
        },
        configs: [{ source: "appconf", target: "/etc/app.conf" }],
        secrets: ["appsecret"],
      },
      app: { ...service(appImage), depends_on: { db: { condition: "service_healthy" } }, networks: ["front"] },
      sidecar: { ...service(appImage), network_mode: "service:app", depends_on: ["app"] },
    },
    networks: { front: {}, back: {} },
    volumes: { data: {} },
    configs: { appconf: { file: "./app.conf" } },
    secrets: { appsecret: { file: "./secret.txt" } },
  };
  // JSON is YAML: compose reads it as its file
  writeFileSync(join(dir, "compose.yaml"), JSON.stringify(file, null, 1));
}

describe.skipIf(!composeWorks)("a compose project updated by svc", () => {
  let db: ReturnType<Fixture["image"]>;
  let app: ReturnType<Fixture["image"]>;

  beforeAll(() => {
    db = fx.image("db");
    app = fx.image("app");
    writeProject(db.ref, app.ref);
    compose("up", "-d", "--wait");
  }, 120_000);

  afterAll(() => {
    if (composeWorks)
      docker(["compose", "--project-directory", dir, "-p", project, "down", "-v", "--remove-orphans"], {
        allowFailure: true,
      });
    fx.cleanup();
  }, 120_000);

  test("compose up -d after svc's update keeps what svc updated, ps shows the new images, down leaves nothing", async () => {
    const before = serviceIds();
    const oldInspects = Object.fromEntries(Object.entries(before).map(([service, id]) => [service, inspect(id)]));
    const names = Object.values(oldInspects).map((c) => String(c.Name).slice(1));
    const db2 = fx.image("db");
    const app2 = fx.image("app");

    const h = await makeUpdater({ containers: names, rollback: { startup_timeout: 20_000 } });
    const report = await h.updater.run("api");
    expect(entryOf(report, names[Object.keys(before).indexOf("db")]!).state).toBe("updated");
    expect(entryOf(report, names[Object.keys(before).indexOf("app")]!).state).toBe("updated");
    expect(entryOf(report, names[Object.keys(before).indexOf("sidecar")]!).state).toBe("updated");
    const updated = serviceIds();

    // every replacement kept its configuration; compose's image label names the new image
    for (const [service, image] of [
      ["db", db2],
      ["app", app2],
      ["sidecar", app2],
    ] as const) {
      const next = inspect(updated[service]!);
      expect(next.Image).toBe(image.id);
      expect(next.Config.Labels["com.docker.compose.image"]).toBe(image.id);
      const ctx = {
        old: oldInspects[service]!,
        new: next,
        oldImage: inspect(oldInspects[service]!.Image),
        newImage: inspect(image.id),
        networkContainerId: service === "sidecar" ? updated.app : undefined,
      };
      expect(disallowedDifferences(ctx)).toEqual([]);
    }
    const dbAfter = inspect(updated.db!);
    if (api144) expect(dbAfter.NetworkSettings.Networks[`${project}_back`].MacAddress).toBe(MAC);
    expect(dbAfter.Mounts.map((m: any) => m.Destination).sort()).toEqual([
      "/bind",
      "/data",
      "/etc/app.conf",
      "/run/secrets/appsecret",
    ]);

    compose("up", "-d", "--wait");
    const again = serviceIds();
    expect(again.db).toBe(updated.db);
    expect(again.app).toBe(updated.app);
    // compose hashes a `network_mode: service:` dependent with the id of the container whose
    // network it joins: a new app container, whoever made it, makes compose recreate it once
    // (docs/limits.md)
    expect(again.sidecar).not.toBe(updated.sidecar);
    expect(inspect(again.sidecar!).HostConfig.NetworkMode).toBe(`container:${updated.app}`);
    compose("up", "-d", "--wait");
    expect(serviceIds()).toEqual(again);

    const images = Object.fromEntries(
      compose("ps", "--format", "{{.Service}} {{.Image}}")
        .split("\n")
        .filter(Boolean)
        .map((l) => l.split(" ")),
    );
    expect(images).toEqual({ db: db2.ref, app: app2.ref, sidecar: app2.ref });
    for (const id of Object.values(again)) expect(inspect(id).Image).not.toBe(db.id);

    compose("down", "-v", "--remove-orphans");
    expect(docker(["ps", "-aq", "--filter", `label=com.docker.compose.project=${project}`]).stdout).toBe("");
    expect(docker(["network", "ls", "-q", "--filter", `label=com.docker.compose.project=${project}`]).stdout).toBe("");
    expect(docker(["volume", "ls", "-q", "--filter", `label=com.docker.compose.project=${project}`]).stdout).toBe("");
  }, 180_000);
});

if (!composeWorks)
  console.warn(`compose tests skipped: \`docker compose version\` fails against ${sandbox().dockerHost}`);
