/**
 * One signature checked in-process, as cosign checks it, with the Sigstore libraries:
 * - cosign 3's bundle: a DSSE envelope of an in-toto statement whose subject is the digest svc
 *   pulls and whose predicate type is cosign's; its signature by a key a policy names, or by a
 *   Fulcio certificate (issuer and identity) chained to the trusted root, with its log entry;
 * - cosign's legacy simple-signing payload: `docker-manifest-digest` must be the digest svc
 *   pulls and `docker-reference` the repository it pulls from; its signature by a named key.
 * A check answers who signed (a key's fingerprint, or issuer and identity) or why not.
 */
import { type Bundle, bundleFromJSON } from "@sigstore/bundle";
import { crypto as sigcrypto } from "@sigstore/core";
import type { TrustedRoot } from "@sigstore/protobuf-specs";
import { toSignedEntity, toTrustMaterial, Verifier } from "@sigstore/verify";
import { z } from "zod";
import { parseJsonBytes } from "../core/bounded.ts";
import type { ImageRef } from "../registry/index.ts";
import { parseReference, sameRepository } from "../registry/reference.ts";
import type { FoundSignature } from "./find.ts";
import type { PublicKey } from "./keys.ts";

export const COSIGN_PREDICATE = "https://sigstore.dev/cosign/sign/v1";
const IN_TOTO = "application/vnd.in-toto+json";

/** Who signed: a key (by fingerprint) or a Fulcio certificate's OIDC issuer and identity. */
export type Signer = { key: string } | { issuer: string; identity: string };

export function signerName(signer: Signer): string {
  return "key" in signer ? `key ${signer.key}` : `${signer.identity} (${signer.issuer})`;
}

/** What a signature may be checked against. */
export interface Trust {
  keys: readonly PublicKey[];
  /** a log entry is required (keys), as cosign requires one unless told otherwise */
  transparencyLog: boolean;
  /** the Sigstore trusted root (keyless, log entries); null: no keyless signature verifies */
  root: TrustedRoot | null;
}

export type Checked = { ok: true; signer: Signer } | { ok: false; why: string };

const statementSchema = z.object({
  _type: z.string().max(256),
  subject: z
    .array(
      z.object({ name: z.string().max(1024).optional(), digest: z.record(z.string().max(64), z.string().max(256)) }),
    )
    .max(64),
  predicateType: z.string().max(256),
});

const simpleSigningSchema = z.object({
  critical: z.object({
    identity: z.object({ "docker-reference": z.string().max(1024) }),
    image: z.object({ "docker-manifest-digest": z.string().max(256) }),
    type: z.string().max(256),
  }),
});

/** A bundle signed with a certificate (keyless): its check needs the trusted root. */
export function isKeyless(found: FoundSignature): boolean {
  if (found.format !== "bundle") return false;
  const parsed = parseJsonBytes(found.bundle, keylessSchema);
  return "value" in parsed && parsed.value.verificationMaterial.publicKey === undefined;
}

const keylessSchema = z.object({ verificationMaterial: z.object({ publicKey: z.unknown().optional() }) });

/** `found` checked for the image `digest` of `ref`'s repository. */
export function checkSignature(found: FoundSignature, ref: ImageRef, digest: string, trust: Trust): Checked {
  return found.format === "bundle"
    ? checkBundle(found.bundle, digest, trust)
    : checkSimple(found.payload, found.signature, ref, digest, trust);
}

function checkBundle(bytes: Uint8Array, digest: string, trust: Trust): Checked {
  const parsed = parseJsonBytes(bytes);
  if (!("value" in parsed)) return { ok: false, why: "the bundle is not JSON" };
  let bundle: Bundle;
  try {
    bundle = bundleFromJSON(parsed.value);
  } catch (error) {
    return { ok: false, why: `not a Sigstore bundle: ${(error as Error).message}` };
  }
  if (bundle.content.$case !== "dsseEnvelope") return { ok: false, why: "the bundle signs no DSSE statement" };
  const envelope = bundle.content.dsseEnvelope;
  if (envelope.payloadType !== IN_TOTO) return { ok: false, why: `the bundle's payload is ${envelope.payloadType}` };
  const statement = parseJsonBytes(envelope.payload, statementSchema);
  if (!("value" in statement)) return { ok: false, why: "the bundle's statement is not an in-toto statement" };
  if (statement.value.predicateType !== COSIGN_PREDICATE)
    return {
      ok: false,
      why: `the statement's predicate is ${statement.value.predicateType.slice(0, 120)}, not cosign's`,
    };
  const hex = digest.replace(/^sha256:/, "");
  if (!statement.value.subject.some((s) => s.digest.sha256 === hex))
    return { ok: false, why: `the statement signs another digest, not ${digest}` };
  return verifyEntity(bundle, trust);
}

