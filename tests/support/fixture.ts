/**
 * The one engine fixture of the integration tests: containers, images, networks, volumes and
 * folders under one unique prefix, all removed by `cleanup`.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildImage, docker, removeContainersByPrefix, sandbox, uniqueName } from "../harness.ts";

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
    docker(["network", "create", name]);
    this.networks.push(name);
    return name;
  }

  volume(what: string): string {
    const name = this.name(what);
    docker(["volume", "create", name]);
    this.volumes.push(name);
    return name;
  }

  /** `docker run -d --name <prefix>-<what> [--network none] ...args image [cmd]` */
  run(what: string, image: string, args: string[] = [], cmd: string[] = []): string {
    const name = this.name(what);
    const hasNetwork = args.some((a) => a === "--network" || a.startsWith("--network="));
    docker(["run", "-d", "--name", name, ...(this.options.runArgs ?? []), ...(hasNetwork ? [] : ["--network", "none"]), ...args, image, ...cmd]);
    return name;
  }

  tempDir(what: string): string {
    const dir = mkdtempSync(join(tmpdir(), `${this.name(what)}-`));
    this.dirs.push(dir);
    return dir;
  }

  cleanup(): void {
    removeContainersByPrefix(this.prefix);
    // One CLI call per kind of object: each call removes what it can and goes on past what is gone,
    // and a docker CLI start costs more CPU than the removal itself.
    if (this.networks.length) docker(["network", "rm", ...this.networks], { allowFailure: true });
    if (this.volumes.length) docker(["volume", "rm", "-f", ...this.volumes], { allowFailure: true });
    const ids = docker(["images", "-q", "--filter", `reference=*/${this.prefix}-*`]).stdout.split("\n").filter(Boolean);
    const images = [...new Set([...ids, ...this.images])];
    if (images.length) docker(["rmi", "-f", ...images], { allowFailure: true });
    for (const dir of this.dirs) rmSync(dir, { recursive: true, force: true });
  }
}
