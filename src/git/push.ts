/**
 * A push over Git's smart HTTP protocol (gitprotocol-http, gitprotocol-pack): the remote's refs
 * from `info/refs?service=git-receive-pack`, then one POST to `git-receive-pack` with the ref
 * update and a pack (isomorphic-git's) of the objects the remote lacks, answered by report-status.
 * The token goes as HTTP Basic (the forges' documented form for tokens over HTTPS), to the remote's
 * own server only; every answer is read through a cap (docs/compose.md, "Git"). isomorphic-git's
 * own push is not used: it counts only what the remote advertises as had (a clone behind its
 * remote would send its whole history) and moves refs/remotes/ without a lock whatever the
 * remote's address; its ref listing takes an advertisement of no refs for protocol v2
 * (docs/decisions.md).
 */
import * as git from "isomorphic-git";
import { readBounded } from "../core/bounded.ts";
import { isLoopbackHostname } from "../core/loopback.ts";
import { decodePercent } from "../core/urls.ts";
import { request } from "../releases/fetch.ts";
import { gitError, hasObject, type ObjectAccess } from "./objects.ts";

export interface Remote {
  /** the repository's address, without credentials */
  url: string;
  username: string;
  token: string | undefined;
  timeoutMs: number;
  fetch?: typeof fetch;
}

export const PUSH_LIMITS = {
  /** the ref advertisement */
  advertisementBytes: 16 * 1024 * 1024,
  /** report-status */
  reportBytes: 1024 * 1024,
  /** commits walked back to what the remote has */
  commits: 2000,
  /** objects in one pack */
  objects: 100_000,
} as const;

export const ZERO_OID = "0".repeat(40);

/** The remote's address checked as svc checks every address it sends a token to: https, or http to this machine. */
export function parseRemote(text: string): { url: string; username: string | undefined } | { problem: string } {
  let url: URL;
  try {
    url = new URL(text.trim());
  } catch {
    return { problem: "compose.git_remote is not a URL" };
  }
  if (url.protocol !== "https:" && !(url.protocol === "http:" && isLoopbackHostname(url.hostname)))
    return { problem: "compose.git_remote must be an https:// address (http:// only to this machine)" };
  if (url.password !== "")
    return { problem: "compose.git_remote must not hold a password: give the token in compose.git_token" };
  const username = url.username === "" ? undefined : decodePercent(url.username);
  url.username = "";
  url.search = "";
  url.hash = "";
  return { url: url.href.replace(/\/+$/, ""), username };
}

function headers(remote: Remote, extra: Record<string, string>): Record<string, string> {
  const auth: Record<string, string> =
    remote.token === undefined
      ? {}
      : { Authorization: `Basic ${Buffer.from(`${remote.username}:${remote.token}`).toString("base64")}` };
  return { "User-Agent": "git/2.0 (svc)", ...auth, ...extra };
}

const deps = (remote: Remote) => ({
  api: { name: "the Git remote" },
  timeoutMs: remote.timeoutMs,
  fetch: remote.fetch,
});

export interface Advertisement {
  refs: Map<string, string>;
  capabilities: Set<string>;
}

/** The remote's refs, as receive-pack advertises them. */
export async function advertisedRefs(remote: Remote): Promise<Advertisement> {
  const url = `${remote.url}/info/refs?service=git-receive-pack`;
  const response = await request(
    deps(remote),
    url,
    headers(remote, { Accept: "application/x-git-receive-pack-advertisement" }),
    new URL(remote.url).origin,
  );
  const body = await checked(response, PUSH_LIMITS.advertisementBytes, "its list of refs");
  if (!(response.headers.get("content-type") ?? "").startsWith("application/x-git-receive-pack-advertisement"))
    throw gitError("the Git remote does not speak Git's smart HTTP protocol (or pushes are off)");
  const lines = pktLines(body);
  let at = 0;
  if (lines[0]?.text.startsWith("# service=")) at = lines[1]?.flush ? 2 : 1;
  const refs = new Map<string, string>();
  const capabilities = new Set<string>();
  for (const [n, line] of lines.slice(at).entries()) {
    if (line.flush) break;
    const [refPart, caps] = line.text.replace(/\n$/, "").split("\0");
    if (n === 0 && caps !== undefined) for (const cap of caps.split(" ")) if (cap) capabilities.add(cap);
    const match = /^([0-9a-f]{40}) (\S+)$/.exec(refPart ?? "");
    if (!match) throw gitError("the Git remote's list of refs is malformed");
    if (match[2] !== "capabilities^{}") refs.set(match[2]!, match[1]!);
  }
  return { refs, capabilities };
}

export interface RefUpdate {
  ref: string;
  /** what the remote holds now (ZERO_OID: the ref is created) */
  old: string;
  next: string;
}

