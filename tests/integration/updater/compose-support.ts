/**
 * What the compose writer's integration files share: projects written as users write them, run
 * with the sandbox's `docker compose`, the repository of two versions they run, and svc's update
 * between two `compose up -d`. Each file makes its own (`composeBench()`): a fixture of its own,
 * cleaned up by that file.
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { engineJson, sandbox } from "../../harness.ts";
import { engineFilters } from "../../support/engine-api.ts";
import { docker, Fixture, inspect, makeUpdater, TEST_SCOPE } from "./support.ts";

export const composeWorks = docker(["compose", "version"], { allowFailure: true }).code === 0;
/** Docker 28's image mounts (volumes of type image), which older engines refuse: asked once, of the engine itself. */
export const IMAGE_MOUNT_SOURCE = "svc-image-mount-probe:1";
export const CMD = `["/bin/sh", "-c", "trap 'exit 0' TERM; while true; do sleep 3600 & wait; done"]`;
export const LABELS = `{ svc.scope: ${TEST_SCOPE}, svc.tag_policy: "semver:minor" }`;

export interface Project {
  dir: string;
  name: string;
}

export interface Repository {
  v1: { ref: string; id: string; digest: string | null };
  v2: { ref: string; id: string; digest: string | null };
  repo: string;
}

/** A compose test file's bench: its fixture and the helpers over it. */
export function composeBench() {
  const fx = new Fixture();
  function imageMountsWork(): boolean {
    if (!composeWorks) return false;
    docker(["import", "-c", 'CMD ["/bin/sh"]', sandbox().rootfs, IMAGE_MOUNT_SOURCE]);
    const made = docker(
      ["create", "--mount", `type=image,source=${IMAGE_MOUNT_SOURCE},target=/probe`, IMAGE_MOUNT_SOURCE],
      {
        allowFailure: true,
      },
    );
    if (made.code === 0) docker(["rm", made.stdout.trim()]);
    return made.code === 0;
  }

  function project(what: string, files: Record<string, string>): Project {
    const dir = fx.tempDir(what);
    for (const [file, text] of Object.entries(files)) {
      mkdirSync(join(dir, file, ".."), { recursive: true });
      writeFileSync(join(dir, file), text);
    }
    return {
      dir,
      name: fx
        .name(what)
        .toLowerCase()
        .replace(/[^a-z0-9_-]/g, ""),
    };
  }

  function compose(p: Project, ...args: string[]): string {
    return docker(["compose", "--project-directory", p.dir, "-p", p.name, ...args]).stdout;
  }

  /**
   * service -> container id, as `compose ps -a` sees the project: the project's containers by
   * compose's own labels, in compose's order (by name), one Engine API request where `compose ps`
   * started the CLI and its compose plugin.
   */
  function ids(p: Project): Record<string, string> {
    const filters = engineFilters({
      label: [`com.docker.compose.project=${p.name}`, "com.docker.compose.oneoff=False"],
    });
    const listed = engineJson<{ Id: string; Names: string[]; Labels: Record<string, string> }[]>(
      "GET",
      `/containers/json?all=1&${filters}`,
    ).sort((a, b) => (a.Names[0]! < b.Names[0]! ? -1 : 1));
    return Object.fromEntries(listed.map((c) => [c.Labels["com.docker.compose.service"]!, c.Id]));
  }

  function names(p: Project): string[] {
    return Object.values(ids(p)).map((id) => String(inspect(id).Name).slice(1));
  }

  /** what `docker compose config` resolves for each service's image */
  function configImages(p: Project): Record<string, string> {
    const config = JSON.parse(compose(p, "config", "--format", "json"));
    return Object.fromEntries(Object.entries(config.services).map(([name, s]: [string, any]) => [name, s.image]));
  }

  function read(p: Project, file: string): string {
    return readFileSync(join(p.dir, file), "utf8");
  }

  let shared: Repository | undefined;
  /**
   * The repository with tags 1.0.0 and 1.1.0 (two different images) the projects here run: built
   * and pushed once for the file, since every test only reads it (no test pushes a tag to it or
   * removes its images; each project, its files and containers are the test's own).
   */
  function repository(): Repository {
    if (!shared) {
      const v1 = fx.image("repo", { tag: "1.0.0" });
      const v2 = fx.image("repo", { tag: "1.1.0" });
      shared = { v1, v2, repo: v1.ref.slice(0, v1.ref.lastIndexOf(":")) };
    }
    return shared;
  }

  /** up, svc's update, then the user's `up -d`: what each step left. */
  async function updateAndUp(p: Project, options: { stateDir?: string; asStack?: boolean } = {}) {
    compose(p, "up", "-d");
    const containers = names(p);
    const h = await makeUpdater({
      containers,
      rollback: { startup_timeout: 5000 },
      docker: { config: sandbox().dockerConfig },
      ...(options.stateDir ? { state_dir: options.stateDir } : {}),
    });
    // the page's "Update stack" and POST /v1/update?stack=: the project's services, as one
    const report = await h.updater.run("api", options.asStack ? { stack: [p.name] } : undefined);
    const afterSvc = ids(p);
    compose(p, "up", "-d");
    return { h, report, containers, afterSvc, afterUp: ids(p) };
  }

  return { fx, imageMountsWork, project, compose, ids, names, configImages, read, repository, updateAndUp };
}
