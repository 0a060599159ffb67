/**
 * The verify room (docs/verification.md): who signed the image an update would run, asked only
 * for a stale target's new digest, answered from a cache by digest.
 *
 * - Under a `[[verify]]` policy (the first whose `images` glob matches): a signature by one of its
 *   keys, or keyless by its issuer and identity, verifies the image; none, and `mode = "enforce"`
 *   holds the update, `warn` only says so.
 * - Without a policy: the first verified signer of a repository is pinned in `state_dir`, as
 *   known_hosts pins a host key; a later image signed by another signer, or unsigned after being
 *   signed, is held until an admin accepts it by name. A repository never seen signed updates as
 *   ever, shown "unsigned".
 * Nothing a container or an image says loosens a policy.
 */
import type { RE2JS } from "re2js";
import type { Config } from "../config/index.ts";
import { toSvcError } from "../core/errors.ts";
import type { Platform } from "../engine/port.ts";
import type { Logger } from "../log/index.ts";
import { type ArtifactReader, type ImageRef, pickPlatform } from "../registry/index.ts";
import type { Remembered } from "../state/index.ts";
import { type FoundSignature, findSignatures } from "./find.ts";
import { loadPublicKey, type PublicKey } from "./keys.ts";
import type { RootSource } from "./root.ts";
import { type Checked, checkSignature, isKeyless, type Signer, signerName, type Trust } from "./signature.ts";

export { rootSource } from "./root.ts";
export { type Signer, signerName } from "./signature.ts";

/** What the report, the API and the page say of a new image's signature. */
export interface SignatureReport {
  /** verified; unsigned (nothing found); unverified (found, not verified: `reason`); held (see `reason`) */
  status: "verified" | "unsigned" | "unverified" | "held";
  /** who signed, verified: a key's fingerprint, or identity (issuer) */
  signer: string | null;
  /** cosign's bundle, or its legacy simple signing */
  format: "bundle" | "simple" | null;
  /** where it was found: referrers API, referrers tag, legacy tag */
  found_in: string | null;
  /** the digest it signs: the new digest, or for an unsigned index the platform manifest pulled from it */
  digest: string | null;
  /** the policy that applied: enforce, warn, or pinned (no policy: the remembered signer) */
  policy: "enforce" | "warn" | "pinned";
  reason: string | null;
}

export interface SignatureCheck {
  /**
   * The signature of `digest` in `ref`'s repository, and whether the update is held for it; for
   * an unsigned index, the signature of its manifest for `platform` (the one the engine pulls).
   */
  check(
    ref: ImageRef,
    digest: string,
    platform?: () => Promise<Platform>,
  ): Promise<{ report: SignatureReport; hold: string | null }>;
  /**
   * An admin accepts the signer a held update of `repository` carries (or its lack of one): the
   * new pin and the one it replaces (undefined: none), or null when nothing waits.
   */
  accept(repository: string): { signer: string; was: string | undefined } | null;
  /** registry requests sent for signatures so far */
  readonly requests: number;
}

type Policy = Config["verify"][number];

interface CompiledPolicy {
  policy: Policy;
  globs: RE2JS[];
  keys: PublicKey[];
  identity: RE2JS | null;
}

/** the signatures found, and the digest they are of */
interface Found {
  signatures: FoundSignature[];
  digest: string;
}

const UNSIGNED = "unsigned";
/** cached answers per repository and digest; the cache forgets the oldest past this */
const CACHE_SIZE = 500;
/** nothing found is asked again after this long: a publisher may sign after pushing */
const UNSIGNED_FOR_MS = 3_600_000;

