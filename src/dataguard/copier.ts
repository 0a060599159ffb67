/**
 * The data guard's copier (docs/data-guard.md, "In the engine"): the program the helper
 * container runs over the guarded mounts and the copies' folder. `copy` writes each guarded mount as
 * one tar into the copy's folder, as the engine's archive names its entries, with owners, modes,
 * times (to the nanosecond), symbolic and hard links, devices, FIFOs and extended attributes
 * (`SCHILY.xattr.*`), checksummed as it is written (checksum.ts). `restore` checks every archive of
 * a copy against its checksum, then empties each mount and extracts its archive into it; it reads
 * the engine's own archives too (copies an earlier svc made through the engine's archive endpoint).
 *
 * It runs on svc's runtime inside the helper: svc's compiled binary (`svc __data-guard-helper ...`,
 * main.ts), or, when svc runs from its sources, Bun on this file beside tar.ts and checksum.ts. So
 * it imports nothing but those two and the runtime's built-ins.
 */
import { dlopen, FFIType, ptr } from "bun:ffi";
import {
  type BigIntStats,
  chmodSync,
  closeSync,
  constants,
  fchmodSync,
  fchownSync,
  lchownSync,
  linkSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  readSync,
  renameSync,
  rmSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { BlockChecksum, CHECKSUM_BLOCK } from "./checksum.ts";
import { fitsUstar, padding, parseHeader, paxRecord, paxRecords, type TarHeader, ustarHeader } from "./tar.ts";

const BLOCK = 512;
const SLASH = Buffer.from("/");
/** Exit codes svc reads (inengine.ts). */
export const EXIT = { over: 3, elsewhere: 4, damaged: 5, notAsked: 6 } as const;
/** The file a restore writes when it is done (a copy's is its result.json). */
export const DONE = ".done";
/** The file a copier writes once it sees the copy's folder, before the old container stops (inengine.ts). */
export const READY = ".ready";
/** How often a helper started ahead looks for svc's go. */
const GO_POLL_MS = 5;
/** The attributes a copy leaves alone: the host's security labels, and what only the host's admin may read. */
const SKIP_XATTR = /^(security\.selinux|trusted\..*)$/;
/** The most a PAX or GNU long-name header of an archive may hold. */
const MAX_META = 1024 * 1024;

class OverLimit extends Error {
  constructor(readonly bytes: number) {
    super(`over the limit: ${bytes} bytes`);
  }
}

class Damaged extends Error {}

// ---- extended attributes and devices, through the C library ----

let libc: ReturnType<typeof openLibc> | null | undefined;
function openLibc() {
  return dlopen("libc.so.6", {
    llistxattr: { args: [FFIType.ptr, FFIType.ptr, FFIType.u64], returns: FFIType.i64 },
    lgetxattr: { args: [FFIType.ptr, FFIType.ptr, FFIType.ptr, FFIType.u64], returns: FFIType.i64 },
    lsetxattr: { args: [FFIType.ptr, FFIType.ptr, FFIType.ptr, FFIType.u64, FFIType.i32], returns: FFIType.i32 },
    mknod: { args: [FFIType.ptr, FFIType.u32, FFIType.u64], returns: FFIType.i32 },
    utimensat: { args: [FFIType.i32, FFIType.ptr, FFIType.ptr, FFIType.i32], returns: FFIType.i32 },
    copy_file_range: {
      args: [FFIType.i32, FFIType.ptr, FFIType.i32, FFIType.ptr, FFIType.u64, FFIType.u32],
      returns: FFIType.i64,
    },
  }).symbols;
}
function c() {
  if (libc === undefined) libc = openLibc();
  return libc!;
}
const cString = (bytes: Uint8Array | string) => Buffer.concat([Buffer.from(bytes), Buffer.from([0])]);
const listBuffer = new Uint8Array(64 * 1024);
const valueBuffer = new Uint8Array(64 * 1024);

/** A path's extended attributes (its own, not a link's target's), [name, value] pairs. */
function readXattrs(path: Buffer): [string, Uint8Array][] {
  const p = cString(path);
  const n = Number(c().llistxattr(ptr(p), ptr(listBuffer), listBuffer.length));
  if (n <= 0) return [];
  const found: [string, Uint8Array][] = [];
  for (const name of Buffer.from(listBuffer.subarray(0, n)).toString("utf8").split("\0")) {
    if (!name || SKIP_XATTR.test(name)) continue;
    const m = Number(c().lgetxattr(ptr(p), ptr(cString(name)), ptr(valueBuffer), valueBuffer.length));
    if (m >= 0) found.push([name, valueBuffer.slice(0, m)]);
  }
  return found;
}

function writeXattrs(path: Buffer, xattrs: [string, Uint8Array][]): void {
  const p = cString(path);
  for (const [name, value] of xattrs) {
    const v = value.length ? value : new Uint8Array(1);
    if (c().lsetxattr(ptr(p), ptr(cString(name)), ptr(v), value.length, 0) !== 0)
      throw new Error(`${path}: the extended attribute ${name} could not be set`);
  }
}

function makeNode(path: Buffer, mode: number, major: number, minor: number): void {
  // glibc's makedev
  const dev =
    ((BigInt(major) & 0xfffn) << 8n) |
    ((BigInt(major) & ~0xfffn) << 32n) |
    (BigInt(minor) & 0xffn) |
    ((BigInt(minor) & ~0xffn) << 12n);
  if (c().mknod(ptr(cString(path)), mode, dev) !== 0) throw new Error(`${path}: mknod failed`);
}

/** Sets a path's access and modification times to `ns` (a link's own), to the nanosecond. */
function setTimes(path: Buffer, ns: bigint): void {
  const spec = new BigInt64Array([ns / 1_000_000_000n, ns % 1_000_000_000n, ns / 1_000_000_000n, ns % 1_000_000_000n]);
  const AT_FDCWD = -100;
  const AT_SYMLINK_NOFOLLOW = 0x100;
  if (c().utimensat(AT_FDCWD, ptr(cString(path)), ptr(spec), AT_SYMLINK_NOFOLLOW) !== 0)
    throw new Error(`${path}: its times could not be set`);
}

// ---- writing an archive ----

/** Writes an archive in whole checksum blocks: each flush is one block of the checksum. */
class ArchiveWriter {
  private readonly buffer = new Uint8Array(CHECKSUM_BLOCK);
  private filled = 0;
  bytes = 0;
  readonly checksum = new BlockChecksum();

  constructor(
    private readonly fd: number,
    private readonly limit: number,
  ) {}

  put(bytes: Uint8Array): void {
    for (let at = 0; at < bytes.length; ) {
      const taken = Math.min(this.buffer.length - this.filled, bytes.length - at);
      this.buffer.set(bytes.subarray(at, at + taken), this.filled);
      this.filled += taken;
      at += taken;
      if (this.filled === this.buffer.length) this.flush();
    }
  }

  /** `size` bytes of the open file `fd`, read straight into the buffer; a file that shrank is padded with zeros, as tar does. */
  putFile(fd: number, size: number): void {
    for (let left = size; left > 0; ) {
      const wanted = Math.min(this.buffer.length - this.filled, left);
      let read = readSync(fd, this.buffer, this.filled, wanted, null);
      if (read === 0) {
        this.buffer.fill(0, this.filled, this.filled + wanted);
        read = wanted;
      }
      this.filled += read;
      left -= read;
      if (this.filled === this.buffer.length) this.flush();
    }
    this.put(padding(size));
  }

  /**
   * The two blocks of zeros that end an archive. Not synced here: svc writes the copy back to the
   * disk while the new version starts, and a restore waits for that (guard.ts).
   */
  end(): void {
    this.put(new Uint8Array(2 * BLOCK));
    this.flush();
  }

  private flush(): void {
    if (this.filled === 0) return;
    this.bytes += this.filled;
    if (this.bytes > this.limit) throw new OverLimit(this.bytes);
    const chunk = this.buffer.subarray(0, this.filled);
    this.checksum.update(chunk);
    for (let at = 0; at < chunk.length; ) at += writeSync(this.fd, chunk, at, chunk.length - at);
    this.filled = 0;
  }
}

/** A file type's tar type flag; undefined for a socket. */
function typeOf(mode: number): string | undefined {
  switch (mode & constants.S_IFMT) {
    case constants.S_IFREG:
      return "0";
    case constants.S_IFDIR:
      return "5";
    case constants.S_IFLNK:
      return "2";
    case constants.S_IFCHR:
      return "3";
    case constants.S_IFBLK:
      return "4";
    case constants.S_IFIFO:
      return "6";
    default:
      return undefined;
  }
}

/** The tar of the folder `root`, its entries named `base/...` as the engine's archive names them. */
export function archiveFolder(
  root: string,
  base: string,
  out: number,
  limit: number,
): { bytes: number; checksum: string } {
  const writer = new ArchiveWriter(out, limit);
  const links = new Map<string, Buffer>();
  const visit = (path: Buffer, name: Buffer) => {
    const stat = lstatSync(path, { bigint: true });
    const type = typeOf(Number(stat.mode));
    if (type === undefined) return; // a socket: tar leaves them out too
    if (type === "0" && stat.nlink > 1n) {
      const key = `${stat.dev}:${stat.ino}`;
      const first = links.get(key);
      if (first) return writeEntry(writer, path, name, stat, "1", first);
      links.set(key, name);
    }
    if (type === "5") {
      writeEntry(writer, path, Buffer.concat([name, SLASH]), stat, "5");
      const children = (readdirSync(path, { encoding: "buffer" }) as Buffer[]).sort(Buffer.compare);
      for (const child of children) visit(Buffer.concat([path, SLASH, child]), Buffer.concat([name, SLASH, child]));
      return;
    }
    writeEntry(writer, path, name, stat, type, type === "2" ? readlinkSync(path, { encoding: "buffer" }) : undefined);
  };
  visit(Buffer.from(root), Buffer.from(base));
  writer.end();
  return { bytes: writer.bytes, checksum: writer.checksum.digest() };
}

function writeEntry(
  writer: ArchiveWriter,
  path: Buffer,
  name: Buffer,
  stat: BigIntStats,
  type: string,
  linkname?: Buffer,
): void {
  const size = type === "0" ? Number(stat.size) : 0;
  const uid = Number(stat.uid);
  const gid = Number(stat.gid);
  const records: Uint8Array[] = [];
  if (!fitsUstar(name)) records.push(paxRecord("path", name));
  if (linkname && linkname.length > 100) records.push(paxRecord("linkpath", linkname));
  if (size > 0o77777777777) records.push(paxRecord("size", Buffer.from(String(size))));
  if (uid > 0o7777777) records.push(paxRecord("uid", Buffer.from(String(uid))));
  if (gid > 0o7777777) records.push(paxRecord("gid", Buffer.from(String(gid))));
  const seconds = stat.mtimeNs / 1_000_000_000n;
  const nanos = stat.mtimeNs % 1_000_000_000n;
  if (nanos !== 0n) records.push(paxRecord("mtime", Buffer.from(`${seconds}.${String(nanos).padStart(9, "0")}`)));
  for (const [key, value] of readXattrs(path)) records.push(paxRecord(`SCHILY.xattr.${key}`, value));
  if (records.length) {
    const data = Buffer.concat(records);
    writer.put(ustarHeader({ name: "PaxHeaders/entry", mode: 0o644, size: data.length, mtimeSeconds: 0, type: "x" }));
    writer.put(data);
    writer.put(padding(data.length));
  }
  writer.put(
    ustarHeader({
      name: fitsUstar(name) ? name : name.subarray(name.lastIndexOf(0x2f, name.length - 2) + 1).subarray(0, 100),
      mode: Number(stat.mode & 0o7777n),
      size: size > 0o77777777777 ? 0 : size,
      mtimeSeconds: Number(seconds),
      type,
      uid: uid > 0o7777777 ? 0 : uid,
      gid: gid > 0o7777777 ? 0 : gid,
      ...(linkname ? { linkname: linkname.length > 100 ? linkname.subarray(0, 100) : linkname } : {}),
      ...(type === "3" || type === "4"
        ? {
            devmajor: Number((stat.rdev >> 8n) & 0xfffn),
            devminor: Number((stat.rdev & 0xffn) | ((stat.rdev >> 12n) & 0xfff00n)),
          }
        : {}),
    }),
  );
  if (type !== "0" || size === 0) return;
  const fd = openSync(path, "r");
  try {
    writer.putFile(fd, size);
  } finally {
    closeSync(fd);
  }
}

// ---- checking and extracting an archive ----

export type Expected = { bytes: number } & ({ xxh64: string } | { sha256: string });

/** Whether the archive at `path` is `expected`'s size and checksum; throws Damaged naming what differs. */
export function checkArchive(path: string, expected: Expected, what: string): void {
  let fd: number;
  try {
    fd = openSync(path, "r");
  } catch {
    throw new Damaged(`the copy of ${what} (${path}) is missing`);
  }
  const sha256 = "sha256" in expected ? new Bun.CryptoHasher("sha256") : null;
  const blocks = new BlockChecksum();
  let bytes = 0;
  try {
    const buffer = new Uint8Array(4 * CHECKSUM_BLOCK);
    for (;;) {
      const read = readSync(fd, buffer, 0, buffer.length, null);
      if (read === 0) break;
      bytes += read;
      (sha256 ?? blocks).update(buffer.subarray(0, read));
    }
  } finally {
    closeSync(fd);
  }
  const found = sha256 ? sha256.digest("hex") : blocks.digest();
  const wanted = "sha256" in expected ? expected.sha256 : expected.xxh64;
  if (bytes !== expected.bytes || found !== wanted)
    throw new Damaged(
      `the copy of ${what} does not match its checksum (${bytes} bytes, ${found.slice(0, 12)}; the manifest says ${expected.bytes} bytes, ${wanted.slice(0, 12)}): not restored`,
    );
}

/** Whether the archive at `path`, checked before, still has its size; throws Damaged when not. */
function checkSize(path: string, bytes: number, what: string): void {
  let size: number;
  try {
    size = lstatSync(path).size;
  } catch {
    throw new Damaged(`the copy of ${what} (${path}) is missing`);
  }
  if (size !== bytes)
    throw new Damaged(`the copy of ${what} changed after it was checked (${size} bytes): not restored`);
}

/** Reads an archive from a file in large reads: headers, meta data, and file data copied on. */
class ArchiveReader {
  private readonly buffer = new Uint8Array(4 * CHECKSUM_BLOCK);
  private start = 0;
  private end = 0;
  /** the file's offset of the next read */
  private position = 0;

  constructor(private readonly fd: number) {}

  private fill(): boolean {
    if (this.start < this.end) return true;
    this.start = 0;
    this.end = readSync(this.fd, this.buffer, 0, this.buffer.length, this.position);
    this.position += this.end;
    return this.end > 0;
  }

  /** Exactly `size` bytes (small: a header, a PAX record set). */
  take(size: number): Uint8Array {
    const out = new Uint8Array(size);
    for (let at = 0; at < size; ) {
      if (!this.fill()) throw new Error("the archive ends inside an entry");
      const n = Math.min(size - at, this.end - this.start);
      out.set(this.buffer.subarray(this.start, this.start + n), at);
      this.start += n;
      at += n;
    }
    return out;
  }

  /**
   * `size` bytes written to `fd` (or skipped when null), then the padding skipped. What the buffer
   * does not hold yet is copied by the kernel, file to file, never read into svc (copy_file_range).
   */
  pipe(size: number, fd: number | null): void {
    let left = size;
    while (left > 0) {
      if (this.start === this.end && fd !== null && left >= DIRECT_COPY_MIN) {
        const copied = copyRange(this.fd, this.position, fd, left);
        if (copied > 0) {
          this.position += copied;
          left -= copied;
          continue;
        }
      }
      if (!this.fill()) throw new Error("the archive ends inside a file");
      const n = Math.min(left, this.end - this.start);
      if (fd !== null)
        for (let at = this.start; at < this.start + n; ) at += writeSync(fd, this.buffer, at, this.start + n - at);
      this.start += n;
      left -= n;
    }
    this.skip(padding(size).length);
  }

  private skip(bytes: number): void {
    for (let left = bytes; left > 0; ) {
      if (!this.fill()) throw new Error("the archive ends inside an entry's padding");
      const n = Math.min(left, this.end - this.start);
      this.start += n;
      left -= n;
    }
  }
}

/** Below this a file's data goes through the reader's buffer. */
const DIRECT_COPY_MIN = 256 * 1024;
const offset = new BigInt64Array(1);

/** Up to `length` bytes from `from` at `at` to where `to` stands; 0 where the kernel cannot (then read and written). */
function copyRange(from: number, at: number, to: number, length: number): number {
  offset[0] = BigInt(at);
  const copied = Number(c().copy_file_range(from, ptr(offset), to, null, Math.min(length, 1 << 30), 0));
  return Math.max(copied, 0);
}

interface Entry extends TarHeader {
  mtimeNs: bigint;
  xattrs: [string, Uint8Array][];
}

/** The next entry, its PAX and GNU long-name headers applied; null at the archive's end. */
function nextEntry(reader: ArchiveReader): Entry | null {
  let pax: [string, Uint8Array][] = [];
  let longName: Uint8Array | null = null;
  let longLink: Uint8Array | null = null;
  for (;;) {
    const header = parseHeader(reader.take(BLOCK));
    if (!header) return null;
    if (header.type === "x" || header.type === "g" || header.type === "L" || header.type === "K") {
      if (header.size > MAX_META) throw new Error("an archive's meta header is larger than svc reads");
      const data = reader.take(header.size);
      reader.take(padding(header.size).length);
      if (header.type === "x") pax = paxRecords(data);
      if (header.type === "L") longName = trimNul(data);
      if (header.type === "K") longLink = trimNul(data);
      continue;
    }
    const entry: Entry = { ...header, mtimeNs: BigInt(header.mtimeSeconds) * 1_000_000_000n, xattrs: [] };
    if (longName) entry.name = longName;
    if (longLink) entry.linkname = longLink;
    for (const [key, value] of pax) {
      const text = () => Buffer.from(value).toString("utf8");
      if (key === "path") entry.name = value;
      else if (key === "linkpath") entry.linkname = value;
      else if (key === "size") entry.size = Number(text());
      else if (key === "uid") entry.uid = Number(text());
      else if (key === "gid") entry.gid = Number(text());
      else if (key === "mtime") entry.mtimeNs = nanoseconds(text());
      else if (key.startsWith("SCHILY.xattr.")) entry.xattrs.push([key.slice("SCHILY.xattr.".length), value]);
    }
    if (!Number.isSafeInteger(entry.size) || entry.size < 0) throw new Error("an entry's size is not one svc reads");
    return entry;
  }
}

function trimNul(bytes: Uint8Array): Uint8Array {
  const end = bytes.indexOf(0);
  return end < 0 ? bytes : bytes.subarray(0, end);
}

/** A PAX time, seconds with an optional fraction, in nanoseconds. */
function nanoseconds(text: string): bigint {
  const match = /^(-?\d{1,12})(?:\.(\d{1,9})\d*)?$/.exec(text);
  if (!match) return 0n;
  return BigInt(match[1]!) * 1_000_000_000n + BigInt((match[2] ?? "").padEnd(9, "0"));
}

/** The part of an entry's name under `base` ("" the mount itself); throws on a name that leaves it. */
function relativeName(name: Uint8Array, base: Buffer): Buffer | null {
  let bytes = Buffer.from(name);
  while (bytes.length && bytes[bytes.length - 1] === 0x2f) bytes = bytes.subarray(0, bytes.length - 1);
  if (bytes.subarray(0, 2).equals(Buffer.from("./"))) bytes = bytes.subarray(2);
  if (bytes.equals(base)) return Buffer.alloc(0);
  if (bytes.length <= base.length + 1 || !bytes.subarray(0, base.length + 1).equals(Buffer.concat([base, SLASH])))
    return null;
  const rel = bytes.subarray(base.length + 1);
  const parts = rel.toString("latin1").split("/");
  if (parts.some((part) => part === "" || part === "." || part === ".."))
    throw new Error(`the archive names ${rel.toString("utf8")}, which leaves its folder`);
  return rel;
}

/** Removes everything inside the folder `target`, not the folder (a mount point). */
export function emptyFolder(target: string): void {
  const root = Buffer.from(target);
  for (const child of readdirSync(target, { encoding: "buffer" }) as Buffer[]) {
    const path = Buffer.concat([root, SLASH, child]);
    // one call a file: a folder refuses it (EISDIR, or EPERM where POSIX allows it), and only
    // then is removed with what it holds
    try {
      unlinkSync(path);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== "EISDIR" && code !== "EPERM") throw error;
      rmSync(path, { recursive: true, force: true });
    }
  }
}

