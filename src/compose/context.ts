/**
 * A built service's build made without the compose CLI (docs/compose.md, "Built services"): svc
 * packs the build context itself and the engine's build endpoint builds it with its classic
 * builder. The context is read as `docker build` sends it: its `.dockerignore` (or the
 * Dockerfile's own `<Dockerfile>.dockerignore`) applied with moby's pattern rules
 * (@balena/dockerignore), owners set to root, a symlink sent as a link and never followed (the
 * engine resolves it inside the context), only regular files opened, and opened without
 * blocking; the whole is capped. What only BuildKit builds is refused before anything is read.
 */

import {
  closeSync,
  existsSync,
  fstatSync,
  lstatSync,
  readdirSync,
  readlinkSync,
  readSync,
  type Stats,
  statSync,
} from "node:fs";
import { isAbsolute, join, relative, sep } from "node:path";
import type { Readable } from "node:stream";
import dockerignore from "@balena/dockerignore";
import tar from "tar-stream";
import { SvcError, toSvcError } from "../core/errors.ts";
import { openRegularFile, randomHex } from "../core/files.ts";
import type { BuildSpec } from "./build.ts";
import { buildKitOnly, MAX_DOCKERFILE_BYTES } from "./dockerfile.ts";
import { readText } from "./text.ts";

/** A context holding more than this (after its .dockerignore) is not sent: build it with the compose CLI. */
export const MAX_CONTEXT_BYTES = 512 * 1024 * 1024;
/** Nor one of more files, folders and links than this. */
export const MAX_CONTEXT_ENTRIES = 100_000;
const MAX_IGNORE_BYTES = 256 * 1024;
const CHUNK_BYTES = 1024 * 1024;

/** The `build` keys svc's own build passes to the engine. */
const PASSED_KEYS = new Set([
  "context",
  "dockerfile",
  "dockerfile_inline",
  "args",
  "target",
  "labels",
  "platforms",
  "network",
]);
/** The `build` keys only BuildKit has. */
const BUILDKIT_KEYS = new Set(["additional_contexts", "secrets", "ssh", "cache_to", "entitlements", "privileged"]);

const BUILDKIT_ONLY = "only BuildKit builds that, and without the compose CLI svc reaches the engine's classic builder";

/** What the engine is asked to build, once the context is packed. */
export interface PackedContext {
  /** the tar stream of the context (with the Dockerfile in it) */
  stream: Readable;
  /** the Dockerfile's path inside the tar */
  dockerfile: string;
  /** files, folders and links packed; bytes of the files */
  entries: number;
  bytes: number;
}

/** The Dockerfile's text: dockerfile_inline's, or the file's read with a cap. */
function dockerfileText(spec: BuildSpec): string {
  if (spec.inline !== null) return spec.inline;
  if (spec.dockerfile === null) throw new SvcError("bad_request", `its context is remote (${spec.context})`);
  return readText(spec.dockerfile, MAX_DOCKERFILE_BYTES);
}

/**
 * Why svc cannot build `spec` through the engine's build endpoint (a BuildKit feature, named; a
 * build key it does not pass; a remote context), or null when it can.
 */
export function engineBuildProblem(spec: BuildSpec): string | null {
  if (spec.inline === null && spec.dockerfile === null)
    return `its context is remote (${spec.context}): only the compose CLI fetches it`;
  for (const key of spec.keys) {
    if (BUILDKIT_KEYS.has(key)) return `build.${key}: ${BUILDKIT_ONLY}`;
    if (!PASSED_KEYS.has(key)) return `build.${key}: svc's own build (without the compose CLI) does not pass it`;
  }
  if (spec.keys.has("platforms") && spec.platform === null)
    return `build.platforms names several platforms: ${BUILDKIT_ONLY}`;
  let text: string;
  try {
    text = dockerfileText(spec);
  } catch (error) {
    return toSvcError(error).message;
  }
  const feature = buildKitOnly(text);
  return feature ? `${spec.dockerfile ?? "dockerfile_inline"} ${feature}: ${BUILDKIT_ONLY}` : null;
}

interface Entry {
  name: string;
  path: string;
  kind: "file" | "directory" | "symlink";
  size: number;
  mode: number;
  mtime: Date;
  linkname?: string;
}

/**
 * The context of `spec` as a tar stream, the Dockerfile in it (a Dockerfile outside the context,
 * or dockerfile_inline, under a name of its own at its root, as `docker build` does); throws
 * with why when the context cannot be read or is larger than the caps.
 */
export function packContext(spec: BuildSpec): PackedContext {
  const root = spec.context;
  if (!isAbsolute(root) || !existsSync(root) || !statSync(root).isDirectory())
    throw new SvcError(
      "bad_request",
      `svc cannot see the build context ${root} (mount the project folder at the same path)`,
    );
  const text = dockerfileText(spec);
  const inside = spec.dockerfile === null ? null : relative(root, spec.dockerfile);
  const dockerfile =
    inside && !inside.startsWith("..") && !isAbsolute(inside)
      ? inside.split(sep).join("/")
      : `.svc-dockerfile.${randomHex(8)}`;
  const ignored = ignoreOf(spec);
  const entries = walk(root, ignored, dockerfile);
  const bytes = entries.reduce((sum, e) => sum + e.size, 0) + Buffer.byteLength(text);
  const pack = tar.pack();
  void fill(pack, entries, dockerfile, text).catch((error) => pack.destroy(error));
  return { stream: pack, dockerfile, entries: entries.length + 1, bytes };
}

