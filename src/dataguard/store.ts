/**
 * The copies on disk (docs/data-guard.md), one folder per copy under data_guard_dir:
 *
 *   <dir>/<container>/<copy id>/mount-<n>.tar   each guarded mount, as the engine's archive gave it
 *   <dir>/<container>/<copy id>/manifest.json   written last, with each archive's size and checksum
 *   <dir>/<container>/<copy id>/restoring.json  present while a restore runs
 *
 * A folder without its manifest, or whose archives do not match their checksums, is never taken
 * for a copy: the sweep at start removes it (the update it belonged to was undone by recovery).
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statfsSync, statSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import { writeFileAtomically } from "../core/files.ts";
import type { GuardedMount } from "./mounts.ts";

export const MANIFEST = "manifest.json";
export const RESTORING = "restoring.json";
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
  /** how it was made: in the engine by the helper (copier.ts), or through the engine's archive endpoint (copy.ts) */
  through: z.enum(["helper", "archive"]).optional(),
  /** why the archives carry no extended attributes but `security.capability` (xattrs.ts); absent when they carry them all */
  xattrs_lost: z.string().max(1024).optional(),
});

export type Manifest = z.infer<typeof manifestSchema>;

/** A new copy's manifest, as either way of copying writes it (inengine.ts, copy.ts). */
export function newManifest(
  of: { container: string; containerId: string; image: string; imageId: string | null; version: string | null },
  made: {
    through: "helper" | "archive";
    createdAt: Date;
    durationMs: number;
    mounts: CopiedMount[];
    xattrsLost?: string;
  },
): Manifest {
  return {
    format: 2,
    through: made.through,
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
    ...(made.xattrsLost ? { xattrs_lost: made.xattrsLost.slice(0, 1024) } : {}),
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
  constructor(readonly root: string) {}

  /** A new, empty copy folder for `container` (made for svc's user only). */
  begin(container: string, containerId: string, now: Date): { id: string; dir: string } {
    if (!NAME.test(container)) throw new Error(`${JSON.stringify(container)} is not a container name`);
    const id = `${now
      .toISOString()
      .replace(/[-:]/g, "")
      .replace(/\.\d+Z$/, "Z")}-${containerId.slice(0, 12)}`;
    const dir = join(this.root, container, id);
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    return { id, dir };
  }

  /** Writes the manifest: from now on the folder is a copy. */
  complete(dir: string, manifest: Manifest): void {
    writeFileAtomically(join(dir, MANIFEST), `${JSON.stringify(manifest, null, 1)}\n`);
  }

  /** The complete copies (manifest present and readable), newest first; checksums are checked before a restore, not here. */
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

  read(container: string, id: string): Copy | null {
    if (!NAME.test(container) || !COPY_ID.test(id)) return null;
    const dir = join(this.root, container, id);
    try {
      if (statSync(join(dir, MANIFEST)).size > MANIFEST_MAX_BYTES) return null;
      const parsed = manifestSchema.safeParse(JSON.parse(readFileSync(join(dir, MANIFEST), "utf8")));
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

  remove(container: string, id: string): boolean {
    if (!NAME.test(container) || !COPY_ID.test(id)) return false;
    const dir = join(this.root, container, id);
    if (!existsSync(dir)) return false;
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

  /** Removes every folder that is not a complete copy (a copy interrupted by a crash). Returns what it removed. */
  sweep(): string[] {
    const removed: string[] = [];
    for (const name of this.containers()) {
      for (const id of entries(join(this.root, name))) {
        if (this.read(name, id)) continue;
        rmSync(join(this.root, name, id), { recursive: true, force: true });
        removed.push(`${name}/${id}`);
      }
    }
    return removed;
  }

  /** Free bytes where the copies go, less the reserve a copy must leave: 10% of the filesystem, at most 1 GiB. */
  room(): number {
    mkdirSync(this.root, { recursive: true, mode: 0o700 });
    const fs = statfsSync(this.root);
    const total = fs.blocks * fs.bsize;
    const reserve = Math.min(total / 10, RESERVE_MAX_BYTES);
    return Math.max(0, Math.floor(fs.bavail * fs.bsize - reserve));
  }

  private containers(): string[] {
    return entries(this.root).filter((name) => NAME.test(name));
  }
}

export const RESERVE_MAX_BYTES = 1024 ** 3;

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