/** Extracts the archive at `path` (entries `base/...`) into the folder `target`, which is empty. */
export function extractArchive(path: string, base: string, target: string): void {
  const fd = openSync(path, "r");
  const reader = new ArchiveReader(fd);
  const root = Buffer.from(target);
  const baseBytes = Buffer.from(base);
  const links = new Set<string>();
  const folders: { path: Buffer; entry: Entry }[] = [];
  try {
    for (let entry = nextEntry(reader); entry; entry = nextEntry(reader)) {
      const rel = relativeName(entry.name, baseBytes);
      if (rel === null) {
        reader.pipe(entry.size, null);
        continue;
      }
      const at = rel.length ? Buffer.concat([root, SLASH, rel]) : root;
      // nothing is written through a link the archive made: it could point out of the mount
      for (let slash = rel.indexOf(0x2f); slash > 0; slash = rel.indexOf(0x2f, slash + 1))
        if (links.has(rel.subarray(0, slash).toString("latin1")))
          throw new Error(`the archive writes ${rel.toString("utf8")} through a link`);
      if (entry.type === "5") {
        if (rel.length) mkdirSync(at, { mode: 0o700 });
        folders.push({ path: at, entry });
        reader.pipe(entry.size, null);
        continue;
      }
      if (!rel.length) throw new Error(`the archive's ${base} is not a folder`);
      placeEntry(reader, at, entry, root, baseBytes);
      if (entry.type === "2") links.add(rel.toString("latin1"));
    }
    // a folder's times last: what was made inside it changed them
    for (const { path: folder, entry } of folders.reverse()) {
      lchownSync(folder, entry.uid, entry.gid);
      chmodSync(folder, entry.mode);
      writeXattrs(folder, entry.xattrs);
      setTimes(folder, entry.mtimeNs);
    }
  } finally {
    closeSync(fd);
  }
}

