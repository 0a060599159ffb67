/**
 * The extended attributes of a stopped container's guarded mounts, read through the engine
 * (docs/data-guard.md, "Extended attributes"). The engine's archive (GET) carries only
 * `security.capability`, while its extraction (PUT) applies every `SCHILY.xattr.*` record an
 * archive carries: so a helper container reads the attributes while the archive streams, and a
 * mount's archive that has some is rewritten once with them added (copy.ts; tar.ts,
 * `XattrMerger`); the restore stays the engine's own.
 *
 * The helper runs svc's own runtime, nothing pulled: an image is imported once (POST
 * /images/create?fromSrc=-) from the runtime svc runs on (the compiled binary, or Bun), the C
 * library files it is linked against (read from /proc/self/maps, where the loader put them) and
 * the small reader script below, run by that runtime as Bun (BUN_BE_BUN=1). It mounts the
 * guarded mounts read-only, with no network, and writes what it found into its own file system,
 * which svc then reads through the archive endpoint. It is created while the old container still
 * runs (`prepareXattrHelper`), so that the engine's create is out of the downtime. Where that cannot be done (another
 * architecture than the engine's, an engine that cannot import, the helper failing), the copy is
 * made without the attributes and says so (the manifest's `xattrs_lost`).
 */
import { createHash, randomBytes } from "node:crypto";
import { closeSync, existsSync, openSync, readFileSync, readSync, realpathSync, statSync } from "node:fs";
import { dirname } from "node:path";
import { z } from "zod";
import { toSvcError } from "../core/errors.ts";
import { timerDelay } from "../core/timers.ts";
import type { Engine } from "../engine/port.ts";
import { archiveParent, type GuardedMount } from "./mounts.ts";
import { firstFileOf, padding, ustarHeader, type XattrsByPath } from "./tar.ts";

/** The helper image's repository; its tag names the runtime and script it holds. */
export const HELPER_REPOSITORY = "svc-data-guard-helper";
/** The label every helper container carries: one a crash left behind is removed before the next runs. */
export const HELPER_LABEL = "svc.data-guard-helper";
const HOME = "/svc-helper";
const RUNTIME = `${HOME}/bun`;
const SCRIPT = `${HOME}/xattrs.js`;
const OUT = `${HOME}/xattrs.json`;
/** The most the attributes of one copy may take (values, base64 in the answer). */
const MAX_ATTRIBUTE_BYTES = 64 * 1024 * 1024;
/** The longest a helper may take to read every attribute (it walks every file of the mounts). */
const HELPER_TIMEOUT_MS = 300_000;
const POLL_MS = 20;

/**
 * What runs in the helper: `bun xattrs.js OUT ROOT...` writes, for each ROOT, the attributes of
 * every path under it (relative, "" the root itself) as base64, to OUT. llistxattr/lgetxattr
 * through libc (no follow: a symlink's own); `security.capability` is left to the engine's
 * archive, `security.selinux` to the host's policy; `trusted.*` is invisible without
 * CAP_SYS_ADMIN. Plain JavaScript on Bun's built-ins alone: it runs outside svc's bundle.
 */
