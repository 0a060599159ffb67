/**
 * `bun run image` with SVC_IMAGE set (scripts/image.sh): one index on the sandbox registry for
 * linux/amd64 and linux/arm64. Each image holds the binary of its platform; the arm64 one runs
 * under qemu from the image's own files (the engine cannot run foreign containers here); the
 * amd64 one runs in the engine; svc's own check of a container from the index decides freshness
 * for its platform alone.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { docker, sandbox, uniqueName } from "../harness.ts";
import { type Descriptor, Repository } from "../integration/registry/shapes.ts";
import { expectState, makeUpdater, TEST_SCOPE } from "../integration/updater/support.ts";
import { expectedVersion, ROOT, run, tempDir } from "./helpers.ts";

setDefaultTimeout(120_000);

const repository = uniqueName("svc-multiarch");
const image = `${sandbox().registry}/${repository}:test`;
const container = uniqueName("svc-multiarch");
const ELF_MACHINE = { amd64: 0x3e, arm64: 0xb7 } as const;
let work: string;
let index: { mediaType: string; manifests: Descriptor[] };
/** the version the binaries were stamped with (a commit made during the build changes it) */
let versions: string[];

function platformEntry(arch: "amd64" | "arm64"): Descriptor {
  return index.manifests.find((m) => m.platform?.architecture === arch && m.platform.os === "linux")!;
}

/** The image's files, from its one layer in the registry. */
async function rootfsOf(arch: "amd64" | "arm64"): Promise<string> {
  const base = `http://${sandbox().registry}/v2/${repository}`;
  const entry = platformEntry(arch);
  const manifest = (await (
    await fetch(`${base}/manifests/${entry.digest}`, { headers: { Accept: entry.mediaType } })
  ).json()) as any;
  const dir = join(work, `rootfs-${arch}`);
  mkdirSync(dir, { recursive: true });
  for (const layer of manifest.layers) {
    const file = join(work, `layer-${arch}.tar`);
    writeFileSync(file, new Uint8Array(await (await fetch(`${base}/blobs/${layer.digest}`)).arrayBuffer()));
    const extracted = run(["tar", "-xf", file, "-C", dir]);
    if (extracted.code !== 0) throw new Error(`tar: ${extracted.stderr}`);
  }
  return dir;
}

beforeAll(async () => {
  work = tempDir("multiarch-image");
  const before = expectedVersion();
  const built = Bun.spawnSync(["bash", "scripts/image.sh"], {
    cwd: ROOT,
    env: {
      ...process.env,
      DOCKER_HOST: sandbox().dockerHost,
      DOCKER_CONFIG: sandbox().dockerConfig,
      SVC_IMAGE: image,
      SVC_IMAGE_OUT: join(work, "dist"),
    },
    stdout: "pipe",
    stderr: "pipe",
  });
  if (built.exitCode !== 0) throw new Error(`image.sh failed: ${built.stderr.toString()}`);
  versions = [...new Set([before, expectedVersion()])];
  const response = await fetch(`http://${sandbox().registry}/v2/${repository}/manifests/test`, {
    headers: {
      Accept: "application/vnd.oci.image.index.v1+json, application/vnd.docker.distribution.manifest.list.v2+json",
    },
  });
  index = (await response.json()) as typeof index;
}, 600_000);

afterAll(() => {
  docker(["rm", "-f", container], { allowFailure: true });
  const tags = (versions ?? []).flatMap((v) => ["amd64", "arm64"].map((arch) => `svc:${v.replace("+", "-")}-${arch}`));
  docker(["rmi", "-f", image, `${image}-amd64`, `${image}-arm64`, ...tags], { allowFailure: true });
  if (work) rmSync(work, { recursive: true, force: true });
}, 60_000);

test("one index holds linux/amd64 and linux/arm64", () => {
  expect(index.mediaType).toBeOneOf([
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
  ]);
  expect(index.manifests.map((m) => `${m.platform?.os}/${m.platform?.architecture}`).sort()).toEqual([
    "linux/amd64",
    "linux/arm64",
  ]);
});

describe.each(["amd64", "arm64"] as const)("the %s image", (arch) => {
  test("holds /svc built for its platform, beside its own loader and libc", async () => {
    const root = await rootfsOf(arch);
    const header = readFileSync(join(root, "svc")).subarray(0, 20);
    expect(header.subarray(0, 4).toString("latin1")).toBe("\x7fELF");
    expect(header.readUInt16LE(18)).toBe(ELF_MACHINE[arch]);
    const loader = arch === "amd64" ? "lib64/ld-linux-x86-64.so.2" : "lib/ld-linux-aarch64.so.1";
    expect(readFileSync(join(root, loader)).readUInt16LE(18)).toBe(ELF_MACHINE[arch]);
  });
});

test("the arm64 binary runs --version and healthcheck under qemu from the image's own files", async () => {
  const root = await rootfsOf("arm64");
  const env = { PATH: process.env.PATH!, SVC_POLL_INTERVAL: "1h" };
  const version = run(["qemu-aarch64-static", "-L", root, join(root, "svc"), "--version"], { env });
  expect(versions).toContain(version.stdout.trim());
  const health = run(["qemu-aarch64-static", "-L", root, join(root, "svc"), "healthcheck"], { env });
  expect(health.code).toBe(0);
});

test("the engine pulls this machine's image from the index and runs it", () => {
  expect(versions).toContain(
    docker(["run", "--rm", "--network", "none", "--pull", "always", image, "--version"]).stdout,
  );
});

test("svc's check of a container from the index: another platform's rebuild is not an update, ours is", async () => {
  const host = docker(["version", "--format", "{{.Server.Arch}}"]).stdout as "amd64" | "arm64";
  const other = host === "amd64" ? "arm64" : "amd64";
  docker(["create", "--name", container, "--network", "none", "-l", `svc.scope=${TEST_SCOPE}`, image, "--version"]);
  const h = await makeUpdater({ containers: [container], monitor_only: true, revive_stopped: true });
  expectState(await h.updater.run("api"), container, "fresh");

  const repo = new Repository(repository);
  const rebuilt = await repo.relabelled(platformEntry(other), `rebuilt-${other}`);
  await repo.putManifest("test", index.mediaType, { ...index, manifests: [platformEntry(host), rebuilt] });
  expectState(await h.updater.run("api"), container, "fresh");

  const ours = await repo.relabelled(platformEntry(host), `rebuilt-${host}`);
  await repo.putManifest("test", index.mediaType, { ...index, manifests: [ours, rebuilt] });
  expectState(await h.updater.run("api"), container, "stale");
});