function placeEntry(reader: ArchiveReader, at: Buffer, entry: Entry, root: Buffer, base: Buffer): void {
  switch (entry.type) {
    case "0": {
      const fd = openSync(at, "wx", 0o600);
      try {
        reader.pipe(entry.size, fd);
        fchownSync(fd, entry.uid, entry.gid);
        fchmodSync(fd, entry.mode);
        writeXattrs(at, entry.xattrs);
      } finally {
        closeSync(fd);
      }
      setTimes(at, entry.mtimeNs);
      return;
    }
    case "1": {
      const target = relativeName(entry.linkname, base);
      if (!target?.length) throw new Error(`the hard link ${at} points out of its folder`);
      linkSync(Buffer.concat([root, SLASH, target]), at);
      reader.pipe(entry.size, null);
      return;
    }
    case "2":
      symlinkSync(Buffer.from(entry.linkname), at);
      lchownSync(at, entry.uid, entry.gid);
      writeXattrs(at, entry.xattrs);
      setTimes(at, entry.mtimeNs);
      reader.pipe(entry.size, null);
      return;
    case "3":
    case "4":
    case "6": {
      const kind = { "3": constants.S_IFCHR, "4": constants.S_IFBLK, "6": constants.S_IFIFO }[entry.type];
      makeNode(at, kind | (entry.mode & 0o777), entry.devmajor, entry.devminor);
      lchownSync(at, entry.uid, entry.gid);
      chmodSync(at, entry.mode);
      writeXattrs(at, entry.xattrs);
      setTimes(at, entry.mtimeNs);
      reader.pipe(entry.size, null);
      return;
    }
    default:
      reader.pipe(entry.size, null); // a type svc does not make (sparse, volume label): left out
  }
}

