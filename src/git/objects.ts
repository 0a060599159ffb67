/**
 * Git's object store, read and written without a git binary (svc's scratch image has none):
 * loose objects (`objects/ab/cdef...`, zlib over "type size\0body") and pack files with their
 * version 2 index, deltas included (docs/compose.md, "Git"). svc writes loose objects only, as
 * `git commit` does; reading is bounded (an object's size, a delta chain's depth).
 */
import {
  closeSync,
  existsSync,
  fstatSync,
  linkSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { dirname, isAbsolute, join, relative, sep } from "node:path";
import { deflateSync, inflateSync } from "node:zlib";
import { SvcError } from "../core/errors.ts";
import { openRegularFile, readRegularFile } from "../core/files.ts";

export type ObjectType = "commit" | "tree" | "blob" | "tag";

export interface GitObject {
  type: ObjectType;
  body: Uint8Array;
}

/** The largest object svc reads (a compose file is far smaller; a huge blob elsewhere is never read). */
export const MAX_OBJECT_BYTES = 64 * 1024 * 1024;
/** A pack's index: 28 bytes and more per object; a repository of millions of objects stays under this. */
const MAX_INDEX_BYTES = 1024 * 1024 * 1024;
const MAX_DELTA_DEPTH = 64;

export function gitError(message: string): SvcError {
  return new SvcError("config", message);
}

export function hashObject(type: ObjectType, body: Uint8Array): string {
  return new Bun.CryptoHasher("sha1").update(header(type, body)).update(body).digest("hex");
}

function header(type: ObjectType, body: Uint8Array): Uint8Array {
  return new TextEncoder().encode(`${type} ${body.byteLength}\0`);
}

export function isOid(text: string): boolean {
  return /^[0-9a-f]{40}$/.test(text);
}

export const hex = (bytes: Uint8Array): string => Buffer.from(bytes).toString("hex");

/** The object folders to read from: the repository's own, then its alternates (one level). */
export class ObjectStore {
  private packList: Pack[] | undefined;
  private dirList: string[] | undefined;

  constructor(readonly dir: string) {}

  private dirs(): string[] {
    return (this.dirList ??= [this.dir, ...alternates(this.dir)]);
  }

  private allPacks(): Pack[] {
    if (this.packList) return this.packList;
    this.packList = this.dirs().flatMap((dir) => {
      const packDir = join(dir, "pack");
      if (!existsSync(packDir)) return [];
      return readdirSync(packDir)
        .filter((name) => /^pack-[0-9a-f]{40,64}\.idx$/.test(name))
        .map((name) => new Pack(join(packDir, name.replace(/\.idx$/, ""))));
    });
    return this.packList;
  }

  has(oid: string): boolean {
    if (this.dirs().some((dir) => existsSync(looseFile(dir, oid)))) return true;
    return this.allPacks().some((pack) => pack.offsetOf(oid) !== undefined);
  }

  /** The object, or undefined when the store lacks it. */
  read(oid: string): GitObject | undefined {
    for (const dir of this.dirs()) {
      const file = looseFile(dir, oid);
      if (existsSync(file)) return readLoose(file, oid);
    }
    for (const pack of this.allPacks()) {
      const offset = pack.offsetOf(oid);
      if (offset !== undefined) return pack.readAt(offset, (base) => this.read(base), 0);
    }
    return undefined;
  }

  /** The object, which must be of `type`. */
  expect(oid: string, type: ObjectType): Uint8Array {
    const object = this.read(oid);
    if (!object) throw gitError(`the Git object ${oid} is missing from ${this.dir}`);
    if (object.type !== type) throw gitError(`the Git object ${oid} is a ${object.type}, not a ${type}`);
    return object.body;
  }

  /** Writes a loose object (nothing when the store has it already); answers its id. */
  write(type: ObjectType, body: Uint8Array): string {
    const oid = hashObject(type, body);
    if (this.has(oid)) return oid;
    const folder = join(this.dir, oid.slice(0, 2));
    refuseLinks(dirname(this.dir), folder);
    mkdirSync(folder, { recursive: true });
    const temporary = join(folder, `tmp_obj_${crypto.randomUUID()}`);
    writeFileSync(temporary, deflateSync(Buffer.concat([header(type, body), body])), { mode: 0o444, flag: "wx" });
    try {
      // a link fails when the object appeared meanwhile: the same bytes, by its name
      linkSync(temporary, looseFile(this.dir, oid));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    } finally {
      rmSync(temporary, { force: true });
    }
    return oid;
  }
}

function looseFile(dir: string, oid: string): string {
  return join(dir, oid.slice(0, 2), oid.slice(2));
}

function alternates(dir: string): string[] {
  const file = join(dir, "info", "alternates");
  if (!existsSync(file)) return [];
  return Buffer.from(readUserFile(file, 1024 * 1024))
    .toString("utf8")
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line !== "" && !line.startsWith("#"))
    .map((line) => (line.startsWith("/") ? line : join(dir, line)));
}

