/**
 * Built services rebuilt where no compose CLI is (svc's scratch image, a host without the compose
 * plugin): svc looks for the CLI on a PATH that holds no `docker`, finds none, and builds through
 * the engine's build endpoint (its classic builder) with the context it packs itself, its
 * .dockerignore applied and a link sent as a link. A moved base rebuilds once, the container runs
 * the new image, and the real `docker compose up -d` afterwards recreates nothing; a Dockerfile
 * with `RUN --mount` (BuildKit's) is held with the reason before anything stops; a broken `RUN`
 * leaves the old image running and compose's tag on it.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ComposeFiles, findComposeCli } from "../../../src/compose/index.ts";
import { engineJson, sandbox } from "../../harness.ts";
import { removeComposeProject } from "../../support/fixture.ts";
import { CMD, composeBench, composeWorks, type Project } from "./compose-support.ts";
import { docker, entryOf, expectState, inspect, makeUpdater, TEST_SCOPE } from "./support.ts";

const { fx, project, compose, ids, names } = composeBench();

afterAll(() => fx.cleanup(), 120_000);

const named = (reference: string) => docker(["image", "inspect", reference], { allowFailure: true }).code === 0;

/** The sandbox's engine has no default bridge: every build's RUN steps run without a network. */
const BUILD = "      context: .\n      network: none\n";

function service(name: string, dockerfile: string): string {
  return `  ${name}:\n    build:\n${BUILD}      dockerfile: ${dockerfile}\n    command: ${CMD}\n    labels: { svc.scope: ${TEST_SCOPE} }\n`;
}

