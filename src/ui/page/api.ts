/**
 * The page's only way to svc: the HTTP API of docs/api.md, on the page's own origin, with the
 * token the person signed in with. The token is kept for this browser tab only
 * (sessionStorage): no cookie, so no other site can make the browser act with it. Behind an
 * identity proxy that signs people in with its cookie, the page's requests carry that cookie
 * (same origin only) and the X-Svc-Request header that tells svc they are the page's, which no
 * other site's form can send (docs/security.md).
 */

import type { CopyView } from "../../dataguard/guard.ts";
import type { ContainerReport, QueuedRequest, RollbackResult, SessionReport, SkipResult } from "../../updater/types.ts";
import type { RunningCycle } from "../../updater/views/live.ts";
import type { ExcludedContainer } from "../../updater/views/overview.ts";
import type { LastOutcome, sessionSummary, TimelineEntry } from "../../updater/views/timeline.ts";

export type { ContainerReport, CopyView, QueuedRequest, RunningCycle, SessionReport, TimelineEntry };

/** What GET /v1/progress answers: the cycle under way and the updates queued behind it. */
export interface ProgressAnswer {
  running: RunningCycle | null;
  /** absent from an svc that queues nothing (an older peer) */
  queued?: QueuedRequest[];
}

/** One container as GET /v1/containers describes it. */
export type ContainerOverview = import("../../updater/views/overview.ts").ContainerOverview & LastOutcome;
export type SessionSummary = ReturnType<typeof sessionSummary>;

/** A peer as GET /v1/peers tells it (docs/api.md); `data` is its last GET /v1/containers answer. */
export interface PeerState<Data> {
  name: string;
  /** it answered the last request in time */
  up: boolean;
  /** it answered, but a cycle runs there: the containers are its last known ones */
  busy: boolean;
  /** when svc last asked it */
  checked_at: string | null;
  /** when it stopped answering (null while it answers) */
  unreachable_since: string | null;
  error: string | null;
  /** its last answer, and when it came */
  answered_at: string | null;
  data: Data | null;
  /** the entries of that answer left out, each named with why: not what svc answers (docs/security.md) */
  dropped: string[];
}

/** A peer, its containers as the page reads them. */
export type PeerView = PeerState<ContainersAnswer>;

export interface ContainersAnswer {
  checked_at: string;
  host: string;
  /** whether http_api.update is on: the page acts only then */
  update: boolean;
  containers: ContainerOverview[];
  /** what svc leaves alone, and why (absent from an older peer) */
  excluded?: ExcludedContainer[];
  /** the registries whose answers carried a rate limit (absent from an older svc) */
  rate_limits?: RateLimitView[];
}

/** A registry's rate limit (Docker Hub's ratelimit-remaining) beside the requests a check makes there. */
export interface RateLimitView {
  registry: string;
  remaining: number;
  limit: number | null;
  window_seconds: number | null;
  at: string;
  /** the images on that registry: one manifest request each per check */
  needed: number;
}

const TOKEN_KEY = "svc.token";

export const token = {
  get: (): string | null => sessionStorage.getItem(TOKEN_KEY),
  set: (value: string): void => sessionStorage.setItem(TOKEN_KEY, value),
  clear: (): void => sessionStorage.removeItem(TOKEN_KEY),
};

/** What went wrong, in words a person can act on. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** Called when svc refuses the token: the page signs out and says so. */
let onUnauthorized: () => void = () => {};
export function whenUnauthorized(handler: () => void): void {
  onUnauthorized = handler;
}

