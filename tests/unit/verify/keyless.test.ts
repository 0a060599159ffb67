/**
 * Keyless signatures as cosign 3 makes them in CI: a bundle whose certificate a Fulcio issued for
 * an OIDC identity, its log entry in a Rekor, both of a private Sigstore on loopback
 * (@sigstore/mock behind their HTTP endpoints, the bundle made by @sigstore/sign), attached
 * through the referrers API of a registry stand-in and read by svc's own registry client.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type Config, type DeepPartial, defaultConfig } from "../../../src/config/index.ts";
import { silentLogger } from "../../../src/log/index.ts";
import { createRegistry, parseReference } from "../../../src/registry/index.ts";
import { inMemory } from "../../../src/state/index.ts";
import { createSignatureCheck } from "../../../src/verify/index.ts";
import { pushImage, pushIndex, type ReferrersRegistry, referrersRegistry } from "../../support/referrers-registry.ts";
import { GITHUB_ISSUER, type Sigstore, startSigstore } from "../../support/sigstore.ts";

const RELEASE = "https://github.com/acme/app/.github/workflows/release.yml@refs/tags/v1";
const FORK = "https://github.com/mallory/app/.github/workflows/release.yml@refs/tags/v1";
const REPOSITORY = "acme/app";

let sigstore: Sigstore;
let registry: ReferrersRegistry;
beforeAll(async () => {
  sigstore = await startSigstore();
  registry = referrersRegistry();
});
afterAll(() => {
  sigstore.stop();
  registry.stop();
});

let images = 0;
/** A new image of the repository's tag: its reference and digest. */
function newImage() {
  const tag = `v${++images}`;
  const digest = pushImage(registry, REPOSITORY, tag, tag);
  return { ref: parseReference(`${registry.host}/${REPOSITORY}:${tag}`), digest };
}

function checker(config: DeepPartial<Config> = {}) {
  const signers = inMemory();
  const check = createSignatureCheck({
    config: defaultConfig(config),
    reader: createRegistry(defaultConfig(), silentLogger).artifacts!(),
    signers,
    pending: inMemory(),
    root: { get: async () => sigstore.root },
    log: silentLogger,
  });
  return { check, signers };
}

const releasePolicy = (policy: DeepPartial<Config["verify"][number]> = {}) =>
  checker({
    verify: [
      {
        images: [`${registry.host}/${REPOSITORY}`],
        keys: [],
        issuer: GITHUB_ISSUER,
        identity: RELEASE,
        mode: "enforce",
        transparency_log: true,
        ...policy,
      },
    ],
  });

describe("a keyless policy: issuer and identity", () => {
  test("the release workflow's signature is verified, naming it", async () => {
    const { ref, digest } = newImage();
    registry.attachBundle(REPOSITORY, digest, await sigstore.sign(digest, { identity: RELEASE }));
    const { report, hold } = await releasePolicy().check.check(ref, digest);
    expect(hold).toBeNull();
    expect(report).toEqual({
      status: "verified",
      signer: `${RELEASE} (${GITHUB_ISSUER})`,
      format: "bundle",
      found_in: "referrers API",
      digest,
      policy: "enforce",
      reason: null,
    });
    // an identity_regexp names the same workflow at any tag
    const regexp = releasePolicy({ identity: undefined, identity_regexp: "https://github\\.com/acme/app/.*" });
    expect((await regexp.check.check(ref, digest)).hold).toBeNull();
  });

  test("another identity, another issuer: held, saying whose signature it is", async () => {
    const { ref, digest } = newImage();
    registry.attachBundle(REPOSITORY, digest, await sigstore.sign(digest, { identity: FORK }));
    const fork = await releasePolicy().check.check(ref, digest);
    expect(fork.hold).toBe(`signature not verified: signed by ${FORK}, not the policy's identity`);
    expect(fork.report.status).toBe("held");

    const other = newImage();
    const issuer = "https://accounts.example.com";
    registry.attachBundle(REPOSITORY, other.digest, await sigstore.sign(other.digest, { identity: RELEASE, issuer }));
    const elsewhere = await releasePolicy().check.check(other.ref, other.digest);
    expect(elsewhere.hold).toBe(`signature not verified: certificate issued by ${issuer}, not ${GITHUB_ISSUER}`);
  });

  test("a certificate no longer valid when the log saw it, or with no log entry to date it: held", async () => {
    const { ref, digest } = newImage();
    // Fulcio's certificates live 10 minutes: one issued an hour before its log entry
    const hourAgo = new Date(Date.now() - 3_600_000);
    registry.attachBundle(REPOSITORY, digest, await sigstore.sign(digest, { identity: RELEASE, at: hourAgo }));
    const expired = await releasePolicy().check.check(ref, digest);
    expect(expired.hold).toBe("signature not verified: keyless signature refused: Failed to verify certificate chain");
    // the same CA's certificate five minutes old when logged is within its life
    const recent = newImage();
    const fiveAgo = new Date(Date.now() - 300_000);
    registry.attachBundle(
      REPOSITORY,
      recent.digest,
      await sigstore.sign(recent.digest, { identity: RELEASE, at: fiveAgo }),
    );
    expect((await releasePolicy().check.check(recent.ref, recent.digest)).hold).toBeNull();

    const unlogged = newImage();
    const bundle = await sigstore.sign(unlogged.digest, { identity: RELEASE, log: false });
    registry.attachBundle(REPOSITORY, unlogged.digest, bundle);
    const nolog = await releasePolicy().check.check(unlogged.ref, unlogged.digest);
    expect(nolog.hold).toBe("signature not verified: keyless signature refused: expected 1 timestamps, got 0");
  });

  test("a log entry of another signature spliced into the bundle: held", async () => {
    const { ref, digest } = newImage();
    const own = (await sigstore.sign(digest, { identity: RELEASE })) as Bundle;
    const other = (await sigstore.sign(digest, { identity: RELEASE })) as Bundle;
    own.verificationMaterial.tlogEntries = other.verificationMaterial.tlogEntries;
    registry.attachBundle(REPOSITORY, digest, own);
    const spliced = await releasePolicy().check.check(ref, digest);
    expect(spliced.hold).toBe("signature not verified: keyless signature refused: tlog entry signature mismatch");
  });

  test("a sibling tag's signature replayed for this digest: held, the statement signs another", async () => {
    const sibling = newImage();
    const bundle = await sigstore.sign(sibling.digest, { identity: RELEASE });
    registry.attachBundle(REPOSITORY, sibling.digest, bundle);
    expect((await releasePolicy().check.check(sibling.ref, sibling.digest)).hold).toBeNull();
    // the same bundle, attached by whoever moved the tag to an image the workflow never built
    const { ref, digest } = newImage();
    registry.attachBundle(REPOSITORY, digest, bundle);
    const replayed = await releasePolicy().check.check(ref, digest);
    expect(replayed.hold).toBe(`signature not verified: the statement signs another digest, not ${digest}`);
  });
});

