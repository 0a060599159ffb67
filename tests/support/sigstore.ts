/**
 * A private Sigstore on loopback for keyless tests: @sigstore/mock's Fulcio and Rekor answering
 * their real endpoints over HTTP, bundles made by @sigstore/sign's DSSE builder against them (as
 * cosign 3 makes for an image), and the trusted root a verifier is given for this Sigstore.
 */
import { createHash } from "node:crypto";
import {
  fulcioHandler,
  type HandlerFn,
  initializeCA,
  initializeCTLog,
  initializeTLog,
  rekorHandler,
} from "@sigstore/mock";
import { generateKeyPair } from "@sigstore/mock/dist/util/key";
import { HashAlgorithm, PublicKeyDetails, TrustedRoot } from "@sigstore/protobuf-specs";
import { DSSEBundleBuilder, FulcioSigner, RekorWitness } from "@sigstore/sign";

export const COSIGN_PREDICATE = "https://sigstore.dev/cosign/sign/v1";
const LOG_URL = "https://rekor.test";
export const GITHUB_ISSUER = "https://token.actions.githubusercontent.com";

export interface Sigstore {
  /** the trusted root naming this Sigstore's CA and log */
  root: TrustedRoot;
  /**
   * A cosign bundle signing `digest`, its certificate for `identity` from `issuer`; `at` sets the
   * CA's clock (a certificate issued then); `log: false` leaves the log entry out.
   */
  sign(digest: string, who: { identity: string; issuer?: string; at?: Date; log?: boolean }): Promise<object>;
  stop(): void;
}

/** Starts a Fulcio and a Rekor on 127.0.0.1 (one port, their two paths). */
export async function startSigstore(): Promise<Sigstore> {
  const caKeys = generateKeyPair();
  const ctKeys = generateKeyPair();
  const logKeys = generateKeyPair();
  const ctlog = await initializeCTLog(ctKeys);
  const tlog = await initializeTLog(LOG_URL, logKeys);
  // one CA per clock: a certificate issued in the past is made by a CA whose clock says so
  const handlers = new Map<string, HandlerFn>();
  const now = await initializeCA(caKeys, ctlog);
  handlers.set("/api/v1/log/entries", rekorHandler(tlog).fn);

  let fulcio: HandlerFn = fulcioHandler(now).fn;
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    // the signer's client keeps a connection for its next request: closed here first (Bun's
    // default is 10 s idle), a request sent on it as it closed met ECONNRESET on a loaded machine
    idleTimeout: 255,
    async fetch(request) {
      const path = new URL(request.url).pathname;
      const handler = path === "/api/v2/signingCert" ? fulcio : handlers.get(path);
      if (request.method !== "POST" || !handler) return new Response("not found", { status: 404 });
      const answer = await handler(await request.text());
      const body =
        typeof answer.response === "string"
          ? answer.response
          : Buffer.from(answer.response.buffer, answer.response.byteOffset, answer.response.byteLength);
      return new Response(body, {
        status: answer.statusCode,
        headers: { "Content-Type": answer.contentType ?? "text/plain" },
      });
    },
  });
  const base = `http://127.0.0.1:${server.port}`;
  const root = TrustedRoot.fromJSON(
    TrustedRoot.toJSON({
      mediaType: "application/vnd.dev.sigstore.trustedroot+json;version=0.1",
      certificateAuthorities: [
        {
          subject: { commonName: "sigstore", organization: "sigstore.mock" },
          uri: base,
          certChain: { certificates: [{ rawBytes: Buffer.from(now.rootCertificate.buffer) }] },
          validFor: { start: new Date(0) },
          operator: "svc tests",
        },
      ],
      tlogs: [
        {
          // the name the log signs its checkpoints with
          baseUrl: LOG_URL,
          logId: { keyId: createHash("sha256").update(tlog.publicKey).digest() },
          hashAlgorithm: HashAlgorithm.SHA2_256,
          publicKey: {
            rawBytes: tlog.publicKey,
            keyDetails: PublicKeyDetails.PKIX_ECDSA_P256_SHA_256,
            validFor: { start: new Date(0) },
          },
          checkpointKeyId: undefined,
          operator: "svc tests",
        },
      ],
      ctlogs: [
        {
          baseUrl: base,
          logId: { keyId: Buffer.from(ctlog.logID.buffer) },
          hashAlgorithm: HashAlgorithm.SHA2_256,
          publicKey: {
            rawBytes: ctlog.publicKey,
            keyDetails: PublicKeyDetails.PKIX_ECDSA_P256_SHA_256,
            validFor: { start: new Date(0) },
          },
          checkpointKeyId: undefined,
          operator: "svc tests",
        },
      ],
      timestampAuthorities: [],
    }),
  );

  return {
    root,
    async sign(digest, who) {
      fulcio = fulcioHandler(who.at ? await initializeCA(caKeys, ctlog, who.at) : now).fn;
      const token = jwt({ iss: who.issuer ?? GITHUB_ISSUER, sub: who.identity });
      const builder = new DSSEBundleBuilder({
        signer: new FulcioSigner({ fulcioBaseURL: base, identityProvider: { getToken: async () => token } }),
        // an intoto entry: the mock log keeps the proposed entry as its body, which Rekor does
        // for intoto but not for dsse entries (it rewrites those)
        witnesses: who.log === false ? [] : [new RekorWitness({ rekorBaseURL: base, entryType: "intoto" })],
      });
      const bundle = await builder.create({ data: statement(digest), type: "application/vnd.in-toto+json" });
      return (await import("@sigstore/bundle")).bundleToJSON(bundle);
    },
    stop: () => server.stop(true),
  };
}

