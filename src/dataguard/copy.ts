/**
 * Copying a container's guarded mounts through the Engine API alone (docs/data-guard.md): each
 * mount's archive (GET /containers/{id}/archive) streamed to a file under data_guard_dir, hashed
 * as it goes, never held in memory; the manifest is written last. Over the limit (the size cap or
 * the room left), the copy stops at once and leaves nothing behind.
 */
import { closeSync, fdatasync, fsyncSync, openSync, readSync, renameSync, writeSync } from "node:fs";
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { formatSize } from "../config/values.ts";
import { SvcError } from "../core/errors.ts";
import { timerDelay } from "../core/timers.ts";
import type { Engine } from "../engine/port.ts";
import { BlockChecksum } from "./checksum.ts";
import type { GuardedMount } from "./mounts.ts";
import { type CopiedMount, type Copy, type CopyStore, mountFile, newManifest } from "./store.ts";
import { firstEntryType, startsWithFolder, XattrMerger, type XattrsByPath } from "./tar.ts";
import { type PreparedHelper, readXattrs, type XattrReader } from "./xattrs.ts";

export interface CopyRequest {
  container: string;
  containerId: string;
  image: string;
  imageId: string | null;
  version: string | null;
  mounts: GuardedMount[];
  /** the most the copy may take: the cap or the room left, whichever is smaller */
  limit: { bytes: number; why: string };
  /** the helper that reads the extended attributes, created before the stop (xattrs.ts) */
  xattrHelper?: PreparedHelper;
}

export type CopyOutcome = { kind: "copied"; copy: Copy } | { kind: "over"; bytes: number; reason: string };

/**
 * The longest the engine may send nothing while it streams an archive: the old container stays
 * stopped during a copy, so an engine that stalls must not hold it down for good.
 */
export const ARCHIVE_IDLE_MS = 120_000;

/** The reads of an archive rewritten with its extended attributes. */
const REWRITE_CHUNK = 4 * 1024 * 1024;

/**
 * How often a copy asks the disk to write back what it has written so far, on the runtime's file
 * threads while the archive streams on: the sync before the manifest then waits for the last part
 * alone, not for the whole archive (docs/data-guard.md, "Cost").
 */
const WRITE_BACK_EVERY = 32 * 1024 * 1024;

/** How often a copy asks for the chunks it wrote to be collected. */
const COLLECT_EVERY = 32 * 1024 * 1024;

/** A mount's archive ran past the limit: the copy stops there. */
class OverLimit extends Error {
  constructor(readonly bytes: number) {
    super("over the limit");
  }
}

/** Copies every mount of the request into a new copy folder; on any failure the folder is removed. */
export async function copyMounts(
  engine: Engine,
  store: CopyStore,
  request: CopyRequest,
  now: () => Date = () => new Date(),
  xattrs: XattrReader = readXattrs,
): Promise<CopyOutcome> {
  const started = performance.now();
  const { id, dir } = store.begin(request.container, request.containerId, now());
  // read beside the archives: the engine's archive leaves them out (xattrs.ts); most volumes have none
  const attributes = xattrs(engine, request.mounts, request.xattrHelper).catch((error: Error) => ({
    problem: error.message,
  }));
  try {
    const copied: CopiedMount[] = [];
    let total = 0;
    for (const [index, mount] of request.mounts.entries()) {
      const file = mountFile(index);
      const written = await copyOne(
        engine,
        request.containerId,
        mount.destination,
        join(dir, file),
        request.limit.bytes - total,
      );
      if (written === null) continue; // a file, not a folder: not guarded (docs/data-guard.md)
      total += written.bytes;
      copied.push({ ...mount, file, bytes: written.bytes, xxh64: written.xxh64 });
    }
    const reading = await attributes;
    if ("maps" in reading) {
      for (const mount of copied) {
        const map = reading.maps[request.mounts.findIndex((m) => m.destination === mount.destination)];
        if (!map || map.size === 0) continue;
        const merged = addXattrs(join(dir, mount.file), map, request.limit.bytes - total + mount.bytes);
        total += merged.bytes - mount.bytes;
        Object.assign(mount, merged);
      }
    }
    const manifest = newManifest(request, {
      through: "archive",
      createdAt: now(),
      durationMs: performance.now() - started,
      mounts: copied,
      ...("problem" in reading ? { xattrsLost: reading.problem } : {}),
    });
    store.complete(dir, manifest);
    return { kind: "copied", copy: { id, dir, manifest } };
  } catch (error) {
    await attributes; // its helper is removed before the copy's failure is told
    await rm(dir, { recursive: true, force: true });
    if (error instanceof OverLimit) {
      return {
        kind: "over",
        bytes: error.bytes,
        reason: `its guarded mounts take more than ${formatSize(request.limit.bytes)} (${request.limit.why})`,
      };
    }
    throw error;
  }
}

/**
 * One mount's archive to `path`, hashed as it is written; null when the mount is a file. Throws
 * OverLimit past `limit` bytes, SvcError when the engine or the disk fails.
 */
