/**
 * Peers (docs/dashboard.md): other svc instances whose containers the dashboard shows beside
 * this one's. A peer is reached the way a browser reaches svc: its URL, its token, a bounded
 * wait. The browser talks to this svc only and never sees a peer's token: reads and actions go
 * through here. A peer that does not answer in time is shown unreachable, since when, with the
 * last state it gave; it never delays the local answer (the page asks for peers apart) nor
 * another peer (all are asked at once).
 */
import { readFileSync } from "node:fs";
import type { Config } from "../config/index.ts";
import { type JsonReadError, readBounded, readBoundedJson } from "../core/bounded.ts";
import { SvcError, toSvcError } from "../core/errors.ts";
import { duration } from "../core/moments.ts";
import type { CopyView } from "../dataguard/index.ts";
import type { Logger } from "../log/index.ts";
import type { Metrics } from "../metrics/index.ts";
import type { ContainersAnswer, PeerState } from "../ui/page/api.ts";
import { readContainersAnswer } from "./containers-answer.ts";
import { readCopiesAnswer } from "./data-guard-answer.ts";
import { jsonResponse } from "./http.ts";
import { MAX_BODY_BYTES } from "./update-request.ts";

type PeerConfig = Config["peers"][number];

/**
 * A peer's answer is read up to this size: GET /v1/containers of 500 containers, each with every
 * field filled, is about 0.75 MiB (docs/security.md); the rest is room for long reasons.
 */
const MAX_ANSWER_BYTES = 2 * 1024 * 1024;
/** An action through a peer (an update that watches its containers) may take this long at most. */
const MAX_ACTION_MS = 30 * 60_000;

/** A peer as GET /v1/peers tells it (its shape is the page's: src/ui/page/api.ts). */
export type PeerView = PeerState<ContainersAnswer>;

/** What the page asks of a peer: GET reads, POST and DELETE act (they need http_api.update here). */
export type PeerMethod = "GET" | "POST" | "DELETE";

/** The endpoints of a peer the dashboard may call through this svc, and with which methods. */
export const PEER_ENDPOINTS: Readonly<Record<string, readonly PeerMethod[]>> = {
  containers: ["GET"],
  progress: ["GET"],
  history: ["GET"],
  check: ["POST"],
  update: ["POST"],
  skip: ["POST"],
  snooze: ["POST"],
  rollback: ["POST"],
  // a peer's update held for its signer, accepted on the page
  "signers/accept": ["POST"],
  // the peer's data guard copies: listed and deleted on the page, and "the image and its data"
  // offered for a peer's container too
  "data-guard": ["GET", "DELETE"],
};

export interface Peers {
  readonly names: readonly string[];
  /** asks every peer for its containers at once; each answers within peer_timeout or is unreachable */
  refresh(): Promise<PeerView[]>;
  /** one request to one peer's endpoint, with its token; its status and body come back as they are */
  forward(name: string, endpoint: string, method: PeerMethod, request: Request, query: string): Promise<Response>;
}

interface Known {
  view: PeerView;
}

export function createPeers(config: Config, metrics: Metrics, log: Logger): Peers {
  const logger = log.child("peers");
  const timeoutMs = Math.min(config.peer_timeout, MAX_ACTION_MS);
  const byName = new Map(config.peers.map((peer) => [peer.name, peer]));
  const known = new Map<string, Known>(
    config.peers.map((peer) => [
      peer.name,
      {
        view: {
          name: peer.name,
          up: false,
          busy: false,
          checked_at: null,
          unreachable_since: null,
          error: null,
          answered_at: null,
          data: null,
          dropped: [],
        },
      },
    ]),
  );

  const call = async (peer: PeerConfig, path: string, init: RequestInit, waitMs: number): Promise<Response> => {
    const url = new URL(path, peer.url.endsWith("/") ? peer.url : `${peer.url}/`);
    const headers = new Headers(init.headers);
    headers.set("authorization", `Bearer ${peer.token}`);
    headers.set("accept", "application/json");
    try {
      return await fetch(url, {
        ...init,
        headers,
        redirect: "manual",
        signal: AbortSignal.timeout(waitMs),
        ...tlsOf(peer),
      });
    } catch (error) {
      const what =
        (error as Error)?.name === "TimeoutError" ? `no answer within ${duration(waitMs)}` : toSvcError(error).message;
      throw new SvcError("peer", `peer ${peer.name} (${url.origin}): ${what}`);
    }
  };

  const refreshOne = async (peer: PeerConfig): Promise<PeerView> => {
    const entry = known.get(peer.name)!;
    const now = new Date().toISOString();
    try {
      const response = await call(peer, "v1/containers", { method: "GET" }, timeoutMs);
      const busy = response.status === 409;
      if (!busy && !response.ok)
        throw new SvcError(
          "peer",
          `peer ${peer.name} answered ${response.status}${response.status === 401 ? " (its token in peers is not the one it expects)" : ""}`,
        );
      const read = busy
        ? { answer: entry.view.data, dropped: entry.view.dropped }
        : readContainers(peer.name, await readJson(peer.name, response), logger);
      // nothing lost: the answer was read above; cancelling only frees the connection
      await response.body?.cancel().catch(() => {});
      entry.view = {
        ...entry.view,
        up: true,
        busy,
        checked_at: now,
        unreachable_since: null,
        error: null,
        answered_at: busy ? entry.view.answered_at : now,
        data: read.answer,
        dropped: read.dropped,
      };
    } catch (error) {
      const message = toSvcError(error).message;
      if (entry.view.unreachable_since === null)
        logger.warn("peer unreachable: showing its last known state", { peer: peer.name, error: message });
      entry.view = {
        ...entry.view,
        up: false,
        busy: false,
        checked_at: now,
        unreachable_since: entry.view.unreachable_since ?? now,
        error: message,
      };
    }
    metrics.recordPeer(peer.name, entry.view.up);
    return entry.view;
  };

  return {
    names: config.peers.map((peer) => peer.name),
    refresh: () => Promise.all(config.peers.map(refreshOne)),
    async forward(name, endpoint, method, request, query) {
      const peer = byName.get(name);
      if (!peer || !PEER_ENDPOINTS[endpoint]?.includes(method)) throw new SvcError("not_found", "not found");
      const body = method === "POST" ? await readBounded(request, MAX_BODY_BYTES) : undefined;
      if (body?.overCap)
        throw new SvcError("payload_too_large", `the request body exceeds ${MAX_BODY_BYTES / 1024} KiB`);
      const headers: Record<string, string> = {};
      const type = request.headers.get("content-type");
      if (type && body && body.bytes.byteLength > 0) headers["content-type"] = type;
      const waitMs = method === "GET" ? Math.max(timeoutMs, 60_000) : MAX_ACTION_MS;
      const response = await call(
        peer,
        `v1/${endpoint}${query}`,
        { method, headers, body: body && body.bytes.byteLength > 0 ? body.bytes : undefined },
        waitMs,
      );
      return forwarded(name, endpoint, response, logger);
    },
  };
}

