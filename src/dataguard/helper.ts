/**
 * The data guard's helper containers (docs/data-guard.md, "The helper"): their image and their
 * life. The image holds svc's own runtime, nothing pulled: it is imported once (POST
 * /images/create?fromSrc=-) from the runtime svc runs on (the compiled binary, or Bun), the C
 * library files it is linked against (read from /proc/self/maps, where the loader put them) and,
 * when svc runs from its sources, the copier's (copier.ts, tar.ts, checksum.ts): a compiled svc
 * runs its copier as `svc __data-guard-helper`.
 * A helper runs with no network, over the mounts it is given; one a crash left behind is removed
 * before the next is made.
 */
import { createHash, randomBytes } from "node:crypto";
import { closeSync, existsSync, openSync, readFileSync, readSync, realpathSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { labelName } from "../config/labels.ts";
import { toSvcError } from "../core/errors.ts";
import type { Engine, HelperSpec } from "../engine/port.ts";
import type { GuardedMount } from "./mounts.ts";
import { padding, ustarHeader } from "./tar.ts";

/** The helper image's repository; its tag names the runtime and scripts it holds. */
export const HELPER_REPOSITORY = "svc-data-guard-helper";
/** The label every helper container carries: one a crash left behind is removed before the next runs. */
export const HELPER_LABEL = labelName("data_guard.helper");
/** The copy a copier or restorer works on (container/copy id): a restore removes one a crash left running. */
const COPY_LABEL = labelName("data_guard.copy");
/** When a helper was created (ms since the epoch): another svc's helper not started yet is left only once it is old. */
const CREATED_LABEL = labelName("data_guard.created");
const HOME = "/svc-helper";
const RUNTIME = `${HOME}/bun`;
/** The copier's sources, shipped when svc runs from them (a compiled svc carries its copier inside). */
const COPIER_SOURCES = ["copier.ts", "tar.ts", "checksum.ts"];

interface RuntimeFile {
  /** where it goes in the helper image */
  path: string;
  /** where svc reads it */
  source: string;
  size: number;
}

export interface HelperImage {
  reference: string;
  /** its id, which helpers are created from (Podman files the image under `localhost/`) */
  id: string;
  /** how a helper runs the copier: its command before the copier's arguments, and its environment */
  copier: { cmd: string[]; env: string[] };
}

const images = new WeakMap<Engine, Promise<HelperImage | { problem: string }>>();

/** The helper's image on `engine`, imported on first use (once per engine and svc process: a failure too is remembered). */
export function helperImageOf(engine: Engine): Promise<HelperImage | { problem: string }> {
  let image = images.get(engine);
  if (!image) {
    image = helperImage(engine).catch((error) => ({ problem: toSvcError(error).message }));
    images.set(engine, image);
  }
  return image;
}

/** The helper image for this runtime, imported unless the engine has it already. */
async function helperImage(engine: Engine): Promise<HelperImage | { problem: string }> {
  if (!engine.importImage) return { problem: "this engine cannot import the helper's image" };
  const platform = await engine.platform();
  const arch = { x64: "x86_64", arm64: "aarch64" }[process.arch as string];
  const engineArch = platform.architecture.replace(/^amd64$/, "x86_64").replace(/^arm64$/, "aarch64");
  if (process.platform !== "linux" || platform.os !== "linux" || arch !== engineArch)
    return {
      problem: `svc runs on ${process.platform}/${process.arch}, the engine on ${platform.os}/${platform.architecture}: no helper runs svc's runtime there`,
    };
  const files = runtimeFiles();
  const fromSources = copierSources();
  const key = createHash("sha256")
    .update(JSON.stringify([...files, ...fromSources].map((f) => [f.path, f.size, statSync(f.source).mtimeMs])))
    .digest("hex")
    .slice(0, 16);
  const reference = `${HELPER_REPOSITORY}:${key}`;
  const libraryPath = [...new Set(files.filter((f) => f.path !== RUNTIME).map((f) => dirname(f.path)))].join(":");
  const base = [`LD_LIBRARY_PATH=${libraryPath}`, "BUN_RUNTIME_TRANSPILER_CACHE_PATH=0", "HOME=/tmp"];
  let imported = await engine.inspectImage(reference);
  if (!imported) {
    const archive = imageArchive([...files, ...fromSources]);
    await engine.importImage(archive.body, archive.bytes, reference);
    imported = await engine.inspectImage(reference);
    if (!imported) return { problem: `the engine does not find the helper's image ${reference} it imported` };
    await removeOtherHelperImages(engine, imported.Id);
  }
  const copier = fromSources.length
    ? { cmd: [RUNTIME, `${HOME}/copier.ts`], env: ["BUN_BE_BUN=1", ...base] }
    : { cmd: [RUNTIME, "__data-guard-helper"], env: base };
  return { reference, id: imported.Id, copier };
}

/** The copier's source files, when svc runs from its sources; none in a compiled svc (its files are inside it). */
function copierSources(): RuntimeFile[] {
  if (import.meta.dir.startsWith("/$bunfs") || !existsSync(join(import.meta.dir, "copier.ts"))) return [];
  return COPIER_SOURCES.map((name) => {
    const source = join(import.meta.dir, name);
    return { path: `${HOME}/${name}`, source, size: statSync(source).size };
  });
}

/** The runtime svc runs on, its loader and the shared libraries it has loaded. */
function runtimeFiles(): RuntimeFile[] {
  const file = (path: string, source: string): RuntimeFile => ({ path, source, size: statSync(source).size });
  const files = [file(RUNTIME, process.execPath)];
  const seen = new Set<string>();
  for (const line of readFileSync("/proc/self/maps", "utf8").split("\n")) {
    const path = line.split(/\s+/)[5] ?? "";
    if (!path.startsWith("/") || !/\.so(\.\d+)*$/.test(path) || seen.has(path) || !existsSync(path)) continue;
    seen.add(path);
    files.push(file(path, path));
  }
  const interpreter = elfInterpreter(process.execPath);
  if (interpreter && !seen.has(interpreter)) files.push(file(interpreter, realpathSync(interpreter)));
  return files;
}

/** The program interpreter (PT_INTERP) a 64-bit ELF executable names, or null. */
export function elfInterpreter(path: string): string | null {
  const head = new Uint8Array(64 * 1024);
  const fd = openSync(path, "r");
  let length: number;
  try {
    length = readSync(fd, head, 0, head.length, 0);
  } finally {
    closeSync(fd);
  }
  const view = new DataView(head.buffer, 0, length);
  if (length < 64 || view.getUint32(0) !== 0x7f454c46 || head[4] !== 2 || head[5] !== 1) return null;
  const phoff = Number(view.getBigUint64(32, true));
  const phentsize = view.getUint16(54, true);
  const phnum = view.getUint16(56, true);
  for (let i = 0; i < phnum; i++) {
    const at = phoff + i * phentsize;
    if (at + 56 > length) return null;
    if (view.getUint32(at, true) !== 3) continue;
    const offset = Number(view.getBigUint64(at + 8, true));
    const size = Number(view.getBigUint64(at + 32, true));
    if (offset + size > length) return null;
    return new TextDecoder().decode(head.subarray(offset, offset + size)).replace(/\0+$/, "");
  }
  return null;
}

/** The helper image's root file system as a tar, streamed (the runtime alone is over 100 MB): folders, the runtime and its libraries, the copier's sources. */
function imageArchive(files: RuntimeFile[]): { body: ReadableStream<Uint8Array>; bytes: number } {
  const parts: (Uint8Array | RuntimeFile)[] = [];
  const now = Math.floor(Date.now() / 1000);
  const folders = new Set<string>(["tmp"]);
  for (const f of files.map((f) => f.path))
    for (let dir = dirname(f); dir !== "/"; dir = dirname(dir)) folders.add(dir.slice(1));
  for (const folder of [...folders].sort())
    parts.push(
      ustarHeader({
        name: `${folder}/`,
        mode: folder === "tmp" ? 0o1777 : 0o755,
        size: 0,
        mtimeSeconds: now,
        type: "5",
      }),
    );
  for (const f of files) {
    parts.push(ustarHeader({ name: f.path.slice(1), mode: 0o755, size: f.size, mtimeSeconds: now, type: "0" }));
    parts.push(f, padding(f.size));
  }
  parts.push(new Uint8Array(1024));
  const bytes = parts.reduce((sum, part) => sum + (part instanceof Uint8Array ? part.length : part.size), 0);
  const chunks = archiveChunks(parts);
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      const next = chunks.next();
      if (next.done) controller.close();
      else controller.enqueue(next.value);
    },
    cancel: () => void chunks.return(undefined),
  });
  return { body, bytes };
}

