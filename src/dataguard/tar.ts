/**
 * The tar the data guard reads and writes itself (ustar, with PAX and GNU long-name headers read):
 * the headers of the copier's archives (copier.ts) and of the helper's image (helper.ts), one empty
 * regular file (the request that empties a mount through the engine, restore.ts), reading the type
 * of an archive's first entry (a mount that is a file, not a folder, is not guarded), and the
 * extended attributes added to the engine's archive (`XattrMerger`, a stream transform). Runs in
 * svc and in the helper (copier.ts): no import.
 */
const BLOCK = 512;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

export interface UstarEntry {
  /** at most 100 bytes once encoded, or 255 split at a slash into prefix and name */
  name: string | Uint8Array;
  mode: number;
  size: number;
  mtimeSeconds: number;
  /** "0" a file, "5" a folder, "x" a PAX header, "1" a hard link, "2" a symbolic link... */
  type: string;
  uid?: number;
  gid?: number;
  /** a link's target, at most 100 bytes */
  linkname?: string | Uint8Array;
  devmajor?: number;
  devminor?: number;
}

/** One ustar header block. Throws when the name does not fit (`fitsUstar` says beforehand). */
export function ustarHeader(entry: UstarEntry): Uint8Array<ArrayBuffer> {
  const bytes = new Uint8Array(BLOCK);
  const put = (text: string | Uint8Array, at: number, length: number) =>
    bytes.set((typeof text === "string" ? encoder.encode(text) : text).subarray(0, length), at);
  const octal = (value: number, length: number) => `${value.toString(8).padStart(length - 1, "0")}\0`;
  const { prefix, name } = splitName(entry.name);
  put(name, 0, 100);
  put(octal(entry.mode, 8), 100, 8);
  put(octal(entry.uid ?? 0, 8), 108, 8);
  put(octal(entry.gid ?? 0, 8), 116, 8);
  put(octal(entry.size, 12), 124, 12);
  put(octal(entry.mtimeSeconds, 12), 136, 12);
  put("        ", 148, 8); // the checksum counts its own field as spaces
  put(entry.type, 156, 1);
  if (entry.linkname !== undefined) put(entry.linkname, 157, 100);
  put("ustar\0", 257, 6);
  put("00", 263, 2);
  if (entry.devmajor !== undefined) put(octal(entry.devmajor, 8), 329, 8);
  if (entry.devminor !== undefined) put(octal(entry.devminor, 8), 337, 8);
  put(prefix, 345, 155);
  let sum = 0;
  for (let i = 0; i < BLOCK; i++) sum += bytes[i]!;
  put(`${sum.toString(8).padStart(6, "0")}\0 `, 148, 8);
  return bytes;
}

/** Whether `name` fits a ustar header's name and prefix fields. */
export function fitsUstar(name: string | Uint8Array): boolean {
  try {
    splitName(name);
    return true;
  } catch {
    return false;
  }
}

function splitName(full: string | Uint8Array): { prefix: Uint8Array; name: Uint8Array } {
  const bytes = typeof full === "string" ? encoder.encode(full) : full;
  if (bytes.length <= 100) return { prefix: new Uint8Array(0), name: bytes };
  for (let at = bytes.length - 1; at > 0; at--) {
    if (bytes[at] !== 0x2f) continue;
    if (at <= 155 && bytes.length - at - 1 <= 100 && bytes.length - at - 1 > 0)
      return { prefix: bytes.subarray(0, at), name: bytes.subarray(at + 1) };
  }
  throw new Error(`${decoder.decode(bytes)}: too long a name for a ustar header`);
}

/** The zero bytes that pad `size` bytes of an entry to a whole block. */
export function padding(size: number): Uint8Array<ArrayBuffer> {
  return new Uint8Array((BLOCK - (size % BLOCK)) % BLOCK);
}

/** A ustar archive holding one empty regular file named `name` (a single path part). */
export function emptyFileArchive(name: string, mtimeSeconds: number): Uint8Array<ArrayBuffer> {
  const bytes = new Uint8Array(BLOCK * 3); // the header, then the two zero blocks that end an archive
  bytes.set(ustarHeader({ name, mode: 0o600, size: 0, mtimeSeconds, type: "0" }));
  return bytes;
}