describe("a multi-platform image", () => {
  const amd64 = async () => ({ os: "linux", architecture: "amd64" });
  const arm64 = async () => ({ os: "linux", architecture: "arm64" });

  test("the index signed: verified by the index's signature, no platform manifest read", async () => {
    const tag = `multi${++images}`;
    const { index } = pushIndex(registry, REPOSITORY, tag, ["linux/amd64", "linux/arm64"]);
    registry.attachBundle(REPOSITORY, index, await sigstore.sign(index, { identity: RELEASE }));
    const ref = parseReference(`${registry.host}/${REPOSITORY}:${tag}`);
    const before = registry.seen.length;
    const { report, hold } = await releasePolicy().check.check(ref, index, amd64);
    expect(hold).toBeNull();
    expect(report.digest).toBe(index);
    expect(registry.seen.slice(before).filter((path) => path.endsWith(`/manifests/${index}`))).toEqual([]);
  });

  test("the index unsigned: the manifest pulled for the platform is what must be signed", async () => {
    const tag = `multi${++images}`;
    const { index, manifests } = pushIndex(registry, REPOSITORY, tag, ["linux/amd64", "linux/arm64"]);
    const amd = manifests["linux/amd64"]!;
    // signed per platform, as a build that signs each manifest it pushes does; arm64 never was
    registry.attachBundle(REPOSITORY, amd, await sigstore.sign(amd, { identity: RELEASE }));
    const ref = parseReference(`${registry.host}/${REPOSITORY}:${tag}`);
    const onAmd64 = await releasePolicy().check.check(ref, index, amd64);
    expect(onAmd64.hold).toBeNull();
    expect(onAmd64.report).toMatchObject({ status: "verified", digest: amd, found_in: "referrers API" });
    const onArm64 = await releasePolicy().check.check(ref, index, arm64);
    expect(onArm64.hold).toBe("signature not verified: no signature found");
    // without the platform (a move with nothing to pull), only the index is asked about
    expect((await releasePolicy().check.check(ref, index)).hold).toBe("signature not verified: no signature found");
  });

  test("the amd64 manifest's signature does not verify the arm64 one", async () => {
    const tag = `multi${++images}`;
    const { index, manifests } = pushIndex(registry, REPOSITORY, tag, ["linux/amd64", "linux/arm64"]);
    const bundle = await sigstore.sign(manifests["linux/amd64"]!, { identity: RELEASE });
    registry.attachBundle(REPOSITORY, manifests["linux/arm64"]!, bundle);
    const ref = parseReference(`${registry.host}/${REPOSITORY}:${tag}`);
    const { hold } = await releasePolicy().check.check(ref, index, arm64);
    expect(hold).toBe(`signature not verified: the statement signs another digest, not ${manifests["linux/arm64"]}`);
  });
});

describe("without a policy, the keyless signer is pinned", () => {
  test("the release workflow pinned; a fork's signature held as a signer change", async () => {
    const { check, signers } = checker();
    const first = newImage();
    registry.attachBundle(REPOSITORY, first.digest, await sigstore.sign(first.digest, { identity: RELEASE }));
    expect((await check.check(first.ref, first.digest)).report.status).toBe("verified");
    expect(signers.get(`${registry.host}/${REPOSITORY}`)).toBe(`${RELEASE} (${GITHUB_ISSUER})`);

    const second = newImage();
    registry.attachBundle(REPOSITORY, second.digest, await sigstore.sign(second.digest, { identity: FORK }));
    const changed = await check.check(second.ref, second.digest);
    expect(changed.hold).toBe(
      `signer changed: ${RELEASE} (${GITHUB_ISSUER}) -> ${FORK} (${GITHUB_ISSUER}); accept by name to update`,
    );
  });
});

interface Bundle {
  verificationMaterial: { tlogEntries: unknown[] };
}
