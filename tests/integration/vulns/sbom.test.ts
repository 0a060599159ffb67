/**
 * What an image holds, from the SBOM its publisher attached in the registry before the engine's
 * way (docs/vulnerabilities.md): an index with an SBOM attestation as BuildKit writes it
 * (tests/integration/registry/shapes.ts, sbomAttestation, from BuildKit's
 * exporter/containerimage/writer.go), and an SPDX document attached as an OCI referrer (the
 * sandbox's registry has no referrers API: the referrers tag schema), both pushed to the
 * sandbox's registry; and an SPDX document found through the OCI referrers API, on a loopback
 * registry that has one (tests/support/referrers-registry.ts). The images are busybox alone: no
 * package database, so a diff can only come from the SBOMs; an image without one is read through
 * the engine, as before. A monitor-only container and one waiting for its window get their diff
 * from the SBOMs too, with nothing pulled.
 */
import { afterAll, expect, test } from "bun:test";
import type { Platform } from "../../../src/engine/port.ts";
import { sandbox } from "../../harness.ts";
import type { RunOptions } from "../../support/fixture.ts";
import { DEBIAN_RECORDS, startOsvStandIn } from "../../support/osv.ts";
import { type ReferrersRegistry, referrersRegistry } from "../../support/referrers-registry.ts";
import { type Descriptor, Repository, spdxArtifact } from "../registry/shapes.ts";
import { docker, entryOf, expectState, Fixture, makeUpdater } from "../updater/support.ts";
import { closedWindow } from "./support.ts";

const fx = new Fixture();
const osv = startOsvStandIn(DEBIAN_RECORDS);
afterAll(() => {
  osv.stop();
  fx.cleanup();
}, 120_000);

const ours: Platform = { os: "linux", architecture: docker(["version", "--format", "{{.Server.Arch}}"]).stdout };

/**
 * An SPDX 2.3 document as buildkit-syft-scanner writes one for a Debian 12 image: each package
 * with its CPE and its package URL (the source package in `upstream`, `+` escaped), a Go module
 * (a language package: not read), and the document's own root package with no package URL.
 */
function spdx(glibc: string): unknown {
  const deb = (name: string, version: string, source: string) => ({
    name,
    SPDXID: `SPDXRef-Package-deb-${name}`,
    versionInfo: version,
    downloadLocation: "NOASSERTION",
    filesAnalyzed: false,
    sourceInfo: "acquired package info from DPKG DB: /var/lib/dpkg/status",
    licenseConcluded: "NOASSERTION",
    copyrightText: "NOASSERTION",
    externalRefs: [
      {
        referenceCategory: "SECURITY",
        referenceType: "cpe23Type",
        referenceLocator: `cpe:2.3:a:${name}:${name}:${version}:*:*:*:*:*:*:*`,
      },
      {
        referenceCategory: "PACKAGE-MANAGER",
        referenceType: "purl",
        referenceLocator: `pkg:deb/debian/${name}@${encodeURIComponent(version)}?arch=amd64&upstream=${source}&distro=debian-12`,
      },
    ],
  });
  return {
    spdxVersion: "SPDX-2.3",
    dataLicense: "CC0-1.0",
    SPDXID: "SPDXRef-DOCUMENT",
    name: "sbom",
    documentNamespace: `https://docker.com/docker/sbom-${glibc}`,
    creationInfo: { creators: ["Organization: Anchore, Inc", "Tool: syft-v1.20.0"], created: "2026-01-01T00:00:00Z" },
    packages: [
      { name: "/", SPDXID: "SPDXRef-DocumentRoot-Directory-", downloadLocation: "NOASSERTION", filesAnalyzed: false },
      deb("libc6", glibc, "glibc"),
      deb("libssl3", "3.0.15-1~deb12u1", "openssl"),
      {
        name: "golang.org/x/net",
        SPDXID: "SPDXRef-Package-go-module-golang.org-x-net",
        versionInfo: "v0.20.0",
        downloadLocation: "NOASSERTION",
        externalRefs: [
          {
            referenceCategory: "PACKAGE-MANAGER",
            referenceType: "purl",
            referenceLocator: "pkg:golang/golang.org/x/net@v0.20.0",
          },
        ],
      },
    ],
  };
}

