/** What the vulnerabilities' diff costs the engine and OSV, against a loopback OSV stand-in. */
import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { DEBIAN_RECORDS, startOsvStandIn } from "../../tests/support/osv.ts";
import {
  buildImage,
  registry,
  removeAllContainers,
  runContainers,
  SANDBOX_ENV,
  socketPath,
  startSvc,
  TOKEN,
  WORK,
} from "../harness.ts";
import { countingEngineProxy, freePort, stop } from "../lib.ts";
import { record } from "../results.ts";

const OS_RELEASE = 'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nID=debian\nVERSION_ID="12"\n';

/** A dpkg status of three packages: glibc's (the version given), openssl's, and one of the image's own. */
function status(i: number, glibc: string): string {
  const paragraph = (name: string, source: string, version: string) =>
    `Package: ${name}\nStatus: install ok installed\nSource: ${source}\nVersion: ${version}\n`;
  return [
    paragraph("libc6", "glibc", glibc),
    paragraph("libssl3", "openssl", "3.0.15-1~deb12u1"),
    paragraph(`app${i}`, `app${i}`, "1.0-1"),
  ].join("\n");
}

/** The busybox root file system plus os-release and a dpkg status, imported and pushed as `reference`. */
async function debianImage(reference: string, i: number, glibc: string): Promise<void> {
  const dir = join(WORK, `vulns-${i}-${glibc}`);
  mkdirSync(join(dir, "root/etc"), { recursive: true });
  mkdirSync(join(dir, "root/var/lib/dpkg"), { recursive: true });
  writeFileSync(join(dir, "root/etc/os-release"), OS_RELEASE);
  writeFileSync(join(dir, "root/var/lib/dpkg/status"), status(i, glibc));
  const tar = join(dir, "rootfs.tar");
  execFileSync("cp", [join(SANDBOX_ENV.SVC_SANDBOX_DIR, "rootfs.tar"), tar]);
  execFileSync("tar", ["-C", join(dir, "root"), "-rf", tar, "./etc/os-release", "./var/lib/dpkg/status"]);
  await buildImage(reference, glibc, [], tar);
}

/** GET /v1/containers: the page's look, a dry run that reads what is here. */
async function overview(port: number): Promise<any> {
  const response = await fetch(`http://127.0.0.1:${port}/v1/containers`, {
    headers: { authorization: `Bearer ${TOKEN}` },
  });
  if (response.status !== 200) throw new Error(`GET /v1/containers: ${response.status} ${await response.text()}`);
  return response.json();
}

/**
 * 200 containers on 20 Debian images, each image then rebuilt with a newer glibc (local, as a
 * pull would leave it), svc with vulnerabilities on and the engine behind a counting proxy: the
 * first look reads each of the 40 images once (a container created and removed per image, never
 * per container) and asks OSV once for every package of every pair, then one record per
 * vulnerability named; the next look reads and asks nothing (the diff is kept per pair).
 */
export async function benchVulnerabilities(): Promise<void> {
  const osv = startOsvStandIn(DEBIAN_RECORDS);
  const images = Array.from({ length: 20 }, (_, i) => `${registry}/bench/vulns${i}:latest`);
  for (const [i, image] of images.entries()) await debianImage(image, i, "2.36-9+deb12u1");
  await runContainers("vulns", 0, 200, images);
  for (const [i, image] of images.entries()) await debianImage(image, i, "2.36-9+deb12u4");
  const engine = countingEngineProxy(socketPath, join(WORK, "vulns-engine.sock"));
  const port = freePort();
  const svc = await startSvc({
    port,
    dockerHost: `unix://${engine.socketPath}`,
    vulnerabilities: { osvUrl: osv.url },
  });
  try {
    engine.reset();
    osv.requests.length = 0;
    const first = await overview(port);
    const firstEngine = engine.requests();
    const firstOsv = [...osv.requests];
    const told = first.containers.filter((c: any) => c.vulnerabilities?.counts?.fixed === 1).length;
    if (told !== 200) throw new Error(`expected 200 containers told what the update fixes, got ${told}`);
    engine.reset();
    osv.requests.length = 0;
    await overview(port);
    const nextEngine = engine.requests();
    const nextOsv = [...osv.requests];
    const creates = (counts: Record<string, number>) => counts["POST /containers/create"] ?? 0;
    const archives = (counts: Record<string, number>) =>
      Object.entries(counts)
        .filter(([key]) => key.includes("/archive"))
        .reduce((sum, [, n]) => sum + n, 0);
    record({
      benchmark: "vulnerabilities: reading containers, first look (200 containers / 20 images, 40 images read)",
      svc: creates(firstEngine),
      baseline: 200,
      unit: "containers created",
      target: "exactly 40 (one per image, not per container)",
      check: (_r, v) => v === 40,
      note: `${archives(firstEngine)} archive reads; ${osv.batchSizes.at(-1)} distinct packages asked`,
    });
    record({
      benchmark: "vulnerabilities: OSV requests, first look (200 containers / 20 images)",
      svc: firstOsv.length,
      baseline: 200,
      unit: "requests",
      target: "2 (one batch, one record)",
      check: (_r, v) => v === 2 && firstOsv.filter((r) => r.startsWith("POST")).length === 1,
      note: firstOsv.join(", "),
    });
    record({
      benchmark: "vulnerabilities: engine reads and OSV requests, next look (the diff kept per pair)",
      svc: creates(nextEngine) + archives(nextEngine) + nextOsv.length,
      baseline: null,
      unit: "requests",
      target: "0",
      check: (_r, v) => v === 0,
    });
  } finally {
    await stop(svc);
    engine.stop();
    osv.stop();
    removeAllContainers();
  }
}
