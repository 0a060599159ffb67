/**
 * The copies on disk (docs/data-guard.md), one folder per copy under data_guard_dir:
 *
 *   <dir>/<container>/<copy id>/mount-<n>.tar   each guarded mount, as the helper wrote it (copier.ts)
 *   <dir>/<container>/<copy id>/manifest.json   written last, with each archive's size and checksum
 *   <dir>/<container>/<copy id>/restoring.json  present while a restore runs
 *   <dir>/<container>/<copy id>/.svc-copy       svc's mark: the folder is one svc made
 *
 * A folder without its manifest, or whose archives do not match their checksums, is never taken
 * for a copy: the sweep at start removes it (the update it belonged to was undone by recovery).
 *
 * data_guard_dir may be on a disk that holds other things, and svc runs as root: it is checked as
 * the state folder is (state/folder.ts) before svc writes or removes anything in it; svc removes
 * only folders named as copy ids, in folders named as containers, that carry its mark, never
 * through a link. A manifest is sealed (HMAC-SHA256 under a key derived from the state folder's
 * secret, state/secret.ts): a copy someone else wrote there, even one naming a real image, is no
 * copy to svc, so a restore (as root, into a bind mount) puts back only what svc itself copied
 * from that mount (docs/security.md).
 */
import {
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmdirSync,
  rmSync,
  type Stats,
  statfsSync,
} from "node:fs";
import { dirname, join } from "node:path";
import { z } from "zod";
import { SvcError } from "../core/errors.ts";
import { writeFileAtomically } from "../core/files.ts";
import { checkPrivateFolder, derivedKey, stateSecret } from "../state/index.ts";
import type { GuardedMount } from "./mounts.ts";

export const MANIFEST = "manifest.json";
export const RESTORING = "restoring.json";
/** svc's mark in each copy folder it makes: the sweep removes no folder without it. */
export const MARK = ".svc-copy";
/** What the seal's key is derived for (state/secret.ts). */
const SEAL_USE = "data guard manifest";
/** A manifest larger than this is not one svc wrote. */
const MANIFEST_MAX_BYTES = 256 * 1024;

const mountSchema = z.object({
  destination: z.string().min(1).max(4096),
  type: z.enum(["volume", "bind"]),
  name: z.string().max(256).optional(),
  source: z.string().max(4096),
  file: z.string().regex(/^mount-\d{1,4}\.tar$/),
  bytes: z.number().int().nonnegative(),
  /** the archive's checksum (checksum.ts); the first copies' carry a sha256 instead */
  xxh64: z
    .string()
    .regex(/^[0-9a-f]{16}$/)
    .optional(),
  sha256: z
    .string()
    .regex(/^[0-9a-f]{64}$/)
    .optional(),
});

const manifestSchema = z.object({
  /** 1: sha256 checksums; 2: xxh64 (checksum.ts) */
  format: z.union([z.literal(1), z.literal(2)]),
  container: z.string().min(1).max(256),
  /** the container the copy was taken from (the old one of its update) */
  container_id: z.string().regex(/^[0-9a-f]{12,64}$/),
  image: z.string().max(1024),
  image_id: z.string().max(256).nullable(),
  /** the version the data belongs to: the image's version label, else its tag */
  version: z.string().max(256).nullable(),
  created_at: z.string(),
  duration_ms: z.number().int().nonnegative(),
  bytes: z.number().int().nonnegative(),
  /** when the container's next version started: data_guard_keep counts from it */
  superseded_at: z.string().nullable().default(null),
  mounts: z
    .array(mountSchema)
    .max(256)
    .refine(
      (mounts) => mounts.every((m) => (m.xxh64 === undefined) !== (m.sha256 === undefined)),
      "one checksum a mount",
    ),
  /**
   * how it was made: in the engine by the helper (copier.ts); "archive": by an earlier svc through
   * the engine's archive endpoint, whose archives the helper restores as its own
   */
  through: z.enum(["helper", "archive"]).optional(),
});

export type Manifest = z.infer<typeof manifestSchema>;

/** A new copy's manifest, once the helper wrote its archives (inengine.ts). */
export function newManifest(
  of: { container: string; containerId: string; image: string; imageId: string | null; version: string | null },
  made: { createdAt: Date; durationMs: number; mounts: CopiedMount[] },
): Manifest {
  return {
    format: 2,
    through: "helper",
    container: of.container,
    container_id: of.containerId,
    image: of.image,
    image_id: of.imageId,
    version: of.version,
    created_at: made.createdAt.toISOString(),
    duration_ms: Math.round(made.durationMs),
    bytes: made.mounts.reduce((sum, mount) => sum + mount.bytes, 0),
    superseded_at: null,
    mounts: made.mounts,
  };
}
export type CopiedMount = z.infer<typeof mountSchema>;