function readLoose(file: string, oid: string): GitObject {
  let raw: Buffer;
  try {
    raw = inflateSync(readUserFile(file, MAX_OBJECT_BYTES + 64), { maxOutputLength: MAX_OBJECT_BYTES + 64 });
  } catch (error) {
    throw gitError(`the Git object ${oid} cannot be read (${(error as Error).message})`);
  }
  const nul = raw.indexOf(0);
  const match = /^(commit|tree|blob|tag) (\d+)$/.exec(raw.subarray(0, nul).toString("latin1"));
  if (nul < 0 || !match || Number(match[2]) !== raw.length - nul - 1)
    throw gitError(`the Git object ${oid} is malformed`);
  return { type: match[1] as ObjectType, body: raw.subarray(nul + 1) };
}

const PACK_TYPES: Record<number, ObjectType> = { 1: "commit", 2: "tree", 3: "blob", 4: "tag" };

/** One pack file and its version 2 index (gitformat-pack). */
class Pack {
  private index: Buffer | undefined;
  private count = 0;

  constructor(private readonly base: string) {}

  private idx(): Buffer {
    if (this.index) return this.index;
    const idx = Buffer.from(readUserFile(`${this.base}.idx`, MAX_INDEX_BYTES));
    if (idx.readUInt32BE(0) !== 0xff744f63 || idx.readUInt32BE(4) !== 2)
      throw gitError(`${this.base}.idx is not a version 2 pack index`);
    this.count = idx.readUInt32BE(8 + 255 * 4);
    this.index = idx;
    return idx;
  }

  offsetOf(oid: string): number | undefined {
    const idx = this.idx();
    const wanted = Buffer.from(oid, "hex");
    const first = wanted[0]!;
    let low = first === 0 ? 0 : idx.readUInt32BE(8 + (first - 1) * 4);
    let high = idx.readUInt32BE(8 + first * 4);
    const names = 8 + 256 * 4;
    while (low < high) {
      const middle = (low + high) >>> 1;
      const order = idx.compare(wanted, 0, 20, names + middle * 20, names + middle * 20 + 20);
      if (order === 0) return this.offsetAt(middle);
      if (order < 0) low = middle + 1;
      else high = middle;
    }
    return undefined;
  }

  private offsetAt(position: number): number {
    const idx = this.idx();
    const offsets = 8 + 256 * 4 + this.count * 24;
    const small = idx.readUInt32BE(offsets + position * 4);
    if ((small & 0x80000000) === 0) return small;
    const large = offsets + this.count * 4 + (small & 0x7fffffff) * 8;
    return Number(idx.readBigUInt64BE(large));
  }

  readAt(offset: number, byId: (oid: string) => GitObject | undefined, depth: number): GitObject {
    if (depth > MAX_DELTA_DEPTH) throw gitError(`a delta chain in ${this.base}.pack is deeper than ${MAX_DELTA_DEPTH}`);
    const fd = openRegularFile(`${this.base}.pack`);
    try {
      const head = Buffer.alloc(32);
      readSync(fd, head, 0, 32, offset);
      let byte = head[0]!;
      const typeNumber = (byte >> 4) & 7;
      let size = byte & 15;
      let at = 1;
      for (let shift = 4; byte & 0x80; shift += 7) {
        byte = head[at++]!;
        size += (byte & 0x7f) * 2 ** shift;
      }
      if (size > MAX_OBJECT_BYTES) throw gitError(`an object in ${this.base}.pack is larger than svc reads`);
      let base: GitObject | undefined;
      if (typeNumber === 6) {
        byte = head[at++]!;
        let back = byte & 0x7f;
        while (byte & 0x80) {
          byte = head[at++]!;
          back = (back + 1) * 128 + (byte & 0x7f);
        }
        base = this.readAt(offset - back, byId, depth + 1);
      } else if (typeNumber === 7) {
        const baseOid = hex(head.subarray(at, at + 20));
        at += 20;
        base = byId(baseOid);
        if (!base) throw gitError(`the base ${baseOid} of a delta in ${this.base}.pack is missing`);
      } else if (!PACK_TYPES[typeNumber])
        throw gitError(`${this.base}.pack holds an object of unknown type ${typeNumber}`);
      const data = inflateAt(fd, offset + at, size);
      return base
        ? { type: base.type, body: applyDelta(base.body, data) }
        : { type: PACK_TYPES[typeNumber]!, body: data };
    } finally {
      closeSync(fd);
    }
  }
}

/** The zlib stream at `position`, inflated to `size` bytes: read in growing windows (the stream's length is not stored). */
function inflateAt(fd: number, position: number, size: number): Buffer {
  const fileSize = fstatSync(fd).size;
  for (let window = Math.max(256, size + 64); ; window *= 4) {
    const length = Math.min(window, fileSize - position);
    const chunk = Buffer.alloc(length);
    readSync(fd, chunk, 0, length, position);
    try {
      const out = inflateSync(chunk, { maxOutputLength: size + 1 });
      if (out.length !== size) throw gitError("a packed object's size does not match its header");
      return out;
    } catch (error) {
      if (length < window || !/unexpected end/i.test((error as Error).message))
        throw gitError(`a packed object cannot be read (${(error as Error).message})`);
    }
  }
}

