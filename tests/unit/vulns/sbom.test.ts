/**
 * SBOMs as publishers attach them: package URLs as syft writes them for dpkg, apk and rpm (the
 * source package in `upstream`, rpm's epoch as a qualifier, the distribution in `distro`), in an
 * SPDX document bare or as an in-toto statement's predicate, or in a CycloneDX document.
 */
import { describe, expect, test } from "bun:test";
import { parsePurl, sbomInventory, sbomPurls } from "../../../src/vulns/sbom.ts";

const bytes = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));

describe("package URLs", () => {
  test("the purl spec's parts, %-escapes decoded", () => {
    const purl = parsePurl("pkg:deb/debian/libc6@2.36-9%2Bdeb12u1?arch=amd64&upstream=glibc&distro=debian-12")!;
    expect([purl.type, purl.namespace, purl.name, purl.version]).toEqual(["deb", "debian", "libc6", "2.36-9+deb12u1"]);
    expect(Object.fromEntries(purl.qualifiers)).toEqual({ arch: "amd64", upstream: "glibc", distro: "debian-12" });
    expect(parsePurl("pkg:golang/golang.org/x/net@v0.20.0")?.namespace).toBe("golang.org/x");
    expect(parsePurl("not a purl")).toBeNull();
    expect(parsePurl("pkg:deb/debian/x@1%zz")).toBeNull();
  });

  test("dpkg: the source package and its own version from `upstream`", () => {
    const inventory = sbomInventory([
      "pkg:deb/debian/libc6@2.36-9%2Bdeb12u1?arch=amd64&upstream=glibc&distro=debian-12",
      "pkg:deb/debian/libssl3@3.0.15-1~deb12u1?upstream=openssl%403.0.15-1~deb12u1&distro=debian-12",
      "pkg:deb/debian/bash@5.2.15-2%2Bb2?upstream=bash%405.2.15-2&distro=debian-12",
      "pkg:golang/golang.org/x/net@v0.20.0",
    ])!;
    expect(inventory.ecosystem).toBe("Debian:12");
    expect(inventory.packages.map((p) => [p.name, p.queryName, p.queryVersion])).toEqual([
      ["libc6", "glibc", "2.36-9+deb12u1"],
      ["libssl3", "openssl", "3.0.15-1~deb12u1"],
      ["bash", "bash", "5.2.15-2"],
    ]);
  });

  test("apk's origin, rpm's epoch, Ubuntu's LTS releases", () => {
    const apk = sbomInventory([
      "pkg:apk/alpine/libcrypto3@3.3.2-r0?arch=x86_64&upstream=openssl&distro=alpine-3.20.3",
    ])!;
    expect([apk.ecosystem, apk.packages[0]!.queryName]).toEqual(["Alpine:v3.20", "openssl"]);
    const rpm = sbomInventory([
      "pkg:rpm/rocky/openssl-libs@3.0.7-25.el9_3?arch=x86_64&epoch=1&upstream=openssl-3.0.7-25.el9_3.src.rpm&distro=rocky-9.3",
    ])!;
    expect([rpm.ecosystem, rpm.packages[0]!.queryName, rpm.packages[0]!.queryVersion]).toEqual([
      "Rocky Linux:9",
      "openssl-libs",
      "1:3.0.7-25.el9_3",
    ]);
    const lts = sbomInventory(["pkg:deb/ubuntu/libc6@2.35-0ubuntu3.8?upstream=glibc&distro=ubuntu-22.04"])!;
    expect(lts.ecosystem).toBe("Ubuntu:22.04:LTS");
    expect(sbomInventory(["pkg:deb/ubuntu/libc6@2.38-1ubuntu6?distro=ubuntu-23.10"])!.ecosystem).toBe("Ubuntu:23.10");
    // a language-only SBOM is no inventory: the engine's way is taken
    expect(sbomInventory(["pkg:npm/left-pad@1.3.0"])).toBeNull();
  });
});

describe("documents", () => {
  const purl = "pkg:deb/debian/libc6@2.36-9?upstream=glibc&distro=debian-12";
  const document = {
    spdxVersion: "SPDX-2.3",
    packages: [
      { externalRefs: [{ referenceCategory: "PACKAGE-MANAGER", referenceType: "purl", referenceLocator: purl }] },
    ],
  };

  test("SPDX, bare or as an in-toto statement's predicate", () => {
    expect(sbomPurls(bytes(document))).toEqual([purl]);
    const statement = {
      _type: "https://in-toto.io/Statement/v1",
      predicateType: "https://spdx.dev/Document",
      subject: [{ name: "pkg:docker/x@latest", digest: { sha256: "0".repeat(64) } }],
      predicate: document,
    };
    expect(sbomPurls(bytes(statement))).toEqual([purl]);
  });

  test("CycloneDX, nested components included", () => {
    const cyclone = {
      bomFormat: "CycloneDX",
      specVersion: "1.6",
      components: [{ purl, components: [{ purl: "pkg:npm/a@1.0.0" }] }],
    };
    expect(sbomPurls(bytes(cyclone))).toEqual([purl, "pkg:npm/a@1.0.0"]);
  });

  test("anything else is no SBOM", () => {
    expect(sbomPurls(bytes({ _type: "https://in-toto.io/Statement/v0.1", predicateType: "x" }))).toBeNull();
    expect(sbomPurls(new TextEncoder().encode("{not json"))).toBeNull();
    expect(sbomPurls(bytes({ spdxVersion: "SPDX-2.3", packages: "many" }))).toBeNull();
  });
});