/** A complete copy: its manifest and its folder. */
export interface Copy {
  id: string;
  dir: string;
  manifest: Manifest;
}

const NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,254}$/;
const COPY_ID = /^\d{8}T\d{6}Z-[0-9a-f]{12}$/;

export class CopyStore {
  private sealKey: Uint8Array | undefined;

  /**
   * `secretDir`: the folder whose secret keys the manifests' seals: the state folder, else
   * data_guard_dir itself (no state_dir).
   */
  constructor(
    readonly root: string,
    readonly secretDir: string = root,
  ) {}

  /** data_guard_dir passes the state folder's checks; throws SvcError("startup") naming the fault. */
  checkFolder(): void {
    checkPrivateFolder(this.root, "data_guard_dir");
  }

  /** A new, empty copy folder for `container` (made for svc's user only, and marked svc's). */
  begin(container: string, containerId: string, now: Date): { id: string; dir: string } {
    if (!NAME.test(container)) throw new Error(`${JSON.stringify(container)} is not a container name`);
    this.checkFolder();
    const id = `${now
      .toISOString()
      .replace(/[-:]/g, "")
      .replace(/\.\d+Z$/, "Z")}-${containerId.slice(0, 12)}`;
    const folder = join(this.root, container);
    mkdirSync(folder, { recursive: true, mode: 0o700 });
    if (!realFolder(lstatOrNull(folder))) throw new SvcError("engine", `${folder} is not a folder (a link?)`);
    const dir = join(folder, id);
    // the same container's copy begun in the same second: svc's own, else refused
    if (lstatOrNull(dir) !== null) {
      if (!this.isMarked(dir)) throw new SvcError("engine", `${dir} is there and is not a copy svc made`);
      rmSync(dir, { recursive: true, force: true });
    }
    mkdirSync(dir, { mode: 0o700 });
    writeFileAtomically(join(dir, MARK), "svc data guard copy\n");
    return { id, dir };
  }

  /** Removes a copy folder begun and given up, and its container's folder when nothing else is in it. */
  discard(dir: string): void {
    rmSync(dir, { recursive: true, force: true });
    try {
      rmdirSync(dirname(dir));
    } catch {
      // other copies are there
    }
  }

  /** Writes the manifest, sealed: from now on the folder is a copy. */
  complete(dir: string, manifest: Manifest): void {
    const seal = this.seal(JSON.stringify(manifest));
    writeFileAtomically(join(dir, MANIFEST), `${JSON.stringify({ ...manifest, seal }, null, 1)}\n`);
  }

  /** The complete copies (manifest present, readable and sealed by svc), newest first; checksums are checked before a restore, not here. */
  list(container?: string): Copy[] {
    const copies: Copy[] = [];
    for (const name of container === undefined ? this.containers() : [container]) {
      for (const id of entries(join(this.root, name))) {
        if (!COPY_ID.test(id)) continue;
        const copy = this.read(name, id);
        if (copy) copies.push(copy);
      }
    }
    return copies.sort((a, b) => b.manifest.created_at.localeCompare(a.manifest.created_at));
  }

  /** The copy, when its folders are real ones (no link) and its manifest is one svc sealed. */
  read(container: string, id: string): Copy | null {
    if (!NAME.test(container) || !COPY_ID.test(id)) return null;
    const dir = join(this.root, container, id);
    if (!realFolder(lstatOrNull(join(this.root, container))) || !realFolder(lstatOrNull(dir))) return null;
    try {
      const file = lstatOrNull(join(dir, MANIFEST));
      if (!file?.isFile() || file.size > MANIFEST_MAX_BYTES) return null;
      const raw = JSON.parse(readFileSync(join(dir, MANIFEST), "utf8")) as unknown;
      if (!this.sealed(raw)) return null;
      const parsed = manifestSchema.safeParse(raw);
      return parsed.success && parsed.data.container === container ? { id, dir, manifest: parsed.data } : null;
    } catch {
      return null;
    }
  }

  update(copy: Copy, change: Partial<Manifest>): Copy {
    const manifest = { ...copy.manifest, ...change };
    this.complete(copy.dir, manifest);
    return { ...copy, manifest };
  }

  /** Whether a restore of `copy` is under way (or was interrupted: crash recovery finishes it). */
  isRestoring(copy: Copy): boolean {
    return existsSync(join(copy.dir, RESTORING));
  }

  /** Removes a copy folder svc made (marked, a real folder in a real one); false for anything else. */
  remove(container: string, id: string): boolean {
    if (!NAME.test(container) || !COPY_ID.test(id)) return false;
    if (!realFolder(lstatOrNull(join(this.root, container)))) return false;
    const dir = join(this.root, container, id);
    if (!realFolder(lstatOrNull(dir)) || !this.isMarked(dir)) return false;
    rmSync(dir, { recursive: true, force: true });
    return true;
  }

