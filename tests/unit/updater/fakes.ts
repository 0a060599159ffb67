/**
 * Small in-memory fakes of the engine, systemd and registry ports for the updater's unit tests.
 * The fake engine keeps containers and images, records every action as an event string,
 * and lets a test decide how a new container behaves once started (by image id).
 */

import { SvcError } from "../../../src/core/errors.ts";
import type {
  ContainerInspect,
  ContainerState,
  ContainerSummary,
  CreateOptions,
  Engine,
  HelperSpec,
  ImageInspect,
  ImageSummary,
  Platform,
  RegistryAuth,
  SystemdUnit,
} from "../../../src/engine/port.ts";
import type { Systemd } from "../../../src/engine/systemd.ts";
import type { AuditEntry, AuditLog } from "../../../src/log/index.ts";
import type { CheckResult, ImageRef, LocalImage, Registry, RegistryCheckSession } from "../../../src/registry/port.ts";

export type Behaviour = "ok" | "exit1" | "unhealthy" | "healthy" | "starting" | "restart-loop";

export interface FakeContainer {
  id: string;
  name: string;
  image: string;
  imageId: string;
  state: ContainerState;
  labels: Record<string, string>;
  links: string[];
  networkMode: string;
  stopSignal?: string;
  stopTimeout?: number;
  exitCode: number;
  restartCount: number;
  health?: string;
  /** HostConfig.PortBindings (published ports) */
  portBindings?: Record<string, { HostIp: string; HostPort: string }[]>;
}

export interface FakeImage {
  id: string;
  tags: string[];
  repoDigests: string[];
  behaviour: Behaviour;
}

let counter = 0;
export function fakeId(): string {
  counter += 1;
  return (counter.toString(16).padStart(12, "0") + "f".repeat(52)).slice(0, 64);
}

/** The systemd port with no unit of its own: no container is a unit's; reloads and restarts counted. */
export class FakeSystemd implements Systemd {
  reloads = 0;
  /** the containers (by name) whose units were restarted */
  restarts: string[] = [];
  async unitOf(): Promise<SystemdUnit | string | null> {
    return null;
  }
  async restart(_target: SystemdUnit, name: string): Promise<ContainerInspect> {
    this.restarts.push(name);
    return {} as ContainerInspect;
  }
  async unitFile(target: SystemdUnit): Promise<string> {
    throw new SvcError("engine", `no file for ${target.unit} here`);
  }
  async reload(_target: SystemdUnit): Promise<void> {
    this.reloads++;
  }
  async loadedUnit(target: SystemdUnit): Promise<string> {
    throw new SvcError("engine", `no file for ${target.unit} here`);
  }
}

export class FakeEngine implements Engine {
  containers = new Map<string, FakeContainer>();
  images = new Map<string, FakeImage>();
  events: string[] = [];
  /** "action:name" keys whose next call throws */
  failures = new Set<string>();
  stops: { name: string; timeoutMs: number; signal?: string }[] = [];
  pulls: { reference: string; platform?: Platform; auth?: RegistryAuth }[] = [];
  /** the digest each pull was asked to be made at (the one the check found), in the order of `pulls` */
  pulledDigests: (string | null)[] = [];
  listCalls = 0;
  unreachable = false;
  /** tag -> image id the registry has for it now */
  remote = new Map<string, string>();
  remoteImages = new Map<string, FakeImage>();
  /** resolves a pending listContainers: lets tests hold a cycle open */
  gate?: Promise<void>;
  /** called after each start (e.g. to take the engine away during the watch) */
  onStart?: (container: FakeContainer) => void;

  addImage(tag: string, options: { behaviour?: Behaviour; digest?: string } = {}): FakeImage {
    const id = `sha256:${fakeId()}`;
    for (const image of this.images.values()) image.tags = image.tags.filter((t) => t !== tag);
    const repo = tag.replace(/:[^:/]+$/, "");
    const image: FakeImage = {
      id,
      tags: [tag],
      repoDigests: options.digest ? [`${repo}@${options.digest}`] : [],
      behaviour: options.behaviour ?? "ok",
    };
    this.images.set(id, image);
    return image;
  }