describe.skipIf(!composeWorks)("built services rebuilt without the compose CLI", () => {
  const downs: Project[] = [];
  afterAll(() => {
    for (const p of downs) removeComposeProject(p.name);
  }, 120_000);
  const track = (p: Project) => (downs.push(p), p);

  /** An updater whose compose room looks for the CLI as svc does, on a PATH without `docker`. */
  async function updaterOf(p: Project) {
    const emptyPath = fx.tempDir("nopath");
    const composeFiles = new ComposeFiles({
      write: false,
      stateDir: null,
      cli: () => findComposeCli({ path: emptyPath, dockerConfig: sandbox().dockerConfig }),
    });
    expect(await composeFiles.cli()).toBeNull();
    const h = await makeUpdater(
      { containers: names(p), rollback: { startup_timeout: 8000 }, docker: { config: sandbox().dockerConfig } },
      { compose: composeFiles },
    );
    return async (options: { dryRun?: boolean } = {}) => {
      const seen = h.audit.entries.length;
      const report = await h.updater.run("api", undefined, { dryRun: options.dryRun ?? false });
      return { report, audit: h.audit.entries.slice(seen) };
    };
  }

  const imageOf = (p: Project, s: string) => inspect(ids(p)[s]!).Image as string;
  const container = (p: Project, s: string) => String(inspect(ids(p)[s]!).Name).slice(1);

  test("a moved base: one build through the engine, the container on it, compose up -d recreates nothing; RUN --mount held", async () => {
    const base = fx.image("ebase", { tag: "1" });
    const p = track(
      project("engine", {
        "compose.yaml": `services:\n${service("app", "app.Dockerfile")}${service("mounts", "mounts.Dockerfile")}`,
        // the build fails if the ignored file is sent, or the kept one or the link is not
        "app.Dockerfile": `FROM ${base.ref}\nCOPY . /ctx\nRUN test -f /ctx/kept/file && test ! -e /ctx/secret.txt && test ! -e /ctx/kept/skip.log && test -L /ctx/outside\n`,
        "mounts.Dockerfile": `FROM ${base.ref}\nRUN --mount=type=cache,target=/cache echo cached\n`,
        ".dockerignore": "secret.txt\n**/*.log\n",
        "secret.txt": "not for the engine\n",
        "kept/file": "kept\n",
        "kept/skip.log": "ignored\n",
      }),
    );
    // a link to a file outside the context is sent as a link, never followed
    const outside = join(fx.tempDir("outside"), "secret");
    writeFileSync(outside, "outside the context\n");
    symlinkSync(outside, join(p.dir, "outside"));
    compose(p, "up", "-d");
    const cycle = await updaterOf(p);
    const before = { app: imageOf(p, "app"), mounts: imageOf(p, "mounts") };

    const first = await cycle();
    expectState(first.report, container(p, "app"), "fresh");
    expectState(first.report, container(p, "mounts"), "fresh");

    const moved = fx.image("ebase", { tag: "1" });
    const dry = await cycle({ dryRun: true });
    const planned = entryOf(dry.report, container(p, "app"));
    expect(planned.state).toBe("stale");
    expect(planned.built?.command).toStartWith("POST /build (the engine's classic builder, pull)");
    expect(planned.built?.command).toContain(`tag ${p.name}-app`);
    expect(dry.audit.filter((e) => e.action === "build")).toEqual([]);
    expect(imageOf(p, "app")).toBe(before.app);

    const second = await cycle();
    const app = expectState(second.report, container(p, "app"), "updated");
    expect(app.reason).toStartWith(`rebuilt: base ${base.ref} moved`);
    expect(app.built?.bases[0]).toMatchObject({ built_digest: base.digest!, digest: moved.digest! });
    expect(second.audit.filter((e) => e.action === "build").length).toBe(1);
    const image = inspect(imageOf(p, "app"));
    expect(image.Id).not.toBe(before.app);
    expect(inspect(`${p.name}-app`).Id).toBe(image.Id);
    expect(image.Config.Labels).toMatchObject({
      "com.docker.compose.project": p.name,
      "com.docker.compose.service": "app",
    });

    const mounts = expectState(second.report, container(p, "mounts"), "stale");
    expect(mounts.reason).toContain("not rebuilt: no compose CLI here, and ");
    expect(mounts.reason).toContain(
      "mounts.Dockerfile line 2: RUN --mount: only BuildKit builds that, and without the compose CLI svc reaches the engine's classic builder",
    );
    expect(imageOf(p, "mounts")).toBe(before.mounts);

    // the real compose CLI finds nothing to do
    const afterSvc = ids(p);
    compose(p, "up", "-d", "--no-build");
    expect(ids(p)).toEqual(afterSvc);
    compose(p, "up", "-d");
    expect(ids(p)).toEqual(afterSvc);

    const third = await cycle();
    expectState(third.report, container(p, "app"), "fresh");
  }, 600_000);

  test("a broken RUN: the old image runs, compose's tag on it, nothing half-done", async () => {
    const base = fx.image("bbase", { tag: "1" });
    const p = track(
      project("ebroken", {
        "compose.yaml": `services:\n${service("broken", "broken.Dockerfile")}`,
        "broken.Dockerfile": `FROM ${base.ref}\nRUN echo ok > /ok\n`,
      }),
    );
    compose(p, "up", "-d");
    const cycle = await updaterOf(p);
    expectState((await cycle()).report, container(p, "broken"), "fresh");
    const before = { ids: ids(p), image: imageOf(p, "broken") };
    // the containers made from either base, or the project's: the engine runs other files'
    // containers beside this one
    const bases = [base.id];
    const containers = () =>
      engineJson<{ Id: string; ImageID: string; Labels: Record<string, string> }[]>("GET", "/containers/json?all=1")
        .filter((c) => bases.includes(c.ImageID) || c.Labels["com.docker.compose.project"] === p.name)
        .map((c) => c.Id)
        .sort();
    const containersBefore = containers();
    expect(containersBefore).toEqual(Object.values(before.ids).sort());

    writeFileSync(join(p.dir, "broken.Dockerfile"), `FROM ${base.ref}\nRUN exit 3\n`);
    bases.push(fx.image("bbase", { tag: "1" }).id);
    const { report, audit } = await cycle();
    const broken = expectState(report, container(p, "broken"), "failed");
    expect(broken.reason).toStartWith("rebuild failed: the engine's build failed:");
    expect(broken.reason).toContain("exit");
    expect(audit.filter((e) => e.action === "build").length).toBe(1);

    expect(ids(p)).toEqual(before.ids);
    expect(imageOf(p, "broken")).toBe(before.image);
    expect(inspect(`${p.name}-broken`).Id).toBe(before.image);
    expect(named(`${p.name}-broken:svc-previous`)).toBe(false);
    // no container of the build left behind (forcerm)
    expect(containers()).toEqual(containersBefore);

    writeFileSync(join(p.dir, "broken.Dockerfile"), `FROM ${base.ref}\nRUN echo ok > /ok\n`);
    compose(p, "up", "-d", "--no-build");
    expect(ids(p)).toEqual(before.ids);
  }, 600_000);
});
