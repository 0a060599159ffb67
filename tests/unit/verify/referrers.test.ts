/**
 * Where svc looks for an image's signatures, against a loopback registry answering the OCI 1.1
 * referrers API as the distribution spec says (pages by `Link`, 404 without the API), and against
 * hostile answers: each bounded in bytes, in count and in time, failing that image's signature
 * with a reason rather than svc's memory or its cycle.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { type Config, type DeepPartial, defaultConfig } from "../../../src/config/index.ts";
import { silentLogger } from "../../../src/log/index.ts";
import { ARTIFACT_LIMITS } from "../../../src/registry/descriptors.ts";
import { createRegistry, parseReference } from "../../../src/registry/index.ts";
import { inMemory } from "../../../src/state/index.ts";
import { findSignatures } from "../../../src/verify/find.ts";
import { createSignatureCheck } from "../../../src/verify/index.ts";
import {
  EMPTY_CONFIG,
  INDEX,
  MANIFEST,
  pushImage,
  type ReferrersRegistry,
  referrersRegistry,
} from "../../support/referrers-registry.ts";

const REPOSITORY = "acme/app";
const SBOM = "application/spdx+json";
const started: ReferrersRegistry[] = [];
afterEach(() => {
  for (const registry of started.splice(0)) registry.stop();
});

function start(options: Parameters<typeof referrersRegistry>[0] = {}) {
  const registry = referrersRegistry(options);
  started.push(registry);
  const digest = pushImage(registry, REPOSITORY, "1", "one");
  return { registry, digest, ref: parseReference(`${registry.host}/${REPOSITORY}:1`) };
}

function reader(config: DeepPartial<Config> = {}) {
  return createRegistry(defaultConfig({ registry_timeout: 10_000, ...config }), silentLogger, {
    retry: { baseDelayMs: 1 },
  }).artifacts!();
}

/** An artifact of another type (an SBOM) referring to `subject`. */
function attachOther(registry: ReferrersRegistry, subject: string, n: number) {
  const config = registry.blob(REPOSITORY, "{}");
  const layer = registry.blob(REPOSITORY, JSON.stringify({ spdxVersion: "SPDX-2.3", n }));
  registry.manifest(REPOSITORY, {
    schemaVersion: 2,
    mediaType: MANIFEST,
    artifactType: SBOM,
    config: { mediaType: EMPTY_CONFIG, ...config },
    layers: [{ mediaType: SBOM, ...layer }],
    subject: { mediaType: MANIFEST, digest: subject, size: 1 },
  });
}

const BUNDLE = { mediaType: "application/vnd.dev.sigstore.bundle.v0.3+json", note: "the signature" };

describe("the referrers API", () => {
  test("signatures among other referrers, over pages joined by Link", async () => {
    const { registry, digest, ref } = start({ pageSize: 2 });
    for (let n = 0; n < 5; n++) attachOther(registry, digest, n);
    registry.attachBundle(REPOSITORY, digest, BUNDLE);
    const found = await findSignatures(reader(), ref, digest);
    expect(found).toHaveLength(1);
    expect(found[0]).toMatchObject({ format: "bundle", where: "referrers API" });
    expect(JSON.parse(new TextDecoder().decode((found[0] as { bundle: Uint8Array }).bundle))).toEqual(BUNDLE);
    const pages = registry.seen.filter((path) => path.includes("/referrers/"));
    expect(pages).toEqual([
      `/v2/${REPOSITORY}/referrers/${digest}`,
      `/v2/${REPOSITORY}/referrers/${digest}?start=2`,
      `/v2/${REPOSITORY}/referrers/${digest}?start=4`,
    ]);
    // only the bundle's manifest and blob are read, never the SBOMs'
    expect(registry.seen.filter((path) => path.includes("/manifests/"))).toHaveLength(1);
  });

  test("a registry without the API (404): the referrers tag schema, then cosign's legacy tag", async () => {
    const { registry, digest, ref } = start({ referrersApi: false });
    const artifact = registry.attachBundle(REPOSITORY, digest, BUNDLE);
    // what a client pushes to a registry without the API: an index of referrers under sha256-<hex>
    registry.manifest(
      REPOSITORY,
      {
        schemaVersion: 2,
        mediaType: INDEX,
        manifests: [{ mediaType: MANIFEST, digest: artifact, size: 1, artifactType: BUNDLE.mediaType }],
      },
      digest.replace(":", "-"),
    );
    const found = await findSignatures(reader(), ref, digest);
    expect(found.map((f) => f.where)).toEqual(["referrers tag"]);
    expect(registry.seen).toContain(`/v2/${REPOSITORY}/referrers/${digest}`);

    const none = start({ referrersApi: false });
    expect(await findSignatures(reader(), none.ref, none.digest)).toEqual([]);
    const asked = none.registry.seen.filter((path) => path !== "/v2/");
    const tag = none.digest.replace(":", "-");
    expect(asked).toEqual([
      `/v2/${REPOSITORY}/referrers/${none.digest}`,
      `/v2/${REPOSITORY}/manifests/${tag}`,
      `/v2/${REPOSITORY}/manifests/${tag}.sig`,
    ]);
  });
});

/** A policy check of the stand-in's image: what a user sees of a hostile answer. */
async function heldFor(options: Parameters<typeof referrersRegistry>[0], config: DeepPartial<Config> = {}) {
  const { registry, digest, ref } = start(options);
  const check = createSignatureCheck({
    config: defaultConfig({
      verify: [
        {
          images: [`${registry.host}/*`],
          keys: [],
          issuer: "https://issuer.test",
          identity: "ci",
          mode: "enforce",
          transparency_log: true,
        },
      ],
    }),
    reader: reader(config),
    signers: inMemory(),
    pending: inMemory(),
    root: { get: async () => Promise.reject(new Error("no keyless signature in these answers")) },
    log: silentLogger,
  });
  const started = performance.now();
  const { hold } = await check.check(ref, digest);
  return { hold, registry, digest, ms: performance.now() - started };
}

