/**
 * Copies and restores made inside the engine (docs/data-guard.md, "In the engine"): a helper
 * (helper.ts) runs the copier (copier.ts) over the guarded mounts and the copy's folder, at the
 * speed of tar. Whether the engine sees the copies' folder as svc does is never assumed: svc
 * writes a token into it and the copier checks it first, and says so before the old container
 * stops; where the engine cannot mount the folder, or mounts another (a remote engine, svc in a
 * container without a mount there), the copy is refused with the mount to add, before anything
 * stops.
 */

import { existsSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import { formatSize } from "../config/values.ts";
import { parseJsonBytes } from "../core/bounded.ts";
import { SvcError, toSvcError } from "../core/errors.ts";
import { randomHex } from "../core/files.ts";
import type { Engine } from "../engine/port.ts";
import { DONE, EXIT, type Expected, READY } from "./copier.ts";
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
import { type CopiedMount, type Copy, type CopyStore, newManifest } from "./store.ts";

const PROBE = ".engine-probe";
/** The file svc writes when a helper started ahead is to begin (copier.ts) */
const GO = ".go";
/** The longest a helper started ahead waits for it: a stop, or a new version's watch, is shorter. */
const GO_WAIT_MS = 15 * 60_000;
const RESULT = "result.json";
/** The longest a helper's copy or restore may take: a large volume on a slow card. */
const HELPER_TIMEOUT_MS = 2 * 3600_000;
/** The longest a copier may take to start and find the copy's folder (the engine's start and the runtime's). */
const READY_WAIT_MS = 120_000;

/**
 * Why a copy cannot be made in the engine: it does not see the copies' folder `root` where svc
 * does, and what gives it that folder. `inContainer`: svc runs in a container of the engine.
 */
export function unseenFolder(root: string, inContainer: boolean): string {
  return inContainer
    ? `the engine cannot mount data_guard_dir ${root}: it is in svc's container's own files or on a tmpfs; mount a volume or a host folder at it (or at state_dir, as the image's /var/lib/svc is)`
    : `the engine does not see data_guard_dir ${root} where svc does (a remote engine, or svc in a mount namespace of its own): run svc on the engine's host, or in a container of it with data_guard_dir on a volume or a host folder, or give the engine's host that folder at the same path`;
}

/** Where a helper finds the copies' folder: how svc's engine sees it, and whether svc runs in a container of it. */
export interface EngineView {
  view: FolderView;
  inContainer: boolean;
}

const onHost: EngineView = { view: onEngineHost, inContainer: false };

/** A copier started before the stop, seeing the copy's folder it writes and waiting for svc's go. */
export interface ReadyCopier {
  id: string;
  copyId: string;
  dir: string;
  token: string;
}

/**
 * The copier of a copy of `request.mounts`, made before the stop: created and started, it checks
 * that it sees the copy's folder and waits for svc's go (copier.ts), so that the engine's create
 * and start, and the runtime's, are out of the downtime. Its problem, when it cannot be: no copy
 * in the engine, the reason naming what to change; the old container has not stopped.
 */
export async function prepareCopier(
  engine: Engine,
  store: CopyStore,
  request: Pick<CopyRequest, "container" | "containerId" | "mounts" | "limit">,
  now: Date,
  seen: EngineView = onHost,
): Promise<ReadyCopier | { problem: string }> {
  const image = await helperImageOf(engine);
  if ("problem" in image) return image;
  const { id: copyId, dir } = store.begin(request.container, request.containerId, now);
  const copyFolder = seen.view(dir, "/copy");
  const unseen = { problem: unseenFolder(store.root, seen.inContainer) };
  if (!copyFolder) {
    store.discard(dir);
    return unseen;
  }
  let id: string | undefined;
  let ready = false;
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
    try {
      id = await createHelper(engine, image, {
        kind: "copy",
        copy: `${request.container}/${copyId}`,
        cmd: [...image.copier.cmd, "copy", JSON.stringify(spec)],
        env: image.copier.env,
        mounts: [...guardMounts(request.mounts, true), copyFolder.mount],
      });
    } catch (error) {
      // an engine without the folder at that path (a remote one) refuses to mount it
      const message = toSvcError(error).message;
      if (message.includes(copyFolder.mount.Source)) return unseen;
      return { problem: `the helper that copies could not be created: ${message}` };
    }
    const ended = await untilReady(engine, id, join(dir, READY));
    if (ended === null) {
      ready = true;
      return { id, copyId, dir, token };
    }
    if (ended.exitCode === EXIT.elsewhere) return unseen;
    return { problem: `the helper that copies ended with exit code ${ended.exitCode}: ${ended.said}` };
  } catch (error) {
    return { problem: `the helper that copies did not start: ${toSvcError(error).message}` };
  } finally {
    // (waited for: nothing has stopped yet)
    if (!ready) {
      if (id) await removeHelper(engine, id);
      store.discard(dir);
    }
  }
}

/** How often svc looks for a helper's answer while it works. */
const DONE_POLL_MS = 5;
/** How often svc asks the engine whether a copier that has not answered yet has ended. */
const STATE_POLL_EVERY = 40;

/**
 * Starts a copier and waits until it says it sees the copy's folder (null), or for its end: its
 * exit code, and what it said. Its state is read from the engine now and then: no wait on the
 * engine is left behind once it answered.
 */
