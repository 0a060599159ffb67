/**
 * The data guard as the updater uses it (docs/data-guard.md): what a container's options and label
 * ask for, whether its copy fits (the size cap, the room left), the copy, the restore, and how long
 * copies are kept.
 */
import { open } from "node:fs/promises";
import { join } from "node:path";
import { type Config, labelName } from "../config/index.ts";
import { formatSize, parseSize } from "../config/values.ts";
import { SvcError } from "../core/errors.ts";
import type { ContainerInspect, Engine } from "../engine/port.ts";
import { type CopyOutcome, type CopyRequest, measureMounts } from "./copy.ts";
import { type OwnMount, onEngineHost, throughOwnMounts } from "./helper.ts";
import {
  copyInEngine,
  discardCopier,
  discardRestorer,
  type EngineView,
  type PreparedRestorer,
  prepareCopier,
  prepareRestorer,
  type ReadyCopier,
  restoreInEngine,
} from "./inengine.ts";
import { type GuardedMount, type GuardMode, guardedMounts, guardModeOf } from "./mounts.ts";
import { type Copy, CopyStore } from "./store.ts";

export const GUARD_LABEL = labelName("data_guard");
const MODE_ORDER: readonly GuardMode[] = ["off", "volumes", "all"];

export interface DataGuardOptions {
  mode: GuardMode;
  maxBytes: number;
  over: "hold" | "skip";
  /** undefined: nowhere to keep copies (no state_dir, no data_guard_dir) */
  dir: string | undefined;
  /** whose secret seals the copies' manifests: state_dir, else data_guard_dir (store.ts) */
  secretDir?: string | undefined;
  keepMs: number;
}

/** The copies as GET /v1/data-guard lists them (docs/api.md). */
export interface CopyView {
  container: string;
  id: string;
  bytes: number;
  created_at: string;
  age_seconds: number;
  /** the version the data belongs to (the image's version label, else its tag) */
  version: string | null;
  image: string;
  image_id: string | null;
  /** when the container's next version started; null: the update is not finished */
  superseded_at: string | null;
  /** when data_guard_keep removes it; null while its update is not finished */
  expires_at: string | null;
  restoring: boolean;
  mounts: { destination: string; type: "volume" | "bind"; name?: string; bytes: number }[];
}

/** What the API does with the copies: list them, remove one (never one being restored). */
export class CopyList {
  constructor(
    private readonly store: CopyStore | null,
    private readonly keepMs: number,
    private readonly now: () => Date = () => new Date(),
  ) {}

  list(): CopyView[] {
    if (!this.store) return [];
    const now = this.now().getTime();
    return this.store.list().map((copy) => {
      const m = copy.manifest;
      const superseded = m.superseded_at ? Date.parse(m.superseded_at) : NaN;
      return {
        container: m.container,
        id: copy.id,
        bytes: m.bytes,
        created_at: m.created_at,
        age_seconds: Math.max(0, Math.floor((now - Date.parse(m.created_at)) / 1000)),
        version: m.version,
        image: m.image,
        image_id: m.image_id,
        superseded_at: m.superseded_at,
        expires_at: Number.isFinite(superseded) ? new Date(superseded + this.keepMs).toISOString() : null,
        restoring: this.store!.isRestoring(copy),
        mounts: m.mounts.map((mount) => ({
          destination: mount.destination,
          type: mount.type,
          ...(mount.name ? { name: mount.name } : {}),
          bytes: mount.bytes,
        })),
      };
    });
  }

  /** "missing": no such copy; "restoring": a restore uses it (crash recovery may need it). */
  remove(container: string, id: string): "removed" | "missing" | "restoring" {
    const copy = this.store?.read(container, id);
    if (!copy) return "missing";
    if (this.store!.isRestoring(copy)) return "restoring";
    return this.store!.remove(container, id) ? "removed" : "missing";
  }
}

/** The copies of a configuration, for the API (which runs before the engine is reached). */
export function copyListOf(config: Config): CopyList {
  const options = dataGuardOptions(config);
  return new CopyList(storeOf(options), options.keepMs);
}

