/**
 * Inventories from real package databases (fixtures/README.md says where each was taken): a part
 * of this machine's dpkg status (and the whole file where it exists), the `installed` file of the
 * alpine:3.18.0 image from osv-scalibr's test data, a CBL-Mariner 2.0 image's rpmdb.sqlite from
 * go-rpmdb's, and an rpmdb.sqlite made by Debian's rpm 4.18 (`rpm --initdb`, then two packages
 * built with rpmbuild and installed with `--justdb`) for Rocky Linux's epoch.
 */
import { describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { gunzipSync } from "bun";
import {
  MAX_PACKAGES,
  osvEcosystem,
  packageUrl,
  parseApkInstalled,
  parseDpkgStatus,
  parseOsRelease,
  parseRpmdbSqlite,
  parseRpmHeader,
} from "../../../src/vulns/inventory.ts";

const fixture = (name: string) => readFileSync(join(import.meta.dir, "fixtures", name));
const text = (name: string) => fixture(name).toString("utf8");

describe("os-release", () => {
  test("Debian, Alpine and Rocky name their distribution and OSV ecosystem", () => {
    const debian = parseOsRelease(text("debian-os-release"));
    expect(debian).toMatchObject({ id: "debian", versionId: "12" });
    expect(osvEcosystem("dpkg", debian)).toBe("Debian:12");
    expect(osvEcosystem("apk", parseOsRelease(text("alpine-3.18-os-release")))).toBe("Alpine:v3.18");
    expect(osvEcosystem("rpm", parseOsRelease(text("rocky-os-release")))).toBe("Rocky Linux:9");
    expect(osvEcosystem("dpkg", parseOsRelease('ID=ubuntu\nVERSION_ID="22.04"\nVERSION="22.04.4 LTS (Jammy)"'))).toBe(
      "Ubuntu:22.04:LTS",
    );
  });
  test("a distribution svc knows no ecosystem of, or no file, is null", () => {
    expect(osvEcosystem("rpm", parseOsRelease('ID="fedora"\nVERSION_ID=40'))).toBeNull();
    expect(osvEcosystem("dpkg", null)).toBeNull();
    expect(parseOsRelease("garbage\n")).toBeNull();
    expect(parseOsRelease('ID="$(rm -rf /)"')).toBeNull();
  });
});

describe("dpkg status", () => {
  const debian = parseOsRelease(text("debian-os-release"));
  test("each installed package with its source package and the distribution in its URL", () => {
    const inventory = parseDpkgStatus(text("dpkg-status"), debian);
    expect(inventory.format).toBe("dpkg");
    expect(inventory.ecosystem).toBe("Debian:12");
    expect(inventory.packages).toHaveLength(15);
    const libssl = inventory.packages.find((p) => p.name === "libssl3")!;
    expect(libssl.queryName).toBe("openssl");
    expect(libssl.queryVersion).toBe(libssl.version);
    expect(libssl.purl).toBe(`pkg:deb/debian/libssl3@${encodeURIComponent(libssl.version)}?distro=debian-12`);
    // `Source: bash (5.2.15-2)`: a binNMU's source has its own version
    expect(inventory.packages.find((p) => p.name === "bash")).toMatchObject({
      version: "5.2.15-2+b8",
      queryName: "bash",
      queryVersion: "5.2.15-2",
    });
    // an epoch is kept, and percent-encoded in the URL
    expect(inventory.packages.find((p) => p.name === "zlib1g")!.purl).toBe(
      "pkg:deb/debian/zlib1g@1%3A1.2.13.dfsg-1?distro=debian-12",
    );
  });
  test("the issue's own example URL", () => {
    expect(packageUrl("deb", debian, "openssl", "3.0.15-1~deb12u1")).toBe(
      "pkg:deb/debian/openssl@3.0.15-1~deb12u1?distro=debian-12",
    );
  });
  test("packages removed but not purged are not installed", () => {
    const status =
      "Package: gone\nStatus: deinstall ok config-files\nVersion: 1.0-1\n\nPackage: here\nStatus: install ok installed\nVersion: 2.0-1\n";
    expect(parseDpkgStatus(status, debian).packages.map((p) => p.name)).toEqual(["here"]);
  });
  test.skipIf(!existsSync("/var/lib/dpkg/status"))("this machine's whole status file", () => {
    const whole = readFileSync("/var/lib/dpkg/status", "utf8");
    const installed = whole.split("\n").filter((line) => /^Status: .* installed$/.test(line)).length;
    const inventory = parseDpkgStatus(whole, debian);
    expect(inventory.packages.length).toBe(Math.min(installed, MAX_PACKAGES));
    expect(inventory.packages.every((p) => p.purl.startsWith("pkg:deb/debian/"))).toBe(true);
  });
  test("a status file of more than MAX_PACKAGES packages is cut and says so", () => {
    const one = (i: number) => `Package: p${i}\nStatus: install ok installed\nVersion: 1.${i}\n`;
    const many = Array.from({ length: MAX_PACKAGES + 5 }, (_, i) => one(i)).join("\n");
    const inventory = parseDpkgStatus(many, debian);
    expect(inventory.packages).toHaveLength(MAX_PACKAGES);
    expect(inventory.truncated).toBe(true);
  });
});

describe("apk installed", () => {
  // osv-scalibr's apk extractor test expects these 15 (name, origin, version) from the same file
  const SCALIBR_EXPECTS = [
    ["alpine-baselayout", "alpine-baselayout", "3.4.3-r1"],
    ["alpine-baselayout-data", "alpine-baselayout", "3.4.3-r1"],
    ["alpine-keys", "alpine-keys", "2.4-r1"],
    ["apk-tools", "apk-tools", "2.14.0-r0"],
    ["busybox", "busybox", "1.36.0-r9"],
    ["busybox-binsh", "busybox", "1.36.0-r9"],
    ["ca-certificates-bundle", "ca-certificates", "20230506-r0"],
    ["libc-utils", "libc-dev", "0.7.2-r5"],
    ["libcrypto3", "openssl", "3.1.0-r4"],
    ["libssl3", "openssl", "3.1.0-r4"],
    ["musl", "musl", "1.2.4-r0"],
    ["musl-utils", "musl", "1.2.4-r0"],
    ["scanelf", "pax-utils", "1.3.7-r1"],
    ["ssl_client", "busybox", "1.36.0-r9"],
    ["zlib", "zlib", "1.2.13-r1"],
  ];
  test("alpine:3.18.0's database: each package with its origin, the one OSV's Alpine records name", () => {
    const inventory = parseApkInstalled(text("alpine-3.18-installed"), parseOsRelease(text("alpine-3.18-os-release")));
    expect(inventory.ecosystem).toBe("Alpine:v3.18");
    expect(inventory.truncated).toBe(false);
    expect(inventory.packages.map((p) => [p.name, p.queryName, p.version])).toEqual(SCALIBR_EXPECTS);
    expect(inventory.packages.every((p) => p.queryVersion === p.version)).toBe(true);
    expect(inventory.packages.find((p) => p.name === "libcrypto3")!.purl).toBe(
      "pkg:apk/alpine/libcrypto3@3.1.0-r4?distro=alpine-3.18.1",
    );
  });
  test("a package without an origin is asked about by its own name", () => {
    const inventory = parseApkInstalled("P:pkgname\nV:1.2.3\nA:x86_64\n", null);
    expect(inventory.packages.map((p) => [p.name, p.queryName])).toEqual([["pkgname", "pkgname"]]);
  });
});

describe("rpmdb.sqlite", () => {
  test("the packages of rpm's own database, epoch included, the public keys left out", () => {
    const inventory = parseRpmdbSqlite(fixture("rpmdb.sqlite"), parseOsRelease(text("rocky-os-release")));
    expect(inventory.ecosystem).toBe("Rocky Linux:9");
    expect(inventory.packages.map((p) => [p.name, p.version]).sort()).toEqual([
      ["openssl-libs", "1:3.0.7-27.el9"],
      ["zlib", "1.2.11-40.el9"],
    ]);
    expect(inventory.packages.find((p) => p.name === "zlib")!.purl).toBe(
      "pkg:rpm/rocky/zlib@1.2.11-40.el9?distro=rocky-9.4",
    );
  });
  test("a CBL-Mariner 2.0 image's database, left in WAL mode: every package, epochs kept", () => {
    const bytes = gunzipSync(fixture("mariner-2.0-rpmdb.sqlite.gz"));
    // rpm left it in WAL mode: the header's read and write versions are 2
    expect([bytes[18], bytes[19]]).toEqual([2, 2]);
    const inventory = parseRpmdbSqlite(bytes, null);
    expect(inventory.packages).toHaveLength(129);
    expect(inventory.truncated).toBe(false);
    // CBL-Mariner is no distribution svc knows an OSV ecosystem of
    expect(inventory.ecosystem).toBeNull();
    const versionOf = (name: string) => inventory.packages.find((p) => p.name === name)?.version;
    // go-rpmdb's own test reads curl 7.76.0, release 6.cm2, no epoch, from the same file
    expect(versionOf("curl")).toBe("7.76.0-6.cm2");
    expect(versionOf("openssl")).toBe("1.1.1k-7.cm2");
    expect(versionOf("glibc")).toBe("2.34-2.cm2");
    expect(versionOf("mariner-release")).toBe("2.0-4.cm2");
    expect(versionOf("ca-certificates-base")).toBe("1:2.0.0-1.cm2");
    expect(inventory.packages.find((p) => p.name === "curl")!.purl).toBe("pkg:rpm/unknown/curl@7.76.0-6.cm2");
  });
  test("a header blob that does not hold together is no package", () => {
    expect(parseRpmHeader(new Uint8Array(4))).toBeNull();
    // 0xffffffff entries announced in an 8-byte blob
    expect(parseRpmHeader(new Uint8Array([255, 255, 255, 255, 0, 0, 0, 0]))).toBeNull();
    // one entry whose data lies beyond the blob
    const lying = new Uint8Array(8 + 16);
    new DataView(lying.buffer).setUint32(0, 1);
    new DataView(lying.buffer).setUint32(4, 1000);
    expect(parseRpmHeader(lying)).toBeNull();
  });
  test("bytes that are no SQLite database throw", () => {
    expect(() => parseRpmdbSqlite(new TextEncoder().encode("not a database"), null)).toThrow();
  });
});