async function copyOne(
  engine: Engine,
  containerId: string,
  destination: string,
  path: string,
  limit: number,
): Promise<{ bytes: number; xxh64: string } | null> {
  const stream = await engine.readArchive(containerId, destination);
  const reader = stream.getReader();
  const file = openSync(path, "wx", 0o600);
  let closed = false;
  const hash = new BlockChecksum();
  let bytes = 0;
  let checkedFirst = false;
  const writeBack = new WriteBack(file);
  try {
    for (;;) {
      const { done, value } = await readChunk(reader, destination);
      if (done) break;
      if (!checkedFirst && value.byteLength >= 512) {
        checkedFirst = true;
        if (!startsWithFolder(firstEntryType(value))) {
          // nothing lost: the copy is refused just below; cancelling only stops the engine's stream
          await reader.cancel().catch(() => {});
          closeSync(file);
          closed = true;
          await rm(path, { force: true });
          return null;
        }
      }
      bytes += value.byteLength;
      if (bytes > limit) throw new OverLimit(bytes);
      hash.update(value);
      writeAll(file, value); // synchronous: a chunk is half a MiB, and no await between chunks
      // the chunks are garbage once written: collected as they go, or a copy of a large volume
      // would hold a hundred MiB of them until the collector comes by itself (docs/data-guard.md)
      if (Math.floor(bytes / COLLECT_EVERY) !== Math.floor((bytes - value.byteLength) / COLLECT_EVERY)) Bun.gc(false);
      writeBack.written(bytes);
    }
    await writeBack.idle();
    fsyncSync(file);
    return { bytes, xxh64: hash.digest() };
  } catch (error) {
    // nothing lost: the error is thrown next; cancelling only stops the engine's stream
    await reader.cancel().catch(() => {});
    if (error instanceof OverLimit) throw error;
    throw new SvcError("engine", `copying ${destination}: ${(error as Error).message}`, { cause: error });
  } finally {
    await writeBack.idle(); // the file stays open while a write-back of it runs
    if (!closed) closeSync(file);
  }
}

/** The write-back of a file being written, started every WRITE_BACK_EVERY bytes, one at a time, never awaited but at the end. */
class WriteBack {
  private running: Promise<void> | null = null;
  private asked = 0;

  constructor(private readonly file: number) {}

  written(bytes: number): void {
    if (this.running || bytes - this.asked < WRITE_BACK_EVERY) return;
    this.asked = bytes;
    // its failure is the final fsync's to tell
    this.running = new Promise<void>((done) => fdatasync(this.file, () => done())).then(() => {
      this.running = null;
    });
  }

  idle(): Promise<void> {
    return this.running ?? Promise.resolve();
  }
}

/**
 * Rewrites the archive at `path` with the attributes of `xattrs` added (tar.ts, XattrMerger), in
 * large synchronous reads and writes, and renames it over the first once synced.
 */
function addXattrs(path: string, xattrs: XattrsByPath, limit: number): { bytes: number; xxh64: string } {
  const merger = new XattrMerger(xattrs);
  const hash = new BlockChecksum();
  const input = openSync(path, "r");
  const output = openSync(`${path}.xattrs`, "w", 0o600);
  let bytes = 0;
  const put = (piece: Uint8Array) => {
    bytes += piece.byteLength;
    if (bytes > limit) throw new OverLimit(bytes);
    hash.update(piece);
    writeAll(output, piece);
  };
  try {
    const buffer = new Uint8Array(REWRITE_CHUNK);
    for (;;) {
      const read = readSync(input, buffer, 0, REWRITE_CHUNK, null);
      if (read === 0) break;
      for (const piece of merger.push(buffer.subarray(0, read))) put(piece);
      // each piece is written before the buffer is read into again (what the merger holds is its own copy)
    }
    for (const piece of merger.end()) put(piece);
    fsyncSync(output);
  } finally {
    closeSync(input);
    closeSync(output);
  }
  renameSync(`${path}.xattrs`, path);
  return { bytes, xxh64: hash.digest() };
}

function writeAll(file: number, chunk: Uint8Array): void {
  let offset = 0;
  while (offset < chunk.byteLength) offset += writeSync(file, chunk, offset, chunk.byteLength - offset);
}

/** The next chunk of an archive, or an engine error after ARCHIVE_IDLE_MS without one. */
async function readChunk(
  reader: { read(): Promise<{ done: boolean; value?: Uint8Array }> },
  destination: string,
): Promise<{ done: true; value?: undefined } | { done: false; value: Uint8Array }> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const stalled = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new SvcError("engine", `the engine sent nothing of ${destination} for ${ARCHIVE_IDLE_MS / 1000} s`)),
      timerDelay(ARCHIVE_IDLE_MS),
    );
  });
  try {
    return (await Promise.race([reader.read(), stalled])) as { done: true } | { done: false; value: Uint8Array };
  } finally {
    clearTimeout(timer);
  }
}

/** The archive's size of the guarded mounts of a running container, counted up to `limit` (+1): to know before the stop whether a copy fits. */
export async function measureMounts(
  engine: Engine,
  containerId: string,
  mounts: GuardedMount[],
  limit: number,
): Promise<number> {
  let total = 0;
  for (const mount of mounts) {
    const reader = (await engine.readArchive(containerId, mount.destination)).getReader();
    try {
      for (;;) {
        const { done, value } = await readChunk(reader, mount.destination);
        if (done) break;
        total += value.byteLength;
        if (total > limit) return total;
      }
    } finally {
      // nothing lost: what was needed was read; cancelling only stops the engine's stream
      await reader.cancel().catch(() => {});
    }
  }
  return total;
}