  /** Marks a restore as under way: crash recovery finishes a restore it finds marked. */
  markRestoring(copy: Copy, into: string): void {
    writeFileAtomically(
      join(copy.dir, RESTORING),
      `${JSON.stringify({ into, started_at: new Date().toISOString() })}\n`,
    );
  }

  clearRestoring(copy: Copy): void {
    rmSync(join(copy.dir, RESTORING), { force: true });
  }

  /** The copy a restore into container `into` (an id) was interrupted in, if any. */
  restoringInto(into: string): Copy | null {
    for (const copy of this.list()) {
      try {
        const marker = JSON.parse(readFileSync(join(copy.dir, RESTORING), "utf8")) as { into?: unknown };
        if (
          typeof marker.into === "string" &&
          (marker.into === into || into.startsWith(marker.into) || marker.into.startsWith(into))
        )
          return copy;
      } catch {
        // no marker: not restoring
      }
    }
    return null;
  }

  /**
   * Removes the copies a crash interrupted: folders svc made (its mark, real folders named as a
   * container and a copy id) without a manifest that reads as one. Nothing else is touched: not
   * another program's folder, not a link, not a copy whose only fault is its seal (listed nowhere,
   * restored never, kept for the operator: a state folder's secret lost with its folder). Throws
   * when data_guard_dir fails its checks. Returns what it removed.
   */
  sweep(): string[] {
    if (lstatOrNull(this.root) === null) return [];
    this.checkFolder();
    const removed: string[] = [];
    for (const name of this.containers()) {
      if (!realFolder(lstatOrNull(join(this.root, name)))) continue;
      for (const id of entries(join(this.root, name))) {
        const dir = join(this.root, name, id);
        if (!COPY_ID.test(id) || !realFolder(lstatOrNull(dir)) || !this.isMarked(dir)) continue;
        if (this.mayBeCopy(name, dir)) continue;
        rmSync(dir, { recursive: true, force: true });
        removed.push(`${name}/${id}`);
      }
    }
    return removed;
  }

  /** Free bytes where the copies go, less the reserve a copy must leave: 10% of the filesystem, at most 1 GiB. */
  room(): number {
    this.checkFolder();
    mkdirSync(this.root, { recursive: true, mode: 0o700 });
    const fs = statfsSync(this.root);
    const total = fs.blocks * fs.bsize;
    const reserve = Math.min(total / 10, RESERVE_MAX_BYTES);
    return Math.max(0, Math.floor(fs.bavail * fs.bsize - reserve));
  }

  private containers(): string[] {
    return entries(this.root).filter((name) => NAME.test(name));
  }

  /** Whether the folder holds a manifest that reads as one, sealed or not. */
  private mayBeCopy(container: string, dir: string): boolean {
    try {
      const file = lstatOrNull(join(dir, MANIFEST));
      if (!file?.isFile() || file.size > MANIFEST_MAX_BYTES) return false;
      const parsed = manifestSchema.safeParse(JSON.parse(readFileSync(join(dir, MANIFEST), "utf8")));
      return parsed.success && parsed.data.container === container;
    } catch {
      return false;
    }
  }

  private isMarked(dir: string): boolean {
    return lstatOrNull(join(dir, MARK))?.isFile() === true;
  }

  /** HMAC-SHA256 of a manifest's text under the key derived from the secret (made on first use). */
  private seal(text: string): string {
    if (this.sealKey === undefined) {
      checkPrivateFolder(this.secretDir, this.secretDir === this.root ? "data_guard_dir" : "state_dir");
      mkdirSync(this.secretDir, { recursive: true, mode: 0o700 });
      this.sealKey = derivedKey(stateSecret(this.secretDir), SEAL_USE);
    }
    return new Bun.CryptoHasher("sha256", this.sealKey).update(text).digest("hex");
  }

  /** Whether a manifest as read carries svc's seal of the rest of it (JSON keeps the order it was written in). */
  private sealed(raw: unknown): boolean {
    if (raw === null || typeof raw !== "object" || Array.isArray(raw)) return false;
    const { seal, ...rest } = raw as Record<string, unknown>;
    if (typeof seal !== "string" || !/^[0-9a-f]{64}$/.test(seal)) return false;
    return crypto.timingSafeEqual(Buffer.from(seal), Buffer.from(this.seal(JSON.stringify(rest))));
  }
}

export const RESERVE_MAX_BYTES = 1024 ** 3;

function lstatOrNull(path: string): Stats | null {
  try {
    return lstatSync(path);
  } catch {
    return null;
  }
}

/** A folder itself, not a link to one. */
function realFolder(stat: Stats | null): boolean {
  return stat?.isDirectory() === true;
}

function entries(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

export function mountFile(index: number): string {
  return `mount-${index}.tar`;
}

export type { GuardedMount };
