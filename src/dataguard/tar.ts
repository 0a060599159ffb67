/**
 * The tar the data guard reads and writes itself (ustar, with PAX and GNU long-name headers read):
 * the headers of the copier's archives (copier.ts) and of the helper's image (helper.ts). Runs in
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

/** The type flag of the entry whose header is `header`: "5" a folder, "0" a file... */
function firstEntryType(header: Uint8Array): string {
  if (header.length < BLOCK) return "";
  const flag = header[156]!;
  return flag === 0 ? "0" : String.fromCharCode(flag);
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
