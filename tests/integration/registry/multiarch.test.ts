/**
 * Multi-arch images: an OCI index with two platform manifests, pushed to the sandbox's plain
 * registry by hand. Only a change of OUR platform's entry makes the image stale.
 */
import { afterAll, expect, test } from "bun:test";
import { defaultConfig } from "../../../src/config/index.ts";
import type { Platform } from "../../../src/engine/port.ts";
import { createRegistry, parseReference } from "../../../src/registry/index.ts";
import { buildImage, docker, sandbox, uniqueName } from "../../harness.ts";
import { recordingLogger } from "../../support/logger.ts";
import { startProxy } from "./support.ts";

const repository = uniqueName("reg-multiarch");
const base = `http://${sandbox().registry}/v2/${repository}/manifests`;
const built: string[] = [];
afterAll(() => {
  if (built.length) docker(["rmi", "-f", ...built], { allowFailure: true });
});

/** Builds and pushes a single-platform image under `tag`; returns its image ID and manifest descriptor. */
async function platformImage(tag: string, platform: Platform) {
  const reference = `${sandbox().registry}/${repository}:${tag}`;
  const { digest } = buildImage(reference);
  built.push(reference);
  // OCI from the containerd image store, Docker's media type from the classic one
  const accept = "application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json";
  const response = await fetch(`${base}/${digest}`, { headers: { Accept: accept } });
  const bytes = await response.arrayBuffer();
  const mediaType = response.headers.get("content-type")!;
  // the image id a classic-store engine gives it after a pull: its config digest
  const id = (JSON.parse(new TextDecoder().decode(bytes)) as { config: { digest: string } }).config.digest;
  return { id, descriptor: { mediaType, digest: digest!, size: bytes.byteLength, platform } };
}

/** PUTs an OCI index under `latest`; returns its digest. */
async function pushIndex(descriptors: unknown[]): Promise<string> {
  const body = JSON.stringify({
    schemaVersion: 2,
    mediaType: "application/vnd.oci.image.index.v1+json",
    manifests: descriptors,
  });
  const response = await fetch(`${base}/latest`, {
    method: "PUT",
    headers: { "Content-Type": "application/vnd.oci.image.index.v1+json" },
    body,
  });
  if (response.status !== 201) throw new Error(`index PUT answered ${response.status}: ${await response.text()}`);
  return response.headers.get("docker-content-digest")!;
}

test("an index change on another platform is not an update; a change on ours is", async () => {
  const ours: Platform = { os: "linux", architecture: "amd64" };
  const theirs: Platform = { os: "linux", architecture: "arm64", variant: "v8" };
  const amd64 = await platformImage("amd64", ours);
  const arm64 = await platformImage("arm64", theirs);
  const firstIndex = await pushIndex([amd64.descriptor, arm64.descriptor]);

  // The local image as the engine has it after pulling `latest` on amd64: the platform image's
  // config digest as ID, the index digest as RepoDigest.
  const local = { id: amd64.id, repoDigests: [`${sandbox().registry}/${repository}@${firstIndex}`] };
  const ref = parseReference(`${sandbox().registry}/${repository}:latest`);
  let platformAsked = 0;
  const platform = async () => {
    platformAsked++;
    return ours;
  };
  const registry = createRegistry(defaultConfig(), recordingLogger());

  expect(await registry.session().check(ref, local, platform)).toEqual({ stale: false, digest: firstIndex });
  expect(platformAsked).toBe(0);

  const newArm64 = await platformImage("arm64", theirs);
  const secondIndex = await pushIndex([amd64.descriptor, newArm64.descriptor]);
  expect(await registry.session().check(ref, local, platform)).toEqual({ stale: false, digest: secondIndex });
  expect(platformAsked).toBe(1);

  const newAmd64 = await platformImage("amd64", ours);
  const thirdIndex = await pushIndex([newAmd64.descriptor, newArm64.descriptor]);
  expect(await registry.session().check(ref, local, platform)).toEqual({ stale: true, digest: thirdIndex });

  // The arm64 host running the old arm64 image sees its own change.
  const armLocal = { id: arm64.id, repoDigests: [`${sandbox().registry}/${repository}@${firstIndex}`] };
  expect((await registry.session().check(ref, armLocal, async () => theirs)).stale).toBe(true);
  // A platform the index does not have is a registry error for that container.
  const error = await registry
    .session()
    .check(ref, local, async () => ({ os: "linux", architecture: "s390x" }))
    .catch((e) => e);
  expect(error.kind).toBe("registry");
  expect(error.message).toContain("linux/s390x");
});

test("an image store that keeps platform manifests (containerd) decides by our manifest digest: HEAD and the index, never the platform manifest", async () => {
  const ours: Platform = { os: "linux", architecture: "amd64" };
  const theirs: Platform = { os: "linux", architecture: "arm64", variant: "v8" };
  const amd64 = await platformImage("cd-amd64", ours);
  const arm64 = await platformImage("cd-arm64", theirs);
  const firstIndex = await pushIndex([amd64.descriptor, arm64.descriptor]);
  // as the containerd store lists it: the id is the index digest, its platform manifests beside
  const local = {
    id: firstIndex,
    repoDigests: [],
    manifestDigests: [amd64.descriptor.digest, arm64.descriptor.digest],
  };
  const proxy = startProxy(sandbox().registry);
  try {
    const ref = parseReference(`${proxy.host}/${repository}:latest`);
    const registry = createRegistry(defaultConfig(), recordingLogger());
    expect(await registry.session().check(ref, local, async () => ours)).toEqual({ stale: false, digest: firstIndex });
    const manifestRequests = () => proxy.requests.filter((r) => r.includes("/manifests/"));
    expect(manifestRequests()).toEqual([`HEAD /v2/${repository}/manifests/latest`]);

    const newArm64 = await platformImage("cd-arm64", theirs);
    const secondIndex = await pushIndex([amd64.descriptor, newArm64.descriptor]);
    proxy.requests.length = 0;
    expect(await registry.session().check(ref, local, async () => ours)).toEqual({ stale: false, digest: secondIndex });
    expect(manifestRequests()).toEqual([
      `HEAD /v2/${repository}/manifests/latest`,
      `GET /v2/${repository}/manifests/${secondIndex}`,
    ]);

    const newAmd64 = await platformImage("cd-amd64", ours);
    await pushIndex([newAmd64.descriptor, newArm64.descriptor]);
    expect((await registry.session().check(ref, local, async () => ours)).stale).toBe(true);
  } finally {
    proxy.stop();
  }
});
