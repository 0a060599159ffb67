/**
 * Multi-arch images as users pull them (an OCI index or a Docker manifest list, each with
 * attestation entries), on whichever image store the sandbox engine uses. An index that changes
 * only for another platform or only in its attestations leaves the container alone: `fresh`, no
 * pull, no restart. A change of our platform's image is an update.
 */
import { afterAll, describe, expect, test } from "bun:test";
import type { Platform } from "../../../src/engine/port.ts";
import { type Descriptor, Repository } from "../registry/shapes.ts";
import { docker, entryOf, expectState, Fixture, inspect, makeUpdater } from "./support.ts";

const fx = new Fixture();
afterAll(() => fx.cleanup(), 120_000);

const host = docker(["version", "--format", "{{.Server.Arch}}"]).stdout;
const ours: Platform = { os: "linux", architecture: host };
const theirs: Platform =
  host === "arm64" ? { os: "linux", architecture: "amd64" } : { os: "linux", architecture: "arm64", variant: "v8" };

async function withAttestations(repo: Repository, images: Descriptor[]): Promise<Descriptor[]> {
  const attestations: Descriptor[] = [];
  for (const image of images) attestations.push(await repo.sbomAttestation(image, {}));
  return [...images, ...attestations];
}

for (const kind of ["oci", "docker"] as const) {
  describe(`a ${kind === "oci" ? "multi-arch OCI index" : "Docker manifest list"} with attestations`, () => {
    test("changed for another platform or in its attestations: fresh, no pull; changed for ours: updated", async () => {
      const repo = new Repository(fx.name(`ma-${kind}`));
      const dockerMediaTypes = kind === "docker";
      const ourImage = await repo.platformImage(ours, { dockerMediaTypes });
      const theirImage = await repo.platformImage(theirs, { dockerMediaTypes });
      const first = await repo.pushIndex("latest", await withAttestations(repo, [ourImage, theirImage]), kind);
      repo.removeLocal();
      docker(["pull", "-q", `${repo.reference}:latest`]);
      const app = fx.run(`ma-${kind}`, `${repo.reference}:latest`);
      const before = inspect(app);

      // another platform rebuilt and its attestations re-pushed: a new index digest
      const theirRebuild = await repo.platformImage(theirs, { dockerMediaTypes });
      const second = await repo.pushIndex("latest", await withAttestations(repo, [ourImage, theirRebuild]), kind);
      expect(second).not.toBe(first);
      const h = await makeUpdater({ containers: [app] });
      let report = await h.updater.run("api");
      expectState(report, app, "fresh");
      expect(inspect(app).Id).toBe(before.Id);
      expect(h.audit.entries.map((e) => e.action)).toEqual([]);

      // attestations alone re-pushed; and monitor_only sees nothing stale either
      await repo.pushIndex("latest", await withAttestations(repo, [ourImage, theirRebuild]), kind);
      const monitor = await makeUpdater({ containers: [app], monitor_only: true });
      expectState(await monitor.updater.run("api"), app, "fresh");
      report = await h.updater.run("api");
      expectState(report, app, "fresh");
      expect(h.audit.entries.map((e) => e.action)).toEqual([]);

      // our platform's image changes
      const ourRebuild = await repo.platformImage(ours, { dockerMediaTypes });
      const third = await repo.pushIndex("latest", await withAttestations(repo, [ourRebuild, theirRebuild]), kind);
      repo.removeLocal();
      report = await h.updater.run("api");
      const entry = expectState(report, app, "updated");
      expect(entry.new_digest).toBe(third);
      const after = inspect(app);
      expect(after.Id).not.toBe(before.Id);
      expect(after.Image).toBe(entryOf(report, app).new_image_id);
      expect(h.audit.entries.filter((e) => e.container === app).map((e) => e.action)).toEqual([
        "pull",
        "rename",
        "stop",
        "create",
        "start",
        "remove",
      ]);
    }, 120_000);
  });
}

test("a single-platform image pushed as it is (OCI manifest from the containerd store, Docker's from the classic): fresh, then updated", async () => {
  const repo = new Repository(fx.name("single"));
  const v1 = fx.image("single");
  const app = fx.run("single", v1.ref);
  const h = await makeUpdater({ containers: [app] });
  expectState(await h.updater.run("api"), app, "fresh");
  expect(h.audit.entries).toEqual([]);
  expect((await repo.describe("latest")).mediaType).toBe(
    docker(["info", "--format", "{{.DriverStatus}}"]).stdout.includes("io.containerd.snapshotter")
      ? "application/vnd.oci.image.manifest.v1+json"
      : "application/vnd.docker.distribution.manifest.v2+json",
  );
  const v2 = fx.image("single");
  const entry = expectState(await h.updater.run("api"), app, "updated");
  expect(entry.new_digest).toBe(v2.digest);
}, 60_000);