// ---- the helper's commands ----

/** A helper started ahead of its work (before the old container stops, while the new one is watched) waits for this file. */
interface Go {
  file: string;
  waitMs: number;
}

/**
 * Waits until svc writes the go file into `dir`, holding this helper's token (one a helper before
 * it left says nothing to this one); false when it did not within `go.waitMs`.
 */
function waitForGo(dir: string, go: Go | undefined, token: string): boolean {
  if (!go) return true;
  const deadline = Date.now() + go.waitMs;
  while (!seesProbe(dir, { file: go.file, token })) {
    if (Date.now() > deadline) return false;
    Bun.sleepSync(GO_POLL_MS);
  }
  return true;
}

const copySpec = (text: string) =>
  JSON.parse(text) as {
    go?: Go;
    out: string;
    limit: number;
    owner: [number, number] | null;
    probe: { file: string; token: string };
    mounts: { root: string; base: string }[];
  };
const restoreSpec = (text: string) =>
  JSON.parse(text) as {
    go?: Go;
    from: string;
    probe: { file: string; token: string };
    mounts: ({ file: string; root: string; base: string; what: string } & Expected)[];
  };

/** Whether the folder svc named is the one mounted here: svc wrote the token into it. */
function seesProbe(dir: string, probe: { file: string; token: string }): boolean {
  try {
    return readFileSync(`${dir}/${probe.file}`, "utf8") === probe.token;
  } catch {
    return false;
  }
}