/** The type flag of the first entry of an archive whose first block is `header`: "5" a folder, "0" a file... */
export function firstEntryType(header: Uint8Array): string {
  if (header.length < BLOCK) return "";
  const flag = header[156]!;
  return flag === 0 ? "0" : String.fromCharCode(flag);
}

/** Whether an archive starting with this type is a folder (a PAX or GNU long-name header comes before one). */
export function startsWithFolder(type: string): boolean {
  return type === "5" || type === "x" || type === "L";
}

/** The first regular file of a small archive (the helper's answer), or null. */
export function firstFileOf(archive: Uint8Array): Uint8Array | null {
  for (let at = 0; at + BLOCK <= archive.length; ) {
    const header = archive.subarray(at, at + BLOCK);
    if (header.every((b) => b === 0)) return null;
    const size = sizeOf(header);
    const type = firstEntryType(header);
    if (type === "0" || type === "7") return archive.subarray(at + BLOCK, at + BLOCK + size);
    at += BLOCK + size + padding(size).length;
  }
  return null;
}

/** Extended attributes by entry name (as the archive names it, without a folder's trailing slash): [name, value] pairs. */
export type XattrsByPath = Map<string, [string, Uint8Array][]>;

/** The most of PAX and GNU long-name headers held before the entry they belong to. */
const MAX_META_BYTES = 1024 * 1024;

/**
 * Adds `SCHILY.xattr.NAME=VALUE` records (the PAX form the engine's extraction applies) to the
 * entries of an archive streaming by, for the paths of `wanted`. An entry that already has a
 * PAX header gets the records added to it (two PAX headers in a row: a reader keeps only the
 * last); an attribute the archive carries already (`security.capability`) is kept as it is.
 * Everything else passes through untouched, in the caller's chunks.
 */
export class XattrMerger {
  /** the bytes of a header not complete yet */
  private partial: Uint8Array = new Uint8Array(0);
  /** PAX and GNU long-name headers (with their data) held until the entry they describe */
  private meta: Uint8Array[] = [];
  private metaBytes = 0;
  /** bytes of meta data still to collect into `meta` */
  private metaLeft = 0;
  /** bytes of the current entry's data (with its padding) to pass through */
  private dataLeft = 0;
  /** the end of the archive (or a header svc cannot read): the rest passes through */
  private through = false;

  constructor(private readonly wanted: XattrsByPath) {
    if (wanted.size === 0) this.through = true;
  }

  /** The chunk as it goes on: itself, or pieces of it around the headers added. */
  push(chunk: Uint8Array): Uint8Array[] {
    if (this.through && this.partial.length === 0 && this.meta.length === 0) return [chunk];
    const out: Uint8Array[] = [];
    let at = 0;
    while (at < chunk.length) {
      if (this.through) {
        out.push(...this.flushMeta(), chunk.subarray(at));
        break;
      }
      if (this.dataLeft > 0) {
        const taken = Math.min(this.dataLeft, chunk.length - at);
        out.push(chunk.subarray(at, at + taken));
        this.dataLeft -= taken;
        at += taken;
        continue;
      }
      if (this.metaLeft > 0) {
        const taken = Math.min(this.metaLeft, chunk.length - at);
        this.meta.push(chunk.slice(at, at + taken));
        this.metaLeft -= taken;
        at += taken;
        continue;
      }
      const needed = BLOCK - this.partial.length;
      if (chunk.length - at < needed) {
        this.partial = concat([this.partial, chunk.subarray(at)]);
        break;
      }
      const header = this.partial.length
        ? concat([this.partial, chunk.subarray(at, at + needed)])
        : chunk.slice(at, at + BLOCK);
      this.partial = new Uint8Array(0);
      at += needed;
      out.push(...this.onHeader(header));
    }
    return out;
  }

  /** What is left once the archive ended (a truncated header, held meta headers). */
  end(): Uint8Array[] {
    const rest = [...this.flushMeta(), this.partial];
    this.partial = new Uint8Array(0);
    return rest.filter((piece) => piece.length > 0);
  }