  /** A new image the registry has for `tag` (the engine gets it on pull). */
  publish(tag: string, options: { behaviour?: Behaviour } = {}): FakeImage {
    const id = `sha256:${fakeId()}`;
    const image: FakeImage = { id, tags: [], repoDigests: [], behaviour: options.behaviour ?? "ok" };
    this.remoteImages.set(id, image);
    this.remote.set(tag, id);
    return image;
  }

  addContainer(name: string, tag: string, options: Partial<FakeContainer> = {}): FakeContainer {
    const image = [...this.images.values()].find((i) => i.tags.includes(tag));
    if (!image) throw new Error(`no image ${tag}`);
    const container: FakeContainer = {
      id: fakeId(),
      name,
      image: tag,
      imageId: image.id,
      state: "running",
      labels: {},
      links: [],
      networkMode: "default",
      exitCode: 0,
      restartCount: 0,
      ...options,
    };
    this.containers.set(container.id, container);
    return container;
  }

  byName(name: string): FakeContainer | undefined {
    return [...this.containers.values()].find((c) => c.name === name);
  }

  private find(idOrName: string): FakeContainer {
    const found = this.containers.get(idOrName) ?? this.byName(idOrName.replace(/^\//, ""));
    if (!found) throw new SvcError("engine", `no such container: ${idOrName}`);
    return found;
  }

  private maybeFail(action: string, name: string): void {
    const key = `${action}:${name}`;
    if (this.failures.has(key)) {
      this.failures.delete(key);
      throw new SvcError("engine", `injected ${action} failure`);
    }
  }

  async info() {
    return { apiVersion: "1.41" };
  }

  async platform() {
    return { os: "linux", architecture: "amd64" };
  }

  async listContainers(): Promise<ContainerSummary[]> {
    this.listCalls += 1;
    if (this.gate) await this.gate;
    if (this.unreachable) throw new SvcError("engine", "connect ENOENT /var/run/docker.sock");
    return [...this.containers.values()].map((c) => ({
      id: c.id,
      name: c.name,
      image: c.image,
      imageId: c.imageId,
      state: c.state,
      labels: { ...c.labels },
    }));
  }

  async listImages(): Promise<ImageSummary[]> {
    return [...this.images.values()].map((i) => ({ id: i.id, repoTags: i.tags, repoDigests: i.repoDigests }));
  }

  inspectCalls = 0;

  async inspectContainer(idOrName: string): Promise<ContainerInspect> {
    this.inspectCalls += 1;
    if (this.unreachable) throw new SvcError("engine", "connect ENOENT /var/run/docker.sock");
    const c = this.find(idOrName);
    return {
      Id: c.id,
      Name: `/${c.name}`,
      Image: c.imageId,
      RestartCount: c.restartCount,
      State: {
        Status: c.state,
        Running: c.state === "running",
        Restarting: c.state === "restarting",
        ExitCode: c.exitCode,
        Health: c.health ? { Status: c.health, FailingStreak: 0, Log: [] } : undefined,
      },
      Config: { Image: c.image, Labels: c.labels, StopSignal: c.stopSignal, StopTimeout: c.stopTimeout },
      HostConfig: { Links: c.links, NetworkMode: c.networkMode, PortBindings: c.portBindings ?? {} },
    } as unknown as ContainerInspect;
  }

  async inspectImage(reference: string): Promise<ImageInspect | null> {
    const image = this.images.get(reference) ?? [...this.images.values()].find((i) => i.tags.includes(reference));
    if (!image) return null;
    return {
      Id: image.id,
      RepoTags: image.tags,
      RepoDigests: image.repoDigests,
      Os: "linux",
      Architecture: "arm",
      Variant: "v7",
    } as unknown as ImageInspect;
  }

  async pullImage(
    reference: string,
    options?: { platform?: Platform; auth?: RegistryAuth; digest?: string | null },
  ): Promise<void> {
    this.maybeFail("pull", reference);
    const { digest, ...rest } = options ?? {};
    this.pulls.push({ reference, ...rest });
    this.pulledDigests.push(digest ?? null);
    this.events.push(`pull:${reference}`);
    const id = this.remote.get(reference);
    if (!id) return;
    const image = this.images.get(id) ?? this.remoteImages.get(id)!;
    for (const other of this.images.values()) other.tags = other.tags.filter((t) => t !== reference);
    image.tags = [reference];
    // the engine records the digest it pulled (the fake registry's digest is the image's id)
    const repo = reference.replace(/:[^:/]+$/, "");
    image.repoDigests = [`${repo}@sha256:${id.slice(7)}`];
    this.images.set(id, image);
  }

  async stopContainer(id: string, options: { timeoutMs: number; signal?: string }): Promise<void> {
    const c = this.find(id);
    this.maybeFail("stop", c.name);
    this.stops.push({ name: c.name, ...options });
    this.events.push(`stop:${c.name}`);
    c.state = "exited";
  }

  async renameContainer(id: string, newName: string): Promise<void> {
    const c = this.find(id);
    this.maybeFail("rename", c.name);
    if (this.byName(newName)) throw new SvcError("engine", `name ${newName} is in use`);
    this.events.push(`rename:${c.name}->${newName}`);
    c.name = newName;
  }

  async settingsBeyondApi(_old: ContainerInspect): Promise<string[]> {
    return [];
  }

  async createReplacement(
    old: ContainerInspect,
    _oldImage: ImageInspect | null,
    options: CreateOptions,
  ): Promise<string> {
    this.maybeFail("create", options.name);
    if (this.byName(options.name)) throw new SvcError("engine", `name ${options.name} is in use`);
    const image = [...this.images.values()].find((i) => i.tags.includes(options.image));
    if (!image) throw new SvcError("engine", `no such image ${options.image}`);
    const oldContainer = this.find(old.Id);
    const created: FakeContainer = {
      ...oldContainer,
      id: fakeId(),
      name: options.name,
      image: options.image,
      imageId: image.id,
      state: "created",
      exitCode: 0,
      restartCount: 0,
      health: undefined,
      networkMode: options.networkContainer ? `container:${options.networkContainer}` : oldContainer.networkMode,
    };
    this.containers.set(created.id, created);
    this.events.push(`create:${options.name}${options.networkContainer ? `(net=${options.networkContainer})` : ""}`);
    return created.id;
  }

  /** helpers made by createHelper (a self-update handover container): started, they just run */
  helpers: (HelperSpec & { id: string })[] = [];

  async createHelper(spec: HelperSpec): Promise<string> {
    this.maybeFail("create", spec.name);
    if (this.byName(spec.name)) throw new SvcError("engine", `name ${spec.name} is in use`);
    const image = [...this.images.values()].find((i) => i.tags.includes(spec.image));
    if (!image) throw new SvcError("engine", `no such image ${spec.image}`);
    const id = fakeId();
    this.containers.set(id, {
      id,
      name: spec.name,
      image: spec.image,
      imageId: image.id,
      state: "created",
      labels: { ...spec.labels },
      links: [],
      networkMode: "none",
      exitCode: 0,
      restartCount: 0,
    });
    this.helpers.push({ ...spec, id });
    this.events.push(`helper:${spec.name}`);
    return id;
  }

  async tagImage(imageId: string, reference: string): Promise<void> {
    const image = [...this.images.values()].find((i) => i.id === imageId);
    if (!image) throw new SvcError("engine", `no such image: ${imageId}`);
    this.events.push(`tag:${reference}`);
    for (const other of this.images.values()) other.tags = other.tags.filter((t) => t !== reference);
    image.tags.push(reference);
  }

  /** what each `exec` answers (lifecycle hooks); default: exit 0, no output */
  execResult: (container: string, command: string) => { exitCode: number | null; output: string } = () => ({
    exitCode: 0,
    output: "",
  });

  async exec(id: string, command: string, _timeoutMs: number): Promise<{ exitCode: number | null; output: string }> {
    const c = this.find(id);
    this.events.push(`exec:${c.name}:${command}`);
    return this.execResult(c.name, command);
  }

  /** what has ended answers at once, as the engine's wait does; nothing here ends while waited for */
  async waitForExit(id: string, timeoutMs: number): Promise<number> {
    const c = this.find(id);
    if (c.state === "exited" || c.state === "dead") return c.exitCode;
    throw new SvcError("engine", `${c.name} did not end within ${timeoutMs} ms`);
  }

  async startContainer(id: string): Promise<void> {
    if (this.helpers.some((h) => h.id === id)) {
      this.containers.get(id)!.state = "running";
      this.events.push(`start-helper:${this.containers.get(id)!.name}`);
      return;
    }
    const c = this.find(id);
    this.maybeFail("start", c.name);
    this.events.push(`start:${c.name}`);
    const behaviour = [...this.images.values()].find((i) => i.id === c.imageId)?.behaviour ?? "ok";
    c.state = "running";
    if (behaviour === "exit1") {
      c.state = "exited";
      c.exitCode = 1;
    } else if (behaviour === "unhealthy" || behaviour === "healthy" || behaviour === "starting") {
      c.health = behaviour;
    } else if (behaviour === "restart-loop") {
      c.state = "restarting";
      c.restartCount = 3;
    }
    this.onStart?.(c);
  }

  async removeContainer(id: string, _options?: { force?: boolean }): Promise<void> {
    const c = this.find(id);
    this.maybeFail("remove", c.name);
    this.events.push(`remove:${c.name}`);
    this.containers.delete(c.id);
  }

  async removeImage(id: string): Promise<void> {
    this.events.push(`image_remove:${id}`);
    this.images.delete(id);
  }

  // the data guard's archives are tested against real engines only (tests/integration/dataguard)
  async readArchive(_id: string, path: string): Promise<ReadableStream<Uint8Array>> {
    throw new Error(`the fake engine has no archive of ${path}`);
  }

  async containerLogs(_id: string, _lines: number): Promise<string> {
    return "boom: config invalid\n";
  }
}

/** A registry whose answer is: stale when the image it has for the tag is not the one the container runs. */
export class FakeRegistry implements Registry {
  checks: string[] = [];
  errors = new Map<string, string>();
  /** the labels of a remote image, by the reference or digest asked for */
  labelsOf = new Map<string, Record<string, string>>();
  constructor(private readonly engine: FakeEngine) {}

  session(): RegistryCheckSession {
    return {
      check: async (ref: ImageRef, local: LocalImage, platform: () => Promise<Platform>): Promise<CheckResult> => {
        this.checks.push(ref.normalized);
        const error = this.errors.get(ref.original);
        if (error) throw new SvcError("registry", error);
        const remoteId = this.engine.remote.get(ref.original);
        if (remoteId && remoteId !== local.id) {
          await platform();
          return { stale: true, digest: `sha256:${remoteId.slice(7)}` };
        }
        return { stale: false, digest: `sha256:${local.id.slice(7)}` };
      },
      digest: async (ref: ImageRef): Promise<string> => {
        this.checks.push(ref.normalized);
        const remoteId = this.engine.remote.get(ref.original);
        if (!remoteId) throw new SvcError("registry", `${ref.original}: not found`);
        return `sha256:${remoteId.slice(7)}`;
      },
      tags: async (ref: ImageRef): Promise<string[]> => {
        this.tagLists.push(ref.normalized);
        const repository = ref.original.replace(/:[^:/]+$/, "");
        return [...this.engine.remote.keys()]
          .filter((r) => r.startsWith(`${repository}:`))
          .map((r) => r.slice(repository.length + 1));
      },
      platformImage: async (
        ref: ImageRef,
        tag: string,
        platform: () => Promise<Platform>,
      ): Promise<{ digest: string } | null> => {
        await platform();
        const reference = `${ref.original.replace(/:[^:/]+$/, "")}:${tag}`;
        const id = this.engine.remote.get(reference);
        return id === undefined || this.otherPlatform.has(reference) ? null : { digest: `sha256:${id.slice(7)}` };
      },
      created: async (_ref: ImageRef, reference: string): Promise<Date | null> => this.createdAt.get(reference) ?? null,
      labels: async (_ref: ImageRef, reference: string): Promise<Record<string, string>> =>
        this.labelsOf.get(reference) ?? {},
    };
  }

  /** tags listed, by normalised reference */
  tagLists: string[] = [];
  /** references the registry has only for another platform */
  otherPlatform = new Set<string>();
  /** creation times by digest */
  createdAt = new Map<string, Date>();

  async pullAuth(ref: ImageRef): Promise<RegistryAuth | undefined> {
    return { serveraddress: ref.registry, username: "u" };
  }
}

export class MemoryAudit implements AuditLog {
  entries: AuditEntry[] = [];
  record(entry: AuditEntry): void {
    this.entries.push(entry);
  }
}
