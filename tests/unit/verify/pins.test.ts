import { describe, expect, test } from "bun:test";
import { defaultConfig } from "../../../src/config/index.ts";
import { silentLogger } from "../../../src/log/index.ts";
import { type ArtifactReader, parseReference } from "../../../src/registry/index.ts";
import { inMemory } from "../../../src/state/index.ts";
import { createSignatureCheck } from "../../../src/verify/index.ts";
import type { Checked } from "../../../src/verify/signature.ts";

const ref = parseReference("ghcr.io/acme/app:1");
const REPOSITORY = "ghcr.io/acme/app";
const digest = (n: number) => `sha256:${String(n).repeat(64).slice(0, 64)}`;

/**
 * A registry whose legacy `.sig` tags hold one signature per digest, its payload the name of
 * who signed it; the check verifies a payload as that signer (keyless, as only a keyless
 * signature pins without a policy).
 */
function setup() {
  const signedBy = new Map<string, string>();
  let requests = 0;
  const reader: ArtifactReader = {
    referrers: async () => {
      requests++;
      return null;
    },
    manifest: async (_ref, reference) => {
      requests++;
      const signer = signedBy.get(reference.replace(/\.sig$/, "").replace("-", ":"));
      if (!reference.endsWith(".sig") || signer === undefined) return null;
      const layer = {
        mediaType: "application/vnd.dev.cosign.simplesigning.v1+json",
        digest: `sha256:${"e".repeat(64)}`,
        annotations: { "dev.cosignproject.cosign/signature": signer },
      };
      return { digest: `sha256:${"f".repeat(64)}`, body: { layers: [layer] } };
    },
    blob: async () => new Uint8Array(),
    get requests() {
      return requests;
    },
  };
  const signers = inMemory();
  const check = createSignatureCheck({
    config: defaultConfig(),
    reader,
    signers,
    pending: inMemory(),
    root: { get: async () => Promise.reject(new Error("no root in a unit test")) },
    log: silentLogger,
    checkSignature: (found): Checked =>
      found.format === "simple" && found.signature !== "forged"
        ? { ok: true, signer: { issuer: "https://token.actions.githubusercontent.com", identity: found.signature } }
        : { ok: false, why: "signature verification failed" },
  });
  return { check, signers, signedBy, requests: () => requests };
}

const ALICE = "https://github.com/acme/app/.github/workflows/release.yml@refs/tags/v1";
const MALLORY = "https://github.com/mallory/app/.github/workflows/release.yml@refs/tags/v1";
const name = (identity: string) => `${identity} (https://token.actions.githubusercontent.com)`;

describe("the signer remembered per repository, without a policy", () => {
  test("the first verified signer is pinned; the same signer later updates", async () => {
    const { check, signers, signedBy } = setup();
    signedBy.set(digest(1), ALICE);
    const first = await check.check(ref, digest(1));
    expect(first.hold).toBeNull();
    expect(first.report).toMatchObject({
      status: "verified",
      signer: name(ALICE),
      policy: "pinned",
      found_in: "legacy tag",
    });
    expect(signers.get(REPOSITORY)).toBe(name(ALICE));
    signedBy.set(digest(2), ALICE);
    expect((await check.check(ref, digest(2))).hold).toBeNull();
  });

  test("another signer is held until accepted by name; then it is the pin", async () => {
    const { check, signers, signedBy } = setup();
    signedBy.set(digest(1), ALICE);
    await check.check(ref, digest(1));
    signedBy.set(digest(2), MALLORY);
    const changed = await check.check(ref, digest(2));
    expect(changed.hold).toBe(`signer changed: ${name(ALICE)} -> ${name(MALLORY)}; accept by name to update`);
    expect(changed.report.status).toBe("held");
    expect(signers.get(REPOSITORY)).toBe(name(ALICE));
    expect(check.accept(REPOSITORY)).toEqual({ signer: name(MALLORY), was: name(ALICE) });
    expect(signers.get(REPOSITORY)).toBe(name(MALLORY));
    expect((await check.check(ref, digest(2))).hold).toBeNull();
    expect(check.accept(REPOSITORY)).toBeNull();
  });

  test("unsigned after being signed, or a signature that does not verify: held", async () => {
    const { check, signedBy } = setup();
    signedBy.set(digest(1), ALICE);
    await check.check(ref, digest(1));
    expect((await check.check(ref, digest(2))).hold).toBe(
      `no longer signed (was signed by ${name(ALICE)}); accept by name to update`,
    );
    signedBy.set(digest(3), "forged");
    expect((await check.check(ref, digest(3))).hold).toStartWith("no longer signed");
  });

  test("a repository never seen signed updates as ever, shown unsigned; answers are kept by digest", async () => {
    const { check, signers, requests } = setup();
    const unsigned = await check.check(ref, digest(4));
    expect(unsigned).toEqual({
      report: {
        status: "unsigned",
        signer: null,
        format: null,
        found_in: null,
        digest: null,
        policy: "pinned",
        reason: null,
      },
      hold: null,
    });
    expect(signers.entries()).toEqual([]);
    // the referrers API (none here), the referrers tag, the legacy tag: once per digest
    expect(requests()).toBe(3);
    await check.check(ref, digest(4));
    expect(requests()).toBe(3);
  });
});