/** The ignore rules: `<Dockerfile>.dockerignore` beside the Dockerfile, else the context's `.dockerignore`. */
function ignoreOf(spec: BuildSpec): { ignores(path: string): boolean; negates: boolean } {
  const own = spec.dockerfile === null ? null : `${spec.dockerfile}.dockerignore`;
  const file = own && existsSync(own) ? own : join(spec.context, ".dockerignore");
  const text = existsSync(file) ? readText(file, MAX_IGNORE_BYTES) : "";
  const rules = dockerignore({ ignorecase: false }).add(text);
  return { ignores: (path) => rules.ignores(path), negates: /^\s*!/m.test(text) };
}

/**
 * Every file, folder and link of the context not ignored (the Dockerfile and `.dockerignore`
 * always sent, as `docker build` sends them), without following a link; an ignored folder is
 * not entered unless a `!` rule may bring something in it back.
 */
function walk(root: string, ignored: ReturnType<typeof ignoreOf>, dockerfile: string): Entry[] {
  const out: Entry[] = [];
  let bytes = 0;
  const folders = [""];
  while (folders.length > 0) {
    const folder = folders.pop()!;
    for (const name of readdirSync(join(root, folder)).sort()) {
      const rel = folder === "" ? name : `${folder}/${name}`;
      const path = join(root, rel);
      const stat = lstatSync(path);
      const skip = rel !== ".dockerignore" && ignored.ignores(rel);
      if (stat.isDirectory()) {
        if (!skip) out.push(entryOf(rel, path, "directory", stat));
        if (!skip || ignored.negates) folders.push(rel);
      } else if (skip || rel === dockerfile) continue;
      else if (stat.isFile()) {
        bytes += stat.size;
        out.push(entryOf(rel, path, "file", stat));
      } else if (stat.isSymbolicLink())
        out.push({ ...entryOf(rel, path, "symlink", stat), linkname: readlinkSync(path) });
      // a socket, a FIFO or a device in a context is no file a build copies: left out
      if (bytes > MAX_CONTEXT_BYTES)
        throw new SvcError(
          "bad_request",
          `the build context ${root} holds more than ${MAX_CONTEXT_BYTES / 1024 / 1024} MiB`,
        );
      if (out.length > MAX_CONTEXT_ENTRIES)
        throw new SvcError("bad_request", `the build context ${root} holds more than ${MAX_CONTEXT_ENTRIES} entries`);
    }
  }
  return out;
}

function entryOf(name: string, path: string, kind: Entry["kind"], stat: Stats): Entry {
  return { name, path, kind, size: kind === "file" ? stat.size : 0, mode: stat.mode & 0o7777, mtime: stat.mtime };
}

/** Writes the entries and the Dockerfile into the pack, one after another, each file read through its descriptor. */
async function fill(pack: tar.Pack, entries: readonly Entry[], dockerfile: string, text: string): Promise<void> {
  const owner = { uid: 0, gid: 0 };
  const body = Buffer.from(text);
  await add(pack, { name: dockerfile, size: body.length, mode: 0o644, mtime: new Date(0), ...owner }, body);
  for (const e of entries) {
    if (e.kind === "directory")
      await add(pack, { name: e.name, type: "directory", mode: e.mode, mtime: e.mtime, ...owner });
    else if (e.kind === "symlink")
      await add(pack, { name: e.name, type: "symlink", linkname: e.linkname, mode: e.mode, mtime: e.mtime, ...owner });
    else await addFile(pack, e);
  }
  pack.finalize();
}

function add(pack: tar.Pack, header: tar.Headers, body?: Buffer): Promise<void> {
  return new Promise((resolve, reject) => {
    const done = (error?: Error | null) => (error ? reject(error) : resolve());
    if (body) pack.entry(header, body, done);
    else pack.entry(header, done);
  });
}

/** A file's bytes as it was when walked: one that changed size meanwhile stops the build. */
async function addFile(pack: tar.Pack, e: Entry): Promise<void> {
  const fd = openRegularFile(e.path, e.name);
  try {
    if (fstatSync(fd).size !== e.size)
      throw new SvcError("bad_request", `${e.name} changed while the context was packed`);
    await new Promise<void>((resolve, reject) => {
      const sink = pack.entry({ name: e.name, size: e.size, mode: e.mode, mtime: e.mtime, uid: 0, gid: 0 }, (error) =>
        error ? reject(error) : resolve(),
      );
      let left = e.size;
      const buffer = Buffer.alloc(Math.min(CHUNK_BYTES, Math.max(1, e.size)));
      const pump = () => {
        try {
          while (left > 0) {
            const n = readSync(fd, buffer, 0, Math.min(buffer.length, left), null);
            if (n === 0) throw new SvcError("bad_request", `${e.name} changed while the context was packed`);
            left -= n;
            if (!sink.write(Buffer.from(buffer.subarray(0, n)))) {
              sink.once("drain", pump);
              return;
            }
          }
          sink.end();
        } catch (error) {
          reject(error);
        }
      };
      pump();
    });
  } finally {
    closeSync(fd);
  }
}