export const READER_SCRIPT = String.raw`
const { dlopen, FFIType, ptr } = require("bun:ffi");
const { readdirSync, statSync, writeFileSync } = require("node:fs");
const [out, ...roots] = process.argv.slice(2);
const MAX = ${MAX_ATTRIBUTE_BYTES};
const libc = dlopen("libc.so.6", {
  llistxattr: { args: [FFIType.ptr, FFIType.ptr, FFIType.u64], returns: FFIType.i64 },
  lgetxattr: { args: [FFIType.ptr, FFIType.ptr, FFIType.ptr, FFIType.u64], returns: FFIType.i64 },
}).symbols;
const list = new Uint8Array(65536);
const value = new Uint8Array(65536);
const SKIP = /^(security\.capability|security\.selinux|trusted\..*)$/;
let total = 0;
function attributes(path) {
  const p = Buffer.from(path + "\0");
  const n = Number(libc.llistxattr(ptr(p), ptr(list), list.length));
  if (n <= 0) return null;
  const found = {};
  let any = false;
  for (const name of Buffer.from(list.subarray(0, n)).toString("utf8").split("\0")) {
    if (!name || SKIP.test(name)) continue;
    const m = Number(libc.lgetxattr(ptr(p), ptr(Buffer.from(name + "\0")), ptr(value), value.length));
    if (m < 0) continue;
    total += m;
    if (total > MAX) { console.error("the extended attributes take more than " + MAX + " bytes"); process.exit(3); }
    found[name] = Buffer.from(value.subarray(0, m)).toString("base64");
    any = true;
  }
  return any ? found : null;
}
function walk(path, rel, into) {
  const found = attributes(path);
  if (found) into[rel] = found;
  for (const entry of readdirSync(path, { withFileTypes: true })) {
    const child = path + "/" + entry.name;
    const childRel = rel ? rel + "/" + entry.name : entry.name;
    if (entry.isDirectory()) walk(child, childRel, into);
    else {
      const f = attributes(child);
      if (f) into[childRel] = f;
    }
  }
}
const result = roots.map((root) => {
  const into = {};
  if (statSync(root).isDirectory()) walk(root, "", into);
  return into;
});
writeFileSync(out, JSON.stringify(result));
`;

const answerSchema = z.array(z.record(z.string(), z.record(z.string().max(255), z.string())));

export type XattrReading = { maps: XattrsByPath[] } | { problem: string };
/**
 * Reads the attributes of `mounts` (of a stopped container); one map per mount, by archive entry
 * name. `prepared`: the helper created for them before the stop (`prepareXattrHelper`).
 */
export type XattrReader = (engine: Engine, mounts: GuardedMount[], prepared?: PreparedHelper) => Promise<XattrReading>;

/** A helper created (not started) for a copy's mounts while the container still ran, or why there is none. */
export type PreparedHelper = Promise<{ id: string } | { problem: string }>;

interface RuntimeFile {
  /** where it goes in the helper image */
  path: string;
  /** where svc reads it */
  source: string;
  size: number;
}

interface HelperImage {
  reference: string;
  env: string[];
}

const images = new WeakMap<Engine, Promise<HelperImage | { problem: string }>>();

/** The helper's image on `engine`, imported on first use (once per engine and svc process: a failure too is remembered). */
function helperImageOf(engine: Engine): Promise<HelperImage | { problem: string }> {
  let image = images.get(engine);
  if (!image) {
    image = helperImage(engine).catch((error) => ({ problem: toSvcError(error).message }));
    images.set(engine, image);
  }
  return image;
}

/** This process's helpers carry this value of HELPER_LABEL. */
const INSTANCE = randomBytes(6).toString("hex");
/** The helpers this process created and has not removed yet, with when (a plan abandoned leaves one). */
const pending = new Map<string, number>();
/** A helper of this process older than this was left by an update that never copied. */
const ABANDONED_MS = 15 * 60_000;

/**
 * The helper of a copy of `mounts`, created while the container still runs (after the image,
 * imported on first use): the engine's create is then out of the downtime. The copy starts it
 * (`readXattrs`); a plan given up removes it (`discardXattrHelper`).
 */
export function prepareXattrHelper(engine: Engine, mounts: GuardedMount[]): PreparedHelper {
  return (async () => {
    const image = await helperImageOf(engine);
    if ("problem" in image) return image;
    try {
      return { id: await createHelper(engine, image, mounts) };
    } catch (error) {
      return { problem: `the helper that reads them could not be created: ${toSvcError(error).message}` };
    }
  })();
}

/** Removes a prepared helper that will not run. */
export async function discardXattrHelper(engine: Engine, prepared: PreparedHelper | undefined): Promise<void> {
  const helper = await prepared;
  if (helper && "id" in helper) await removeHelper(engine, helper.id);
}