async function call<T>(
  method: "GET" | "POST" | "DELETE",
  path: string,
  body?: Record<string, unknown>,
  given = token.get(),
): Promise<T> {
  // without a token, an identity proxy in front may have signed the person in (docs/dashboard.md, roles)
  const headers: Record<string, string> = {
    accept: "application/json",
    "x-svc-request": "1",
    ...(given ? { authorization: `Bearer ${given}` } : {}),
  };
  if (body) headers["content-type"] = "application/json";
  let response: Response;
  try {
    response = await fetch(path, {
      method,
      headers,
      body: body ? JSON.stringify(body) : undefined,
      cache: "no-store",
      credentials: "same-origin",
    });
  } catch {
    throw new ApiError(0, "svc does not answer (is it running, is the network up?)");
  }
  if (response.status === 401) {
    if (given === token.get()) onUnauthorized();
    throw new ApiError(401, "svc refused the token (401): it is not what the file named by http_api.token holds.");
  }
  if (response.status === 409) throw new ApiError(409, "another update cycle is running");
  // nothing lost: a body that is not JSON leaves only the status, which the line below reports
  const data = (await response.json().catch(() => null)) as ({ error?: string } & T) | null;
  if (!response.ok) throw new ApiError(response.status, data?.error ?? `svc answered ${response.status}`);
  return data as T;
}

/** Who the page is signed in as (GET /v1/session): a viewer sees everything and changes nothing. */
export interface Session {
  role: "admin" | "viewer";
  name: string;
  update: boolean;
}

/** The session of the page's token; `proxy`: of no token, a user a trusted proxy signed in (a 401 then only says no). */
export const session = (proxy = false) => call<Session>("GET", "/v1/session", undefined, proxy ? "" : token.get());

/** Checks a token without keeping it: resolves when svc accepts it. */
export const signIn = (candidate: string) =>
  call<{ running: RunningCycle | null }>("GET", "/v1/progress", undefined, candidate);

/** The API of this svc, or of a peer through it (`/v1/peers/NAME/...`): the same calls either way. */
export function apiOf(peer: string | null = null) {
  const at = (endpoint: string) =>
    peer === null ? `/v1/${endpoint}` : `/v1/peers/${encodeURIComponent(peer)}/${endpoint}`;
  return {
    containers: (names?: string[]) =>
      call<ContainersAnswer>(
        "GET",
        names ? `${at("containers")}?container=${names.map(encodeURIComponent).join(",")}` : at("containers"),
      ),
    progress: () => call<ProgressAnswer>("GET", at("progress")),
    history: () => call<{ size: number; reports: SessionSummary[] }>("GET", at("history")),
    timeline: (name: string) =>
      call<{ container: string; timeline: TimelineEntry[] }>(
        "GET",
        `${at("history")}?container=${encodeURIComponent(name)}`,
      ),
    /** the cycle's report, or, asked while another runs, the request queued behind it (202) */
    update: (names?: string[]) =>
      call<SessionReport | { queued: QueuedRequest }>("POST", at("update"), names ? { container: names } : undefined),
    skip: (name: string) => call<SkipResult>("POST", at("skip"), { container: name }),
    snooze: (name: string, duration: string) =>
      call<{ container: string; until: string | null }>("POST", at("snooze"), { container: name, for: duration }),
    rollback: (name: string, withData = false) =>
      call<RollbackResult>(
        "POST",
        at("rollback"),
        withData ? { container: name, with_data: "true" } : { container: name },
      ),
    /** the signer a held update carries becomes the repository's (POST /v1/signers/accept) */
    acceptSigner: (name: string) =>
      call<{ container: string; repository: string; signer: string }>("POST", at("signers/accept"), {
        container: name,
      }),
    /** the data guard's copies (GET /v1/data-guard) */
    dataCopies: () => call<{ copies: CopyView[] }>("GET", at("data-guard")),
    /** removes one of them (DELETE /v1/data-guard) */
    deleteCopy: (container: string, id: string) =>
      call<null>(
        "DELETE",
        `${at("data-guard")}?container=${encodeURIComponent(container)}&id=${encodeURIComponent(id)}`,
      ),
  };
}

export const api = apiOf();

/** Every peer's containers as this svc last got them (GET /v1/peers). */
export const peers = () => call<{ peers: PeerView[] }>("GET", "/v1/peers");