  private onHeader(header: Uint8Array): Uint8Array[] {
    if (header.every((b) => b === 0) || !checksumMatches(header)) {
      this.through = true;
      return [...this.flushMeta(), header];
    }
    const type = firstEntryType(header);
    const size = sizeOf(header);
    if (type === "x" || type === "L" || type === "K") {
      const held = size + padding(size).length;
      if (this.metaBytes + BLOCK + held > MAX_META_BYTES) {
        this.through = true;
        return [...this.flushMeta(), header];
      }
      this.meta.push(header);
      this.metaBytes += BLOCK + held;
      this.metaLeft = held;
      return [];
    }
    const { name, size: paxSize, pax } = this.describe(header);
    const xattrs = type === "g" ? undefined : this.wanted.get(name.replace(/\/+$/, ""));
    this.dataLeft = paxSize ?? size;
    this.dataLeft += padding(this.dataLeft).length;
    if (!xattrs) return [...this.flushMeta(), header];
    return [...this.withXattrs(pax, xattrs, header), header];
  }

  /** The entry's name (a PAX path, a GNU long name, else ustar's prefix and name) and its PAX size, if any. */
  private describe(header: Uint8Array): {
    name: string;
    size?: number;
    pax?: { header: Uint8Array; data: Uint8Array };
  } {
    let name = ustarName(header);
    let size: number | undefined;
    let pax: { header: Uint8Array; data: Uint8Array } | undefined;
    for (const { header: h, data } of this.heldEntries()) {
      const type = firstEntryType(h);
      if (type === "L") name = decoder.decode(data.subarray(0, sizeOf(h))).replace(/\0+$/, "");
      if (type === "x") {
        pax = { header: h, data: data.subarray(0, sizeOf(h)) };
        for (const [key, value] of paxRecords(pax.data)) {
          if (key === "path") name = decoder.decode(value);
          if (key === "size") size = Number(decoder.decode(value));
        }
      }
    }
    return { name, ...(size !== undefined && Number.isSafeInteger(size) ? { size } : {}), ...(pax ? { pax } : {}) };
  }

  /** The held meta headers, each with its data. */
  private heldEntries(): { header: Uint8Array; data: Uint8Array }[] {
    const all = concat(this.meta);
    const entries: { header: Uint8Array; data: Uint8Array }[] = [];
    for (let at = 0; at + BLOCK <= all.length; ) {
      const header = all.subarray(at, at + BLOCK);
      const size = sizeOf(header);
      const held = size + padding(size).length;
      entries.push({ header, data: all.subarray(at + BLOCK, at + BLOCK + held) });
      at += BLOCK + held;
    }
    return entries;
  }

  /** The held meta headers, the PAX one replaced by one that also carries `xattrs`. */
  private withXattrs(
    pax: { header: Uint8Array; data: Uint8Array } | undefined,
    xattrs: [string, Uint8Array][],
    entry: Uint8Array,
  ): Uint8Array[] {
    const kept = this.heldEntries().filter((e) => firstEntryType(e.header) !== "x");
    this.meta = [];
    this.metaBytes = 0;
    const present = new Set(pax ? paxRecords(pax.data).map(([key]) => key) : []);
    const added = xattrs
      .filter(([key]) => !present.has(`SCHILY.xattr.${key}`))
      .map(([key, value]) => paxRecord(`SCHILY.xattr.${key}`, value));
    const data = concat([pax?.data ?? new Uint8Array(0), ...added]);
    const header = ustarHeader({
      name: pax ? ustarName(pax.header).slice(0, 100) || "PaxHeaders.0/entry" : paxHeaderName(entry),
      mode: 0o644,
      size: data.length,
      mtimeSeconds: octalField(entry, 136, 12),
      type: "x",
    });
    return [...kept.flatMap((e) => [e.header, e.data]), header, data, padding(data.length)];
  }

  private flushMeta(): Uint8Array[] {
    const held = this.meta;
    this.meta = [];
    this.metaBytes = 0;
    return held;
  }
}

/** A PAX header's own name, as Go's writer makes it: PaxHeaders.0/ and the entry's last part. */
function paxHeaderName(entry: Uint8Array): string {
  const base = ustarName(entry).replace(/\/+$/, "").split("/").pop() ?? "";
  const name = `PaxHeaders.0/${base}`;
  return encoder.encode(name).length <= 100 ? name : "PaxHeaders.0/entry";
}

/** One PAX record, `LENGTH KEY=VALUE\n`, LENGTH counting itself. */
export function paxRecord(key: string, value: Uint8Array): Uint8Array {
  const rest = encoder.encode(` ${key}=`).length + value.length + 1;
  const digits = String(rest).length;
  let length = rest + digits;
  if (String(length).length !== digits) length = rest + String(length).length;
  return concat([encoder.encode(`${length} ${key}=`), value, encoder.encode("\n")]);
}