function readSize(delta: Uint8Array, start: number): { value: number; at: number } {
  let value = 0;
  let at = start;
  for (let shift = 0; ; shift += 7) {
    const byte = delta[at++]!;
    value += (byte & 0x7f) * 2 ** shift;
    if (!(byte & 0x80)) return { value, at };
    if (at >= delta.length) throw gitError("a delta is malformed");
  }
}

/** Git's delta format: the base's and the result's sizes, then copies from the base and inserts. */
export function applyDelta(base: Uint8Array, delta: Uint8Array): Uint8Array {
  const source = readSize(delta, 0);
  const target = readSize(delta, source.at);
  if (source.value !== base.length) throw gitError("a delta does not fit its base");
  if (target.value > MAX_OBJECT_BYTES) throw gitError("a delta's result is larger than svc reads");
  const out = new Uint8Array(target.value);
  let written = 0;
  let at = target.at;
  while (at < delta.length) {
    const op = delta[at++]!;
    if (op & 0x80) {
      let offset = 0;
      let size = 0;
      for (let bit = 0; bit < 4; bit++) if (op & (1 << bit)) offset += delta[at++]! * 2 ** (8 * bit);
      for (let bit = 0; bit < 3; bit++) if (op & (0x10 << bit)) size += delta[at++]! * 2 ** (8 * bit);
      if (size === 0) size = 0x10000;
      if (offset + size > base.length || written + size > out.length) throw gitError("a delta copies outside its base");
      out.set(base.subarray(offset, offset + size), written);
      written += size;
    } else if (op > 0) {
      if (written + op > out.length || at + op > delta.length) throw gitError("a delta inserts past its end");
      out.set(delta.subarray(at, at + op), written);
      written += op;
      at += op;
    } else throw gitError("a delta holds the reserved instruction 0");
  }
  if (written !== out.length) throw gitError("a delta's result is shorter than it says");
  return out;
}

// ---- trees and commits ----

export interface TreeEntry {
  mode: string;
  name: string;
  oid: string;
}

export function parseTree(body: Uint8Array): TreeEntry[] {
  const entries: TreeEntry[] = [];
  const buffer = Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  let at = 0;
  while (at < buffer.length) {
    const space = buffer.indexOf(0x20, at);
    const nul = buffer.indexOf(0, space);
    if (space < 0 || nul < 0 || nul + 21 > buffer.length) throw gitError("a Git tree is malformed");
    entries.push({
      mode: buffer.toString("latin1", at, space),
      name: buffer.toString("utf8", space + 1, nul),
      oid: hex(buffer.subarray(nul + 1, nul + 21)),
    });
    at = nul + 21;
  }
  return entries;
}

/** Entries in the order given (svc only replaces an entry's id, so the order Git wrote holds). */
export function serializeTree(entries: readonly TreeEntry[]): Uint8Array {
  return Buffer.concat(
    entries.flatMap((entry) => [Buffer.from(`${entry.mode} ${entry.name}\0`, "utf8"), Buffer.from(entry.oid, "hex")]),
  );
}

export interface CommitInfo {
  tree: string;
  parents: string[];
}

export function parseCommit(body: Uint8Array): CommitInfo {
  const text = Buffer.from(body).toString("utf8");
  const headers = text.slice(0, text.indexOf("\n\n") < 0 ? text.length : text.indexOf("\n\n")).split("\n");
  const tree = headers.find((line) => line.startsWith("tree "))?.slice(5);
  if (!tree || !isOid(tree)) throw gitError("a Git commit names no tree");
  return { tree, parents: headers.filter((line) => line.startsWith("parent ")).map((line) => line.slice(7)) };
}

/**
 * Refuses a link at `path` or at any folder between `base` and it (those that exist): svc follows
 * no link inside a git folder, where one would send its writes (a ref, a reflog line, a lock)
 * anywhere the link points.
 */
export function refuseLinks(base: string, path: string): void {
  const below = relative(base, path);
  if (below.startsWith("..") || isAbsolute(below)) throw gitError(`${path} lies outside ${base}`);
  let at = base;
  for (const part of below.split(sep).filter(Boolean)) {
    at = join(at, part);
    let link: boolean;
    try {
      link = lstatSync(at).isSymbolicLink();
    } catch {
      return; // the rest does not exist yet: svc makes it, as folders and files
    }
    if (link) throw gitError(`${at} is a link: svc follows no link inside a Git folder`);
  }
}

/**
 * A file of a repository, read as a user's file is (core/files.ts: a regular one only, never
 * waited on), capped; a refusal is the Git room's error.
 */
export function readUserFile(file: string, cap: number): Uint8Array {
  try {
    return readRegularFile(file, cap);
  } catch (error) {
    throw error instanceof SvcError ? gitError(error.message) : error;
  }
}
