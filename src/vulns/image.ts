/**
 * An image's inventory read through the engine (docs/vulnerabilities.md): a container is created
 * from the image and never started (no network, no command run), the package database and
 * os-release are read from it with GET /containers/{id}/archive, and the container is removed.
 * Each archive is read through a cap; the inventory is kept in memory by image id, an image's
 * files never changing under the same id.
 */
import { randomBytes } from "node:crypto";
import { labelName } from "../config/index.ts";
import { toSvcError } from "../core/errors.ts";
import type { Engine } from "../engine/port.ts";
import {
  type Distro,
  type Inventory,
  parseApkInstalled,
  parseDpkgStatus,
  parseOsRelease,
  parseRpmdbSqlite,
} from "./inventory.ts";

/** The most bytes of one package database svc reads (an rpmdb.sqlite of a large image is tens of MiB). */
export const MAX_DATABASE_BYTES = 48 * 1024 * 1024;
/** os-release is a few hundred bytes. */
const MAX_OS_RELEASE_BYTES = 64 * 1024;
/** The label the reading container carries, so that an operator (and svc's tests) can tell it. */
export const READER_LABEL = labelName("vulnerabilities.reader");
/** The inventories kept in memory, by image id (the oldest forgotten first). */
const MAX_CACHED = 256;

type EngineReads = Pick<Engine, "createHelper" | "readArchive" | "removeContainer">;

/** Where each format keeps its database, tried in this order (the first found is the image's). */
const DATABASES: readonly { path: string; parse: (bytes: Uint8Array, distro: Distro | null) => Inventory }[] = [
  { path: "/var/lib/dpkg/status", parse: (bytes, distro) => parseDpkgStatus(utf8(bytes), distro) },
  // distroless images: one file per package, concatenated as paragraphs
  { path: "/var/lib/dpkg/status.d", parse: (bytes, distro) => parseDpkgStatus(utf8(bytes), distro) },
  { path: "/lib/apk/db/installed", parse: (bytes, distro) => parseApkInstalled(utf8(bytes), distro) },
  { path: "/var/lib/rpm/rpmdb.sqlite", parse: parseRpmdbSqlite },
  { path: "/usr/lib/sysimage/rpm/rpmdb.sqlite", parse: parseRpmdbSqlite },
];

const utf8 = (bytes: Uint8Array): string => new TextDecoder().decode(bytes);

/** An image's inventory, or why there is none (`problem`): never throws. */
export type InventoryAnswer = { inventory: Inventory } | { inventory: null; problem: string };

export interface InventoryReader {
  /** `image`: the id (or a reference) of a local image */
  read(imageId: string): Promise<InventoryAnswer>;
}

export function createInventoryReader(engine: EngineReads): InventoryReader {
  const cache = new Map<string, Promise<InventoryAnswer>>();
  return {
    read(imageId) {
      let answer = cache.get(imageId);
      if (!answer) {
        answer = readImage(engine, imageId).catch(
          (error): InventoryAnswer => ({ inventory: null, problem: toSvcError(error).message }),
        );
        cache.set(imageId, answer);
        // a failure is asked again next time (the engine may have been busy); an answer is kept
        void answer.then((a) => a.inventory === null && cache.get(imageId) === answer && cache.delete(imageId));
        if (cache.size > MAX_CACHED) cache.delete(cache.keys().next().value!);
      }
      return answer;
    },
  };
}

async function readImage(engine: EngineReads, imageId: string): Promise<InventoryAnswer> {
  const id = await engine.createHelper({
    name: `svc-inventory-${randomBytes(6).toString("hex")}`,
    image: imageId,
    // never started: the command is only what the engine requires to create it
    cmd: ["/svc-never-started"],
    labels: { [READER_LABEL]: "true" },
    autoRemove: false,
  });
  try {
    const osRelease =
      (await readFiles(engine, id, "/etc/os-release", MAX_OS_RELEASE_BYTES)) ??
      (await readFiles(engine, id, "/usr/lib/os-release", MAX_OS_RELEASE_BYTES));
    const distro = osRelease ? parseOsRelease(utf8(osRelease)) : null;
    for (const database of DATABASES) {
      const bytes = await readFiles(engine, id, database.path, MAX_DATABASE_BYTES);
      if (bytes === null) continue;
      return { inventory: database.parse(bytes, distro) };
    }
    return { inventory: null, problem: "no package database (dpkg, apk or rpm) in the image" };
  } finally {
    await engine.removeContainer(id, { force: true }).catch(() => {});
  }
}

/**
 * The regular files of the archive of `path` (one file, or a folder's files) joined with a blank
 * line between them; null when the path is absent, is only a link, or the archive is over `cap`.
 */
async function readFiles(engine: EngineReads, id: string, path: string, cap: number): Promise<Uint8Array | null> {
  let stream: ReadableStream<Uint8Array>;
  try {
    stream = await engine.readArchive(id, path);
  } catch {
    return null; // not there (the engine's 404), or not readable: the next place is tried
  }
  const tar = await readCapped(stream, cap + 64 * 1024);
  if (tar === null) throw new Error(`${path} is larger than ${Math.round(cap / 1024 / 1024)} MiB: not read`);
  const files = tarFiles(tar);
  if (files.length === 0) return null;
  if (files.length === 1) return files[0]!;
  const separator = new TextEncoder().encode("\n\n");
  return Buffer.concat(files.flatMap((file) => [file, separator]));
}

async function readCapped(stream: ReadableStream<Uint8Array>, cap: number): Promise<Uint8Array | null> {
  const reader = stream.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > cap) {
      await reader.cancel().catch(() => {});
      return null;
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks);
}

/** The contents of a tar's regular files, in order (ustar, GNU and PAX headers' own entries skipped). */
export function tarFiles(tar: Uint8Array): Uint8Array[] {
  const files: Uint8Array[] = [];
  for (let at = 0; at + 512 <= tar.byteLength; ) {
    const header = tar.subarray(at, at + 512);
    if (header.every((byte) => byte === 0)) break;
    const size = tarSize(header.subarray(124, 136));
    if (size === null || at + 512 + size > tar.byteLength) break;
    const type = String.fromCharCode(header[156]!);
    if (type === "0" || type === "\0" || type === "7") files.push(tar.subarray(at + 512, at + 512 + size));
    at += 512 + Math.ceil(size / 512) * 512;
  }
  return files;
}

/** A size field: octal digits, or GNU's base-256 (the high bit of the first byte set). */
function tarSize(field: Uint8Array): number | null {
  if (field[0]! & 0x80) {
    let value = 0;
    for (let i = 1; i < field.length; i++) value = value * 256 + field[i]!;
    return Number.isSafeInteger(value) ? value : null;
  }
  const text = utf8(field).replace(/\0.*$/s, "").trim();
  return /^[0-7]+$/.test(text) ? Number.parseInt(text, 8) : text === "" ? 0 : null;
}