/** Sends the update and the pack; a refusal of the remote (a hook, a protected branch, a stale old value) is an error with its reason. */
export async function receivePack(remote: Remote, update: RefUpdate, pack: Uint8Array): Promise<void> {
  const command = pkt(`${update.old} ${update.next} ${update.ref}\0report-status agent=svc\n`);
  const body = Buffer.concat([command, Buffer.from("0000"), pack]);
  const url = `${remote.url}/git-receive-pack`;
  const response = await request(
    deps(remote),
    url,
    headers(remote, {
      "Content-Type": "application/x-git-receive-pack-request",
      Accept: "application/x-git-receive-pack-result",
    }),
    new URL(remote.url).origin,
    { method: "POST", body },
  );
  const answer = pktLines(await checked(response, PUSH_LIMITS.reportBytes, "its answer to the push"));
  const lines = answer.filter((line) => !line.flush).map((line) => line.text.replace(/\n$/, ""));
  const unpack = lines.find((line) => line.startsWith("unpack "));
  if (unpack !== "unpack ok")
    throw gitError(`the Git remote could not store svc's objects (${(unpack ?? "no report").slice(0, 200)})`);
  const status = lines.find((line) => line.startsWith("ok ") || line.startsWith("ng "));
  if (status === `ok ${update.ref}`) return;
  const reason = status?.startsWith(`ng ${update.ref} `)
    ? status.slice(4 + update.ref.length)
    : "no status for the ref";
  throw gitError(`the Git remote refused to move ${update.ref}: ${reason.slice(0, 300)}`);
}

async function checked(response: Response, cap: number, what: string): Promise<Uint8Array> {
  if (!response.ok) {
    // nothing lost: the failure is told from the status; cancelling only frees the connection
    await response.body?.cancel().catch(() => {});
    const hint =
      response.status === 401 || response.status === 403
        ? " (compose.git_token is missing or refused)"
        : response.status === 404
          ? " (no such repository, or the token may not see it)"
          : "";
    throw gitError(`the Git remote answered ${response.status}${hint}`);
  }
  const { bytes, overCap } = await readBounded(response, cap);
  if (overCap) throw gitError(`the Git remote's ${what} is larger than svc reads (${cap / 1024 / 1024} MiB)`);
  return bytes;
}

function pkt(text: string): Buffer {
  const data = Buffer.from(text, "utf8");
  return Buffer.concat([Buffer.from((data.length + 4).toString(16).padStart(4, "0")), data]);
}

interface PktLine {
  flush: boolean;
  text: string;
}

/** pkt-lines: four hex digits of length (the digits included), "0000" a flush. */
export function pktLines(bytes: Uint8Array): PktLine[] {
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const lines: PktLine[] = [];
  let at = 0;
  while (at + 4 <= buffer.length) {
    const size = Number.parseInt(buffer.toString("latin1", at, at + 4), 16);
    if (!Number.isInteger(size) || (size > 0 && size < 4) || at + Math.max(size, 4) > buffer.length)
      throw gitError("the Git remote's answer is not in pkt-line form");
    if (size <= 2) lines.push({ flush: true, text: "" });
    else lines.push({ flush: false, text: buffer.toString("utf8", at + 4, at + size) });
    at += Math.max(size, 4);
  }
  return lines;
}

// ---- what to send ----

/**
 * The objects reachable from `tip` that the remote lacks: the commits back to the first that
 * the remote advertises (`haves`), and of each one's tree what differs from its first parent's.
 * (An object the remote holds elsewhere may be sent again: the remote keeps one copy.)
 */
export async function missingObjects(
  objects: ObjectAccess,
  tip: string,
  haves: ReadonlySet<string>,
): Promise<string[]> {
  const out = new Set<string>();
  const add = (oid: string) => {
    if (out.has(oid)) return false;
    out.add(oid);
    if (out.size > PUSH_LIMITS.objects) throw gitError(`the push would send more than ${PUSH_LIMITS.objects} objects`);
    return true;
  };
  const addTree = async (tree: string, old: string | undefined): Promise<void> => {
    if (tree === old || !add(tree)) return;
    const before = new Map(old ? (await git.readTree({ ...objects, oid: old })).tree.map((e) => [e.path, e]) : []);
    for (const entry of (await git.readTree({ ...objects, oid: tree })).tree) {
      const previous = before.get(entry.path);
      if (previous?.oid === entry.oid || entry.type === "commit") continue; // a submodule's commit lives elsewhere
      if (entry.type === "tree") await addTree(entry.oid, previous?.type === "tree" ? previous.oid : undefined);
      else add(entry.oid);
    }
  };
  const queue = [tip];
  const seen = new Set<string>();
  while (queue.length > 0) {
    const oid = queue.shift()!;
    if (seen.has(oid) || haves.has(oid)) continue;
    seen.add(oid);
    if (seen.size > PUSH_LIMITS.commits)
      throw gitError(`more than ${PUSH_LIMITS.commits} commits lie between the branch and what the remote has`);
    const { commit } = await git.readCommit({ ...objects, oid });
    add(oid);
    const first = commit.parent[0];
    const parentTree =
      first && (await hasObject(objects, first))
        ? (await git.readCommit({ ...objects, oid: first })).commit.tree
        : undefined;
    await addTree(commit.tree, parentTree);
    queue.push(...commit.parent);
  }
  return [...out];
}

/** Whether `ancestor` is `tip` or one of its ancestors, in the commits this clone holds. */
export async function isAncestor(objects: ObjectAccess, ancestor: string, tip: string): Promise<boolean> {
  if (ancestor === tip) return true;
  if (!(await hasObject(objects, ancestor))) return false;
  try {
    return await git.isDescendent({ ...objects, oid: tip, ancestor, depth: PUSH_LIMITS.commits * 10 });
  } catch {
    return false; // deeper than svc walks, or a commit this clone lacks: not known to be one
  }
}

/** A version 2 pack of the objects (isomorphic-git's: whole objects, no deltas; svc's pushes are a few small ones). */
export async function writePack(objects: ObjectAccess, oids: string[]): Promise<Uint8Array> {
  const { packfile } = await git.packObjects({ ...objects, oids });
  if (!packfile) throw gitError("the pack of svc's objects was not written");
  return packfile;
}
