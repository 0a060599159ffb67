/**
 * Git's index (gitformat-index: versions 2, 3 and 4), read far enough to find a file's entry and
 * rewritten with that entry's object id and stat data changed in place, so that `git status`
 * afterwards sees the committed file as clean. The cache tree (TREE) is kept with the changed
 * paths' folders marked invalid, as Git does; the caches Git rebuilds by itself (untracked cache,
 * fsmonitor, the offset tables EOIE and IEOT) are dropped; a required extension svc does not know
 * (a split or sparse index) makes svc leave the index alone.
 */
import type { Stats } from "node:fs";
import { gitError } from "./objects.ts";

const hex = (bytes: Uint8Array): string => Buffer.from(bytes).toString("hex");

export interface IndexEntry {
  path: string;
  oid: string;
  mode: number;
  stage: number;
  assumeValid: boolean;
  skipWorktree: boolean;
  intentToAdd: boolean;
  /** where the entry starts in the file (its fixed fields are rewritten there) */
  offset: number;
}

export interface GitIndex {
  version: number;
  entries: IndexEntry[];
  /** the bytes of the header and the entries, as read */
  head: Uint8Array;
  extensions: { signature: string; data: Uint8Array }[];
}

const DROPPED = new Set(["UNTR", "FSMN", "EOIE", "IEOT"]);

export function parseIndex(bytes: Uint8Array): GitIndex {
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (buffer.length < 32 || buffer.toString("latin1", 0, 4) !== "DIRC") throw gitError("its index is not a Git index");
  const checksum = new Bun.CryptoHasher("sha1").update(buffer.subarray(0, buffer.length - 20)).digest();
  if (!Buffer.from(checksum).equals(buffer.subarray(buffer.length - 20)))
    throw gitError("its index's checksum does not match");
  const version = buffer.readUInt32BE(4);
  if (version < 2 || version > 4) throw gitError(`its index has version ${version}, which svc does not know`);
  const count = buffer.readUInt32BE(8);
  const entries: IndexEntry[] = [];
  let at = 12;
  let previous = "";
  for (let n = 0; n < count; n++) {
    const offset = at;
    const flags = buffer.readUInt16BE(at + 60);
    const extended = version >= 3 && (flags & 0x4000) !== 0;
    const extra = extended ? buffer.readUInt16BE(at + 62) : 0;
    let pathAt = at + 62 + (extended ? 2 : 0);
    let path: string;
    if (version === 4) {
      let byte = buffer[pathAt++]!;
      let strip = byte & 0x7f;
      while (byte & 0x80) {
        byte = buffer[pathAt++]!;
        strip = ((strip + 1) << 7) | (byte & 0x7f);
      }
      const nul = buffer.indexOf(0, pathAt);
      path = previous.slice(0, previous.length - strip) + buffer.toString("utf8", pathAt, nul);
      at = nul + 1;
    } else {
      const nul = buffer.indexOf(0, pathAt);
      path = buffer.toString("utf8", pathAt, nul);
      const length = nul - offset;
      at = offset + ((length + 8) & ~7);
    }
    if (at > buffer.length - 20) throw gitError("its index is cut short");
    previous = path;
    entries.push({
      path,
      oid: hex(buffer.subarray(offset + 40, offset + 60)),
      mode: buffer.readUInt32BE(offset + 24),
      stage: (flags >> 12) & 3,
      assumeValid: (flags & 0x8000) !== 0,
      skipWorktree: (extra & 0x4000) !== 0,
      intentToAdd: (extra & 0x2000) !== 0,
      offset,
    });
  }
  const head = buffer.subarray(0, at);
  const extensions: GitIndex["extensions"] = [];
  while (at < buffer.length - 20) {
    const signature = buffer.toString("latin1", at, at + 4);
    const size = buffer.readUInt32BE(at + 4);
    extensions.push({ signature, data: buffer.subarray(at + 8, at + 8 + size) });
    at += 8 + size;
  }
  const required = extensions.find((e) => /^[a-z]/.test(e.signature));
  if (required)
    throw gitError(
      `its index uses the extension "${required.signature}" (${required.signature === "link" ? "a split index" : required.signature === "sdir" ? "a sparse index" : "unknown to svc"})`,
    );
  return { version, entries, head, extensions };
}