/** The bundle's signature, key and log entries, through @sigstore/verify. */
function verifyEntity(bundle: Bundle, trust: Trust): Checked {
  const entity = toSignedEntity(bundle);
  const withLog = trust.transparencyLog || entity.key.$case === "certificate";
  const root = trust.root ?? EMPTY_ROOT;
  const options = withLog
    ? { tlogThreshold: 1, ctlogThreshold: 0, timestampThreshold: 1 }
    : { tlogThreshold: 0, ctlogThreshold: 0, timestampThreshold: 0 };
  if (entity.key.$case === "certificate") {
    if (!trust.root) return { ok: false, why: "a keyless signature, and no trusted root to check it against" };
    try {
      const signer = new Verifier(toTrustMaterial(trust.root), options).verify(entity);
      const identity = signer.identity;
      const issuer = identity?.extensions?.issuer;
      const san = identity?.subjectAlternativeName;
      if (!issuer || !san) return { ok: false, why: "the certificate names no issuer or identity" };
      return { ok: true, signer: { issuer, identity: san } };
    } catch (error) {
      return { ok: false, why: `keyless signature refused: ${(error as Error).message}` };
    }
  }
  if (trust.keys.length === 0) return { ok: false, why: "signed with a key no policy names" };
  let last = "";
  for (const key of trust.keys) {
    const material = toTrustMaterial(root, () => ({ publicKey: key.key, validFor: () => true }));
    try {
      new Verifier(material, options).verify(entity);
      return { ok: true, signer: { key: key.fingerprint } };
    } catch (error) {
      last = (error as Error).message;
    }
  }
  return { ok: false, why: `not signed by ${keysText(trust.keys)}: ${last}` };
}

function checkSimple(payload: Uint8Array, signature: string, ref: ImageRef, digest: string, trust: Trust): Checked {
  const parsed = parseJsonBytes(payload, simpleSigningSchema);
  if (!("value" in parsed)) return { ok: false, why: "the legacy signature's payload is not cosign's simple signing" };
  const critical = parsed.value.critical;
  if (critical.image["docker-manifest-digest"] !== digest)
    return { ok: false, why: `the legacy signature signs another digest, not ${digest}` };
  if (!sameRepositoryAs(critical.identity["docker-reference"], ref))
    return {
      ok: false,
      why: `the legacy signature names another repository (${critical.identity["docker-reference"].slice(0, 200)})`,
    };
  if (trust.transparencyLog)
    return { ok: false, why: "a legacy signature's log entry is not checked: set transparency_log = false for it" };
  if (trust.keys.length === 0) return { ok: false, why: "signed with a key no policy names" };
  const bytes = Buffer.from(signature, "base64");
  for (const key of trust.keys) {
    if (verifyWith(key, Buffer.from(payload), bytes)) return { ok: true, signer: { key: key.fingerprint } };
  }
  return { ok: false, why: `not signed by ${keysText(trust.keys)}` };
}

/** cosign signs a payload's SHA-256 with every kind of key it makes, Ed25519 aside (pure). */
function verifyWith(key: PublicKey, data: Buffer, signature: Buffer): boolean {
  try {
    return sigcrypto.verify(data, key.key, signature, key.key.asymmetricKeyType === "ed25519" ? undefined : "sha256");
  } catch {
    return false;
  }
}

function sameRepositoryAs(written: string, ref: ImageRef): boolean {
  try {
    return sameRepository(parseReference(written), ref);
  } catch {
    return false;
  }
}

function keysText(keys: readonly PublicKey[]): string {
  return keys.map((k) => k.fingerprint).join(" or ");
}

const EMPTY_ROOT: TrustedRoot = {
  mediaType: "application/vnd.dev.sigstore.trustedroot+json;version=0.1",
  tlogs: [],
  certificateAuthorities: [],
  ctlogs: [],
  timestampAuthorities: [],
};