/**
 * svc's own user and group (ids on the engine's host) as this helper names them: a rootless
 * engine's helper runs in a user namespace (its root is the engine's user), where the host's ids
 * are others (/proc/self/uid_map, gid_map: "inside outside count" lines). Null where they are not
 * mapped: what the helper writes is then left as it is.
 */
export function ownerInside(owner: [number, number] | null, read = readFileSync): [number, number] | null {
  if (!owner) return null;
  const inside = (file: string, id: number): number | null => {
    let map: string;
    try {
      map = read(file, "utf8") as string;
    } catch {
      return id; // no user namespaces here: the host's ids
    }
    for (const line of map.split("\n")) {
      const [from, to, count] = line.trim().split(/\s+/).map(Number);
      if (from === undefined || to === undefined || count === undefined || Number.isNaN(count)) continue;
      if (id >= to && id < to + count) return from + (id - to);
    }
    return null;
  };
  const uid = inside("/proc/self/uid_map", owner[0]);
  const gid = inside("/proc/self/gid_map", owner[1]);
  return uid === null || gid === null ? null : [uid, gid];
}

/** `copy SPEC`: the archives and result.json in spec.out. */
function copyCommand(given: ReturnType<typeof copySpec>): number {
  const spec = { ...given, owner: ownerInside(given.owner) };
  if (!seesProbe(spec.out, spec.probe)) return EXIT.elsewhere;
  // svc decides before the stop that the copy can be made: it waits for this
  writeFileSync(`${spec.out}/${READY}`, spec.probe.token);
  if (!waitForGo(spec.out, spec.go, spec.probe.token)) return EXIT.notAsked;
  const results: ({ file: string; bytes: number; xxh64: string } | null)[] = [];
  let total = 0;
  for (const [index, mount] of spec.mounts.entries()) {
    if (!lstatSync(mount.root).isDirectory()) {
      results.push(null);
      continue;
    }
    const file = `mount-${index}.tar`;
    const fd = openSync(`${spec.out}/${file}`, "wx", 0o600);
    try {
      const written = archiveFolder(mount.root, mount.base, fd, spec.limit - total);
      total += written.bytes;
      results.push({ file, bytes: written.bytes, xxh64: written.checksum });
      if (spec.owner) fchownSync(fd, spec.owner[0], spec.owner[1]);
    } finally {
      closeSync(fd);
    }
  }
  const answer = `${spec.out}/result.json.part`;
  const fd = openSync(answer, "w", 0o600);
  try {
    writeSync(fd, JSON.stringify({ mounts: results }));
    if (spec.owner) fchownSync(fd, spec.owner[0], spec.owner[1]);
  } finally {
    closeSync(fd);
  }
  renameSync(answer, `${spec.out}/result.json`);
  return 0;
}

