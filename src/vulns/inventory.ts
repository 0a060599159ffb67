/**
 * What an image holds, from its OS package database (docs/vulnerabilities.md): dpkg's `status`
 * (with `Source:`), apk's `installed` (with the origin), rpm's `rpmdb.sqlite` (its header blobs),
 * each as package URLs with the distribution from `/etc/os-release`, and the OSV ecosystem and
 * name a query asks about. The files are an image's, so anyone's: every parser is bounded (bytes
 * read before, packages here) and answers what it could read.
 */
import { Database } from "bun:sqlite";
import type { VersionFormat } from "./versions.ts";

/** The most packages one inventory holds; the rest is left out and said (`truncated`). */
export const MAX_PACKAGES = 10_000;
/** The longest field value kept (a package name or version); longer ones are cut. */
const MAX_FIELD_CHARS = 256;

export interface InstalledPackage {
  /** the binary package's name and version */
  name: string;
  version: string;
  /** what OSV's records name: the source package (dpkg), the origin (apk), the package (rpm) */
  queryName: string;
  queryVersion: string;
  /** pkg:deb/debian/openssl@3.0.15-1~deb12u1?distro=debian-12 */
  purl: string;
}

export interface Distro {
  /** os-release's ID and VERSION_ID ("debian", "12") */
  id: string;
  versionId: string;
  /** os-release's VERSION ("22.04.4 LTS (Jammy Jellyfish)"), for Ubuntu's LTS ecosystems */
  version?: string;
}

export interface Inventory {
  format: VersionFormat;
  distro: Distro | null;
  /** OSV's ecosystem ("Debian:12", "Alpine:v3.20"); null where OSV has none svc knows for this distribution */
  ecosystem: string | null;
  packages: InstalledPackage[];
  /** more than MAX_PACKAGES were listed */
  truncated: boolean;
}

const cut = (text: string): string => text.slice(0, MAX_FIELD_CHARS);

