/**
 * Services compose builds follow the images they are built FROM, against real compose (the
 * sandbox's `docker compose` 2.40, which builds through the engine's BuildKit without the buildx
 * plugin) and the sandbox's registry: the first cycle records each base's digest and rebuilds
 * nothing; a new digest pushed for a base rebuilds each service built on it once (a plain
 * Dockerfile, a multi-stage one, an ARG whose tag is in .env, a dockerfile_inline), never one
 * that pins the base by digest; `compose up -d` afterwards recreates nothing. A build that fails
 * and a rebuilt image whose container fails its healthcheck leave the old image running and
 * compose's tag on it. A tag policy moves a base's tag where it is written (the Dockerfile's `FROM`,
 * a global `ARG`'s default, or the `.env` line a build arg takes it from), committed through Git as
 * an image line is, and written back byte for byte when the build fails; a tag the compose file
 * writes as a build arg is only reported. A base behind a registry login is asked and pulled with
 * the login of the DOCKER_CONFIG svc is given.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { sandbox } from "../../harness.ts";
import { removeComposeProject } from "../../support/fixture.ts";
import { git as gitIn } from "../../support/git-repo.ts";
import { CMD, composeBench, composeWorks, type Project } from "./compose-support.ts";
import { docker, entryOf, expectState, inspect, makeUpdater, TEST_SCOPE } from "./support.ts";

const { fx, project, compose, ids, names } = composeBench();

afterAll(() => fx.cleanup(), 120_000);

/** Whether the engine holds an image of that name. */
const named = (reference: string) => docker(["image", "inspect", reference], { allowFailure: true }).code === 0;

/** Every built service's build runs without a network: the sandbox's engine has no default bridge. */
const BUILD = "      context: .\n      network: none\n";
const LABELS = `{ svc.scope: ${TEST_SCOPE} }`;

function service(name: string, build: string, extra = ""): string {
  return `  ${name}:\n    build:\n${build}    command: ${CMD}\n    labels: ${LABELS}\n${extra}`;
}

