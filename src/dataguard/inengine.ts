/**
 * Copies and restores made inside the engine (docs/data-guard.md, "Copied in the engine"): where
 * the engine mounts the copies' folder as svc sees it (a local engine, svc on its host), a helper
 * (helper.ts) runs the copier (copier.ts) over the guarded mounts and the copy's folder, at the
 * speed of tar, where a copy through the engine's archive endpoint (copy.ts, restore.ts) cannot
 * reach it. Whether the engine sees the folder is never assumed: svc writes a token into it and
 * the copier checks it first; where it differs (svc in a container, a remote engine), the helper
 * ends at once and that engine's copies go through the archive endpoint from then on.
 */

import { existsSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { z } from "zod";
import { formatSize } from "../config/values.ts";
import { parseJsonBytes } from "../core/bounded.ts";
import { SvcError, toSvcError } from "../core/errors.ts";
import { randomHex } from "../core/files.ts";
import type { Engine } from "../engine/port.ts";
import { DONE, EXIT } from "./copier.ts";
import type { CopyOutcome, CopyRequest } from "./copy.ts";
import {
  createHelper,
  type FolderView,
  guardMount,
  helperImageOf,
  onEngineHost,
  removeHelper,
  runHelper,
} from "./helper.ts";
import { archiveParent, type GuardedMount } from "./mounts.ts";
import { expectedOf } from "./restore.ts";
import { type Copy, type CopyStore, newManifest } from "./store.ts";

const PROBE = ".engine-probe";
/** The file svc writes when a helper started ahead is to begin (copier.ts) */
const GO = ".go";
/** The longest a helper started ahead waits for it: a stop, or a new version's watch, is shorter. */
const GO_WAIT_MS = 15 * 60_000;
const RESULT = "result.json";
/** The longest a helper's copy or restore may take: a large volume on a slow card. */
const HELPER_TIMEOUT_MS = 2 * 3600_000;

/** Copies' folders an engine was found not to share with svc: their copies go through the archive endpoint. */
const elsewhere = new WeakMap<Engine, Set<string>>();

function sharedWith(engine: Engine, root: string): boolean {
  return !elsewhere.get(engine)?.has(root);
}

function markElsewhere(engine: Engine, root: string): void {
  const roots = elsewhere.get(engine) ?? new Set<string>();
  roots.add(root);
  elsewhere.set(engine, roots);
}

/** A copier created while the container still ran, with the copy's folder it writes; `started` once armed. */
export type PreparedCopier = Promise<
  { id: string; copyId: string; dir: string; token: string; started?: boolean } | { problem: string }
>;

/**
 * Starts a prepared copier as the old container stops: it checks what it must, then waits for svc's
 * go (copier.ts), so that its start and its runtime's are out of the downtime too.
 */
export async function armCopier(engine: Engine, prepared: PreparedCopier | undefined): Promise<void> {
  const copier = await prepared;
  if (!copier || !("id" in copier) || copier.started) return;
  try {
    await engine.startContainer(copier.id);
    copier.started = true;
  } catch {
    // started at the copy then
  }
}

/** The copier of a copy of `request.mounts`, created before the stop: the engine's create is out of the downtime. */
export function prepareCopier(
  engine: Engine,
  store: CopyStore,
  request: Pick<CopyRequest, "container" | "containerId" | "mounts" | "limit">,
  now: Date,
  view: FolderView = onEngineHost,
): PreparedCopier {
  return (async () => {
    if (!sharedWith(engine, store.root)) return { problem: "the engine does not see the copies' folder" };
    const image = await helperImageOf(engine);
    if ("problem" in image) return image;
    const { id: copyId, dir } = store.begin(request.container, request.containerId, now);
    const copyFolder = view(dir, "/copy");
    if (!copyFolder) {
      rmSync(dir, { recursive: true, force: true });
      markElsewhere(engine, store.root);
      return { problem: "the engine does not see the copies' folder" };
    }
    try {
      const token = writeProbe(dir);
      const spec = {
        go: { file: GO, waitMs: GO_WAIT_MS },
        out: copyFolder.path,
        limit: request.limit.bytes,
        owner: ownerOfSvc(),
        probe: { file: PROBE, token },
        mounts: request.mounts.map((mount, index) => ({
          root: `/guard/${index}`,
          base: archiveParent(mount.destination).base,
        })),
      };
      const id = await createHelper(engine, image, {
        kind: "copy",
        copy: `${request.container}/${copyId}`,
        cmd: [...image.copier.cmd, "copy", JSON.stringify(spec)],
        env: image.copier.env,
        mounts: [...guardMounts(request.mounts, true), copyFolder.mount],
      });
      return { id, copyId, dir, token };
    } catch (error) {
      rmSync(dir, { recursive: true, force: true });
      return { problem: `the helper that copies could not be created: ${toSvcError(error).message}` };
    }
  })();
}

/** Removes a prepared copier that will not run, and the folder it would have written. */
export async function discardCopier(engine: Engine, prepared: PreparedCopier | undefined): Promise<void> {
  const copier = await prepared;
  if (!copier || !("id" in copier)) return;
  await removeHelper(engine, copier.id);
  rmSync(copier.dir, { recursive: true, force: true });
}

const resultSchema = z.object({
  mounts: z
    .array(
      z
        .object({
          file: z.string().regex(/^mount-\d{1,4}\.tar$/),
          bytes: z.number().int().nonnegative(),
          xxh64: z.string().regex(/^[0-9a-f]{16}$/),
        })
        .nullable(),
    )
    .max(256),
});

/**
 * Runs the prepared copier (the container stopped): the copy, or "elsewhere" when the engine does
 * not see the copies' folder as svc does (nothing written; the caller copies through the archive).
 */
export async function copyInEngine(
  engine: Engine,
  store: CopyStore,
  copier: { id: string; copyId: string; dir: string; token: string; started?: boolean },
  request: CopyRequest,
  now: () => Date,
): Promise<CopyOutcome | "elsewhere"> {
  const started = performance.now();
  let done = false;
  try {
    writeFileSync(join(copier.dir, GO), copier.token);
    const { exitCode, said } = await untilDone(engine, copier.id, copier.started, join(copier.dir, RESULT));
    // (a copier that waited past GO_WAIT_MS for its go: the copy goes through the archive)
    if (exitCode === EXIT.elsewhere || exitCode === EXIT.notAsked) {
      if (exitCode === EXIT.elsewhere) markElsewhere(engine, store.root);
      return "elsewhere";
    }
    if (exitCode === EXIT.over)
      return {
        kind: "over",
        bytes: Number(/(\d+) bytes/.exec(said)?.[1] ?? request.limit.bytes + 1),
        reason: `its guarded mounts take more than ${formatSize(request.limit.bytes)} (${request.limit.why})`,
      };
    if (exitCode !== 0) throw new SvcError("engine", `the helper's copy ended with exit code ${exitCode}: ${said}`);
    const result = readResult(copier.dir);
    const mounts = request.mounts.flatMap((mount, index) => {
      const written = result.mounts[index];
      return written ? [{ ...mount, ...written }] : [];
    });
    const manifest = newManifest(request, {
      through: "helper",
      createdAt: now(),
      durationMs: performance.now() - started,
      mounts,
    });
    for (const file of [RESULT, PROBE, GO]) rmSync(join(copier.dir, file), { force: true });
    store.complete(copier.dir, manifest);
    done = true;
    return { kind: "copied", copy: { id: copier.copyId, dir: copier.dir, manifest } };
  } finally {
    // not waited for: the copy is downtime, and a helper left is removed before the next is made
    void removeHelper(engine, copier.id);
    if (!done) await rm(copier.dir, { recursive: true, force: true });
  }
}

/** The most a copier's result may take: a line a mount. */
const RESULT_MAX_BYTES = 256 * 1024;

function readResult(dir: string): z.infer<typeof resultSchema> {
  let bytes: Uint8Array;
  try {
    if (statSync(join(dir, RESULT)).size > RESULT_MAX_BYTES) throw new Error("too large");
    bytes = readFileSync(join(dir, RESULT));
  } catch {
    throw new SvcError("engine", "the helper's copy wrote no result svc reads");
  }
  const parsed = parseJsonBytes(bytes, resultSchema);
  if ("error" in parsed) throw new SvcError("engine", "the helper's copy wrote a result svc does not read");
  return parsed.value;
}

/**
 * A restorer made for a copy: ahead, while its update's new container is watched (created and
 * started, waiting for svc's go: out of the downtime), or at the restore.
 */
export type PreparedRestorer = Promise<{ id: string; token: string; started: boolean } | "elsewhere">;

/** Creates the helper that would restore `copy` (started when `ahead`); "elsewhere" where the engine does not see the copies' folder. */
export function prepareRestorer(
  engine: Engine,
  store: CopyStore,
  copy: Copy,
  ahead: boolean,
  view: FolderView = onEngineHost,
): PreparedRestorer {
  return (async () => {
    if (!sharedWith(engine, store.root)) return "elsewhere";
    const image = await helperImageOf(engine);
    const copyFolder = view(copy.dir, "/copy");
    if ("problem" in image || !copyFolder) return "elsewhere";
    rmSync(join(copy.dir, GO), { force: true });
    const token = writeProbe(copy.dir);
    const spec = {
      go: { file: GO, waitMs: GO_WAIT_MS },
      from: copyFolder.path,
      probe: { file: PROBE, token },
      mounts: copy.manifest.mounts.map((mount, index) => ({
        file: mount.file,
        ...expectedOf(mount),
        root: `/guard/${index}`,
        base: archiveParent(mount.destination).base,
        what: mount.destination,
      })),
    };
    let id: string;
    try {
      id = await createHelper(engine, image, {
        kind: "restore",
        copy: `${copy.manifest.container}/${copy.id}`,
        cmd: [...image.copier.cmd, "restore", JSON.stringify(spec)],
        env: image.copier.env,
        mounts: [
          ...guardMounts(copy.manifest.mounts, false),
          // (writable for its .done alone: it reads the archives)
          copyFolder.mount,
        ],
      });
    } catch {
      // an engine without the copy's folder (a bind source it does not have) restores through its archive
      rmSync(join(copy.dir, PROBE), { force: true });
      return "elsewhere";
    }
    const started =
      ahead &&
      (await engine.startContainer(id).then(
        () => true,
        () => false,
      ));
    return { id, token, started };
  })();
}

/** Removes a prepared restorer that will not run. */
export async function discardRestorer(
  engine: Engine,
  copy: Copy,
  prepared: PreparedRestorer | undefined,
): Promise<void> {
  const restorer = await prepared;
  if (!restorer || restorer === "elsewhere") return;
  await removeHelper(engine, restorer.id);
  rmSync(join(copy.dir, PROBE), { force: true });
}

/**
 * Restores `copy` into its mounts through a helper (the one prepared, else one made now): every
 * archive checked first, then each mount emptied and extracted. "elsewhere" when the engine does
 * not see the copies' folder as svc does (nothing touched: the caller restores through the
 * archive endpoint).
 */
export async function restoreInEngine(
  engine: Engine,
  store: CopyStore,
  copy: Copy,
  prepared?: PreparedRestorer,
  view: FolderView = onEngineHost,
): Promise<"restored" | "elsewhere"> {
  let restorer = await (prepared ?? prepareRestorer(engine, store, copy, false, view));
  if (restorer === "elsewhere") return "elsewhere";
  try {
    // nothing lost: a restorer that did not answer is made again just below, and its second run's error is thrown
    let ran = await goAndWait(engine, copy, restorer).catch(() => null);
    // a restorer made ahead that is gone or waited too long (a watch longer than it waits): made again
    if (ran === null || ran.exitCode === EXIT.notAsked) {
      void removeHelper(engine, restorer.id);
      restorer = await prepareRestorer(engine, store, copy, false, view);
      if (restorer === "elsewhere") return "elsewhere";
      ran = await goAndWait(engine, copy, restorer);
    }
    if (ran.exitCode === EXIT.elsewhere) {
      markElsewhere(engine, store.root);
      return "elsewhere";
    }
    if (ran.exitCode === EXIT.damaged) throw new SvcError("internal", ran.said);
    if (ran.exitCode !== 0)
      throw new SvcError("engine", `the helper's restore ended with exit code ${ran.exitCode}: ${ran.said}`);
    return "restored";
  } finally {
    if (restorer !== "elsewhere") void removeHelper(engine, restorer.id);
    for (const file of [PROBE, GO, DONE]) rmSync(join(copy.dir, file), { force: true });
  }
}

/** Tells a restorer to begin (started now unless it was ahead) and waits for its end. */
function goAndWait(
  engine: Engine,
  copy: Copy,
  restorer: { id: string; token: string; started: boolean },
): Promise<{ exitCode: number; said: string }> {
  rmSync(join(copy.dir, DONE), { force: true });
  writeFileSync(join(copy.dir, GO), restorer.token);
  return untilDone(engine, restorer.id, restorer.started, join(copy.dir, DONE));
}

/** How often svc looks for a helper's answer while it works. */
const DONE_POLL_MS = 5;

/**
 * A helper's end: its answer in the copy's folder (`done`), read as soon as it is there (the engine
 * takes some 0.5 s more to report the helper's exit, which removes it anyway), or its exit.
 */
async function untilDone(
  engine: Engine,
  id: string,
  started: boolean | undefined,
  done: string,
): Promise<{ exitCode: number; said: string }> {
  let waiting = true;
  const exited = runHelper(engine, id, HELPER_TIMEOUT_MS, started).finally(() => {
    waiting = false;
  });
  const answered = (async () => {
    while (waiting) {
      if (existsSync(done)) return { exitCode: 0, said: "" };
      await Bun.sleep(DONE_POLL_MS);
    }
    return exited;
  })();
  try {
    return await Promise.race([exited, answered]);
  } finally {
    waiting = false;
    exited.catch(() => {}); // an answer came first: its exit is not waited for
  }
}

function guardMounts(mounts: Pick<GuardedMount, "type" | "name" | "source">[], readOnly: boolean) {
  return mounts.map((mount, index) => guardMount(mount as GuardedMount, `/guard/${index}`, readOnly));
}

/** A token in the copy's folder that only a helper mounting that very folder reads. */
function writeProbe(dir: string): string {
  const token = randomHex(16);
  writeFileSync(join(dir, PROBE), token, { mode: 0o644 });
  return token;
}

/** svc's own user: the copier gives it what it writes, so that svc (not root, in the engine's group) reads it. */
function ownerOfSvc(): [number, number] | null {
  return process.getuid && process.getgid ? [process.getuid(), process.getgid()] : null;
}
