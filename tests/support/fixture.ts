/**
 * The one engine fixture of the integration tests: containers, images, networks, volumes and
 * folders under one unique prefix, all removed by `cleanup`.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildImage, docker, removeContainersByPrefix, sandbox, uniqueName } from "../harness.ts";
import { runShortcut } from "./docker-run.ts";
import { engineFilters, engineJson, enginePathName, engineRequest } from "./engine-api.ts";

export interface FixtureOptions {
  /** the image changes (`CMD ...`) when a call gives none */
  changes?: string[];
  /** added to every `run` (a label, say) */
  runArgs?: string[];
}

export interface ImageOptions {
  tag?: string;
  changes?: string[];
  push?: boolean;
  registry?: string;
}

export class EngineFixture {
  readonly prefix: string;
  private readonly images = new Set<string>();
  private readonly networks: string[] = [];
  private readonly volumes: string[] = [];
  private readonly dirs: string[] = [];

  constructor(
    what: string,
    private readonly options: FixtureOptions = {},
  ) {
    this.prefix = uniqueName(what);
  }

  name(what: string): string {
    return `${this.prefix}-${what}`;
  }

  /** `127.0.0.1:5000/<prefix>-<what>:<tag>`, built from busybox and pushed: a new image each call. */
  image(what: string, options: ImageOptions = {}): { ref: string; id: string; digest: string | null } {
    const ref = `${options.registry ?? sandbox().registry}/${this.name(what)}:${options.tag ?? "latest"}`;
    const built = buildImage(ref, { changes: options.changes ?? this.options.changes, push: options.push });
    this.images.add(built.id);
    return { ref, ...built };
  }

  network(what: string): string {
    const name = this.name(what);
    // What `docker network create <name>` sends (the CLI's default driver).
    engineJson("POST", "/networks/create", {
      body: JSON.stringify({ Name: name, Driver: "bridge" }),
      headers: JSON_BODY,
    });
    this.networks.push(name);
    return name;
  }

  volume(what: string): string {
    const name = this.name(what);
    engineJson("POST", "/volumes/create", {
      body: JSON.stringify({ Name: name, Driver: "local" }),
      headers: JSON_BODY,
    });
    this.volumes.push(name);
    return name;
  }

  /**
   * `docker run -d --name <prefix>-<what> [--network none] ...args image [cmd]`, through the Engine
   * API where the flags allow (tests/support/docker-run.ts), else the CLI.
   */
  run(what: string, image: string, args: string[] = [], cmd: string[] = []): string {
    const name = this.name(what);
    const hasNetwork = args.some((a) => a === "--network" || a.startsWith("--network="));
    const argv = [
      "run",
      "-d",
      "--name",
      name,
      ...(this.options.runArgs ?? []),
      ...(hasNetwork ? [] : ["--network", "none"]),
      ...args,
      image,
      ...cmd,
    ];
    const box = sandbox();
    const login = { registry: box.authRegistry, username: box.authUser, password: box.authPass };
    if (runShortcut(argv, box.socketPath, login) === undefined) docker(argv);
    return name;
  }

  tempDir(what: string): string {
    const dir = mkdtempSync(join(tmpdir(), `${this.name(what)}-`));
    this.dirs.push(dir);
    return dir;
  }

  cleanup(): void {
    removeContainersByPrefix(this.prefix);
    // Removal goes on past what is already gone, as `docker rm -f`, `network rm`, `rmi -f` did.
    for (const network of this.networks) engineRequest("DELETE", `/networks/${enginePathName(network)}`);
    for (const volume of this.volumes) engineRequest("DELETE", `/volumes/${enginePathName(volume)}?force=1`);
    const listed = engineJson<{ Id: string }[]>(
      "GET",
      `/images/json?${engineFilters({ reference: [`*/${this.prefix}-*`] })}`,
    ).map((image) => image.Id);
    for (const image of new Set([...listed, ...this.images]))
      engineRequest("DELETE", `/images/${enginePathName(image)}?force=1`);
    for (const dir of this.dirs) rmSync(dir, { recursive: true, force: true });
  }
}

const JSON_BODY = { "Content-Type": "application/json" };

/**
 * What `docker compose -p <project> down -v --remove-orphans` removes, by compose's own labels
 * through the Engine API (a cleanup's, where the compose CLI and its plugin cost two process starts):
 * the project's containers with their anonymous volumes, then its networks and volumes. Goes on past
 * what is already gone, as a cleanup's `down` did.
 */
export function removeComposeProject(project: string): void {
  const filters = engineFilters({ label: [`com.docker.compose.project=${project}`] });
  for (const c of engineJson<{ Id: string }[]>("GET", `/containers/json?all=1&${filters}`))
    engineRequest("DELETE", `/containers/${c.Id}?force=1&v=1`);
  for (const n of engineJson<{ Id: string }[]>("GET", `/networks?${filters}`))
    engineRequest("DELETE", `/networks/${n.Id}`);
  for (const v of engineJson<{ Volumes: { Name: string }[] | null }>("GET", `/volumes?${filters}`).Volumes ?? [])
    engineRequest("DELETE", `/volumes/${enginePathName(v.Name)}?force=1`);
}
