/**
 * Debian images for the vulnerabilities' tests: the busybox root file system plus Debian's
 * os-release and a dpkg status file as dpkg writes it, imported on the sandbox engine and pushed
 * to its registry; and a record made for the tests that the newer openssl brings in.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { serviceTimeZone, wallClock } from "../../../src/config/window.ts";
import { docker, importImage, sandbox } from "../../harness.ts";
import type { OsvRecordFixture } from "../../support/osv.ts";

const dirs: string[] = [];

export const OPENSSL_CRITICAL: OsvRecordFixture = {
  id: "DEBIAN-CVE-2099-0002",
  modified: "2099-01-01T00:00:00Z",
  summary: "openssl: a flaw the newer version brings in (made for the tests)",
  aliases: ["CVE-2099-0002"],
  severity: [{ type: "CVSS_V3", score: "CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:H/A:H" }],
  affected: [
    {
      package: { ecosystem: "Debian:12", name: "openssl" },
      ranges: [{ type: "ECOSYSTEM", events: [{ introduced: "3.0.21-1" }, { fixed: "3.0.22-1" }] }],
    },
  ],
};

const OS_RELEASE =
  'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nID=debian\nVERSION_ID="12"\nVERSION_CODENAME=bookworm\n';

/** A dpkg status file as dpkg writes it, for libc6 (source glibc) and libssl3 (source openssl). */
export function dpkgStatus(glibc: string, openssl: string): string {
  const paragraph = (name: string, source: string, version: string) =>
    [
      `Package: ${name}`,
      "Status: install ok installed",
      "Priority: optional",
      "Section: libs",
      "Installed-Size: 2000",
      "Maintainer: Debian <debian@example.org>",
      "Architecture: amd64",
      "Multi-Arch: same",
      `Source: ${source}`,
      `Version: ${version}`,
      `Description: ${name} for the tests`,
      " a continuation line, as dpkg keeps descriptions",
    ].join("\n");
  return `${paragraph("libc6", "glibc", glibc)}\n\n${paragraph("libssl3", "openssl", openssl)}\n`;
}

/** The busybox root file system plus os-release and the status file, imported and pushed as `ref`. */
export function debianImage(ref: string, status: string): string {
  return distroImage(ref, { "etc/os-release": OS_RELEASE, "var/lib/dpkg/status": status });
}

/** The busybox root file system plus `files` (path in the image, without the leading slash: content), imported and pushed as `ref`. */
export function distroImage(ref: string, files: Record<string, string | Uint8Array>): string {
  const dir = mkdtempSync(join(tmpdir(), "svc-vulns-"));
  dirs.push(dir);
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, "root", path)), { recursive: true });
    writeFileSync(join(dir, "root", path), content);
  }
  const tar = join(dir, "rootfs.tar");
  execFileSync("cp", [sandbox().rootfs, tar]);
  execFileSync("tar", ["-C", join(dir, "root"), "-rf", tar, ...Object.keys(files).map((path) => `./${path}`)]);
  const id = importImage(ref, ['CMD ["/bin/sleep","3600"]', `LABEL svc.test.build=${dir}`], {
    socketPath: sandbox().socketPath,
    rootfs: tar,
  });
  docker(["push", "-q", ref]);
  return id;
}

/** The folders distroImage built in. */
export function removeBuildDirs(): void {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
}

/** An update window closed now: from an hour ahead for an hour, on the wall clock svc reads windows in. */
export function closedWindow(now = Date.now()): string {
  const hhmm = (at: number) => {
    const { minute } = wallClock(at, serviceTimeZone());
    return `${String(Math.floor(minute / 60)).padStart(2, "0")}:${String(minute % 60).padStart(2, "0")}`;
  };
  return `${hhmm(now + 3_600_000)}-${hhmm(now + 7_200_000)}`;
}