export function dataGuardOptions(config: Config): DataGuardOptions {
  const dir = config.data_guard_dir ?? (config.state_dir ? join(config.state_dir, "data-guard") : undefined);
  return {
    mode: config.data_guard,
    maxBytes: parseSize(config.data_guard_max_size) ?? 1024 ** 3,
    over: config.data_guard_over,
    dir,
    secretDir: config.state_dir ?? dir,
    keepMs: config.data_guard_keep,
  };
}

function storeOf(options: DataGuardOptions): CopyStore | null {
  return options.dir ? new CopyStore(options.dir, options.secretDir ?? options.dir) : null;
}

/** What an update of one container does about its data, decided while it still runs. */
export type Preparation =
  | { kind: "off" }
  | {
      kind: "copy";
      mounts: GuardedMount[];
      limit: { bytes: number; why: string };
      /** the helper that copies in the engine, started and waiting for its go (inengine.ts) */
      copier: ReadyCopier;
    }
  /** the copy does not fit (or cannot be made): held, or updated without a copy */
  | { kind: "over"; action: "hold" | "skip"; reason: string };

export interface RestoreResult {
  bytes: number;
  duration_ms: number;
}

/** How svc copies: what a reason for not copying begins with. */
const IN_ENGINE = "svc copies a container's data in the engine, by a helper container of its own runtime";

export class DataGuard {
  readonly store: CopyStore | null;
  /** copies being written back to the disk (by folder): a restore waits for its copy's */
  private readonly syncing = new Map<string, Promise<void>>();
  /** the helpers that would restore a copy made in the engine (by folder), made while the new version is watched */
  private readonly restorers = new Map<string, PreparedRestorer>();

  /** where the engine sees the copies' folder: as svc does, or through svc's own container's mounts */
  private view: Promise<EngineView> | undefined;

  constructor(
    private readonly engine: Engine,
    readonly options: DataGuardOptions,
    private readonly now: () => Date = () => new Date(),
    /** the container svc runs in, if any (engine/self.ts) */
    private readonly ownContainerId?: string,
  ) {
    this.store = storeOf(options);
  }

  /** How a helper mounts the copies' folder: read from svc's own container once, when svc runs in one. */
  private folderView(): Promise<EngineView> {
    const id = this.ownContainerId;
    this.view ??= id
      ? this.engine.inspectContainer(id).then(
          (own) => ({ view: throughOwnMounts((own as { Mounts?: OwnMount[] }).Mounts ?? []), inContainer: true }),
          () => ({ view: onEngineHost, inContainer: true }),
        )
      : Promise.resolve({ view: onEngineHost, inContainer: false });
    return this.view;
  }

  /** Whether any container could be guarded: the option, or a label that turns it on. */
  modeOf(labels: Record<string, string>): GuardMode | undefined {
    return guardModeOf(labels[GUARD_LABEL], this.options.mode);
  }

