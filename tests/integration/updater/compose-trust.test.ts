/**
 * An image's labels become its containers' labels (moby, daemon/commit.go, `merge`), so an image
 * from a registry can name compose files of its choice. svc writes no file that compose labels
 * a container has from its image name, and says why; compose's own labels, which compose sets on
 * every container it makes (docker/compose, pkg/compose/loader.go), still get their move written.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { sandbox } from "../../harness.ts";
import { removeComposeProject } from "../../support/fixture.ts";
import { CMD, composeBench, composeWorks, LABELS, type Project } from "./compose-support.ts";
import { expectState, inspect, makeUpdater } from "./support.ts";

const { fx, project, compose, ids, names, read } = composeBench();

afterAll(() => fx.cleanup(), 120_000);

const RUN_CMD = `CMD ${CMD}`;
const HELD = "svc does not write files an image names";

/** Tags 1.0.0 (with `labels` as the image's own LABELs) and 1.1.0 of a repository of the test's own. */
function labelledRepository(what: string, labels: Record<string, string>) {
  const v1 = fx.image(what, {
    tag: "1.0.0",
    changes: [RUN_CMD, ...Object.entries(labels).map(([key, value]) => `LABEL ${key}="${value}"`)],
  });
  const v2 = fx.image(what, { tag: "1.1.0", changes: [RUN_CMD] });
  return { v1, v2, repo: v1.ref.slice(0, v1.ref.lastIndexOf(":")) };
}

async function cycleOver(name: string) {
  const h = await makeUpdater({
    containers: [name],
    rollback: { startup_timeout: 5000 },
    docker: { config: sandbox().dockerConfig },
  });
  return { h, report: await h.updater.run("api") };
}

describe.skipIf(!composeWorks)("compose labels an image carries name no file svc writes", () => {
  const downs: Project[] = [];
  afterAll(() => {
    for (const p of downs) removeComposeProject(p.name);
  }, 120_000);

  test("docker run of an image naming a compose file: the file stays byte for byte, the report says why", async () => {
    const dir = fx.tempDir("victim");
    const file = join(dir, "compose.yaml");
    const r = labelledRepository("named", {
      "com.docker.compose.project": "victim",
      "com.docker.compose.service": "web",
      "com.docker.compose.project.working_dir": dir,
      "com.docker.compose.project.config_files": file,
    });
    const before = `services:\n  web:\n    image: ${r.v1.ref} # the host's own file\n`;
    writeFileSync(file, before);
    const name = fx.run("plain", r.v1.ref, { labels: { "svc.tag_policy": "semver:minor" } });
    // the engine gave the container its image's compose labels
    expect(inspect(name).Config.Labels["com.docker.compose.project.config_files"]).toBe(file);
    const idBefore = inspect(name).Id;
    const { h, report } = await cycleOver(name);
    const entry = expectState(report, name, "stale");
    expect(entry.reason).toBe(
      `newer tag 1.1.0 available; the compose file names 1.0.0 (labels com.docker.compose.project, com.docker.compose.service, com.docker.compose.project.working_dir, com.docker.compose.project.config_files come from its image: ${HELD})`,
    );
    expect(readFileSync(file, "utf8")).toBe(before);
    expect(inspect(name).Id).toBe(idBefore);
    expect(h.audit.entries.filter((e) => e.action.startsWith("compose_"))).toEqual([]);
    // nor does its image put it in that project: no group on the page, not in the stack filter
    const shown = (await h.updater.overview())?.containers.find((c) => c.name === name);
    expect(shown?.group).toBeNull();
    const stackCycle = await h.updater.run("api", { stack: ["victim"] });
    expect(stackCycle?.containers.map((c) => c.name)).toEqual([]);
  }, 120_000);

  test("compose up of an image with bogus compose labels: compose's own values win, the move is written", async () => {
    const r = labelledRepository("bogus", {
      "com.docker.compose.project": "bogus",
      "com.docker.compose.service": "bogus",
      "com.docker.compose.project.working_dir": "/nonexistent",
      "com.docker.compose.project.config_files": "/nonexistent/compose.yaml",
    });
    const before = `services:\n  web:\n    image: ${r.v1.ref}\n    command: ${CMD}\n    labels: ${LABELS}\n`;
    const p = project("bogus", { "compose.yaml": before });
    downs.push(p);
    compose(p, "up", "-d");
    const [name] = names(p);
    // compose's own project groups it, the image's "bogus" does not
    const viewer = await makeUpdater({ containers: [name!] });
    const shown = (await viewer.updater.overview())?.containers.find((c) => c.name === name);
    expect(shown?.group).toEqual({ kind: "compose", name: p.name });
    const { report } = await cycleOver(name!);
    const entry = expectState(report, name!, "updated");
    expect(entry.compose).toMatchObject({ changes: ["compose.yaml line 3: 1.0.0 -> 1.1.0"], written: true });
    expect(read(p, "compose.yaml")).toBe(before.replace(r.v1.ref, r.v2.ref));
    const afterSvc = ids(p);
    compose(p, "up", "-d");
    expect(ids(p)).toEqual(afterSvc);
    expect(inspect(afterSvc.web!).Image).toBe(r.v2.id);
  }, 120_000);

  test("compose up without --env-file of an image naming an env file: neither file is written", async () => {
    // compose sets environment_file only when given --env-file (pkg/compose/loader.go): the image's stays
    const dir = fx.tempDir("envvictim");
    const envFile = join(dir, "host.env");
    writeFileSync(envFile, "TAG=1.0.0\n");
    const r = labelledRepository("envnamed", { "com.docker.compose.project.environment_file": envFile });
    const before = `services:\n  web:\n    image: ${r.repo}:\${TAG}\n    command: ${CMD}\n    labels: ${LABELS}\n`;
    const p = project("envnamed", { "compose.yaml": before, ".env": "TAG=1.0.0\n" });
    downs.push(p);
    compose(p, "up", "-d");
    const [name] = names(p);
    expect(inspect(name!).Config.Labels["com.docker.compose.project.environment_file"]).toBe(envFile);
    const idBefore = ids(p).web;
    const { report } = await cycleOver(name!);
    expect(expectState(report, name!, "stale").reason).toBe(
      `newer tag 1.1.0 available; the compose file names 1.0.0 (label com.docker.compose.project.environment_file comes from its image: ${HELD})`,
    );
    expect(readFileSync(envFile, "utf8")).toBe("TAG=1.0.0\n");
    expect(read(p, ".env")).toBe("TAG=1.0.0\n");
    expect(read(p, "compose.yaml")).toBe(before);
    expect(ids(p).web).toBe(idBefore);
  }, 120_000);
});

if (!composeWorks)
  console.warn(`compose trust tests skipped: \`docker compose version\` fails against ${sandbox().dockerHost}`);