const on = { vulnerabilities: { enabled: true, osv_url: osv.url, timeout: 10_000 } };

/** A running container of `repo:latest`, pulled as a user pulls it. */
function runLatest(repo: Repository, what: string, options: RunOptions = {}): string {
  repo.removeLocal();
  docker(["pull", "-q", `${repo.reference}:latest`]);
  return fx.run(what, `${repo.reference}:latest`, options);
}

/** `repo:latest` as BuildKit pushes it with `--sbom=true`: an index of our platform's image and its SBOM attestation. */
async function withSbomOf(repo: Repository, glibc: string): Promise<string> {
  const image = await repo.platformImage(ours);
  return repo.pushIndex("latest", [image, await repo.sbomAttestation(image, spdx(glibc))]);
}

test("an index with BuildKit's SBOM attestation: both images' packages from it; without one, the engine's way", async () => {
  const repo = new Repository(fx.name("sbom-index"));
  const withSbom = (glibc: string) => withSbomOf(repo, glibc);
  await withSbom("2.36-9+deb12u1");
  const app = runLatest(repo, "sbom-index");
  await withSbom("2.36-9+deb12u4");

  const h = await makeUpdater({ containers: [app], ...on });
  const report = await h.updater.run("api", undefined, { dryRun: true });
  const diff = entryOf(report, app).vulnerabilities!;
  expect(diff.problem).toBeNull();
  expect(diff.read_from).toBe("sbom");
  expect(diff.fixed.map((e) => [e.id, e.package, e.version, e.fixed_version])).toEqual([
    ["DSA-5514-1", "glibc", "2.36-9+deb12u1", "2.36-9+deb12u3"],
  ]);
  expect(diff.counts).toEqual({ fixed: 1, introduced: 0, still_open: 0 });
  // the language package is not asked about: libc6 and libssl3 of both images, three distinct
  expect(osv.batchSizes.at(-1)).toBe(3);

  // a newer index without an attestation: read through the engine (busybox has no package database)
  await repo.pushIndex("latest", [await repo.platformImage(ours)]);
  repo.removeLocal();
  const updated = expectState(await h.updater.run("run_once"), app, "updated");
  expect(updated.vulnerabilities?.read_from).toBeUndefined();
  expect(updated.vulnerabilities?.problem).toContain("no package database");
}, 240_000);

test("an SPDX document attached as an OCI referrer of a single-platform image", async () => {
  const repo = new Repository(fx.name("sbom-referrer"));
  const latest = async (glibc: string) => {
    const image = await repo.platformImage(ours);
    await repo.putManifest("latest", image.mediaType, await repo.manifestBody(image.digest, image.mediaType));
    await repo.sbomReferrer(image, spdx(glibc));
  };
  await latest("2.36-9+deb12u1");
  const app = runLatest(repo, "sbom-referrer");
  await latest("2.36-9+deb12u4");

  const h = await makeUpdater({ containers: [app], ...on });
  const diff = entryOf(await h.updater.run("api", undefined, { dryRun: true }), app).vulnerabilities!;
  expect(diff.problem).toBeNull();
  expect(diff.read_from).toBe("sbom");
  expect(diff.fixed.map((e) => e.id)).toEqual(["DSA-5514-1"]);
}, 240_000);

test("monitor-only, and waiting for its window: the diff from both images' SBOMs, with nothing pulled", async () => {
  const repo = new Repository(fx.name("sbom-idle"));
  await withSbomOf(repo, "2.36-9+deb12u1");
  const watched = runLatest(repo, "sbom-watched", { labels: { "svc.monitor_only": "true" } });
  const waiting = fx.run("sbom-waiting", `${repo.reference}:latest`, {
    labels: { "svc.update_window": closedWindow() },
  });
  const newer = await withSbomOf(repo, "2.36-9+deb12u4");
  repo.removeLocal();

  // pre_pull off: nothing pulls the newer image, so only the SBOMs can give the diff
  const h = await makeUpdater({ containers: [watched, waiting], pre_pull: false, ...on });
  const report = await h.updater.run("schedule");
  expectState(report, watched, "stale");
  expectState(report, waiting, "pending");
  const seen = (await h.updater.overview())!.containers;
  for (const name of [watched, waiting]) {
    const diff = entryOf(report, name).vulnerabilities!;
    expect(diff.problem, name).toBeNull();
    expect(diff.read_from, name).toBe("sbom");
    expect(
      diff.fixed.map((e) => e.id),
      name,
    ).toEqual(["DSA-5514-1"]);
    // GET /v1/containers answers the same diff
    expect(
      seen.find((c) => c.name === name)?.vulnerabilities?.fixed.map((e) => e.id),
      name,
    ).toEqual(["DSA-5514-1"]);
  }
  expect(h.audit.entries.filter((e) => e.action === "pull")).toEqual([]);
  expect(docker(["image", "inspect", `${repo.reference}@${newer}`], { allowFailure: true }).code).not.toBe(0);
  // one batch for both containers: libc6 and libssl3 of both images, three distinct
  expect(osv.batchSizes.at(-1)).toBe(3);
}, 240_000);