export function createSignatureCheck(deps: {
  config: Config;
  reader: ArtifactReader;
  /** the pinned signer of each repository */
  signers: Remembered;
  /** the signer a held update carries, per repository, until accepted */
  pending: Remembered;
  root: RootSource;
  log: Logger;
  /** how one signature is checked (tests pass a fake: a keyless signer needs a Sigstore) */
  checkSignature?: typeof checkSignature;
}): SignatureCheck {
  const checkOne = deps.checkSignature ?? checkSignature;
  const policies = deps.config.verify.map(compile);
  const cache = new Map<string, { found: Found; at: number }>();

  /** the signatures of `digest`, else (an unsigned index) of its manifest for `platform` */
  const signatures = async (ref: ImageRef, digest: string, platform?: () => Promise<Platform>): Promise<Found> => {
    const key = `${ref.registry}/${ref.repository}@${digest}`;
    const cached = cache.get(key);
    if (cached && (cached.found.signatures.length > 0 || Date.now() - cached.at < UNSIGNED_FOR_MS)) return cached.found;
    let found: Found = { signatures: await findSignatures(deps.reader, ref, digest), digest };
    if (found.signatures.length === 0 && platform) {
      const manifest = await platformManifest(ref, digest, platform);
      if (manifest !== null) found = { signatures: await findSignatures(deps.reader, ref, manifest), digest: manifest };
    }
    if (cache.size >= CACHE_SIZE) cache.delete(cache.keys().next().value!);
    cache.set(key, { found, at: Date.now() });
    return found;
  };

  /** the manifest an engine pulls from the index `digest` for `platform`; null when `digest` is no index */
  const platformManifest = async (ref: ImageRef, digest: string, platform: () => Promise<Platform>) => {
    const index = await deps.reader.manifest(ref, digest);
    const entries = index?.body.manifests;
    if (!entries) return null;
    return pickPlatform(entries, await platform())?.digest ?? null;
  };

  const trustOf = async (keys: PublicKey[], transparencyLog: boolean, found: FoundSignature[]): Promise<Trust> => {
    // the root is only asked for when a signature may need it (a keyless one, or a log entry)
    const needsRoot = transparencyLog || found.some(isKeyless);
    let root: Trust["root"] = null;
    if (needsRoot) {
      root = await deps.root.get().catch((error) => {
        deps.log.warn("no Sigstore trusted root: keyless signatures are refused", {
          error: toSvcError(error).message,
        });
        return null;
      });
    }
    return { keys, transparencyLog, root };
  };

  const underPolicy = async (p: CompiledPolicy, ref: ImageRef, digest: string, platform?: () => Promise<Platform>) => {
    const mode = p.policy.mode;
    const fail = (reason: string, found?: FoundSignature, signed?: string) => ({
      report: report(mode === "enforce" ? "held" : "unverified", null, found, mode, reason, signed),
      hold: mode === "enforce" ? `signature not verified: ${reason}` : null,
    });
    let found: Found;
    try {
      found = await signatures(ref, digest, platform);
    } catch (error) {
      return fail(`signatures could not be read: ${toSvcError(error).message}`);
    }
    if (found.signatures.length === 0) return fail("no signature found");
    const trust = await trustOf(p.keys, p.policy.transparency_log, found.signatures);
    let last = "";
    for (const signature of found.signatures) {
      const checked = allowed(p, checkOne(signature, ref, found.digest, trust));
      if (checked.ok)
        return { report: report("verified", checked.signer, signature, mode, null, found.digest), hold: null };
      last = checked.why;
    }
    return fail(last, found.signatures[0], found.digest);
  };

  const pinned = async (ref: ImageRef, digest: string, platform?: () => Promise<Platform>) => {
    const repository = `${ref.registry}/${ref.repository}`;
    const pin = deps.signers.get(repository);
    let read: Found;
    try {
      read = await signatures(ref, digest, platform);
    } catch (error) {
      const reason = `signatures could not be read: ${toSvcError(error).message}`;
      // a repository never seen signed updates as ever; one that was must show its signer again
      if (pin === undefined) return { report: report("unsigned", null, undefined, "pinned", reason), hold: null };
      return { report: report("held", null, undefined, "pinned", reason), hold: reason };
    }
    const found = read.signatures;
    const signed = read.digest;
    const trust = await trustOf([], false, found);
    const verified = found
      .map((signature) => ({ signature, checked: checkOne(signature, ref, signed, trust) }))
      .find((v) => v.checked.ok);
    const candidate = verified?.checked.ok ? signerName(verified.checked.signer) : UNSIGNED;
    if (pin === undefined || pin === candidate) {
      if (pin === undefined && candidate !== UNSIGNED) {
        deps.signers.set(repository, candidate);
        deps.log.info("signer pinned for the repository", { image: repository, signer: candidate });
      }
      deps.pending.delete(repository);
      if (verified?.checked.ok)
        return {
          report: report("verified", verified.checked.signer, verified.signature, "pinned", null, signed),
          hold: null,
        };
      const first = found.length === 0 ? null : checkOne(found[0]!, ref, signed, trust);
      const why = first === null || first.ok ? null : `signed, not verified: ${first.why}`;
      return {
        report: report(
          found.length === 0 ? "unsigned" : "unverified",
          null,
          found[0],
          "pinned",
          why,
          found.length === 0 ? undefined : signed,
        ),
        hold: null,
      };
    }
    deps.pending.set(repository, candidate);
    const reason =
      candidate === UNSIGNED
        ? `no longer signed (was signed by ${pin}); accept by name to update`
        : `signer changed: ${pin} -> ${candidate}; accept by name to update`;
    return {
      report: report(
        "held",
        null,
        verified?.signature ?? found[0],
        "pinned",
        reason,
        found.length === 0 ? undefined : signed,
      ),
      hold: reason,
    };
  };

  return {
    check: (ref, digest, platform) => {
      const text = `${ref.registry}/${ref.repository}`;
      const policy = policies.find((p) => p.globs.some((g) => g.matches(text) || g.matches(ref.original)));
      return policy ? underPolicy(policy, ref, digest, platform) : pinned(ref, digest, platform);
    },
    accept: (repository) => {
      const candidate = deps.pending.get(repository);
      if (candidate === undefined) return null;
      const was = deps.signers.get(repository);
      if (candidate === UNSIGNED) deps.signers.delete(repository);
      else deps.signers.set(repository, candidate);
      deps.pending.delete(repository);
      return { signer: candidate, was };
    },
    get requests() {
      return deps.reader.requests;
    },
  };
}

