/**
 * The records a service keeps say what happened beside it: a `svc --run-once` on the same
 * state_dir is in the service's GET /v1/history at once and stays there after the service's next
 * cycle (history.json is merged, never written over); a run-once that selected nothing leaves no
 * empty entry; a compose change Git refused to record is said in words and fails the run.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { docker, inspect } from "../../harness.ts";
import { git } from "../../support/git-repo.ts";
import { baseFlags, Fixture, parseJsonLines, runSvc, startServiceOnState, stopAll } from "./support.ts";

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
    const { service, port } = await startServiceOnState(stateDir, TOKEN, [name]);
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

describe("a compose change Git did not record", () => {
  test("a Git commit refused (the user's own change in .env): the file is written, the run says so in one line and exits 1", async () => {
    const project = fx.name("gitrefused");
    const dir = fx.tempDir("gitrefused");
    const v1 = fx.image("gitrefused", { tag: "1.0.0" });
    const v2 = fx.image("gitrefused", { tag: "1.1.0" });
    const repository = v1.ref.slice(0, v1.ref.lastIndexOf(":"));
    const file = {
      name: project,
      services: {
        app: {
          image: `${repository}:\${TAG}`,
          network_mode: "none",
          stop_grace_period: "1s",
          labels: { "svc.tag_policy": "semver:minor" },
        },
      },
    };
    writeFileSync(join(dir, "compose.yaml"), JSON.stringify(file));
    writeFileSync(join(dir, ".env"), "TAG=1.0.0\n");
    git(dir, "init", "-q", "-b", "main");
    git(dir, "add", ".");
    git(dir, "commit", "-q", "-m", "the stack");
    const compose = (...args: string[]) => docker(["compose", "--project-directory", dir, "-p", project, ...args]);
    compose("up", "-d");
    try {
      // the user's own change, not committed: svc's commit would carry it, so Git is left alone
      writeFileSync(join(dir, ".env"), "TAG=1.0.0\nDEBUG=1\n");
      const run = await runSvc([...baseFlags(), "--compose-git", "commit", "--run-once", project]);
      expect(run.code, run.svc.describe()).toBe(1);
      const name = `${project}-app-1`;
      expect(inspect(name).Image).toBe(v2.id);
      // the move is written, the user's change kept, and nothing committed
      expect(readFileSync(join(dir, ".env"), "utf8")).toBe("TAG=1.1.0\nDEBUG=1\n");
      expect(git(dir, "log", "--format=%s").trim()).toBe("the stack");
      // said on the container's own line at warn, in words, not only in the report's JSON
      const lines = parseJsonLines(run.svc.output).filter((line) => line.fields?.container === name);
      const said = lines.find((line) => /not committed to Git: .*\.env differs from what Git holds/.test(line.message));
      expect(said, run.svc.describe()).toBeDefined();
      expect(said.level).toBe("warn");
    } finally {
      compose("down", "-t", "1");
    }
  }, 240_000);
});
