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
import { archiveParent, guardedMounts } from "./mounts.ts";
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
  await sameBindSources(engine, copy, containerId);
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

/**
 * A bind mount's copy goes back only into that very folder: the container restored into binds the
 * same source at the same place. Whatever the archive holds (setuid files, device nodes) was
 * copied from that folder by svc (its manifest sealed, store.ts; its archive checksummed), so a
 * restore makes nothing there that was not there. The helper's restore mounts the copy's own
 * sources (inengine.ts); this is the same rule for the archive endpoint, which writes wherever
 * the container mounts the destination now.
 */
async function sameBindSources(engine: Engine, copy: Copy, containerId: string): Promise<void> {
  const binds = copy.manifest.mounts.filter((mount) => mount.type === "bind");
  if (binds.length === 0) return;
  const inspect = await engine.inspectContainer(containerId);
  const now = guardedMounts(inspect, "all");
  const mounts = "mounts" in now ? now.mounts : [];
  for (const bind of binds) {
    const there = mounts.find((mount) => mount.destination === bind.destination);
    if (there?.type !== "bind" || there.source !== bind.source)
      throw new SvcError(
        "internal",
        `the copy of ${bind.destination} was taken from ${bind.source}, and the container binds ${there ? `${there.source}` : "nothing writable"} there now: not restored`,
      );
  }
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