/** A keyless signature verifies only with the policy's issuer and identity. */
function allowed(p: CompiledPolicy, checked: Checked): Checked {
  if (!checked.ok || "key" in checked.signer) return checked;
  const { issuer, identity } = checked.signer;
  if (p.policy.issuer === undefined) return { ok: false, why: `signed keyless by ${identity}; the policy names keys` };
  if (issuer !== p.policy.issuer) return { ok: false, why: `certificate issued by ${issuer}, not ${p.policy.issuer}` };
  const matches = p.identity ? p.identity.matches(identity) : identity === p.policy.identity;
  return matches ? checked : { ok: false, why: `signed by ${identity}, not the policy's identity` };
}

function report(
  status: SignatureReport["status"],
  signer: Signer | null,
  found: FoundSignature | undefined,
  policy: SignatureReport["policy"],
  reason: string | null,
  signed?: string,
): SignatureReport {
  return {
    status,
    signer: signer ? signerName(signer) : null,
    format: found?.format ?? null,
    found_in: found?.where ?? null,
    digest: found && signed !== undefined ? signed : null,
    policy,
    reason,
  };
}

function compile(policy: Policy): CompiledPolicy {
  const RE2 = linear();
  return {
    policy,
    globs: policy.images.map((glob) => RE2.compile(globPattern(glob))),
    keys: policy.keys.map(loadPublicKey),
    identity: policy.identity_regexp ? RE2.compile(`^(?:${policy.identity_regexp})$`) : null,
  };
}

/** `*` any characters, the rest literal: matched in linear time (re2js). */
export function globPattern(glob: string): string {
  return `^${glob
    .split("*")
    .map((part) => part.replace(/[\\^$.|?+()[\]{}]/g, "\\$&"))
    .join(".*")}$`;
}

function linear(): typeof RE2JS {
  return (require("re2js") as typeof import("re2js")).RE2JS;
}