/**
 * A peer's answer as this svc gives it to the page: JSON always (read, bounded, and written
 * again), its containers read as the peer list reads them. The peer's refusal of its token is
 * the peer's, not the page's: a 502 naming the peer, never a 401 that would sign the page out.
 */
async function forwarded(name: string, endpoint: string, response: Response, log: Logger): Promise<Response> {
  if (response.status === 401) {
    // nothing lost: the status is the answer; cancelling only frees the connection
    await response.body?.cancel().catch(() => {});
    throw new SvcError(
      "peer",
      `peer ${name} refused the token svc holds for it (401): its token in peers is not the one it expects`,
    );
  }
  if (response.status >= 300 && response.status < 400) {
    // nothing lost: a redirect is refused by its status; cancelling only frees the connection
    await response.body?.cancel().catch(() => {});
    throw new SvcError(
      "peer",
      `peer ${name} answered ${response.status} (a redirect, which svc does not follow): is its url the svc API?`,
    );
  }
  const read = await readBoundedJson(response, MAX_ANSWER_BYTES);
  if ("error" in read && read.error === "empty") return new Response(null, { status: response.status });
  let body = answerOf(name, read);
  if (endpoint === "containers" && response.ok) body = readContainers(name, body, log).answer;
  if (endpoint === "data-guard" && response.ok) body = readCopies(name, body, log);
  return jsonResponse(body, response.status);
}

/**
 * A peer's answer read with svc's own reader: the entries that fit svc's own answer; the others
 * dropped, named in the log (`what`: which entries they are).
 */
function readPeerAnswer<T extends { dropped: string[] }>(
  name: string,
  raw: unknown,
  log: Logger,
  reader: (raw: unknown) => T | null | undefined,
  what: string,
): T {
  const read = reader(raw);
  if (!read) throw new SvcError("peer", `peer ${name} did not answer as svc does (is the url an svc API?)`);
  if (read.dropped.length)
    log.warn(`${what} of a peer's answer left out: they are not what svc answers`, {
      peer: name,
      dropped: read.dropped,
    });
  return read;
}

/** A peer's GET /v1/containers (readPeerAnswer). */
const readContainers = (name: string, raw: unknown, log: Logger) =>
  readPeerAnswer(name, raw, log, readContainersAnswer, "entries");

/** A peer's GET /v1/data-guard (readPeerAnswer), as svc's own answer: the copies alone. */
const readCopies = (name: string, raw: unknown, log: Logger): { copies: CopyView[] } => ({
  copies: readPeerAnswer(name, raw, log, readCopiesAnswer, "copies").copies,
});

async function readJson(name: string, response: Response): Promise<unknown> {
  return answerOf(name, await readBoundedJson(response, MAX_ANSWER_BYTES));
}

function answerOf(name: string, read: { value: unknown } | JsonReadError): unknown {
  if ("value" in read) return read.value;
  if (read.error === "over_cap")
    throw new SvcError("peer", `peer ${name} answered more than ${MAX_ANSWER_BYTES / 1024 / 1024} MiB`);
  throw new SvcError("peer", `peer ${name} did not answer JSON (is the url an svc API?)`);
}

/** A private CA for the peer's https address, read when asked for (a file that goes is said then). */
function tlsOf(peer: PeerConfig): { tls?: { ca: string } } {
  if (!peer.ca_cert) return {};
  try {
    return { tls: { ca: readFileSync(peer.ca_cert, "utf8") } };
  } catch (error) {
    throw new SvcError("peer", `peer ${peer.name}: cannot read ca_cert ${peer.ca_cert}: ${toSvcError(error).message}`);
  }
}