describe.skipIf(!composeWorks)("built services follow their bases", () => {
  const downs: Project[] = [];
  afterAll(() => {
    for (const p of downs) removeComposeProject(p.name);
  }, 120_000);
  const track = (p: Project) => (downs.push(p), p);

  /** One updater per project, as one svc process: what it records of the bases lives as long as it does. */
  async function updaterOf(p: Project, more: Partial<Parameters<typeof makeUpdater>[0]> = {}) {
    const h = await makeUpdater({
      containers: names(p),
      rollback: { startup_timeout: 8000 },
      docker: { config: sandbox().dockerConfig },
      ...more,
    });
    return async (options: { dryRun?: boolean } = {}) => {
      const seen = h.audit.entries.length;
      const report = await h.updater.run("api", undefined, { dryRun: options.dryRun ?? false });
      return { report, audit: h.audit.entries.slice(seen) };
    };
  }

  const imageOf = (p: Project, service: string) => inspect(ids(p)[service]!).Image as string;
  const container = (p: Project, service: string) => String(inspect(ids(p)[service]!).Name).slice(1);

  test("a moved base rebuilds each service built on it once; a pinned one never; compose up -d recreates nothing", async () => {
    const base = fx.image("base", { tag: "1" });
    const repo = base.ref.slice(0, base.ref.lastIndexOf(":"));
    const p = track(
      project("built", {
        "compose.yaml": `services:\n${[
          service("plain", `${BUILD}      dockerfile: plain.Dockerfile\n`),
          service("multi", `${BUILD}      dockerfile: multi.Dockerfile\n`),
          service("argenv", `${BUILD}      dockerfile: arg.Dockerfile\n      args:\n        TAG: \${BASE_TAG}\n`),
          service(
            "inline",
            `${BUILD}      dockerfile_inline: |\n        FROM ${repo}:\${BASE_TAG}\n        RUN echo inline > /inline\n`,
          ),
          service("pinned", `${BUILD}      dockerfile: pinned.Dockerfile\n`),
        ].join("")}`,
        ".env": "BASE_TAG=1\n",
        "plain.Dockerfile": `FROM ${base.ref}\nRUN echo plain > /plain\n`,
        "multi.Dockerfile": `FROM ${base.ref} AS build\nRUN echo built > /out\nFROM build AS test\nFROM scratch AS empty\nFROM ${base.ref}\nCOPY --from=build /out /out\n`,
        "arg.Dockerfile": `ARG REPO=${repo}\nARG TAG=0\nFROM \${REPO}:\${TAG}\nRUN echo arg > /arg\n`,
        "pinned.Dockerfile": `FROM ${base.ref}@${base.digest}\nRUN echo pinned > /pinned\n`,
      }),
    );
    compose(p, "up", "-d");
    const cycle = await updaterOf(p);
    const services = ["plain", "multi", "argenv", "inline", "pinned"];
    const before = Object.fromEntries(services.map((s) => [s, imageOf(p, s)]));

    // first sight: each base recorded, nothing rebuilt
    const first = await cycle();
    for (const s of services) {
      const entry = expectState(first.report, container(p, s), "fresh");
      expect(entry.built?.bases.map((b) => b.reference)).toEqual([
        s === "pinned" ? `${base.ref}@${base.digest}` : s === "argenv" || s === "inline" ? `${repo}:1` : base.ref,
      ]);
      expect(entry.built?.rebuilt).toBe(false);
    }
    expect(first.audit.filter((e) => e.action === "build")).toEqual([]);

    // a new image pushed under the base's tag
    const moved = fx.image("base", { tag: "1" });
    const dry = await cycle({ dryRun: true });
    const planned = entryOf(dry.report, container(p, "plain"));
    expect(planned.state).toBe("stale");
    expect(planned.built?.moved).toEqual([base.ref]);
    expect(planned.built?.command).toContain("build --pull plain");
    expect(imageOf(p, "plain")).toBe(before.plain!);

    const second = await cycle();
    const afterSvc = ids(p);
    for (const s of ["plain", "multi", "argenv", "inline"]) {
      const entry = expectState(second.report, container(p, s), "updated");
      expect(entry.reason).toStartWith(
        `rebuilt: base ${s === "argenv" || s === "inline" ? `${repo}:1` : base.ref} moved`,
      );
      expect(entry.built?.rebuilt).toBe(true);
      expect(entry.built?.bases[0]).toMatchObject({ built_digest: base.digest!, digest: moved.digest! });
      expect(imageOf(p, s)).not.toBe(before[s]);
    }
    expect(expectState(second.report, container(p, "pinned"), "fresh").built?.bases[0]?.pinned).toBe(true);
    expect(imageOf(p, "pinned")).toBe(before.pinned!);
    expect(second.audit.filter((e) => e.action === "build").length).toBe(4);

    // compose finds nothing to do: the same containers, which compose ps lists as its own
    compose(p, "up", "-d");
    expect(ids(p)).toEqual(afterSvc);
    const ps = compose(p, "ps", "--format", "{{.Service}} {{.State}}").trim().split("\n").sort();
    expect(ps).toEqual(services.map((s) => `${s} running`).sort());

    // the next cycle counts from the bases it was rebuilt from
    const third = await cycle();
    for (const s of services) expectState(third.report, container(p, s), "fresh");
  }, 600_000);

  test("a build that fails and a rebuilt image that fails its healthcheck: the old image runs, compose's tag on it", async () => {
    const base = fx.image("hbase", { tag: "1" });
    const healthcheck =
      '    healthcheck:\n      test: ["CMD-SHELL", "[ -z \\"$$BROKEN\\" ]"]\n      interval: 1s\n      timeout: 1s\n      retries: 1\n';
    const p = track(
      project("fails", {
        "compose.yaml": `services:\n${service("broken", `${BUILD}      dockerfile: broken.Dockerfile\n`)}${service(
          "sick",
          `${BUILD}      dockerfile: sick.Dockerfile\n`,
          healthcheck,
        )}`,
        "broken.Dockerfile": `FROM ${base.ref}\nRUN echo ok > /ok\n`,
        "sick.Dockerfile": `FROM ${base.ref}\nRUN echo ok > /ok\n`,
      }),
    );
    compose(p, "up", "-d");
    const cycle = await updaterOf(p);
    await cycle();
    const before = { broken: imageOf(p, "broken"), sick: imageOf(p, "sick") };
    const beforeIds = ids(p);

    // the next build of broken fails at a RUN; sick's new base makes its container unhealthy
    writeFileSync(join(p.dir, "broken.Dockerfile"), `FROM ${base.ref}\nRUN exit 3\n`);
    fx.image("hbase", { tag: "1", changes: ['CMD ["/bin/sleep","3600"]', "ENV BROKEN=1"] });
    const { report } = await cycle();
    const broken = expectState(report, container(p, "broken"), "failed");
    expect(broken.reason).toStartWith("rebuild failed: compose build exited with");
    const sick = expectState(report, container(p, "sick"), "rolled_back");
    expect(sick.built?.rebuilt).toBe(false);

    expect(ids(p)).toEqual(beforeIds);
    expect(imageOf(p, "broken")).toBe(before.broken);
    expect(imageOf(p, "sick")).toBe(before.sick);
    // compose's tag names the image the old container runs: up -d keeps both containers
    expect(inspect(`${p.name}-sick`).Id).toBe(before.sick);
    expect(inspect(`${p.name}-broken`).Id).toBe(before.broken);
    // the name svc kept the old image by goes once compose's names it again
    expect(named(`${p.name}-sick:svc-previous`)).toBe(false);
    expect(named(`${p.name}-broken:svc-previous`)).toBe(false);
    writeFileSync(join(p.dir, "broken.Dockerfile"), `FROM ${base.ref}\nRUN echo ok > /ok\n`);
    compose(p, "up", "-d", "--no-build");
    expect(ids(p)).toEqual(beforeIds);
  }, 600_000);

  const gitWorks = Bun.which("git") !== null;
  test.skipIf(!gitWorks)(
    "a tag policy moves a base's tag in the Dockerfile, its ARG or .env, one commit; a literal build arg is only reported",
    async () => {
      const old = fx.image("tbase", { tag: "1.0", changes: ['CMD ["/bin/sh"]', "ENV BASE=1.0"] });
      const repo = old.ref.slice(0, old.ref.lastIndexOf(":"));
      const labels = `{ svc.scope: ${TEST_SCOPE}, svc.tag_policy: "semver:minor" }`;
      const policed = (name: string, build: string) =>
        `  ${name}:\n    build:\n${build}    command: ${CMD}\n    labels: ${labels}\n`;
      const files = {
        "compose.yaml": `services:\n${[
          policed("lit", `${BUILD}      dockerfile: lit.Dockerfile\n`),
          policed("arg", `${BUILD}      dockerfile: arg.Dockerfile\n`),
          policed("byargs", `${BUILD}      dockerfile: arg.Dockerfile\n      args:\n        TAG: \${BASE_TAG}\n`),
          policed("literal", `${BUILD}      dockerfile: arg.Dockerfile\n      args:\n        TAG: "1.0"\n`),
        ].join("")}`,
        ".env": "# the base's tag\nBASE_TAG=1.0 # moved by svc\nOTHER=1.0\n",
        "lit.Dockerfile": `# the base\nFROM ${repo}:1.0 AS base\nRUN echo lit > /lit\n`,
        "arg.Dockerfile": `ARG TAG=1.0\nFROM ${repo}:\${TAG}\nRUN echo arg > /arg\n`,
      };
      const p = track(project("tagged", files));
      const git = (...args: string[]) => gitIn(p.dir, ...args).trim();
      git("init", "-q", "-b", "main");
      git("add", ".");
      git("commit", "-q", "-m", "the stack");
      compose(p, "up", "-d");
      const cycle = await updaterOf(p, { compose: { git: "commit", git_author: "svc <svc@test.lan>" } });
      for (const s of ["lit", "arg", "byargs", "literal"])
        expectState((await cycle()).report, container(p, s), "fresh");

      // a newer minor tag of the base: the Dockerfiles and .env move to it, a tag the compose file writes does not
      fx.image("tbase", { tag: "1.1", changes: ['CMD ["/bin/sh"]', "ENV BASE=1.1"] });
      const dry = await cycle({ dryRun: true });
      expect(entryOf(dry.report, container(p, "lit")).compose?.changes).toEqual(["lit.Dockerfile line 2: 1.0 -> 1.1"]);
      expect(entryOf(dry.report, container(p, "byargs")).compose?.changes).toEqual([
        ".env line 2 (BASE_TAG): 1.0 -> 1.1",
      ]);
      expect(readFileSync(join(p.dir, "lit.Dockerfile"), "utf8")).toBe(files["lit.Dockerfile"]);
      expect(readFileSync(join(p.dir, ".env"), "utf8")).toBe(files[".env"]);

      const { report } = await cycle();
      for (const s of ["lit", "arg", "byargs"]) {
        const entry = expectState(report, container(p, s), "updated");
        expect(entry.reason).toBe(`rebuilt: base ${repo}:1.0 -> ${repo}:1.1 (tag policy)`);
        expect(inspect(imageOf(p, s)).Config.Env).toContain("BASE=1.1");
      }
      const held = expectState(report, container(p, "literal"), "stale");
      expect(held.reason).toContain(
        `newer tag ${repo}:1.1 of base ${repo}:1.0 not moved: its tag is the build arg TAG: build.args.TAG is written in the compose file`,
      );
      expect(inspect(imageOf(p, "literal")).Config.Env).toContain("BASE=1.0");
      expect(readFileSync(join(p.dir, "lit.Dockerfile"), "utf8")).toBe(files["lit.Dockerfile"].replace(":1.0", ":1.1"));
      expect(readFileSync(join(p.dir, "arg.Dockerfile"), "utf8")).toBe(files["arg.Dockerfile"].replace("=1.0", "=1.1"));
      // only the tag's characters: the comments and the other variable as they were
      expect(readFileSync(join(p.dir, ".env"), "utf8")).toBe(
        "# the base's tag\nBASE_TAG=1.1 # moved by svc\nOTHER=1.0\n",
      );
      expect(entryOf(report, container(p, "byargs")).compose?.git).toMatchObject({ done: "committed", problem: null });
      expect(git("status", "--porcelain")).toBe("");
      expect(git("rev-list", "--count", "HEAD")).toBe("2");
      expect(git("show", "--name-only", "--format=", "HEAD").split("\n").sort()).toEqual([
        ".env",
        "arg.Dockerfile",
        "lit.Dockerfile",
      ]);

      // compose finds nothing to do, and the next cycle counts from the new tag
      const afterSvc = ids(p);
      compose(p, "up", "-d");
      expect(ids(p)).toEqual(afterSvc);
      const next = await cycle();
      for (const s of ["lit", "arg", "byargs"])
        expect(expectState(next.report, container(p, s), "fresh").built?.bases.map((b) => b.reference)).toEqual([
          `${repo}:1.1`,
        ]);
    },
    600_000,
  );

  test("a base's new tag whose build fails: the Dockerfile and .env are written back, the old images run", async () => {
    const repo = fx
      .image("fbase", { tag: "1.0", changes: ['CMD ["/bin/sh"]', "ENV BASE=1.0"] })
      .ref.replace(/:1\.0$/, "");
    const dockerfile = `FROM ${repo}:1.0\nRUN [ "$BASE" = 1.0 ]\n`;
    const argDockerfile = `ARG TAG=0\nFROM ${repo}:\${TAG}\nRUN [ "$BASE" = 1.0 ]\n`;
    const env = 'BASE_TAG="1.0"\n';
    const labels = `{ svc.scope: ${TEST_SCOPE}, svc.tag_policy: "semver:minor" }`;
    const p = track(
      project("tagfails", {
        "compose.yaml": `services:\n  only:\n    build:\n${BUILD}    command: ${CMD}\n    labels: ${labels}\n  envd:\n    build:\n${BUILD}      dockerfile: arg.Dockerfile\n      args: { TAG: "\${BASE_TAG}" }\n    command: ${CMD}\n    labels: ${labels}\n`,
        Dockerfile: dockerfile,
        "arg.Dockerfile": argDockerfile,
        ".env": env,
      }),
    );
    compose(p, "up", "-d");
    const cycle = await updaterOf(p);
    for (const s of ["only", "envd"]) expectState((await cycle()).report, container(p, s), "fresh");
    const before = { ids: ids(p), only: imageOf(p, "only"), envd: imageOf(p, "envd") };
    fx.image("fbase", { tag: "1.1", changes: ['CMD ["/bin/sh"]', "ENV BASE=1.1"] });
    const { report, audit } = await cycle();
    for (const s of ["only", "envd"])
      expect(expectState(report, container(p, s), "failed").reason).toStartWith(
        "rebuild failed: compose build exited with",
      );
    expect(
      audit
        .filter((e) => e.action === "compose_revert")
        .map((e) => e.container)
        .sort(),
    ).toEqual([container(p, "envd"), container(p, "only")].sort());
    expect(readFileSync(join(p.dir, "Dockerfile"), "utf8")).toBe(dockerfile);
    expect(readFileSync(join(p.dir, "arg.Dockerfile"), "utf8")).toBe(argDockerfile);
    expect(readFileSync(join(p.dir, ".env"), "utf8")).toBe(env);
    expect(ids(p)).toEqual(before.ids);
    expect(imageOf(p, "only")).toBe(before.only);
    expect(imageOf(p, "envd")).toBe(before.envd);
    compose(p, "up", "-d", "--no-build");
    expect(ids(p)).toEqual(before.ids);
  }, 600_000);

  test("a service in a profile, its dependency in another, its base's tag in an --env-file: rebuilt as compose runs it", async () => {
    const base = fx.image("pbase", { tag: "1" });
    const db = fx.image("pdb", { tag: "1" });
    const repo = base.ref.slice(0, base.ref.lastIndexOf(":"));
    const p = track(
      project("profiled", {
        "compose.yaml": `services:\n${service(
          "app",
          `${BUILD}      args:\n        TAG: \${BASE_TAG}\n`,
          "    profiles: [extra]\n    depends_on: [db]\n",
        )}  db:\n    image: ${db.ref}\n    command: ${CMD}\n    labels: ${LABELS}\n    profiles: [other]\n`,
        Dockerfile: `ARG TAG=0\nFROM ${repo}:\${TAG}\nRUN echo app > /app\n`,
        "envs/prod.env": "BASE_TAG=1\n",
      }),
    );
    const run = ["--env-file", join(p.dir, "envs/prod.env"), "--profile", "extra", "--profile", "other"];
    compose(p, ...run, "up", "-d");
    const cycle = await updaterOf(p);
    const first = expectState((await cycle()).report, container(p, "app"), "fresh");
    expect(first.built?.bases.map((b) => b.reference)).toEqual([`${repo}:1`]);
    expect(first.built?.command).toContain(
      `--env-file ${join(p.dir, "envs/prod.env")} --profile extra --profile other build --pull app`,
    );
    const before = imageOf(p, "app");

    const moved = fx.image("pbase", { tag: "1" });
    const { report } = await cycle();
    const entry = expectState(report, container(p, "app"), "updated");
    expect(entry.built?.bases[0]).toMatchObject({ digest: moved.digest! });
    expect(imageOf(p, "app")).not.toBe(before);
    const afterSvc = ids(p);
    compose(p, ...run, "up", "-d");
    expect(ids(p)).toEqual(afterSvc);
  }, 600_000);

  test("a base behind a registry login: asked and pulled with the login of DOCKER_CONFIG, rebuilt once", async () => {
    const { authRegistry, authUser, authPass, dockerConfig } = sandbox();
    const base = fx.image("lbase", { tag: "1", registry: authRegistry });
    // a user's DOCKER_CONFIG: the login, beside the compose plugin
    const config = fx.tempDir("login");
    mkdirSync(join(config, "cli-plugins"));
    symlinkSync(join(dockerConfig, "cli-plugins", "docker-compose"), join(config, "cli-plugins", "docker-compose"));
    const auth = Buffer.from(`${authUser}:${authPass}`).toString("base64");
    writeFileSync(join(config, "config.json"), JSON.stringify({ auths: { [authRegistry]: { auth } } }));
    const p = track(
      project("login", {
        "compose.yaml": `services:\n${service("app", BUILD)}`,
        Dockerfile: `FROM ${base.ref}\nRUN echo app > /app\n`,
      }),
    );
    const up = () => docker(["--config", config, "compose", "--project-directory", p.dir, "-p", p.name, "up", "-d"]);
    up();
    const cycle = await updaterOf(p, { docker: { config } });
    expectState((await cycle()).report, container(p, "app"), "fresh");
    const before = imageOf(p, "app");

    const moved = fx.image("lbase", { tag: "1", registry: authRegistry });
    // the build must pull it, through the login (BuildKit keeps what it pulls in its own cache)
    docker(["rmi", moved.ref]);
    const { report, audit } = await cycle();
    const entry = expectState(report, container(p, "app"), "updated");
    expect(entry.built?.bases[0]).toMatchObject({ built_digest: base.digest!, digest: moved.digest! });
    expect(audit.filter((e) => e.action === "build").length).toBe(1);
    expect(imageOf(p, "app")).not.toBe(before);
    const afterSvc = ids(p);
    up();
    expect(ids(p)).toEqual(afterSvc);
  }, 600_000);

  test("with cleanup, the image a rebuild left goes after cleanup_delay, and its svc-previous name with it", async () => {
    fx.image("cbase", { tag: "1" });
    const base = fx.image("cbase", { tag: "1" });
    const p = track(
      project("cleaned", {
        "compose.yaml": `services:\n${service("app", BUILD)}`,
        Dockerfile: `FROM ${base.ref}\nRUN echo app > /app\n`,
      }),
    );
    compose(p, "up", "-d");
    const cycle = await updaterOf(p, { cleanup: true, cleanup_delay: 0 });
    await cycle();
    const before = imageOf(p, "app");
    fx.image("cbase", { tag: "1" });
    const { report } = await cycle();
    expectState(report, container(p, "app"), "updated");
    expect(imageOf(p, "app")).not.toBe(before);
    expect(named(before)).toBe(false);
    expect(named(`${p.name}-app:svc-previous`)).toBe(false);
  }, 600_000);
});