/** The records of a PAX header's data: [key, value] (values as bytes: an attribute's value may be binary). */
export function paxRecords(data: Uint8Array): [string, Uint8Array][] {
  const records: [string, Uint8Array][] = [];
  for (let at = 0; at < data.length; ) {
    const space = data.indexOf(0x20, at);
    if (space < 0) break;
    const length = Number(decoder.decode(data.subarray(at, space)));
    if (!Number.isSafeInteger(length) || length <= space - at || at + length > data.length) break;
    const record = data.subarray(space + 1, at + length - 1);
    const equals = record.indexOf(0x3d);
    if (equals > 0) records.push([decoder.decode(record.subarray(0, equals)), record.subarray(equals + 1)]);
    at += length;
  }
  return records;
}

function ustarName(header: Uint8Array): string {
  const field = (at: number, length: number) => {
    const bytes = header.subarray(at, at + length);
    const end = bytes.indexOf(0);
    return decoder.decode(end < 0 ? bytes : bytes.subarray(0, end));
  };
  const name = field(0, 100);
  const prefix = decoder.decode(header.subarray(257, 262)) === "ustar" ? field(345, 155) : "";
  return prefix ? `${prefix}/${name}` : name;
}

/** An entry's size: octal, or base-256 (GNU) when its first byte has the high bit. */
function sizeOf(header: Uint8Array): number {
  return numberField(header, 124, 12);
}

/** A numeric field: octal, or base-256 (GNU) when its first byte has the high bit. */
function numberField(header: Uint8Array, at: number, length: number): number {
  if ((header[at]! & 0x80) !== 0) {
    let value = header[at]! & 0x7f;
    for (let i = at + 1; i < at + length; i++) value = value * 256 + header[i]!;
    return value;
  }
  return octalField(header, at, length);
}

/** What a ustar (or GNU) header block says of its entry, names as bytes (a file's name need not be UTF-8). */
export interface TarHeader {
  name: Uint8Array;
  mode: number;
  uid: number;
  gid: number;
  size: number;
  mtimeSeconds: number;
  /** "0" a file ("\0" and "7" read as "0"), "5" a folder, "x" a PAX header... */
  type: string;
  linkname: Uint8Array;
  devmajor: number;
  devminor: number;
}

/** The header block's fields; null for a block of zeros (the archive's end) or one whose checksum fails. */
export function parseHeader(header: Uint8Array): TarHeader | null {
  if (header.length < BLOCK || header.every((b) => b === 0) || !checksumMatches(header)) return null;
  const field = (at: number, length: number) => {
    const bytes = header.subarray(at, at + length);
    const end = bytes.indexOf(0);
    return end < 0 ? bytes : bytes.subarray(0, end);
  };
  const name = field(0, 100);
  // POSIX's magic, "ustar\0": GNU's ("ustar  ") keeps other fields where POSIX has the prefix
  const posix = decoder.decode(header.subarray(257, 263)) === "ustar\0";
  const prefix = posix ? field(345, 155) : new Uint8Array(0);
  const type = firstEntryType(header);
  return {
    name: prefix.length ? concat([prefix, encoder.encode("/"), name]) : name.slice(),
    mode: octalField(header, 100, 8),
    uid: numberField(header, 108, 8),
    gid: numberField(header, 116, 8),
    size: sizeOf(header),
    mtimeSeconds: numberField(header, 136, 12),
    type: type === "7" ? "0" : type,
    linkname: field(157, 100).slice(),
    devmajor: octalField(header, 329, 8),
    devminor: octalField(header, 337, 8),
  };
}

function octalField(header: Uint8Array, at: number, length: number): number {
  const text = decoder.decode(header.subarray(at, at + length)).replace(/[\0 ]+/g, "");
  return text ? Number.parseInt(text, 8) || 0 : 0;
}

function checksumMatches(header: Uint8Array): boolean {
  let sum = 0;
  for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 0x20 : header[i]!;
  return sum === octalField(header, 148, 8);
}

function concat(parts: Uint8Array[]): Uint8Array {
  if (parts.length === 1) return parts[0]!;
  const out = new Uint8Array(parts.reduce((sum, p) => sum + p.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}
