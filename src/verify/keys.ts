/**
 * Public keys a policy names (a PEM file or the PEM itself): ECDSA P-256/P-384, Ed25519 or RSA,
 * as cosign makes and reads them; each known by its fingerprint, the one name a person compares.
 */

import { createHash, createPublicKey, type KeyObject } from "node:crypto";
import { readFileSync } from "node:fs";
import { SvcError } from "../core/errors.ts";

export interface PublicKey {
  key: KeyObject;
  /** "SHA256:<base64 of the key's SubjectPublicKeyInfo digest>", as ssh-keygen prints one */
  fingerprint: string;
}

const PEM = /-----BEGIN PUBLIC KEY-----[\s\S]+?-----END PUBLIC KEY-----/;
const MAX_KEY_FILE = 64 * 1024;

/** A key from its PEM text, or from the file a path names. Throws SvcError (config) with why not. */
export function loadPublicKey(source: string): PublicKey {
  const text = PEM.test(source) ? source : readKeyFile(source);
  const pem = text.match(PEM)?.[0];
  if (!pem) throw new SvcError("config", `${describe(source)} holds no PEM public key (-----BEGIN PUBLIC KEY-----)`);
  let key: KeyObject;
  try {
    key = createPublicKey(pem);
  } catch (error) {
    throw new SvcError("config", `${describe(source)} is not a public key: ${(error as Error).message}`);
  }
  if (!supported(key))
    throw new SvcError("config", `${describe(source)}: only ECDSA P-256/P-384, Ed25519 and RSA keys are verified`);
  return { key, fingerprint: fingerprintOf(key) };
}

export function fingerprintOf(key: KeyObject): string {
  const der = key.export({ type: "spki", format: "der" });
  return `SHA256:${createHash("sha256").update(der).digest("base64").replace(/=+$/, "")}`;
}

function supported(key: KeyObject): boolean {
  if (key.asymmetricKeyType === "ed25519" || key.asymmetricKeyType === "rsa") return true;
  const curve = key.asymmetricKeyDetails?.namedCurve;
  return key.asymmetricKeyType === "ec" && (curve === "prime256v1" || curve === "secp384r1");
}

function readKeyFile(path: string): string {
  try {
    const bytes = readFileSync(path);
    if (bytes.byteLength > MAX_KEY_FILE) throw new Error("larger than 64 KiB");
    return bytes.toString("utf8");
  } catch (error) {
    throw new SvcError("config", `key file ${path} cannot be read: ${(error as Error).message}`);
  }
}

/** A file's path, or "an inline key" (never the key's text). */
function describe(source: string): string {
  return PEM.test(source) || source.includes("\n") ? "an inline key" : `key file ${source}`;
}
