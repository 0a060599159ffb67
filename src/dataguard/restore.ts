/**
 * Putting a copy back through the Engine API alone (docs/data-guard.md), into a container that
 * mounts the same volumes and is not running (the parked old container of a failed update):
 *
 *   1. every archive is checked against its checksum: a copy that does not match is never restored;
 *   2. each mount is emptied: an archive holding one empty file under the mount's own name is put
 *      into its parent, and the engine replaces the folder with it, removing everything in it; it
 *      cannot remove the mount point itself (busy) and says so, which is the emptying done;
 *   3. the mount's archive is put into its parent: the engine recreates every entry with its
 *      owner, mode, times, links and the extended attributes the archive carries.
 *
 * The caller marks a copy (store.ts, `markRestoring`) before it touches anything: the mark names the
 * copy that undoes the change (the same one after a failed update; the present data's copy when
 * `svc rollback --with-data` puts an older copy back), and crash recovery restores it from step 1,
 * so a mount is never left half-restored once svc runs again.
 */
import { join } from "node:path";
import { SvcError, toSvcError } from "../core/errors.ts";
import type { Engine } from "../engine/port.ts";
import { checkArchive, type Expected } from "./copier.ts";
import { archiveParent } from "./mounts.ts";
import type { CopiedMount, Copy } from "./store.ts";
import { emptyFileArchive } from "./tar.ts";

export interface RestoreResult {
  bytes: number;
  duration_ms: number;
}

/** Restores `copy` into container `containerId` (not running). Throws when the copy is damaged or the engine refuses. */
export async function restoreCopy(engine: Engine, copy: Copy, containerId: string): Promise<RestoreResult> {
  const started = performance.now();
  await verifyCopy(copy);
  for (const mount of copy.manifest.mounts) {
    const { parent, base } = archiveParent(mount.destination);
    await emptyMount(engine, containerId, parent, base, mount.destination);
    const body = Bun.file(join(copy.dir, mount.file));
    try {
      await engine.writeArchive(containerId, parent, body, mount.bytes);
    } catch (error) {
      throw new SvcError("engine", `restoring ${mount.destination}: ${toSvcError(error).message}`, { cause: error });
    }
  }
  return { bytes: copy.manifest.bytes, duration_ms: Math.round(performance.now() - started) };
}

/** Every archive of the copy matches its size and checksum (read in bounded chunks); throws naming the first that does not. */
export async function verifyCopy(copy: Copy): Promise<void> {
  for (const mount of copy.manifest.mounts) {
    try {
      checkArchive(join(copy.dir, mount.file), expectedOf(mount), mount.destination);
    } catch (error) {
      throw new SvcError("internal", (error as Error).message, { cause: error });
    }
  }
}

/** What a mount's archive must be: its size and its checksum, of whichever kind the copy has. */
export function expectedOf(mount: CopiedMount): Expected {
  return mount.xxh64 !== undefined
    ? { bytes: mount.bytes, xxh64: mount.xxh64 }
    : { bytes: mount.bytes, sha256: mount.sha256 ?? "" };
}

/**
 * Empties a mount through the engine: the engine answers the busy mount point with an error
 * after removing its contents. Any other answer than that one (or success) is a failure.
 */
async function emptyMount(
  engine: Engine,
  containerId: string,
  parent: string,
  base: string,
  destination: string,
): Promise<void> {
  const stub = new Blob([emptyFileArchive(base, Math.floor(Date.now() / 1000))]);
  try {
    await engine.writeArchive(containerId, parent, stub, stub.size);
  } catch (error) {
    const message = toSvcError(error).message;
    if (/device or resource busy/i.test(message)) return;
    throw new SvcError("engine", `emptying ${destination}: ${message}`, { cause: error });
  }
}