/** cosign 3's statement for an image: its digest the subject, cosign's predicate. */
export function statement(digest: string): Buffer {
  const [algorithm, hex] = digest.split(":");
  return Buffer.from(
    JSON.stringify({
      _type: "https://in-toto.io/Statement/v1",
      subject: [{ name: "", digest: { [algorithm!]: hex } }],
      predicateType: COSIGN_PREDICATE,
      predicate: {},
    }),
  );
}

/** An unsigned JWT: the mock Fulcio reads its claims without checking a signature. */
function jwt(claims: Record<string, string>): string {
  const part = (o: object) => Buffer.from(JSON.stringify(o)).toString("base64url");
  return `${part({ alg: "none", typ: "JWT" })}.${part({ ...claims, aud: "sigstore", exp: Math.floor(Date.now() / 1000) + 600 })}.`;
}

/**
 * Attaches `bundle` to `repository@subject` in a registry without the referrers API (the
 * sandbox's), as cosign 3 does there: the bundle as an OCI artifact whose subject is the image,
 * listed in the referrers tag schema's index (`sha256-<hex>`).
 */
export async function attachBundle(repository: string, subject: string, bundle: object): Promise<void> {
  const slash = repository.indexOf("/");
  const base = `http://${repository.slice(0, slash)}/v2/${repository.slice(slash + 1)}`;
  const push = async (bytes: Uint8Array) => {
    const digest = `sha256:${createHash("sha256").update(bytes).digest("hex")}`;
    const start = await fetch(`${base}/blobs/uploads/`, { method: "POST" });
    const location = new URL(start.headers.get("location")!, base);
    location.searchParams.set("digest", digest);
    const put = await fetch(location, { method: "PUT", body: bytes });
    if (!put.ok) throw new Error(`PUT blob: ${put.status}`);
    return { digest, size: bytes.byteLength };
  };
  const putManifest = async (reference: string, type: string, body: object) => {
    const bytes = new TextEncoder().encode(JSON.stringify(body));
    const put = await fetch(`${base}/manifests/${reference}`, {
      method: "PUT",
      headers: { "Content-Type": type },
      body: bytes,
    });
    if (!put.ok) throw new Error(`PUT manifest ${reference}: ${put.status} ${await put.text()}`);
    return { digest: `sha256:${createHash("sha256").update(bytes).digest("hex")}`, size: bytes.byteLength };
  };
  const encode = (o: object) => new TextEncoder().encode(JSON.stringify(o));
  const subjectAnswer = await fetch(`${base}/manifests/${subject}`, {
    method: "HEAD",
    headers: { Accept: "application/vnd.oci.image.index.v1+json, application/vnd.oci.image.manifest.v1+json" },
  });
  const subjectType = subjectAnswer.headers.get("content-type") ?? "application/vnd.oci.image.manifest.v1+json";
  const artifactType = "application/vnd.dev.sigstore.bundle.v0.3+json";
  const artifact = await putManifest(
    `sha256-${subject.slice(7)}-bundle`,
    "application/vnd.oci.image.manifest.v1+json",
    {
      schemaVersion: 2,
      mediaType: "application/vnd.oci.image.manifest.v1+json",
      artifactType,
      config: { mediaType: "application/vnd.oci.empty.v1+json", ...(await push(encode({}))) },
      layers: [{ mediaType: artifactType, ...(await push(encode(bundle))) }],
      subject: { mediaType: subjectType, digest: subject, size: Number(subjectAnswer.headers.get("content-length")) },
    },
  );
  await putManifest(`sha256-${subject.slice(7)}`, "application/vnd.oci.image.index.v1+json", {
    schemaVersion: 2,
    mediaType: "application/vnd.oci.image.index.v1+json",
    manifests: [{ mediaType: "application/vnd.oci.image.manifest.v1+json", ...artifact, artifactType }],
  });
}

/** The trusted root as the JSON file `trusted_root` names. */
export function trustedRootJson(root: TrustedRoot): string {
  return JSON.stringify(TrustedRoot.toJSON(root));
}