/** The parts in order, each file read in 1 MiB chunks, exactly the size it had when its header was written. */
function* archiveChunks(parts: (Uint8Array | RuntimeFile)[]): Generator<Uint8Array> {
  for (const part of parts) {
    if (part instanceof Uint8Array) {
      yield part;
      continue;
    }
    const fd = openSync(part.source, "r");
    try {
      for (let at = 0; at < part.size; ) {
        const chunk = new Uint8Array(Math.min(1024 * 1024, part.size - at));
        const read = readSync(fd, chunk, 0, chunk.length, at);
        if (read === 0) throw new Error(`${part.source} is shorter than it was`);
        yield chunk.subarray(0, read);
        at += read;
      }
    } finally {
      closeSync(fd);
    }
  }
}

/**
 * Whether `tag` names a helper image, as the engine lists it: Docker as it was imported, Podman's
 * compatible list under `docker.io/library/` (`localhost/` where imported so).
 */
export function isHelperTag(tag: string): boolean {
  const name = tag.replace(/^(docker\.io\/library|localhost)\//, "");
  return name.startsWith(`${HELPER_REPOSITORY}:`) && !name.includes("/");
}

/** An earlier svc's helper images go once this one's (`keepId`) is in (best effort: one may be in use). */
async function removeOtherHelperImages(engine: Engine, keepId: string): Promise<void> {
  try {
    for (const image of await engine.listImages({ repositories: [HELPER_REPOSITORY] }))
      if (image.id !== keepId)
        // nothing lost: a helper image left is removed at the next import
        for (const tag of image.repoTags.filter(isHelperTag)) await engine.removeImage(tag).catch(() => {});
  } catch {
    // nothing lost: an image left is removed at the next import
  }
}

/** A guarded mount as a helper mounts it at `target`. */
export function guardMount(mount: GuardedMount, target: string, readOnly: boolean) {
  return mount.type === "volume"
    ? { Type: "volume", Source: mount.name, Target: target, ReadOnly: readOnly, VolumeOptions: { NoCopy: true } }
    : { Type: "bind", Source: mount.source, Target: target, ReadOnly: readOnly };
}

/** A mount of svc's own container, as the engine's inspect of it lists it. */
export interface OwnMount {
  Type?: string;
  Name?: string;
  Source?: string;
  Destination?: string;
}

/**
 * Where a helper finds a folder svc sees at `path`: a mount of the helper's at `target`, and the
 * folder's path inside the helper. Null where the engine cannot mount it. Whatever it says, the
 * helper first checks that it sees what svc wrote there (inengine.ts).
 */
export type FolderView = (path: string, target: string) => { mount: HelperMount; path: string } | null;

interface HelperMount {
  Type: "bind" | "volume";
  Source: string;
  Target: string;
}

/** svc on the engine's host: the engine sees the folder at the path svc does. */
export const onEngineHost: FolderView = (path, target) => ({
  mount: { Type: "bind", Source: path, Target: target },
  path: target,
});

/**
 * svc in a container of the engine: the folder is in one of its container's mounts (a volume or a
 * bind, the deepest that holds it), which the helper mounts in turn. None for a folder in the
 * container's own files or on a tmpfs: those the engine cannot mount elsewhere.
 */
export function throughOwnMounts(mounts: readonly OwnMount[]): FolderView {
  return (path, target) => {
    const within = (m: OwnMount) => m.Destination && (path === m.Destination || path.startsWith(`${m.Destination}/`));
    const holder = mounts.filter(within).sort((a, b) => b.Destination!.length - a.Destination!.length)[0];
    const rest = holder ? path.slice(holder.Destination!.length) : "";
    const at = (Source: string | undefined, Type: HelperMount["Type"]) =>
      Source ? { mount: { Type, Source, Target: target }, path: `${target}${rest}` } : null;
    if (holder?.Type === "volume") return at(holder.Name, "volume");
    if (holder?.Type === "bind") return at(holder.Source, "bind");
    return null;
  };
}

/** This process's helpers carry this value of HELPER_LABEL. */
const INSTANCE = randomBytes(6).toString("hex");
/** The helpers this process created and has not removed yet, with when (a plan abandoned leaves one). */
const pending = new Map<string, number>();
/** A helper of this process older than this was left by an update that never copied. */
const ABANDONED_MS = 15 * 60_000;

/** Creates (does not start) a helper, once the helpers left behind are removed. */
export async function createHelper(
  engine: Engine,
  image: HelperImage,
  spec: Pick<HelperSpec, "cmd" | "env" | "mounts"> & { kind: string; copy?: string },
): Promise<string> {
  await removeLeftHelpers(engine, spec.copy);
  const id = await engine.createHelper({
    name: `svc-data-guard-${spec.kind}-${randomBytes(6).toString("hex")}`,
    image: image.id,
    cmd: spec.cmd,
    env: spec.env,
    user: "0:0",
    labels: {
      [HELPER_LABEL]: INSTANCE,
      [CREATED_LABEL]: String(Date.now()),
      [labelName("enable")]: "false",
      ...(spec.copy ? { [COPY_LABEL]: spec.copy } : {}),
    },
    mounts: spec.mounts,
    autoRemove: false,
  });
  pending.set(id, Date.now());
  return id;
}

/** Starts a helper (unless `started`) and waits for its end: its exit code, and what it said when that is not 0. */
export async function runHelper(
  engine: Engine,
  id: string,
  timeoutMs: number,
  started = false,
): Promise<{ exitCode: number; said: string }> {
  if (!started) await engine.startContainer(id);
  const exitCode = await engine.waitForExit(id, timeoutMs);
  // nothing lost: the exit code is the answer; the logs only illustrate it
  const said = exitCode === 0 ? "" : await engine.containerLogs(id, 5).catch(() => "");
  return { exitCode, said: said.trim().slice(0, 500) };
}

export async function removeHelper(engine: Engine, id: string): Promise<void> {
  pending.delete(id);
  // nothing lost: a helper left is found by its label and removed by removeLeftHelpers (below) at the next copy or restore
  await engine.removeContainer(id, { force: true }).catch(() => {});
}

/**
 * Helpers left behind: by a crash of svc (another instance's value of the label: removed once
 * ended, or when it was never started and is older than an update takes; one that runs may be
 * another svc's copy at work), or by an update of this process that never copied (not pending, or
 * pending too long). They hold the guarded volumes. One that works on `copy` goes even while it
 * runs: a restore of a copy that svc, killed, left running must not write beside the one that
 * starts now.
 */
async function removeLeftHelpers(engine: Engine, copy?: string): Promise<void> {
  for (const container of await engine.listContainers()) {
    const owner = container.labels[HELPER_LABEL];
    if (owner === undefined) continue;
    const since = pending.get(container.id);
    const left =
      (copy !== undefined && container.labels[COPY_LABEL] === copy && !pending.has(container.id)) ||
      (owner === INSTANCE
        ? since === undefined || Date.now() - since > ABANDONED_MS
        : container.state === "exited" ||
          container.state === "dead" ||
          (container.state === "created" && olderThan(container.labels[CREATED_LABEL], ABANDONED_MS)));
    if (left) await removeHelper(engine, container.id);
  }
}

/** Whether a helper created at `at` (its label; absent on an older svc's) is older than `ms`. */
function olderThan(at: string | undefined, ms: number): boolean {
  const created = Number(at);
  return !Number.isFinite(created) || Date.now() - created > ms;
}