/** The helper reading the attributes of `mounts` through `engine` (the one prepared, else one made now). */
export const readXattrs: XattrReader = async (engine, mounts, prepared) => {
  if (mounts.length === 0) {
    await discardXattrHelper(engine, prepared);
    return { maps: [] };
  }
  const helper = await (prepared ?? prepareXattrHelper(engine, mounts));
  if ("problem" in helper) return helper;
  try {
    const answer = await runHelper(engine, helper.id, mounts.length);
    return {
      maps: answer.map((paths, index) => {
        const { base } = archiveParent(mounts[index]!.destination);
        const map: XattrsByPath = new Map();
        for (const [rel, attributes] of Object.entries(paths))
          map.set(
            rel ? `${base}/${rel}` : base,
            Object.entries(attributes).map(([name, value]) => [name, Buffer.from(value, "base64")]),
          );
        return map;
      }),
    };
  } catch (error) {
    return { problem: `the helper that reads them failed: ${toSvcError(error).message}` };
  } finally {
    // not waited for: the copy is downtime, and a helper left is removed before the next is made
    void removeHelper(engine, helper.id);
  }
};

/** The helper image for this runtime, imported unless the engine has it already. */
async function helperImage(engine: Engine): Promise<HelperImage | { problem: string }> {
  if (!engine.importImage) return { problem: "this engine cannot import the helper's image" };
  const info = await engine.info();
  const arch = { x64: "x86_64", arm64: "aarch64" }[process.arch as string];
  const engineArch = info.architecture.replace(/^amd64$/, "x86_64").replace(/^arm64$/, "aarch64");
  if (process.platform !== "linux" || info.os !== "linux" || arch !== engineArch)
    return {
      problem: `svc runs on ${process.platform}/${process.arch}, the engine on ${info.os}/${info.architecture}: no helper runs svc's runtime there`,
    };
  const files = runtimeFiles();
  const key = createHash("sha256")
    .update(READER_SCRIPT)
    .update(JSON.stringify(files.map((f) => [f.path, f.size, statSync(f.source).mtimeMs])))
    .digest("hex")
    .slice(0, 16);
  const reference = `${HELPER_REPOSITORY}:${key}`;
  const libraryPath = [...new Set(files.filter((f) => f.path !== RUNTIME).map((f) => dirname(f.path)))].join(":");
  const env = ["BUN_BE_BUN=1", `LD_LIBRARY_PATH=${libraryPath}`, "BUN_RUNTIME_TRANSPILER_CACHE_PATH=0", "HOME=/tmp"];
  if (!(await engine.inspectImage(reference))) {
    const archive = imageArchive(files);
    await engine.importImage(archive.body, archive.bytes, reference);
    await removeOtherHelperImages(engine, reference);
  }
  return { reference, env };
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

/** The helper image's root file system as a tar, streamed (the runtime alone is over 100 MB): folders, the runtime and its libraries, the script. */
function imageArchive(files: RuntimeFile[]): { body: ReadableStream<Uint8Array>; bytes: number } {
  const parts: (Uint8Array | RuntimeFile)[] = [];
  const now = Math.floor(Date.now() / 1000);
  const folders = new Set<string>(["tmp"]);
  for (const f of [...files.map((f) => f.path), SCRIPT])
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
  const script = new TextEncoder().encode(READER_SCRIPT);
  parts.push(ustarHeader({ name: SCRIPT.slice(1), mode: 0o644, size: script.length, mtimeSeconds: now, type: "0" }));
  parts.push(script, padding(script.length));
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

/** An earlier svc's helper images go once this one's is in (best effort: one may be in use). */
async function removeOtherHelperImages(engine: Engine, keep: string): Promise<void> {
  try {
    for (const image of await engine.listImages({ repositories: [HELPER_REPOSITORY] }))
      for (const tag of image.repoTags)
        if (tag.startsWith(`${HELPER_REPOSITORY}:`) && tag !== keep) await engine.removeImage(tag).catch(() => {});
  } catch {
    // nothing lost: an image left is removed at the next import
  }
}

/** Creates (does not start) a helper over `mounts`, once the helpers left behind are removed. */
async function createHelper(engine: Engine, image: HelperImage, mounts: GuardedMount[]): Promise<string> {
  await removeLeftHelpers(engine);
  const id = await engine.createHelper({
    name: `svc-data-guard-xattrs-${randomBytes(6).toString("hex")}`,
    image: image.reference,
    cmd: [RUNTIME, SCRIPT, OUT, ...mounts.map((_, index) => `/guard/${index}`)],
    env: image.env,
    user: "0:0",
    labels: { [HELPER_LABEL]: INSTANCE, "svc.enable": "false" },
    mounts: mounts.map((mount, index) =>
      mount.type === "volume"
        ? {
            Type: "volume",
            Source: mount.name,
            Target: `/guard/${index}`,
            ReadOnly: true,
            VolumeOptions: { NoCopy: true },
          }
        : { Type: "bind", Source: mount.source, Target: `/guard/${index}`, ReadOnly: true },
    ),
    autoRemove: false,
  });
  pending.set(id, Date.now());
  return id;
}

/** Starts a prepared helper and returns its answer (one map per mount). */
async function runHelper(engine: Engine, id: string, mounts: number): Promise<z.infer<typeof answerSchema>> {
  await engine.startContainer(id);
  const exitCode = await waitForExit(engine, id);
  if (exitCode !== 0) {
    const said = await engine.containerLogs(id, 5).catch(() => "");
    throw new Error(`exit code ${exitCode}${said.trim() ? `: ${said.trim().slice(0, 500)}` : ""}`);
  }
  const archive = await readAll(await engine.readArchive(id, OUT), MAX_ATTRIBUTE_BYTES * 2);
  const answer = firstFileOf(archive);
  if (!answer) throw new Error("it wrote no answer");
  const parsed = answerSchema.safeParse(JSON.parse(new TextDecoder().decode(answer)));
  if (!parsed.success || parsed.data.length !== mounts) throw new Error("its answer is not one svc reads");
  return parsed.data;
}

async function removeHelper(engine: Engine, id: string): Promise<void> {
  pending.delete(id);
  await engine.removeContainer(id, { force: true }).catch(() => {});
}

async function waitForExit(engine: Engine, id: string): Promise<number> {
  const deadline = Date.now() + HELPER_TIMEOUT_MS;
  for (;;) {
    const state = (await engine.inspectContainer(id)).State;
    if (state.Status === "exited" || state.Status === "dead") return state.ExitCode;
    if (Date.now() > deadline) throw new Error(`it did not end within ${HELPER_TIMEOUT_MS / 1000} s`);
    await Bun.sleep(timerDelay(POLL_MS));
  }
}

/**
 * Helpers left behind: by a crash of svc (another instance's value of the label: removed unless
 * it runs), or by an update of this process that never copied (not pending, or pending too long).
 * They hold the guarded volumes, read-only.
 */
async function removeLeftHelpers(engine: Engine): Promise<void> {
  for (const container of await engine.listContainers()) {
    const owner = container.labels[HELPER_LABEL];
    if (owner === undefined) continue;
    const since = pending.get(container.id);
    const left =
      owner === INSTANCE
        ? since === undefined || Date.now() - since > ABANDONED_MS
        : container.state === "exited" || container.state === "dead" || container.state === "created";
    if (left) await removeHelper(engine, container.id);
  }
}

async function readAll(stream: ReadableStream<Uint8Array>, cap: number): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  let bytes = 0;
  for await (const chunk of stream) {
    bytes += chunk.length;
    if (bytes > cap) throw new Error(`its answer is larger than ${cap} bytes`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}
