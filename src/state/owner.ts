/**
 * Which processes use a state file. Two files beside it:
 * - `<state file>.owner`: a running service (pid, host, the address and port of its update API, a
 *   nonce), so that a one-off command on the same folder (`svc rollback`) can hand its work to that
 *   service. Removed when the service stops. The file is as private as the folder (0600 in a folder
 *   svc keeps to its user): whoever answers on the address proves to be the owner by showing it
 *   knows the nonce (`ownerProof`), and the command's request proves itself with the nonce too
 *   (`signOwnerRequest`), so no API token travels on a handover.
 * - `<state file>.busy`: the process acting on the containers right now (a cycle, `svc rollback`),
 *   created exclusively and removed when it ends, so two processes never act on the engine at the
 *   same time: a service's cycle is skipped while a command holds it, a command waits for a cycle.
 * A file left by a process that died (on this host with its pid gone, or naming this very process:
 * a restart in the same container) is no one's; so is a lease its holder stopped touching (a
 * holder on another host, such as a replaced container, cannot be asked whether it lives).
 */

import { linkSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { isIP } from "node:net";
import { hostname } from "node:os";
import { dirname } from "node:path";
import { z } from "zod";

const ProcessSchema = z.object({ pid: z.number().int().positive(), host: z.string().max(255) });

const OwnerSchema = ProcessSchema.extend({
  /** the port the update API listens on, or null when svc has no update API */
  api_port: z.number().int().min(1).max(65535).nullable(),
  /** the address this machine reaches that API on (loopback for a wildcard); absent from an older svc's file */
  api_address: z
    .string()
    .max(64)
    .refine((value) => isIP(value) !== 0)
    .optional(),
  started_at: z.string().max(64),
  /** known to the owner and to whoever may read the state folder; absent from an older svc's file */
  nonce: z
    .string()
    .regex(/^[0-9a-f]{64}$/)
    .optional(),
});
export type Owner = z.infer<typeof OwnerSchema>;

const HolderSchema = ProcessSchema.extend({ what: z.string().max(200) });
export type Holder = z.infer<typeof HolderSchema>;

/** A new owner's nonce: 32 random bytes, in hex. */
export function newOwnerNonce(): string {
  return Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("hex");
}

/** The header a command sends its challenge in (GET /v1/health), and the one the owner answers with. */
export const OWNER_CHALLENGE_HEADER = "x-svc-owner-challenge";
export const OWNER_PROOF_HEADER = "x-svc-owner-proof";

/** A challenge as a command sends it: 32 random bytes, in hex. Anything else gets no proof. */
export const isOwnerChallenge = (value: string | null): value is string =>
  value !== null && /^[0-9a-f]{64}$/.test(value);

/**
 * What the owner answers to a challenge: HMAC-SHA256 of it under the nonce. Showing it proves
 * knowing the nonce without giving it away, and a proof is good for one challenge only.
 */
export function ownerProof(nonce: string, challenge: string): string {
  return new Bun.CryptoHasher("sha256", nonce).update(challenge).digest("hex");
}

/**
 * The header a handed-over request proves itself in: `v1 <unix seconds> <request nonce> <HMAC>`,
 * the HMAC-SHA256 under the owner's nonce of the method, the path and query, the moment and the
 * request's own nonce. The request has no body (what it asks is all in its query string), so the
 * proof covers all of it; it is good for one request, within REQUEST_PROOF_WINDOW_S of its moment.
 */
export const OWNER_REQUEST_HEADER = "x-svc-owner-request";
const REQUEST_PROOF_WINDOW_S = 60;

function requestMac(
  nonce: string,
  method: string,
  pathAndQuery: string,
  seconds: number,
  requestNonce: string,
): string {
  return new Bun.CryptoHasher("sha256", nonce)
    .update(`svc-owner-request\n${method}\n${pathAndQuery}\n${seconds}\n${requestNonce}`)
    .digest("hex");
}

/** The proof header of a request `svc rollback` hands to the owner (no token, no body). */
export function signOwnerRequest(
  nonce: string,
  method: string,
  pathAndQuery: string,
  now = Date.now(),
): Record<string, string> {
  const seconds = Math.floor(now / 1000);
  const requestNonce = newOwnerNonce();
  return {
    [OWNER_REQUEST_HEADER]: `v1 ${seconds} ${requestNonce} ${requestMac(nonce, method, pathAndQuery, seconds, requestNonce)}`,
  };
}

/**
 * The owner's check of a handed-over request's proof: the HMAC matches, the moment is within the
 * window, and the request's nonce was not seen before (a relay that saw one cannot send it again).
 */
export function ownerRequestVerifier(
  nonce: string,
  now: () => number = Date.now,
): (header: string | null, method: string, pathAndQuery: string) => boolean {
  const seen = new Map<string, number>();
  return (header, method, pathAndQuery) => {
    const match = header === null ? null : /^v1 (\d{1,12}) ([0-9a-f]{64}) ([0-9a-f]{64})$/.exec(header);
    if (!match) return false;
    const [seconds, requestNonce, mac] = [Number(match[1]), match[2]!, match[3]!];
    const nowSeconds = Math.floor(now() / 1000);
    if (Math.abs(nowSeconds - seconds) > REQUEST_PROOF_WINDOW_S) return false;
    const expected = requestMac(nonce, method, pathAndQuery, seconds, requestNonce);
    if (!crypto.timingSafeEqual(Buffer.from(mac), Buffer.from(expected))) return false;
    for (const [key, until] of seen) if (until < nowSeconds) seen.delete(key);
    if (seen.has(requestNonce)) return false;
    seen.set(requestNonce, seconds + REQUEST_PROOF_WINDOW_S);
    return true;
  };
}

/** Where a service's update API is reached from this machine, for its claim. */
export interface ApiPlace {
  address: string;
  port: number;
}

/** Claims the state file for this service; the returned function lets go of it (only if still ours). */
export function claimState(stateFile: string, api: ApiPlace | null, nonce?: string): () => void {
  const file = `${stateFile}.owner`;
  try {
    mkdirSync(dirname(file), { recursive: true });
    const temporary = `${file}.${crypto.randomUUID()}.tmp`;
    const place = api ? { api_port: api.port, api_address: api.address } : { api_port: null };
    writeFileSync(
      temporary,
      JSON.stringify({
        ...me(),
        ...place,
        started_at: new Date().toISOString(),
        ...(nonce ? { nonce } : {}),
      } satisfies Owner),
      { mode: 0o600 },
    );
    renameSync(temporary, file);
  } catch {
    return () => {}; // a folder svc cannot write: the state room says so
  }
  return () => releaseIfMine(file);
}

/**
 * The service that claimed the state file and may still run, if any. One on another host cannot
 * be asked whether it runs: it counts only once it proves itself on its port (src/commands/rollback.ts).
 */
export function liveOwner(stateFile: string): Owner | undefined {
  const owner = readJson(`${stateFile}.owner`, OwnerSchema);
  return owner && mayRun(owner) ? owner : undefined;
}

export type Lease = { release(): void } | { holder: Holder };

/** A lease's holder touches it this often; one untouched for LEASE_STALE_MS was left by a process that died. */
const LEASE_HEARTBEAT_MS = 20_000;
const LEASE_STALE_MS = 90_000;

/** Takes the right to act on the containers for `what`, or says who holds it. */
export function tryLease(stateFile: string, what: string): Lease {
  const file = `${stateFile}.busy`;
  for (let attempt = 0; ; attempt++) {
    try {
      mkdirSync(dirname(file), { recursive: true });
      // written whole, then linked: whoever reads the file reads a holder, never an empty file
      // unique per process across hosts: services in two containers may both be pid 1
      const temporary = `${file}.${crypto.randomUUID()}.tmp`;
      writeFileSync(temporary, JSON.stringify({ ...me(), what } satisfies Holder), { mode: 0o600 });
      try {
        linkSync(temporary, file);
      } finally {
        rmSync(temporary, { force: true });
      }
      // the holder says it is alive by touching the file: a holder that died on another host
      // (a replaced container) cannot be asked, its lease just goes stale
      const heartbeat = setInterval(() => touch(file), LEASE_HEARTBEAT_MS);
      heartbeat.unref();
      return {
        release: () => {
          clearInterval(heartbeat);
          releaseIfMine(file);
        },
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") return { release() {} }; // a folder svc cannot write: the state room says so
      const holder = readJson(file, HolderSchema);
      if (attempt === 0 && (holder === undefined || !mayRun(holder) || ageMs(file) > LEASE_STALE_MS)) {
        rmSync(file, { force: true });
        continue;
      }
      return { holder: holder ?? { pid: 1, host: "?", what: "?" } };
    }
  }
}

/** Waits (polling, up to `timeoutMs`) for the lease; `waiting` is told once who holds it. */
export async function waitForLease(
  stateFile: string,
  what: string,
  timeoutMs: number,
  waiting: (holder: Holder) => void,
): Promise<Lease> {
  const deadline = Date.now() + timeoutMs;
  for (let told = false; ; told = true) {
    const got = tryLease(stateFile, what);
    if ("release" in got || Date.now() > deadline) return got;
    if (!told) waiting(got.holder);
    await Bun.sleep(250);
  }
}

/** "svc rollback (pid 12)", "a cycle of svc (pid 7 on web-1)" */
export function describeProcess(process_: { pid: number; host: string; what?: string }): string {
  return `${process_.what ?? "svc"} (pid ${process_.pid}${onThisHost(process_) ? "" : ` on ${process_.host}`})`;
}

/** Whether the process ran on this host (its pid then means something here). */
export function onThisHost(other: { host: string }): boolean {
  return other.host === hostname();
}

function me(): { pid: number; host: string } {
  return { pid: process.pid, host: hostname() };
}

function releaseIfMine(file: string): void {
  const holder = readJson(file, ProcessSchema);
  if (holder?.pid === process.pid && holder.host === hostname()) rmSync(file, { force: true });
}

function touch(file: string): void {
  const now = new Date();
  try {
    utimesSync(file, now, now);
  } catch {
    // gone or taken over: nothing to keep alive
  }
}

function ageMs(file: string): number {
  const stat = statSync(file, { throwIfNoEntry: false });
  return stat ? Date.now() - stat.mtimeMs : 0;
}

function readJson<T>(file: string, schema: z.ZodType<T>): T | undefined {
  try {
    return schema.parse(JSON.parse(readFileSync(file, "utf8").slice(0, 4096)));
  } catch {
    return undefined;
  }
}

/** False when the process surely is gone: on this host with its pid gone, or this process itself. */
function mayRun(other: { pid: number; host: string }): boolean {
  if (!onThisHost(other)) return true;
  if (other.pid === process.pid) return false;
  try {
    process.kill(other.pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}