/** JSON whitespace streamed without a Content-Length until `limit` bytes; `sent` counts them. */
function flood(limit: number, sent: { bytes: number }): ReadableStream<Uint8Array> {
  const chunk = new Uint8Array(64 * 1024).fill(0x20);
  return new ReadableStream({
    pull(controller) {
      if (sent.bytes >= limit) return controller.close();
      sent.bytes += chunk.byteLength;
      controller.enqueue(chunk);
    },
  });
}

describe("hostile answers, bounded", () => {
  test("a referrers answer streamed past 256 KiB: held, naming the cap; the rest is not read", async () => {
    const sent = { bytes: 0 };
    const { hold } = await heldFor({
      hostile: (path) =>
        path.includes("/referrers/")
          ? new Response(flood(64 * 1024 * 1024, sent), { headers: { "Content-Type": INDEX } })
          : undefined,
    });
    expect(hold).toContain("is larger than 256 KiB, the most svc reads of it");
    expect(sent.bytes).toBeLessThan(8 * 1024 * 1024);
  });

  test("JSON nested as deep as 256 KiB allows: parsed and passed over, svc's stack untouched", async () => {
    const depth = 128 * 1024 - 64;
    const deep = `{"schemaVersion":2,"manifests":[],"x":${"[".repeat(depth)}${"]".repeat(depth)}}`;
    const { hold } = await heldFor({
      hostile: (path) =>
        path.includes("/referrers/") ? new Response(deep, { headers: { "Content-Type": INDEX } }) : undefined,
    });
    expect(hold).toBe("signature not verified: no signature found");
  });

  test("thousands of referrers over many pages: 100 read, 10 manifests at most", async () => {
    const { registry, digest, ref } = start({ pageSize: 50 });
    for (let n = 0; n < 2_000; n++) registry.attachBundle(REPOSITORY, digest, { ...BUNDLE, n });
    const found = await findSignatures(reader(), ref, digest);
    expect(found).toHaveLength(10);
    // pages are followed until 100 referrers are read
    expect(registry.seen.filter((path) => path.includes("/referrers/"))).toHaveLength(ARTIFACT_LIMITS.referrers / 50);
    expect(registry.seen.filter((path) => path.includes("/manifests/"))).toHaveLength(10);
  });

  test("thousands of referrers in one page: held, naming the count", async () => {
    const manifests = Array.from({ length: 1_000 }, (_, n) => ({
      mediaType: MANIFEST,
      digest: `sha256:${n.toString(16).padStart(64, "0")}`,
      size: 1,
      artifactType: BUNDLE.mediaType,
    }));
    const page = JSON.stringify({ schemaVersion: 2, mediaType: INDEX, manifests });
    const { hold, registry } = await heldFor({
      hostile: (path) =>
        path.includes("/referrers/") ? new Response(page, { headers: { "Content-Type": INDEX } }) : undefined,
    });
    expect(hold).toContain("at manifests");
    expect(registry.seen.filter((path) => path.includes("/manifests/"))).toEqual([]);
  });

  // a digest names its content, so an index cannot list itself: only a registry lying about a
  // manifest's content makes a loop, and the digest svc computes catches the lie
  test("a Link that points back to its own page, and an index that lists itself: bounded, no loop", async () => {
    const { hold, registry } = await heldFor({
      hostile: (path, url) => {
        if (path.includes("/referrers/")) {
          const self = {
            mediaType: INDEX,
            digest: `sha256:${"1".repeat(64)}`,
            size: 1,
            artifactType: BUNDLE.mediaType,
          };
          const body = JSON.stringify({ schemaVersion: 2, mediaType: INDEX, manifests: [self] });
          return new Response(body, { headers: { "Content-Type": INDEX, Link: `<${url.pathname}>; rel="next"` } });
        }
        if (path.endsWith(`/manifests/sha256:${"1".repeat(64)}`)) {
          // an index whose only entry is the index itself
          const body = JSON.stringify({
            schemaVersion: 2,
            mediaType: INDEX,
            manifests: [{ mediaType: INDEX, digest: `sha256:${"1".repeat(64)}`, size: 1 }],
          });
          return new Response(body, { headers: { "Content-Type": INDEX } });
        }
        return undefined;
      },
    });
    expect(hold).toEndWith(`the manifest sha256:${"1".repeat(64)} does not match its digest`);
    expect(registry.seen.filter((path) => path.includes("/referrers/"))).toHaveLength(ARTIFACT_LIMITS.pages);
    // listed on every page, read once: the first read shows the lie
    expect(registry.seen.filter((path) => path.includes(`/manifests/sha256:${"1".repeat(64)}`))).toHaveLength(1);
  });

  test("an answer that never ends: held once registry_timeout has passed", async () => {
    const { hold, ms } = await heldFor(
      {
        hostile: (path) =>
          path.includes("/referrers/")
            ? new Response(new ReadableStream({ pull: () => new Promise(() => {}) }), {
                headers: { "Content-Type": INDEX },
              })
            : undefined,
      },
      { registry_timeout: 1_000 },
    );
    expect(hold).toEndWith("did not answer within 1 s");
    // the first try and its two retries, each cut at the timeout
    expect(ms).toBeLessThan(3 * 1_000 + 2_000);
  }, 20_000);
});