/**
 * `repository:latest` on the referrers registry: the image `descriptor` names (built on the
 * sandbox's registry) copied there, config and layers, so that the engine can pull it; and the
 * SPDX document `document` attached to it as an OCI 1.1 artifact. The image's digest there.
 */
async function onReferrersRegistry(
  registry: ReferrersRegistry,
  repository: string,
  from: Repository,
  descriptor: Descriptor,
  document: unknown,
): Promise<string> {
  const manifest = (await from.manifestBody(descriptor.digest, descriptor.mediaType)) as {
    config: { digest: string };
    layers: { digest: string }[];
  };
  for (const blob of [manifest.config, ...manifest.layers])
    registry.blob(repository, await from.blobBytes(blob.digest));
  const image = registry.manifest(repository, manifest, "latest");
  const layer = registry.blob(repository, JSON.stringify(document));
  const empty = registry.blob(repository, "{}");
  registry.manifest(repository, spdxArtifact(image, layer, empty));
  return image.digest;
}

/**
 * `docker pull`, not waited for synchronously: the referrers registry answers from this process,
 * so the test's own event loop must keep running while the engine pulls from it.
 */
async function pullAsUser(reference: string): Promise<void> {
  const proc = Bun.spawn(["docker", "-H", sandbox().dockerHost, "pull", "-q", reference], {
    env: { ...process.env, DOCKER_CONFIG: sandbox().dockerConfig },
    stdout: "ignore",
    stderr: "pipe",
  });
  const stderr = await new Response(proc.stderr).text();
  if ((await proc.exited) !== 0) throw new Error(`docker pull ${reference}: ${stderr}`);
}

test("an SPDX document found through the registry's OCI referrers API gives the diff", async () => {
  const registry = referrersRegistry();
  try {
    const source = new Repository(fx.name("sbom-source"));
    const repository = fx.name("sbom-api");
    const reference = `${registry.host}/${repository}:latest`;
    const old = await onReferrersRegistry(
      registry,
      repository,
      source,
      await source.platformImage(ours),
      spdx("2.36-9+deb12u1"),
    );
    await pullAsUser(reference);
    const app = fx.run("sbom-api", reference);
    const newer = await onReferrersRegistry(
      registry,
      repository,
      source,
      await source.platformImage(ours),
      spdx("2.36-9+deb12u4"),
    );
    source.removeLocal();

    const h = await makeUpdater({ containers: [app], ...on });
    registry.seen.length = 0;
    const report = await h.updater.run("api", undefined, { dryRun: true });
    const diff = entryOf(report, app).vulnerabilities!;
    expect(diff.problem).toBeNull();
    expect(diff.read_from).toBe("sbom");
    expect(diff.fixed.map((e) => [e.id, e.package, e.version])).toEqual([["DSA-5514-1", "glibc", "2.36-9+deb12u1"]]);
    // both images' referrers through the API; the referrers tag schema's `sha256-<hex>` never asked
    for (const digest of [old, newer]) expect(registry.seen).toContain(`/v2/${repository}/referrers/${digest}`);
    // (a cosign signature's `sha256-<hex>.sig` is the signature check's)
    expect(registry.seen.filter((path) => /\/manifests\/sha256-[0-9a-f]{64}$/.test(path))).toEqual([]);
  } finally {
    registry.stop();
  }
}, 240_000);