  /** Decided before the stop: which mounts, and whether they fit (counted through the engine, up to the limit). */
  async prepare(inspect: ContainerInspect, atLeast: GuardMode = "off"): Promise<Preparation> {
    const label = inspect.Config?.Labels?.[GUARD_LABEL];
    const asked = this.modeOf(inspect.Config?.Labels ?? {});
    if (asked === undefined)
      return this.over(`label ${GUARD_LABEL}=${JSON.stringify(String(label).slice(0, 64))} is not off, volumes or all`);
    const mode = MODE_ORDER.indexOf(atLeast) > MODE_ORDER.indexOf(asked) ? atLeast : asked;
    if (mode === "off") return { kind: "off" };
    const guarded = guardedMounts(inspect, mode);
    if ("problem" in guarded) return this.over(`data_guard: ${guarded.problem}`);
    if (guarded.mounts.length === 0) return { kind: "off" };
    if (!this.store) return this.over("data_guard: no folder to keep copies in (set state_dir or data_guard_dir)");
    try {
      this.store.checkFolder();
    } catch (error) {
      return this.over(`data_guard: ${(error as Error).message}`);
    }
    const limit = this.limitFor(inspect.Name.replace(/^\//, ""));
    const measured = await measureMounts(this.engine, inspect.Id, guarded.mounts, limit.bytes);
    if (measured > limit.bytes)
      return this.over(`data_guard: its guarded mounts take more than ${formatSize(limit.bytes)} (${limit.why})`);
    // the copier is made and started now, out of the downtime: it says whether it sees the copies' folder
    const copier = await prepareCopier(
      this.engine,
      this.store,
      { container: inspect.Name.replace(/^\//, ""), containerId: inspect.Id, mounts: guarded.mounts, limit },
      this.now(),
      await this.folderView(),
    );
    if ("problem" in copier) return this.over(`data_guard: ${IN_ENGINE}, and ${copier.problem}`);
    return { kind: "copy", mounts: guarded.mounts, limit, copier };
  }

  /** The cap, or the room left in data_guard_dir (its reserve kept, this container's earlier copies counted as free), whichever is smaller. */
  limitFor(container: string): { bytes: number; why: string } {
    const store = this.store!;
    const earlier = store.list(container).reduce((sum, copy) => sum + copy.manifest.bytes, 0);
    const room = store.room() + earlier;
    if (room < this.options.maxBytes)
      return {
        bytes: room,
        why: `the room left in ${store.root}, keeping 10% of its filesystem (at most ${formatSize(1024 ** 3)}) free`,
      };
    return { bytes: this.options.maxBytes, why: `data_guard_max_size ${formatSize(this.options.maxBytes)}` };
  }

  private over(reason: string): Preparation {
    return { kind: "over", action: this.options.over, reason };
  }

  /**
   * The copy of a stopped container's mounts. Its earlier copies go first (a copy is kept until
   * the next update: docs/data-guard.md), except `keep` (a copy about to be restored).
   */
  async copy(
    inspect: ContainerInspect,
    preparation: Extract<Preparation, { kind: "copy" }>,
    meta: { image: string; imageId: string | null; version: string | null },
    keep?: Copy,
  ): Promise<CopyOutcome> {
    const store = this.store!;
    const container = inspect.Name.replace(/^\//, "");
    for (const earlier of store.list(container)) {
      if (earlier.id === keep?.id) continue;
      void discardRestorer(this.engine, earlier, this.restorers.get(earlier.dir));
      this.restorers.delete(earlier.dir);
      store.remove(container, earlier.id);
    }
    const request = {
      container,
      containerId: inspect.Id,
      ...meta,
      mounts: preparation.mounts,
      limit: preparation.limit,
    };
    const outcome = await this.copyOnce(preparation, request);
    if (outcome.kind === "copied") this.afterCopy(outcome.copy);
    return outcome;
  }

  private async copyOnce(
    preparation: Extract<Preparation, { kind: "copy" }>,
    request: CopyRequest,
  ): Promise<CopyOutcome> {
    const store = this.store!;
    const outcome = await copyInEngine(this.engine, store, preparation.copier, request, this.now);
    if (outcome !== "again") return outcome;
    // the copier waited longer for its go than it does (a stop that long): made again, told at once
    const copier = await prepareCopier(this.engine, store, request, this.now(), await this.folderView());
    if ("problem" in copier) throw new SvcError("engine", `${IN_ENGINE}, and ${copier.problem}`);
    const again = await copyInEngine(this.engine, store, copier, request, this.now);
    if (again === "again") throw new SvcError("engine", "the helper that copies was not told to go");
    return again;
  }

  /**
   * A copy is complete once written and checksummed; it is written back to the disk while the new
   * version starts (a crash of svc loses nothing the kernel holds; a power cut in those seconds
   * leaves a copy its checksums refuse), and its restorer is made while the new version is watched.
   */
  private afterCopy(copy: Copy): void {
    this.syncing.set(
      copy.dir,
      writeBack(copy).finally(() => this.syncing.delete(copy.dir)),
    );
    const store = this.store;
    if (store)
      this.restorers.set(
        copy.dir,
        this.folderView().then((seen) => prepareRestorer(this.engine, store, copy, true, seen)),
      );
  }

  /** A plan given up before its copy: its helper goes. */
  async drop(preparation: Extract<Preparation, { kind: "copy" }>): Promise<void> {
    if (this.store) await discardCopier(this.engine, this.store, preparation.copier);
  }

  /** Marks a restore into `containerId` as under way before anything is touched (crash recovery finishes it). */
  beginRestore(copy: Copy, containerId: string): void {
    this.store?.markRestoring(copy, containerId);
  }

  /** No restore of `copy` is under way any more. */
  endRestore(copy: Copy): void {
    this.store?.clearRestoring(copy);
  }

  /**
   * At start: removes what is not a complete copy (a copy a crash interrupted: its update was undone)
   * and the copies past data_guard_keep. Returns one line per folder removed.
   */
  tidy(): string[] {
    if (!this.store) return [];
    return [
      ...this.store.sweep().map((dir) => `${dir}: incomplete copy removed`),
      ...this.prune().map((dir) => `${dir}: kept data_guard_keep, removed`),
    ];
  }

  /** The copy a restore into container `containerId` was interrupted in (crash recovery). */
  restoringInto(containerId: string): Copy | null {
    return this.store?.restoringInto(containerId) ?? null;
  }

  /**
   * Puts `copy` back into its mounts, in the engine (inengine.ts): the copy's own volumes and bind
   * sources, whichever container mounts them now (the parked old container of a failed update).
   */
  async restore(copy: Copy): Promise<RestoreResult> {
    const started = performance.now();
    await this.syncing.get(copy.dir);
    const prepared = this.restorers.get(copy.dir);
    this.restorers.delete(copy.dir);
    if (!this.store) throw new SvcError("engine", "the copy cannot be restored: no folder to keep copies in");
    await restoreInEngine(this.engine, this.store, copy, prepared, await this.folderView());
    return { bytes: copy.manifest.bytes, duration_ms: Math.round(performance.now() - started) };
  }

  /** The container's next version runs: data_guard_keep counts from now. */
  supersede(copy: Copy): void {
    this.store?.update(copy, { superseded_at: this.now().toISOString() });
    const restorer = this.restorers.get(copy.dir);
    this.restorers.delete(copy.dir);
    void discardRestorer(this.engine, copy, restorer);
  }

  /** Removes the copies kept longer than data_guard_keep after their container's next version started. */
  prune(): string[] {
    if (!this.store) return [];
    const removed: string[] = [];
    const now = this.now().getTime();
    for (const copy of this.store.list()) {
      const since = copy.manifest.superseded_at ? Date.parse(copy.manifest.superseded_at) : NaN;
      if (
        Number.isFinite(since) &&
        now - since >= this.options.keepMs &&
        this.store.remove(copy.manifest.container, copy.id)
      )
        removed.push(`${copy.manifest.container}/${copy.id}`);
    }
    return removed;
  }

  /** The complete copy taken from container `containerId` (the old container of an update), if any. */
  copyOf(containerId: string): Copy | null {
    return (
      this.store
        ?.list()
        .find(
          (copy) =>
            containerId.startsWith(copy.manifest.container_id) || copy.manifest.container_id.startsWith(containerId),
        ) ?? null
    );
  }
}

/** The version a copy belongs to: the image's version label, else the reference's tag. */
export function versionOf(image: string, labels: Record<string, string> | undefined): string | null {
  const label = labels?.["org.opencontainers.image.version"]?.trim();
  if (label) return label.slice(0, 256);
  const at = image.lastIndexOf(":");
  return at > image.lastIndexOf("/") ? image.slice(at + 1, at + 257) : null;
}

/** Writes a copy's archives back to the disk (on the runtime's file threads); a failure is its checksums' to tell. */
async function writeBack(copy: Copy): Promise<void> {
  for (const mount of copy.manifest.mounts) {
    try {
      const file = await open(join(copy.dir, mount.file), "r");
      try {
        await file.datasync();
      } finally {
        await file.close();
      }
    } catch {
      // a restore checks the archive first
    }
  }
}
