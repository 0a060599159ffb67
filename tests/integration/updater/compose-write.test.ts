/**
 * svc moves a compose service's tag in the project's files, on projects shaped as users write
 * them, against real compose (the sandbox's `docker compose`): after the update the file differs
 * from before only in the version, `docker compose up -d` keeps every container (same ids),
 * `docker compose config` names the new version. Each shape names the compose source it follows.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { chmodSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ComposeFiles } from "../../../src/compose/index.ts";
import type { ComposeChange as GitChange, GitStep } from "../../../src/git/index.ts";
import { containerLine } from "../../../src/updater/wrappers/summary.ts";
import { sandbox } from "../../harness.ts";
import { removeComposeProject } from "../../support/fixture.ts";
import { git as gitIn } from "../../support/git-repo.ts";
import { CMD, composeBench, composeWorks, LABELS, type Project } from "./compose-support.ts";
import { expectState, inspect, makeUpdater, TEST_SCOPE } from "./support.ts";

const { fx, project, compose, ids, names, configImages, read, repository, updateAndUp } = composeBench();

afterAll(() => fx.cleanup(), 120_000);

describe.skipIf(!composeWorks)("a tag move written into the compose files", () => {
  const downs: Project[] = [];
  afterAll(() => {
    for (const p of downs) removeComposeProject(p.name);
  }, 120_000);
  const track = (p: Project) => (downs.push(p), p);

  // shape: a plain image line (compose-go cli/testdata/simple/compose.yaml), with a comment, quotes, CRLF and a BOM kept
  test("a plain image line: only the version changes; compose up -d keeps the container; config names it", async () => {
    const r = repository();
    const before = `\uFEFF# the app\r\nservices:\r\n  web:\r\n    image: "${r.v1.ref}"   # pinned by hand\r\n    command: ${CMD}\r\n    labels: ${LABELS}\r\n`;
    const p = track(project("plain", { "compose.yaml": before }));
    chmodSync(join(p.dir, "compose.yaml"), 0o640);
    const { report, containers, afterSvc, afterUp } = await updateAndUp(p);
    const entry = expectState(report, containers[0]!, "updated");
    expect(entry.new_image).toBe(r.v2.ref);
    expect(entry.compose).toEqual({ changes: ["compose.yaml line 4: 1.0.0 -> 1.1.0"], written: true, recreates: null });
    expect(read(p, "compose.yaml")).toBe(before.replace(r.v1.ref, r.v2.ref));
    expect(statSync(join(p.dir, "compose.yaml")).mode & 0o777).toBe(0o640);
    expect(afterUp).toEqual(afterSvc);
    expect(inspect(afterUp.web!).Image).toBe(r.v2.id);
    expect(configImages(p)).toEqual({ web: r.v2.ref });
  }, 120_000);

  test("a dry run says what it would write and writes nothing; the summary line says it too", async () => {
    const r = repository();
    const before = `services:\n  web:\n    image: ${r.v1.ref}\n    command: ${CMD}\n    labels: ${LABELS}\n`;
    const p = track(project("dry", { "compose.yaml": before }));
    compose(p, "up", "-d");
    const [name] = names(p);
    const h = await makeUpdater({ containers: [name!], docker: { config: sandbox().dockerConfig } });
    const report = await h.updater.run("api", undefined, { dryRun: true });
    const entry = expectState(report, name!, "stale");
    expect(entry.compose).toEqual({
      changes: ["compose.yaml line 3: 1.0.0 -> 1.1.0"],
      written: false,
      recreates: null,
    });
    expect(containerLine(entry)).toStartWith(`${name}: would update ${r.v1.ref.split("/").at(-1)} -> 1.1.0 (`);
    expect(containerLine(entry)).toEndWith("); writes compose.yaml line 3: 1.0.0 -> 1.1.0");
    expect(read(p, "compose.yaml")).toBe(before);
    expect(h.audit.entries.filter((e) => e.action.startsWith("compose_"))).toEqual([]);
  }, 120_000);

  const gitWorks = Bun.which("git") !== null;
  test.skipIf(!gitWorks)(
    "[compose] git = commit, the project a real Git work tree: the move is one commit, the work tree clean",
    async () => {
      const r = repository();
      const before = `services:\n  web:\n    image: ${r.v1.ref}\n    command: ${CMD}\n    labels: ${LABELS}\n`;
      const p = track(project("gitcommit", { "compose.yaml": before }));
      const git = (...args: string[]) => gitIn(p.dir, ...args).trim();
      git("init", "-q", "-b", "main");
      git("add", "compose.yaml");
      git("commit", "-q", "-m", "the stack");
      compose(p, "up", "-d");
      const containers = names(p);
      const h = await makeUpdater({
        containers,
        docker: { config: sandbox().dockerConfig },
        compose: { git: "commit", git_author: "svc <svc@test.lan>" },
      });
      const entry = expectState(await h.updater.run("api"), containers[0]!, "updated");
      expect(entry.compose?.git).toMatchObject({ done: "committed", problem: null });
      expect(git("log", "-1", "--format=%an <%ae>|%s")).toBe(`svc <svc@test.lan>|${git("log", "-1", "--format=%s")}`);
      expect(git("log", "-1", "--format=%s")).toContain("web");
      expect(git("show", "HEAD:compose.yaml")).toBe(before.replace("1.0.0", "1.1.0").trimEnd());
      expect(git("status", "--porcelain")).toBe("");
      expect(git("rev-list", "--count", "HEAD")).toBe("2");
    },
    120_000,
  );

  test("[compose] git = pull_request: nothing is written or applied; the move goes into a request, named on the row", async () => {
    const r = repository();
    const before = `services:\n  web:\n    image: ${r.v1.ref}\n    command: ${CMD}\n    labels: ${LABELS}\n`;
    const p = track(project("pullrequest", { "compose.yaml": before }));
    compose(p, "up", "-d");
    const containers = names(p);
    const idBefore = ids(p).web;
    // the git room's forges are tested against their stand-ins; here the seam: one request per service and version
    const recorded: GitChange[] = [];
    const url = "https://forge.lan/me/stacks/pull/7";
    const git: GitStep = {
      check: async () => null,
      record: async (change) => (
        recorded.push(change),
        {
          mode: "pull_request",
          done: "pull_request",
          commit: "c0ffee",
          branch: "svc/web-1.1.0",
          pull_request: { url, number: 7, created: true } as never,
          problem: null,
        }
      ),
    };
    const h = await makeUpdater(
      {
        containers,
        docker: { config: sandbox().dockerConfig },
        compose: { git: "pull_request", git_remote: "https://forge.lan/me/stacks.git" },
      },
      { git },
    );
    const entry = expectState(await h.updater.run("api"), containers[0]!, "stale");
    expect(entry.reason).toBe(`newer tag 1.1.0 proposed in a pull request: ${url}`);
    expect(entry.compose?.git).toEqual({ done: "pull_request", commit: "c0ffee", pull_request: url, problem: null });
    expect(recorded).toEqual([
      {
        project: p.dir,
        moves: [{ service: "web", from: r.v1.ref, to: r.v2.ref, notes: null }],
        files: [{ path: join(p.dir, "compose.yaml"), before, after: before.replace("1.0.0", "1.1.0") }],
      },
    ]);
    expect(read(p, "compose.yaml")).toBe(before);
    expect(ids(p).web).toBe(idBefore);
  }, 120_000);

  // shape: an override file (compose-go cli/testdata/simple/compose-with-overrides.yaml): the last file that sets image wins
  test("an override file: the override's line is written, the base file is untouched", async () => {
    const r = repository();
    const base = `services:\n  web:\n    image: ${r.repo}:0.9.0\n    command: ${CMD}\n    labels: ${LABELS}\n`;
    const override = `services:\n  web:\n    image: ${r.v1.ref}\n`;
    const p = track(project("override", { "compose.yaml": base, "compose.override.yaml": override }));
    const { report, containers, afterSvc, afterUp } = await updateAndUp(p);
    expect(expectState(report, containers[0]!, "updated").compose?.changes).toEqual([
      "compose.override.yaml line 3: 1.0.0 -> 1.1.0",
    ]);
    expect(read(p, "compose.yaml")).toBe(base);
    expect(read(p, "compose.override.yaml")).toBe(override.replace("1.0.0", "1.1.0"));
    expect(afterUp).toEqual(afterSvc);
    expect(configImages(p)).toEqual({ web: r.v2.ref });
  }, 120_000);

  // shape: .env with a default in the file (docker/compose pkg/e2e/fixtures/dotenv/development: IMAGE_TAG with a default)
  test("a variable set in .env, with a default in the compose file: the .env line is written", async () => {
    const r = repository();
    const file = `services:\n  web:\n    image: ${r.repo}:\${APP_TAG:-0.9.0}\n    command: ${CMD}\n    labels: ${LABELS}\n`;
    const env = `# versions\nexport APP_TAG=1.0.0 # the app\nOTHER=x\n`;
    const p = track(project("dotenv", { "compose.yaml": file, ".env": env }));
    const stateDir = fx.tempDir("state");
    const { report, containers, afterSvc, afterUp } = await updateAndUp(p, { stateDir });
    expect(expectState(report, containers[0]!, "updated").compose?.changes).toEqual([
      ".env line 2 (APP_TAG): 1.0.0 -> 1.1.0",
    ]);
    expect(read(p, ".env")).toBe(env.replace("1.0.0", "1.1.0"));
    expect(read(p, "compose.yaml")).toBe(file);
    // what the file held before is kept in state_dir
    const kept = JSON.parse(readFileSync(join(stateDir, "compose", p.name, "web.json"), "utf8"));
    expect(kept.files).toEqual([
      expect.objectContaining({ file: join(p.dir, ".env"), before: env, after: env.replace("1.0.0", "1.1.0") }),
    ]);
    expect(afterUp).toEqual(afterSvc);
    expect(configImages(p)).toEqual({ web: r.v2.ref });
  }, 120_000);

  // shape: ${VAR-default} with no env file setting it (compose-go template: the default applies when the variable is unset)
  test("a default in the compose file that no env file overrides: the default is written", async () => {
    const r = repository();
    const file = `services:\n  web:\n    image: '${r.repo}:\${APP_TAG-1.0.0}'\n    command: ${CMD}\n    labels: ${LABELS}\n`;
    const p = track(project("default", { "compose.yaml": file }));
    const { report, containers, afterSvc, afterUp } = await updateAndUp(p);
    expect(expectState(report, containers[0]!, "updated").compose?.changes).toEqual([
      "compose.yaml line 3: 1.0.0 -> 1.1.0",
    ]);
    expect(read(p, "compose.yaml")).toBe(file.replace("-1.0.0}", "-1.1.0}"));
    expect(afterUp).toEqual(afterSvc);
    expect(configImages(p)).toEqual({ web: r.v2.ref });
  }, 120_000);

  // shape: an anchor and a merge key (compose-go loader/loader_yaml_test.go, `<<: *x`)
  test("an anchor merged into a service: the anchored line is written", async () => {
    const r = repository();
    const file = `x-app: &app\n  image: ${r.v1.ref}\n  command: ${CMD}\n  labels: ${LABELS}\nservices:\n  web:\n    <<: *app\n`;
    const p = track(project("anchor", { "compose.yaml": file }));
    const { report, containers, afterSvc, afterUp } = await updateAndUp(p);
    expect(expectState(report, containers[0]!, "updated").compose?.changes).toEqual([
      "compose.yaml line 2: 1.0.0 -> 1.1.0",
    ]);
    expect(read(p, "compose.yaml")).toBe(file.replace("1.0.0", "1.1.0"));
    expect(afterUp).toEqual(afterSvc);
    expect(configImages(p)).toEqual({ web: r.v2.ref });
  }, 120_000);

  // shape: extends from another file (compose-go loader/testdata/extends/base.yaml, `extends: {file, service}`)
  test("extends from another file: the base file's line is written", async () => {
    const r = repository();
    const baseFile = `services:\n  base:\n    image: ${r.v1.ref}\n    command: ${CMD}\n`;
    const file = `services:\n  web:\n    extends:\n      file: common/base.yaml\n      service: base\n    labels: ${LABELS}\n`;
    const p = track(project("extends", { "compose.yaml": file, "common/base.yaml": baseFile }));
    const { report, containers, afterSvc, afterUp } = await updateAndUp(p);
    expect(expectState(report, containers[0]!, "updated").compose?.changes).toEqual([
      "common/base.yaml line 3: 1.0.0 -> 1.1.0",
    ]);
    expect(read(p, "common/base.yaml")).toBe(baseFile.replace("1.0.0", "1.1.0"));
    expect(read(p, "compose.yaml")).toBe(file);
    expect(afterUp).toEqual(afterSvc);
    expect(configImages(p)).toEqual({ web: r.v2.ref });
  }, 120_000);

  // shape: top-level include (compose-go loader/include.go ApplyInclude: the included project's own folder and .env)
  for (const cli of [true, false]) {
    test(`a service from an included file in a subfolder, its tag in that folder's .env: that line is written${cli ? "" : " (no compose CLI: svc computes compose's hash)"}`, async () => {
      const r = repository();
      const top = `include:\n  - db/compose.yaml\n`;
      const included = `services:\n  db:\n    image: ${r.repo}:\${DB_TAG}\n    command: ${CMD}\n    labels: ${LABELS}\n    volumes: ["./data:/data"]\n`;
      const env = `DB_TAG=1.0.0\n`;
      const p = track(
        project(cli ? "include" : "includenocli", { "compose.yaml": top, "db/compose.yaml": included, "db/.env": env }),
      );
      compose(p, "up", "-d");
      const containers = names(p);
      const h = await makeUpdater(
        { containers, docker: { config: sandbox().dockerConfig } },
        cli ? {} : { compose: new ComposeFiles({ write: true, stateDir: null, cli: null }) },
      );
      const entry = expectState(await h.updater.run("api"), containers[0]!, "updated");
      expect(entry.compose).toMatchObject({
        changes: ["db/.env line 1 (DB_TAG): 1.0.0 -> 1.1.0"],
        written: true,
        recreates: null,
      });
      expect(read(p, "db/.env")).toBe(env.replace("1.0.0", "1.1.0"));
      expect(read(p, "compose.yaml")).toBe(top);
      expect(read(p, "db/compose.yaml")).toBe(included);
      const afterSvc = ids(p);
      compose(p, "up", "-d");
      expect(ids(p)).toEqual(afterSvc);
      expect(configImages(p)).toEqual({ db: r.v2.ref });
    }, 120_000);
  }

  // shape: a digest-pinned line (compose spec: image `repo:tag@sha256:...`): tag and digest move together
  test("a digest-pinned line: the tag and the digest move together, and back with svc rollback", async () => {
    const r = repository();
    const file = `services:\n  web:\n    image: ${r.v1.ref}@${r.v1.digest}\n    command: ${CMD}\n    labels: ${LABELS}\n`;
    const p = track(project("pinned", { "compose.yaml": file }));
    const { h, report, containers, afterSvc, afterUp } = await updateAndUp(p);
    const entry = expectState(report, containers[0]!, "updated");
    expect(entry.compose?.changes).toEqual([
      `compose.yaml line 3: 1.0.0 -> 1.1.0`,
      `compose.yaml line 3: ${r.v1.digest} -> ${r.v2.digest}`,
    ]);
    expect(read(p, "compose.yaml")).toBe(file.replace(`1.0.0@${r.v1.digest}`, `1.1.0@${r.v2.digest}`));
    expect(afterUp).toEqual(afterSvc);
    expect(configImages(p)).toEqual({ web: `${r.v2.ref}@${r.v2.digest}` });

    // svc rollback moves the pin back: the line returns byte for byte
    expect(await h.updater.rollback(containers[0]!)).toMatchObject({ state: "updated", to_image_id: r.v1.id });
    expect(read(p, "compose.yaml")).toBe(file);
    const back = ids(p);
    compose(p, "up", "-d");
    expect(ids(p)).toEqual(back);
  }, 120_000);

  // shape: two services sharing one variable (docker/compose pkg/e2e/fixtures/dotenv: one IMAGE_TAG for a project)
  test("two services sharing a variable, updated as a stack (POST /v1/update?stack=), move together: the .env line is written once", async () => {
    const r = repository();
    const service = (name: string) =>
      `  ${name}:\n    image: ${r.repo}:\${TAG}\n    command: ${CMD}\n    labels: ${LABELS}\n`;
    const file = `services:\n${service("web")}${service("worker")}`;
    const p = track(project("shared", { "compose.yaml": file, ".env": "TAG=1.0.0\n" }));
    const { h, report, containers, afterSvc, afterUp } = await updateAndUp(p, { asStack: true });
    expect(report?.filter.stack).toEqual([p.name]);
    for (const name of containers)
      expect(expectState(report, name, "updated").compose?.changes).toEqual([".env line 1 (TAG): 1.0.0 -> 1.1.0"]);
    expect(read(p, ".env")).toBe("TAG=1.1.0\n");
    expect(h.audit.entries.filter((e) => e.action === "compose_write")).toHaveLength(2);
    expect(afterUp).toEqual(afterSvc);
    expect(configImages(p)).toEqual({ web: r.v2.ref, worker: r.v2.ref });
  }, 120_000);

  test("a variable shared with a service that does not move holds, naming it", async () => {
    const r = repository();
    const file = `services:\n  web:\n    image: ${r.repo}:\${TAG}\n    command: ${CMD}\n    labels: ${LABELS}\n  worker:\n    image: ${r.repo}:\${TAG}\n    command: ${CMD}\n    labels: { svc.scope: ${TEST_SCOPE} }\n`;
    const p = track(project("sharedhold", { "compose.yaml": file, ".env": "TAG=1.0.0\n" }));
    compose(p, "up", "-d");
    const web = String(inspect(ids(p).web!).Name).slice(1);
    const h = await makeUpdater({ containers: [web], docker: { config: sandbox().dockerConfig } });
    const report = await h.updater.run("api");
    expect(expectState(report, web, "stale").reason).toContain("shared with worker");
    expect(read(p, ".env")).toBe("TAG=1.0.0\n");
  }, 120_000);
});

describe.skipIf(!composeWorks)("what is written comes back, and what svc cannot write holds", () => {
  const downs: Project[] = [];
  const mounts: string[] = [];
  afterAll(() => {
    for (const p of downs) removeComposeProject(p.name);
    for (const m of mounts) Bun.spawnSync(["umount", m]);
  }, 120_000);
  const track = (p: Project) => (downs.push(p), p);

  test("a new tag that fails its checks is rolled back: the file returns byte for byte, compose up -d keeps the old container", async () => {
    const v1 = fx.image("failing", { tag: "1.0.0" });
    fx.image("failing", { tag: "1.1.0", changes: ['CMD ["/bin/sh","-c","echo broken; exit 3"]'] });
    const before = `services:\n  web:\n    image: ${v1.ref} # app\n    labels: ${LABELS}\n`;
    const p = track(project("failing", { "compose.yaml": before }));
    const { h, report, containers, afterSvc, afterUp } = await updateAndUp(p);
    const entry = expectState(report, containers[0]!, "rolled_back");
    expect(entry.compose).toEqual({
      changes: ["compose.yaml line 3: 1.0.0 -> 1.1.0"],
      written: false,
      recreates: null,
    });
    expect(read(p, "compose.yaml")).toBe(before);
    expect(h.audit.entries.filter((e) => e.action.startsWith("compose_")).map((e) => e.action)).toEqual([
      "compose_write",
      "compose_revert",
    ]);
    expect(afterUp).toEqual(afterSvc);
    expect(inspect(afterUp.web!).Image).toBe(v1.id);
  }, 120_000);

  test("a stack moves as a unit: one service fails its checks, every service and the file go back", async () => {
    const web = repository();
    const w1 = fx.image("stackworker", { tag: "1.0.0" });
    fx.image("stackworker", { tag: "1.1.0", changes: ['CMD ["/bin/sh","-c","echo broken; exit 3"]'] });
    const before = `services:\n  web:\n    image: ${web.v1.ref}\n    command: ${CMD}\n    labels: ${LABELS}\n  worker:\n    image: ${w1.ref}\n    labels: ${LABELS}\n    depends_on: [web]\n`;
    // worker depends on web: web is updated first, then worker fails and web goes back with it
    const p = track(project("stack", { "compose.yaml": before }));
    compose(p, "up", "-d");
    const first = ids(p);
    const containers = names(p);
    const h = await makeUpdater({
      containers,
      rollback: { startup_timeout: 5000 },
      docker: { config: sandbox().dockerConfig },
    });
    const report = await h.updater.run("api");
    const [webName, workerName] = ["web", "worker"].map((s) => containers.find((n) => n.includes(`-${s}-`))!);
    expectState(report, workerName!, "rolled_back");
    expect(expectState(report, webName!, "rolled_back").reason).toBe("rolled back with its stack: worker failed");
    expect(read(p, "compose.yaml")).toBe(before);
    const back = ids(p);
    expect(back.worker).toBe(first.worker);
    expect(inspect(back.web!).Image).toBe(web.v1.id);
    expect(inspect(back.web!).Config.Image).toBe(web.v1.ref);
    compose(p, "up", "-d");
    expect(ids(p)).toEqual(back);
  }, 120_000);

  test("svc rollback writes the file back byte for byte; compose up -d keeps the container it put back", async () => {
    const r = repository();
    const before = `services:\n  web:\n    # the app\n    image: "${r.v1.ref}"\n    command: ${CMD}\n    labels: ${LABELS}\n`;
    const p = track(project("undo", { "compose.yaml": before }));
    const { h, report, containers } = await updateAndUp(p);
    expectState(report, containers[0]!, "updated");
    expect(read(p, "compose.yaml")).toBe(before.replace("1.0.0", "1.1.0"));

    const back = await h.updater.rollback(containers[0]!);
    expect(back).toMatchObject({ state: "updated", to_image_id: r.v1.id });
    expect(read(p, "compose.yaml")).toBe(before);
    const rolledBack = ids(p);
    compose(p, "up", "-d");
    expect(ids(p)).toEqual(rolledBack);
    expect(inspect(rolledBack.web!).Image).toBe(r.v1.id);
    expect(configImages(p)).toEqual({ web: r.v1.ref });
  }, 120_000);

  test("svc rollback is refused with the reason when the line changed since", async () => {
    const r = repository();
    const before = `services:\n  web:\n    image: ${r.v1.ref}\n    command: ${CMD}\n    labels: ${LABELS}\n`;
    const p = track(project("undoedit", { "compose.yaml": before }));
    const { h, report, containers } = await updateAndUp(p);
    expectState(report, containers[0]!, "updated");
    const edited = before.replace("1.0.0", "1.1.1");
    writeFileSync(join(p.dir, "compose.yaml"), edited);
    const idBefore = ids(p).web;
    const back = await h.updater.rollback(containers[0]!);
    expect(back?.state).toBe("skipped");
    expect(back?.reason).toContain("not rolled back: its compose file cannot be written back");
    expect(read(p, "compose.yaml")).toBe(edited);
    expect(ids(p).web).toBe(idBefore);
  }, 120_000);

  test("a file edited while svc works is detected: nothing is written, nothing is stopped", async () => {
    const r = repository();
    const before = `services:\n  web:\n    image: ${r.v1.ref}\n    command: ${CMD}\n    labels: ${LABELS}\n`;
    const p = track(project("meanwhile", { "compose.yaml": before }));
    compose(p, "up", "-d");
    const [name] = names(p);
    const edited = `${before}# edited by hand\n`;
    const progress = (event: { step: string }) => {
      if (event.step === "pull") writeFileSync(join(p.dir, "compose.yaml"), edited);
    };
    const h = await makeUpdater(
      { containers: [name!], docker: { config: sandbox().dockerConfig } },
      { progress: progress as never },
    );
    const idBefore = ids(p).web;
    const report = await h.updater.run("api");
    expect(expectState(report, name!, "skipped").reason).toBe(
      `its compose file was not written: ${join(p.dir, "compose.yaml")} changed since svc read it`,
    );
    expect(read(p, "compose.yaml")).toBe(edited);
    expect(ids(p).web).toBe(idBefore);
  }, 120_000);

  const canMount = Bun.spawnSync(["mount", "--version"]).exitCode === 0 && process.getuid?.() === 0;
  test.skipIf(!canMount)(
    "a project on a read-only mount holds with the reason",
    async () => {
      const r = repository();
      const source = fx.tempDir("rosource");
      writeFileSync(
        join(source, "compose.yaml"),
        `services:\n  web:\n    image: ${r.v1.ref}\n    command: ${CMD}\n    labels: ${LABELS}\n`,
      );
      const dir = fx.tempDir("ro");
      expect(Bun.spawnSync(["mount", "--bind", source, dir]).exitCode).toBe(0);
      mounts.push(dir);
      expect(Bun.spawnSync(["mount", "-o", "remount,bind,ro", dir]).exitCode).toBe(0);
      const p = track({ dir, name: fx.name("readonly").toLowerCase() });
      compose(p, "up", "-d");
      const [name] = names(p);
      const h = await makeUpdater({ containers: [name!], docker: { config: sandbox().dockerConfig } });
      const report = await h.updater.run("api");
      expect(expectState(report, name!, "stale").reason).toBe(
        `newer tag 1.1.0 available; the compose file names 1.0.0 (svc cannot write ${dir} (a read-only mount))`,
      );
    },
    120_000,
  );
});

if (!composeWorks)
  console.warn(`compose write tests skipped: \`docker compose version\` fails against ${sandbox().dockerHost}`);
