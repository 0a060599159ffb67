/**
 * The records a service keeps say what happened beside it: a `svc --run-once` on the same
 * state_dir is in the service's GET /v1/history at once and stays there after the service's next
 * cycle (history.json is merged, never written over); a run-once that selected nothing leaves no
 * empty entry.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { docker, freePort, inspect } from "../../harness.ts";
import { baseFlags, Fixture, runSvc, startSvc, stopAll, waitForPort } from "./support.ts";

const fx = new Fixture("e2e-records");
const TOKEN = "e2e-records-token-7c2d";

afterAll(async () => {
  await stopAll();
  fx.cleanup();
}, 120_000);

describe("a run-once beside a running service on the same state_dir", () => {
  test("is in the service's /v1/history at once, and the service's next cycle keeps it", async () => {
    const name = fx.name("app");
    fx.run("app", fx.image("app").ref);
    const v2 = fx.image("app");
    const stateDir = fx.tempDir("state");
    const port = freePort();
    const service = startSvc([
      ...baseFlags(),
      "--state-dir",
      stateDir,
      "--http-api-update",
      "--http-api-token",
      TOKEN,
      "--http-api-port",
      String(port),
      name,
    ]);
    await waitForPort(port, service);
    const call = async (method: string, path: string) => {
      const response = await fetch(`http://127.0.0.1:${port}${path}`, {
        method,
        headers: { authorization: `Bearer ${TOKEN}` },
      });
      return (await response.json()) as any;
    };

    const once = await runSvc([...baseFlags(), "--state-dir", stateDir, "--run-once", name]);
    expect(once.code, once.svc.describe()).toBe(0);
    expect(inspect(name).Image).toBe(v2.id);
    const runOnceReport = (await call("GET", "/v1/history")).reports[0];
    expect(runOnceReport, service.describe()).toMatchObject({ trigger: "run_once", counts: { updated: 1 } });

    // the service's own next cycle (nothing newer) keeps it, in the API and in the file
    expect((await call("POST", "/v1/update")).trigger).toBe("api");
    const ids = (await call("GET", "/v1/history")).reports.map((r: any) => r.id);
    expect(ids).toContain(runOnceReport.id);
    const kept = JSON.parse(readFileSync(join(stateDir, "history.json"), "utf8")).reports.map((r: any) => r.id);
    expect(kept).toContain(runOnceReport.id);
    const timeline = (await call("GET", `/v1/history?container=${name}`)).timeline;
    expect(timeline[0]).toMatchObject({ trigger: "run_once", state: "updated" });

    // a run-once that selected nothing leaves no empty entry behind
    const before = (await call("GET", "/v1/history")).reports.length;
    const nothing = await runSvc([...baseFlags(), "--state-dir", stateDir, "--run-once", fx.name("no-such")]);
    expect(nothing.code, nothing.svc.describe()).toBe(1);
    const after = (await call("GET", "/v1/history")).reports;
    expect(after.length, service.describe()).toBe(before);
    expect(after.every((r: any) => r.containers.length > 0 || r.trigger !== "run_once")).toBe(true);
  }, 240_000);
});

describe("names users think in", () => {
  test("svc --run-once PROJECT selects its containers, PROJECT/SERVICE one service; a typo is offered the nearest", async () => {
    const project = fx.name("notes");
    const dir = fx.tempDir("notes");
    const app = fx.image("notes-app");
    const db = fx.image("notes-db");
    const service = (image: string) => ({ image, network_mode: "none", stop_grace_period: "1s" });
    const file = { name: project, services: { app: service(app.ref), db: service(db.ref) } };
    writeFileSync(join(dir, "compose.yaml"), JSON.stringify(file));
    const compose = (...args: string[]) => docker(["compose", "--project-directory", dir, "-p", project, ...args]);
    compose("up", "-d");
    try {
      fx.image("notes-app");
      fx.image("notes-db");
      const dry = (...names: string[]) => runSvc([...baseFlags(), "--run-once", "--dry-run", ...names]);
      const wouldUpdate = (output: string) =>
        (output.match(/"container":"([^"]+)","state":"stale"/g) ?? []).map((m) => m.split('"')[3]).sort();

      const whole = await dry(project);
      expect(whole.code, whole.svc.describe()).toBe(0);
      expect(wouldUpdate(whole.svc.output)).toEqual([`${project}-app-1`, `${project}-db-1`]);

      const one = await dry(`${project}/app`);
      expect(one.code, one.svc.describe()).toBe(0);
      expect(wouldUpdate(one.svc.output)).toEqual([`${project}-app-1`]);

      const typo = await dry(`${project}/apq`);
      expect(typo.code).toBe(1);
      expect(typo.svc.output).toContain(
        `no container or compose project is named ${project}/apq (did you mean ${project}/app`,
      );
    } finally {
      compose("down", "-t", "1");
    }
  }, 240_000);
});
