import { expect, test } from "bun:test";
import { knowsDigest, pickPlatform } from "../../../src/registry/check.ts";
import { parseReference } from "../../../src/registry/index.ts";
import { baseUrlOf, isLoopbackHost } from "../../../src/registry/transport.ts";

const entry = (digest: string, os: string, architecture: string, variant?: string) => ({
  digest,
  platform: { os, architecture, variant },
});
const index = [
  entry("amd64", "linux", "amd64"),
  entry("armv6", "linux", "arm", "v6"),
  entry("armv7", "linux", "arm", "v7"),
  entry("arm64", "linux", "arm64", "v8"),
  entry("win", "windows", "amd64"),
  entry("attestation", "unknown", "unknown"),
];

const table: [string, { os: string; architecture: string; variant?: string }, string | undefined][] = [
  ["amd64", { os: "linux", architecture: "amd64" }, "amd64"],
  ["x86_64 alias", { os: "linux", architecture: "x86_64" }, "amd64"],
  ["arm v7", { os: "linux", architecture: "arm", variant: "v7" }, "armv7"],
  ["arm v6", { os: "linux", architecture: "arm", variant: "v6" }, "armv6"],
  ["arm v5 has no entry", { os: "linux", architecture: "arm", variant: "v5" }, undefined],
  ["arm64 without variant matches v8", { os: "linux", architecture: "arm64" }, "arm64"],
  ["aarch64 alias", { os: "linux", architecture: "aarch64" }, "arm64"],
  ["windows", { os: "windows", architecture: "amd64" }, "win"],
  ["s390x has no entry", { os: "linux", architecture: "s390x" }, undefined],
];
for (const [name, platform, expected] of table) {
  test(`pickPlatform: ${name}`, () => {
    expect(pickPlatform(index, platform)?.digest).toBe(expected as string);
  });
}

test("pickPlatform: an entry without variant serves a variant that has no own entry", () => {
  expect(
    pickPlatform([entry("arm", "linux", "arm")], { os: "linux", architecture: "arm", variant: "v7" })?.digest,
  ).toBe("arm");
  expect(
    pickPlatform([entry("arm64v8", "linux", "arm64", "v8")], { os: "linux", architecture: "arm64", variant: "v8" })
      ?.digest,
  ).toBe("arm64v8");
});

test("knowsDigest compares repository and digest of RepoDigests", () => {
  const d = `sha256:${"b".repeat(64)}`;
  const other = `sha256:${"c".repeat(64)}`;
  const nginx = parseReference("docker.io/library/nginx:1.27");
  expect(knowsDigest({ id: "x", repoDigests: [`nginx@${d}`] }, nginx, d)).toBe(true);
  expect(knowsDigest({ id: "x", repoDigests: [`nginx@${d}`] }, nginx, other)).toBe(false);
  expect(knowsDigest({ id: "x", repoDigests: [`mirror.example.com/library/nginx@${d}`] }, nginx, d)).toBe(false);
  expect(knowsDigest({ id: "x", repoDigests: ["garbage", `Bad@${d}`] }, nginx, d)).toBe(false);
  const local = parseReference("127.0.0.1:5000/app:latest");
  expect(knowsDigest({ id: "x", repoDigests: [`127.0.0.1:5000/app@${d}`] }, local, d)).toBe(true);
});

test("plain HTTP only for loopback and configured insecure hosts", () => {
  for (const host of ["127.0.0.1:5000", "127.1.2.3", "localhost:5000", "localhost", "[::1]:5000"])
    expect(isLoopbackHost(host)).toBe(true);
  for (const host of ["128.0.0.1", "ghcr.io", "localhost.example.com", "10.0.0.1:5000", "127.0.0.1.nip.io"])
    expect(isLoopbackHost(host)).toBe(false);
  expect(baseUrlOf("127.0.0.1:5000", [])).toBe("http://127.0.0.1:5000");
  expect(baseUrlOf("docker.io", [])).toBe("https://registry-1.docker.io");
  expect(baseUrlOf("ghcr.io", [])).toBe("https://ghcr.io");
  expect(baseUrlOf("10.0.0.5:5000", [])).toBe("https://10.0.0.5:5000");
  expect(baseUrlOf("10.0.0.5:5000", ["10.0.0.5:5000"])).toBe("http://10.0.0.5:5000");
  expect(baseUrlOf("10.0.0.5:5000", ["10.0.0.5"])).toBe("http://10.0.0.5:5000");
  expect(baseUrlOf("10.0.0.5:5000", ["10.0.0.6"])).toBe("https://10.0.0.5:5000");
  expect(baseUrlOf("registry.lan", ["http://registry.lan/"])).toBe("http://registry.lan");
});
