/**
 * What verifying signatures costs (docs/verification.md). A check that finds nothing new asks
 * the registry nothing for signatures: under an enforcing `[[verify]]` policy, one manifest
 * request per image, as before svc verified anything (svc's requests told from the engine's pulls
 * by their user agent, through a counting proxy). An update's verification, reported: its registry
 * requests and its time, measured in-process on a cold cache, and what the whole update cycle sent.
 */
import { mkdtempSync } from "node:fs";
import { join } from "node:path";
import { defaultConfig } from "../../src/config/index.ts";
import { silentLogger } from "../../src/log/index.ts";
import { createRegistry, parseReference } from "../../src/registry/index.ts";
import { inMemory } from "../../src/state/index.ts";
import { createSignatureCheck, rootSource } from "../../src/verify/index.ts";
import { generateKeyPair, sign } from "../../tests/support/cosign.ts";
import {
  buildImages,
  cycle,
  docker,
  registry,
  removeAllContainers,
  runContainers,
  startSvc,
  WORK,
} from "../harness.ts";
import { countingProxy, freePort, median, stop } from "../lib.ts";
import { record, round } from "../results.ts";

const IMAGES = 10;
const CHANGED = 5;

/** The digest `reference` has in the registry now (what a check finds). */
function pushedDigest(reference: string): string {
  const digests = docker(["image", "inspect", "--format", "{{json .RepoDigests}}", reference]);
  const repository = reference.slice(0, reference.lastIndexOf(":"));
  const found = (JSON.parse(digests) as string[]).find((d) => d.startsWith(`${repository}@`));
  if (!found) throw new Error(`no digest of ${reference} in ${digests}`);
  return found.slice(found.indexOf("@") + 1);
}

export async function benchSignatures(): Promise<void> {
  const proxy = countingProxy(registry);
  const host = `127.0.0.1:${proxy.port}`;
  const images = Array.from({ length: IMAGES }, (_, i) => `${host}/bench/signed${i}:latest`);
  await buildImages(images, (i) => `signed-v1-${i}`);
  await runContainers("signed", 0, IMAGES, images);
  const keys = mkdtempSync(join(WORK, "cosign-"));
  const publicKey = generateKeyPair(keys);
  const glob = `${host}/bench/signed*`;
  const port = freePort();
  const svc = await startSvc({ port, verify: { images: glob, key: publicKey } });
  try {
    await cycle(port); // warm: connections
    const quiet: number[] = [];
    for (let i = 0; i < 5; i++) {
      proxy.reset();
      const { report } = await cycle(port);
      if (report.counts.fresh !== IMAGES)
        throw new Error(`expected ${IMAGES} fresh, got ${JSON.stringify(report.counts)}`);
      quiet.push(proxy.svcRequests());
    }
    record({
      benchmark: `registry requests per check cycle with nothing new, under a [[verify]] policy (${IMAGES} images)`,
      svc: median(quiet),
      baseline: IMAGES,
      unit: "requests",
      target: "<= one manifest request per image, as without verification",
      check: (_r, v) => v <= IMAGES,
    });

    // newer images, each signed in cosign 3's bundle format with the policy's key
    const changed = images.slice(0, CHANGED);
    await buildImages(changed, (i) => `signed-v2-${i}`);
    const digests = changed.map(pushedDigest);
    // signed straight at the registry: cosign runs synchronously, and this process is the proxy
    changed.forEach((image, i) => {
      const repository = image.slice(image.indexOf("/"), image.lastIndexOf(":"));
      sign(keys, `${registry}${repository}`, digests[i]!, "bundle");
    });
    proxy.reset();
    const { ms, report } = await cycle(port);
    const verified = report.containers.filter((c: any) => c.state === "updated" && c.signature?.status === "verified");
    if (verified.length !== CHANGED)
      throw new Error(`expected ${CHANGED} updated and verified: ${JSON.stringify(report.containers.slice(0, 3))}`);
    // what svc sent beyond the check's one manifest request per image: the signatures, and what an update reads besides
    const perUpdate = (proxy.svcRequests() - median(quiet)) / CHANGED;

    // the same verifications in-process, on a cold cache: their time apart from the pulls
    const config = defaultConfig({
      verify: [{ images: [glob], keys: [publicKey], mode: "enforce", transparency_log: false }],
    });
    const reader = createRegistry(config, silentLogger).artifacts!();
    const check = createSignatureCheck({
      config,
      reader,
      signers: inMemory(),
      pending: inMemory(),
      root: rootSource({ cacheDir: join(WORK, "sigstore") }),
      log: silentLogger,
    });
    const times: number[] = [];
    for (const [i, image] of changed.entries()) {
      const started = performance.now();
      const { report: checked } = await check.check(parseReference(image), digests[i]!);
      times.push(performance.now() - started);
      if (checked.status !== "verified") throw new Error(`${image}: ${JSON.stringify(checked)}`);
    }
    record({
      benchmark: "an update's signature verification (requests per updated image)",
      svc: check.requests / CHANGED,
      baseline: null,
      unit: "requests",
      target: "report",
      note: `cosign bundle on a registry without the referrers API (in-process, cold cache); svc's registry requests per updated image beyond the check's manifest request, verification included, in the update cycle: ${round(perUpdate)}; that cycle of ${CHANGED} images: ${round(ms)} ms`,
    });
    record({
      benchmark: "an update's signature verification (ms per updated image, cold cache)",
      svc: median(times),
      baseline: null,
      unit: "ms",
      target: "report",
      note: `${CHANGED} images: ${times.map(round).join(" / ")} ms`,
    });
  } finally {
    await stop(svc);
    proxy.stop();
    removeAllContainers();
  }
}