/**
 * `restore SPEC`: every archive checked first, then each mount emptied and extracted; `.done` (the
 * token) says so. A restorer started ahead checks while it waits for its go, out of the downtime
 * (svc writes nothing into a copy once it is complete); at the go it makes sure each archive is
 * still there, whole in size, before it touches a mount.
 */
function restoreCommand(spec: ReturnType<typeof restoreSpec>): number {
  if (!seesProbe(spec.from, spec.probe)) return EXIT.elsewhere;
  for (const mount of spec.mounts) checkArchive(`${spec.from}/${mount.file}`, mount, mount.what);
  if (!waitForGo(spec.from, spec.go, spec.probe.token)) return EXIT.notAsked;
  if (spec.go) for (const mount of spec.mounts) checkSize(`${spec.from}/${mount.file}`, mount.bytes, mount.what);
  for (const mount of spec.mounts) {
    emptyFolder(mount.root);
    extractArchive(`${spec.from}/${mount.file}`, mount.base, mount.root);
  }
  // svc goes on when it reads this, not when the engine has taken the helper down
  const done = `${spec.from}/${DONE}.part`;
  writeFileSync(done, spec.probe.token);
  renameSync(done, `${spec.from}/${DONE}`);
  return 0;
}

/** The helper's entry: `copy SPEC` or `restore SPEC` (SPEC as JSON). Returns its exit code. */
export function helperMain(args: string[]): number {
  const [command, spec] = args;
  try {
    if (command === "copy" && spec) return copyCommand(copySpec(spec));
    if (command === "restore" && spec) return restoreCommand(restoreSpec(spec));
    console.error("usage: copy SPEC | restore SPEC");
    return 2;
  } catch (error) {
    console.error((error as Error).message);
    if (error instanceof OverLimit) return EXIT.over;
    if (error instanceof Damaged) return EXIT.damaged;
    return 1;
  }
}

if (import.meta.main) process.exit(helperMain(process.argv.slice(2)));