/** /etc/os-release (os-release(5)): KEY=value lines, values optionally quoted. */
export function parseOsRelease(text: string): Distro | null {
  const fields = new Map<string, string>();
  for (const line of text.split("\n", 200)) {
    const match = /^([A-Z_]{1,40})=(.{0,256})$/.exec(line.trim());
    if (!match) continue;
    fields.set(match[1]!, match[2]!.replace(/^(["'])(.*)\1$/, "$2"));
  }
  const id = fields.get("ID")?.toLowerCase();
  if (!id || !/^[a-z0-9._-]+$/.test(id)) return null;
  const version = fields.get("VERSION");
  return { id, versionId: fields.get("VERSION_ID") ?? "", ...(version ? { version } : {}) };
}

/** OSV's ecosystem for a distribution and a format, or null where svc knows none. */
export function osvEcosystem(format: VersionFormat, distro: Distro | null): string | null {
  if (!distro) return null;
  const major = distro.versionId.split(".")[0] ?? "";
  if (format === "dpkg" && distro.id === "debian" && /^\d+$/.test(major)) return `Debian:${major}`;
  if (format === "dpkg" && distro.id === "ubuntu" && /^\d+\.\d+$/.test(distro.versionId))
    return `Ubuntu:${distro.versionId}${/\bLTS\b/.test(distro.version ?? "") ? ":LTS" : ""}`;
  const minor = /^(\d+)\.(\d+)/.exec(distro.versionId);
  if (format === "apk" && distro.id === "alpine" && minor) return `Alpine:v${minor[1]}.${minor[2]}`;
  if (format === "rpm" && distro.id === "rocky" && /^\d+$/.test(major)) return `Rocky Linux:${major}`;
  if (format === "rpm" && distro.id === "almalinux" && /^\d+$/.test(major)) return `AlmaLinux:${major}`;
  return null;
}

/** A package URL (the purl spec): type, namespace, name, version, and the distro qualifier. */
export function packageUrl(type: "deb" | "apk" | "rpm", distro: Distro | null, name: string, version: string): string {
  const namespace = distro?.id ?? (type === "deb" ? "debian" : type === "apk" ? "alpine" : "unknown");
  const qualifier = distro?.versionId ? `?distro=${encodeURIComponent(`${distro.id}-${distro.versionId}`)}` : "";
  return `pkg:${type}/${encodeURIComponent(namespace)}/${encodeURIComponent(name)}@${encodeURIComponent(version)}${qualifier}`;
}

/** Paragraphs of `Key: value` (dpkg) or `K:value` (apk) lines, continuation lines dropped. */
function* paragraphs(text: string): Generator<Map<string, string>> {
  let fields = new Map<string, string>();
  for (const line of text.split("\n")) {
    if (line.trim() === "") {
      if (fields.size > 0) yield fields;
      fields = new Map();
      continue;
    }
    if (line.startsWith(" ") || line.startsWith("\t")) continue;
    const at = line.indexOf(":");
    if (at <= 0) continue;
    fields.set(line.slice(0, at), cut(line.slice(at + 1).trim()));
  }
  if (fields.size > 0) yield fields;
}

export function inventoryOf(format: VersionFormat, distro: Distro | null, listed: InstalledPackage[]): Inventory {
  return {
    format,
    distro,
    ecosystem: osvEcosystem(format, distro),
    packages: listed.slice(0, MAX_PACKAGES),
    truncated: listed.length > MAX_PACKAGES,
  };
}

/**
 * dpkg's status file: the installed packages (`Status: ... installed`), each with its source
 * package, `Source: name` or `Source: name (version)` when the source's version differs.
 */
export function parseDpkgStatus(text: string, distro: Distro | null): Inventory {
  const listed: InstalledPackage[] = [];
  for (const fields of paragraphs(text)) {
    if (listed.length > MAX_PACKAGES) break;
    const name = fields.get("Package");
    const version = fields.get("Version");
    if (!name || !version || !/\binstalled$/.test(fields.get("Status") ?? "")) continue;
    const source = /^(\S+)(?:\s+\((\S+)\))?$/.exec(fields.get("Source") ?? "");
    listed.push({
      name,
      version,
      queryName: source?.[1] ?? name,
      queryVersion: source?.[2] ?? version,
      purl: packageUrl("deb", distro, name, version),
    });
  }
  return inventoryOf("dpkg", distro, listed);
}

/** apk's installed database: `P:` the name, `V:` the version, `o:` the origin (its source package). */
export function parseApkInstalled(text: string, distro: Distro | null): Inventory {
  const listed: InstalledPackage[] = [];
  for (const fields of paragraphs(text)) {
    if (listed.length > MAX_PACKAGES) break;
    const name = fields.get("P");
    const version = fields.get("V");
    if (!name || !version) continue;
    listed.push({
      name,
      version,
      queryName: fields.get("o") || name,
      queryVersion: version,
      purl: packageUrl("apk", distro, name, version),
    });
  }
  return inventoryOf("apk", distro, listed);
}

// ---- rpm ----

const RPM_TAG = { name: 1000, version: 1001, release: 1002, epoch: 1003, sourcerpm: 1044 } as const;
const RPM_TYPE_INT32 = 4;
const RPM_TYPE_STRING = 6;
/** rpm's own bound on a header's index entries */
const RPM_MAX_ENTRIES = 0xffff;

export interface RpmHeader {
  name: string;
  version: string;
  release: string;
  epoch: number | null;
  sourcerpm: string | null;
}

/**
 * One header blob as rpm keeps it in rpmdb.sqlite (no lead, no magic): the count of index
 * entries and the size of the data, both big-endian, then the entries (tag, type, offset,
 * count; 16 bytes each), then the data. Null for a blob that does not hold together.
 */
export function parseRpmHeader(blob: Uint8Array): RpmHeader | null {
  if (blob.byteLength < 8) return null;
  const view = new DataView(blob.buffer, blob.byteOffset, blob.byteLength);
  const entries = view.getUint32(0);
  const dataBytes = view.getUint32(4);
  const dataStart = 8 + entries * 16;
  if (entries > RPM_MAX_ENTRIES || dataStart + dataBytes > blob.byteLength) return null;
  const strings = new Map<number, string>();
  let epoch: number | null = null;
  for (let index = 0; index < entries; index++) {
    const at = 8 + index * 16;
    const tag = view.getInt32(at);
    const type = view.getUint32(at + 4);
    const offset = view.getInt32(at + 8);
    if (offset < 0 || offset >= dataBytes) continue;
    if (tag === RPM_TAG.epoch && type === RPM_TYPE_INT32 && offset + 4 <= dataBytes)
      epoch = view.getUint32(dataStart + offset);
    else if (type === RPM_TYPE_STRING && Object.values(RPM_TAG).includes(tag as never)) {
      const start = dataStart + offset;
      const end = blob.indexOf(0, start);
      if (end < 0 || end > dataStart + dataBytes) continue;
      strings.set(tag, cut(new TextDecoder().decode(blob.subarray(start, end))));
    }
  }
  const name = strings.get(RPM_TAG.name);
  const version = strings.get(RPM_TAG.version);
  if (!name || !version) return null;
  return {
    name,
    version,
    release: strings.get(RPM_TAG.release) ?? "",
    epoch,
    sourcerpm: strings.get(RPM_TAG.sourcerpm) ?? null,
  };
}

/** `[epoch:]version-release`, as rpm and OSV write it. */
export function rpmEvr(header: RpmHeader): string {
  const vr = header.release ? `${header.version}-${header.release}` : header.version;
  return header.epoch !== null ? `${header.epoch}:${vr}` : vr;
}

/**
 * rpmdb.sqlite's bytes (rpm 4.16 and later): its Packages table's header blobs. Read from a copy
 * in memory, never written; a database left in WAL mode is read as a plain one (the copy's
 * header says so), its last checkpoint being what the image holds.
 */
export function parseRpmdbSqlite(bytes: Uint8Array, distro: Distro | null): Inventory {
  const copy = new Uint8Array(bytes);
  if (copy.byteLength > 19 && copy[18] === 2 && copy[19] === 2) copy[18] = copy[19] = 1;
  const listed: InstalledPackage[] = [];
  let database: Database | undefined;
  try {
    database = Database.deserialize(copy, true);
    const rows = database.query("SELECT blob FROM Packages LIMIT ?").all(MAX_PACKAGES + 1) as { blob: Uint8Array }[];
    for (const row of rows) {
      const header = row.blob instanceof Uint8Array ? parseRpmHeader(row.blob) : null;
      // the public keys rpm imported are headers too, of no package
      if (!header || header.name === "gpg-pubkey") continue;
      const evr = rpmEvr(header);
      listed.push({
        name: header.name,
        version: evr,
        queryName: header.name,
        queryVersion: evr,
        purl: packageUrl("rpm", distro, header.name, evr),
      });
    }
  } finally {
    database?.close();
  }
  return inventoryOf("rpm", distro, listed);
}