export interface EntryUpdate {
  path: string;
  oid: string;
  stat: Stats;
}

/** The index with each updated entry's id and stat data rewritten, the cache tree invalidated along their paths. */
export function writeIndex(index: GitIndex, updates: readonly EntryUpdate[]): Uint8Array {
  const head = Buffer.from(index.head);
  for (const update of updates) {
    const entry = index.entries.find((e) => e.path === update.path && e.stage === 0);
    if (!entry) throw gitError(`${update.path} has no entry in the index`);
    const s = update.stat as Stats & { ctimeNs?: bigint; mtimeNs?: bigint };
    const at = entry.offset;
    const put = (position: number, value: number | bigint) =>
      head.writeUInt32BE(Number(BigInt(value) & 0xffffffffn), at + position);
    const [cs, cn] = seconds(s.ctimeMs, s.ctimeNs);
    const [ms, mn] = seconds(s.mtimeMs, s.mtimeNs);
    put(0, cs);
    put(4, cn);
    put(8, ms);
    put(12, mn);
    put(16, s.dev);
    put(20, s.ino);
    // the mode field stays: svc changes a file's contents, never whether it is executable
    put(28, s.uid);
    put(32, s.gid);
    put(36, s.size);
    Buffer.from(update.oid, "hex").copy(head, at + 40);
  }
  const parts: Uint8Array[] = [head];
  for (const extension of index.extensions) {
    if (DROPPED.has(extension.signature)) continue;
    const data =
      extension.signature === "TREE"
        ? invalidateTree(
            extension.data,
            updates.map((u) => u.path),
          )
        : extension.data;
    const top = Buffer.alloc(8);
    top.write(extension.signature, 0, "latin1");
    top.writeUInt32BE(data.length, 4);
    parts.push(top, data);
  }
  const body = Buffer.concat(parts);
  return Buffer.concat([body, Buffer.from(new Bun.CryptoHasher("sha1").update(body).digest())]);
}

/** Seconds and nanoseconds of a stat time (exact when the stat was taken with bigint: true). */
function seconds(ms: number | bigint, ns: bigint | undefined): [bigint, bigint] {
  if (ns !== undefined) return [ns / 1_000_000_000n, ns % 1_000_000_000n];
  const whole = BigInt(Math.floor(Number(ms) / 1000));
  return [whole, BigInt(Math.round((Number(ms) % 1000) * 1e6))];
}

/**
 * The cache tree (pre-order: path NUL, entry count, space, subtree count, newline, then the tree id
 * when the count is not -1) with every folder on the paths marked invalid (count -1, no id).
 */
function invalidateTree(data: Uint8Array, paths: readonly string[]): Uint8Array {
  const buffer = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  const out: Buffer[] = [];
  const folders = new Set<string>([""]);
  for (const path of paths) {
    const parts = path.split("/");
    for (let n = 1; n < parts.length; n++) folders.add(parts.slice(0, n).join("/"));
  }
  let at = 0;
  const node = (prefix: string): void => {
    const nul = buffer.indexOf(0, at);
    const name = buffer.toString("utf8", at, nul);
    const newline = buffer.indexOf(0x0a, nul);
    const match = /^(-?\d+) (\d+)$/.exec(buffer.toString("latin1", nul + 1, newline));
    if (nul < 0 || newline < 0 || !match) throw gitError("its index's cache tree is malformed");
    const count = Number(match[1]);
    const subtrees = Number(match[2]);
    at = newline + 1 + (count >= 0 ? 20 : 0);
    const path = prefix === "" ? name : name === "" ? prefix : `${prefix}/${name}`;
    const own = prefix === "" && name === "" ? "" : path;
    if (count >= 0 && !folders.has(own)) out.push(buffer.subarray(nul - Buffer.byteLength(name), at));
    else out.push(Buffer.from(`${name}\0-1 ${subtrees}\n`, "utf8"));
    for (let n = 0; n < subtrees; n++) node(own);
  };
  if (buffer.length > 0) node("");
  return Buffer.concat(out);
}