async function untilReady(
  engine: Engine,
  id: string,
  ready: string,
): Promise<{ exitCode: number; said: string } | null> {
  await engine.startContainer(id);
  const deadline = Date.now() + READY_WAIT_MS;
  for (let polls = 1; ; polls++) {
    if (existsSync(ready)) return null;
    if (polls % STATE_POLL_EVERY === 0) {
      const state = (await engine.inspectContainer(id)).State;
      if (state && !state.Running && state.Status !== "created") {
        const exitCode = state.ExitCode ?? -1;
        // nothing lost: the exit code is the answer; the logs only illustrate it
        const said = await engine.containerLogs(id, 5).catch(() => "");
        return { exitCode, said: said.trim().slice(0, 500) };
      }
    }
    if (Date.now() > deadline) throw new SvcError("engine", `it did not answer within ${READY_WAIT_MS / 1000} s`);
    await Bun.sleep(DONE_POLL_MS);
  }
}

/** Removes a prepared copier that will not run, and the folder it would have written. */
export async function discardCopier(engine: Engine, store: CopyStore, copier: ReadyCopier | undefined): Promise<void> {
  if (!copier) return;
  await removeHelper(engine, copier.id);
  store.discard(copier.dir);
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
 * Tells the prepared copier to go (the container stopped) and waits for its copy; "again" when it
 * waited past GO_WAIT_MS for the go (nothing written: the caller makes a copier again).
 */
export async function copyInEngine(
  engine: Engine,
  store: CopyStore,
  copier: ReadyCopier,
  request: CopyRequest,
  now: () => Date,
): Promise<CopyOutcome | "again"> {
  const started = performance.now();
  let done = false;
  try {
    writeFileSync(join(copier.dir, GO), copier.token);
    const { exitCode, said } = await untilDone(engine, copier.id, true, join(copier.dir, RESULT));
    if (exitCode === EXIT.notAsked) return "again";
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
      createdAt: now(),
      durationMs: performance.now() - started,
      mounts,
    });
    for (const file of [RESULT, PROBE, GO, READY]) rmSync(join(copier.dir, file), { force: true });
    store.complete(copier.dir, manifest);
    done = true;
    return { kind: "copied", copy: { id: copier.copyId, dir: copier.dir, manifest } };
  } finally {
    // not waited for: the copy is downtime, and a helper left is removed before the next is made
    void removeHelper(engine, copier.id);
    if (!done) store.discard(copier.dir);
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
export type PreparedRestorer = Promise<{ id: string; token: string; started: boolean } | { problem: string }>;

/** Creates the helper that would restore `copy` (started when `ahead`), or why it cannot be. */
export function prepareRestorer(
  engine: Engine,
  store: CopyStore,
  copy: Copy,
  ahead: boolean,
  seen: EngineView = onHost,
): PreparedRestorer {
  return (async () => {
    const image = await helperImageOf(engine);
    if ("problem" in image) return image;
    const copyFolder = seen.view(copy.dir, "/copy");
    if (!copyFolder) return { problem: unseenFolder(store.root, seen.inContainer) };
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
    } catch (error) {
      rmSync(join(copy.dir, PROBE), { force: true });
      const message = toSvcError(error).message;
      if (message.includes(copyFolder.mount.Source)) return { problem: unseenFolder(store.root, seen.inContainer) };
      return { problem: `the helper that restores could not be created: ${message}` };
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
  if (!restorer || "problem" in restorer) return;
  await removeHelper(engine, restorer.id);
  rmSync(join(copy.dir, PROBE), { force: true });
}

/**
 * Restores `copy` into its mounts through a helper (the one prepared, else one made now): every
 * archive checked first, then each mount emptied and extracted. Throws when it cannot (the engine
 * does not see the copies' folder: nothing touched) or the copy does not match its checksums.
 */
export async function restoreInEngine(
  engine: Engine,
  store: CopyStore,
  copy: Copy,
  prepared?: PreparedRestorer,
  seen: EngineView = onHost,
): Promise<void> {
  let restorer = await (prepared ?? prepareRestorer(engine, store, copy, false, seen));
  try {
    if ("problem" in restorer) throw new SvcError("engine", `the copy cannot be restored: ${restorer.problem}`);
    // nothing lost: a restorer that did not answer is made again just below, and its second run's error is thrown
    let ran = await goAndWait(engine, copy, restorer).catch(() => null);
    // a restorer made ahead that is gone or waited too long (a watch longer than it waits): made again
    if (ran === null || ran.exitCode === EXIT.notAsked) {
      void removeHelper(engine, restorer.id);
      restorer = await prepareRestorer(engine, store, copy, false, seen);
      if ("problem" in restorer) throw new SvcError("engine", `the copy cannot be restored: ${restorer.problem}`);
      ran = await goAndWait(engine, copy, restorer);
    }
    if (ran.exitCode === EXIT.elsewhere)
      throw new SvcError("engine", `the copy cannot be restored: ${unseenFolder(store.root, seen.inContainer)}`);
    if (ran.exitCode === EXIT.damaged) throw new SvcError("internal", ran.said);
    if (ran.exitCode !== 0)
      throw new SvcError("engine", `the helper's restore ended with exit code ${ran.exitCode}: ${ran.said}`);
  } finally {
    if (!("problem" in restorer)) void removeHelper(engine, restorer.id);
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

/** What a mount's archive must be: its size and its checksum, of whichever kind the copy has. */
function expectedOf(mount: CopiedMount): Expected {
  return mount.xxh64 !== undefined
    ? { bytes: mount.bytes, xxh64: mount.xxh64 }
    : { bytes: mount.bytes, sha256: mount.sha256 ?? "" };
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
