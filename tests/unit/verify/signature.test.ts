import { describe, expect, test } from "bun:test";
import { createHash, generateKeyPairSync, type KeyObject, sign, verify } from "node:crypto";
import { parseReference } from "../../../src/registry/index.ts";
import { globPattern } from "../../../src/verify/index.ts";
import { fingerprintOf, loadPublicKey } from "../../../src/verify/keys.ts";
import { checkSignature } from "../../../src/verify/signature.ts";

const DIGEST = `sha256:${"b".repeat(64)}`;
const ref = parseReference("127.0.0.1:5000/team/app:1.2");

function payload(digest = DIGEST, reference = "127.0.0.1:5000/team/app"): Uint8Array {
  return new TextEncoder().encode(
    JSON.stringify({
      critical: {
        identity: { "docker-reference": reference },
        image: { "docker-manifest-digest": digest },
        type: "cosign container image signature",
      },
      optional: null,
    }),
  );
}

const KINDS = {
  "ECDSA P-256": () => generateKeyPairSync("ec", { namedCurve: "prime256v1" }),
  "ECDSA P-384": () => generateKeyPairSync("ec", { namedCurve: "secp384r1" }),
  Ed25519: () => generateKeyPairSync("ed25519"),
  RSA: () => generateKeyPairSync("rsa", { modulusLength: 2048 }),
};

function signed(privateKey: KeyObject, data: Uint8Array): string {
  const algorithm = privateKey.asymmetricKeyType === "ed25519" ? null : "sha256";
  return sign(algorithm, data, privateKey).toString("base64");
}

function pem(key: KeyObject): string {
  return key.export({ type: "spki", format: "pem" }).toString();
}

describe("cosign's legacy simple signing, checked with a key", () => {
  for (const [kind, make] of Object.entries(KINDS)) {
    test(`${kind}: verified with its key, refused with another`, () => {
      const { publicKey, privateKey } = make();
      const key = loadPublicKey(pem(publicKey));
      const other = loadPublicKey(pem(make().publicKey));
      const data = payload();
      const found = {
        format: "simple",
        where: "legacy tag",
        payload: data,
        signature: signed(privateKey, data),
      } as const;
      const trust = { transparencyLog: false, root: null };
      expect(checkSignature(found, ref, DIGEST, { ...trust, keys: [other, key] })).toEqual({
        ok: true,
        signer: { key: key.fingerprint },
      });
      const refused = checkSignature(found, ref, DIGEST, { ...trust, keys: [other] });
      expect(refused).toEqual({ ok: false, why: `not signed by ${other.fingerprint}` });
    });
  }

  test("another digest, another repository, a required log entry, no key: refused, saying which", () => {
    const { publicKey, privateKey } = KINDS["ECDSA P-256"]();
    const key = loadPublicKey(pem(publicKey));
    const trust = { keys: [key], transparencyLog: false, root: null };
    const at = (data: Uint8Array) =>
      ({ format: "simple", where: "legacy tag", payload: data, signature: signed(privateKey, data) }) as const;
    const why = (checked: ReturnType<typeof checkSignature>) => (checked.ok ? "" : checked.why);
    expect(why(checkSignature(at(payload(`sha256:${"c".repeat(64)}`)), ref, DIGEST, trust))).toContain(
      "signs another digest",
    );
    expect(why(checkSignature(at(payload(DIGEST, "127.0.0.1:5000/team/other")), ref, DIGEST, trust))).toContain(
      "names another repository",
    );
    expect(why(checkSignature(at(payload()), ref, DIGEST, { ...trust, transparencyLog: true }))).toContain(
      "transparency_log = false",
    );
    expect(why(checkSignature(at(payload()), ref, DIGEST, { ...trust, keys: [] }))).toBe(
      "signed with a key no policy names",
    );
    expect(why(checkSignature(at(new TextEncoder().encode("{}")), ref, DIGEST, trust))).toContain("not cosign's");
  });

  test("Docker Hub's names: cosign's index.docker.io reference is the same repository", () => {
    const hub = parseReference("nginx:1.27");
    const { publicKey, privateKey } = KINDS.Ed25519();
    const data = payload(DIGEST, "index.docker.io/library/nginx");
    const found = {
      format: "simple",
      where: "legacy tag",
      payload: data,
      signature: signed(privateKey, data),
    } as const;
    const checked = checkSignature(found, hub, DIGEST, {
      keys: [loadPublicKey(pem(publicKey))],
      transparencyLog: false,
      root: null,
    });
    expect(checked.ok).toBe(true);
  });
});

describe("keys", () => {
  test("the fingerprint is the SHA-256 of the key's SubjectPublicKeyInfo, as cosign's bundle hint", () => {
    const { publicKey } = KINDS["ECDSA P-256"]();
    const der = publicKey.export({ type: "spki", format: "der" });
    const hint = createHash("sha256").update(der).digest("base64");
    expect(fingerprintOf(publicKey)).toBe(`SHA256:${hint.replace(/=+$/, "")}`);
  });

  test("a file that holds no public key, a curve cosign does not make: refused, never echoing the text", () => {
    expect(() => loadPublicKey("/nonexistent/key.pub")).toThrow("key file /nonexistent/key.pub cannot be read");
    const p521 = pem(generateKeyPairSync("ec", { namedCurve: "secp521r1" }).publicKey);
    expect(() => loadPublicKey(p521)).toThrow("an inline key: only ECDSA P-256/P-384, Ed25519 and RSA keys");
  });
});

describe("image globs", () => {
  test("`*` is any characters, everything else literal", () => {
    const matches = (glob: string, text: string) => new RegExp(globPattern(glob)).test(text);
    expect(matches("ghcr.io/acme/*", "ghcr.io/acme/app")).toBe(true);
    expect(matches("ghcr.io/acme/*", "ghcr.io/acmex/app")).toBe(false);
    expect(matches("docker.io/library/nginx", "docker.io/library/nginx")).toBe(true);
    expect(matches("a.b", "axb")).toBe(false);
  });
});

describe("the runtime svc ships (Bun)", () => {
  // older Bun answered false here, and every Sigstore check with an EC key failed without a word
  test("crypto.verify(null, data, ecKey, sig) verifies an ECDSA signature", () => {
    const { publicKey, privateKey } = KINDS["ECDSA P-256"]();
    const data = Buffer.from("svc");
    const signature = sign("sha256", data, privateKey);
    expect(verify(null, data, publicKey, signature)).toBe(true);
    expect(verify(null, Buffer.from("svc!"), publicKey, signature)).toBe(false);
  });
});
