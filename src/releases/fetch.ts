/**
 * One repository's releases from its host: pages read through a cap and parsed with a schema,
 * a conditional request (If-None-Match) when svc holds an earlier answer, so that an unchanged
 * list costs nothing against the host's rate limit, and the host's rate-limit answers (403 or
 * 429 with their reset headers) told as such, with when to ask again (docs/release-notes.md).
 */
import { readBoundedJson } from "../core/bounded.ts";
import { SvcError } from "../core/errors.ts";
import { duration } from "../core/moments.ts";
import type { HostApi, StoredRelease } from "./hosts.ts";
import type { SourceRepo } from "./source.ts";

export const RELEASE_LIMITS = {
  /** one page of a host's answer */
  pageBytes: 8 * 1024 * 1024,
  /** releases asked for per page */
  perPage: 50,
  /** pages read of one repository (newest first: the running version is usually on the first) */
  pages: 4,
  /** the notes of one release, in characters */
  notesChars: 8 * 1024,
  /** the notes of one repository's releases together, newest first (what svc keeps of it) */
  repoNotesChars: 128 * 1024,
} as const;

/** What svc keeps of a repository between cycles (in memory, and in state_dir). */
export interface CachedRepo {
  etag: string | null;
  releases: StoredRelease[];
  fetched_at: string;
}

/** A host that said "not now": no request before `until` (ms since the epoch). */
export class RateLimited extends SvcError {
  constructor(
    host: string,
    readonly until: number,
  ) {
    super(
      "registry",
      `${host} rate limit reached; asked again after ${new Date(until).toISOString()} (set a token: docs/release-notes.md)`,
    );
  }
}

export interface FetchDeps {
  api: HostApi;
  apiUrl: string;
  token?: string;
  timeoutMs: number;
  fetch?: typeof fetch;
  now?: () => number;
}

export interface Fetched {
  repo: CachedRepo;
  /** the host answered 304: the cached list holds */
  notModified: boolean;
  /** requests made */
  requests: number;
}

/**
 * The releases of `repo`, newest first. Pages are read until `enough` says the list reaches far
 * enough back (the running version), or the page cap. Only the first page is asked conditionally:
 * when it is unchanged, nothing newer was published.
 */
export async function fetchReleases(
  deps: FetchDeps,
  repo: SourceRepo,
  cached: CachedRepo | undefined,
  enough: (releases: StoredRelease[]) => boolean,
): Promise<Fetched> {
  const origin = new URL(deps.apiUrl).origin;
  let url: string | null = deps.api.firstPage(deps.apiUrl, repo, RELEASE_LIMITS.perPage);
  const releases: StoredRelease[] = [];
  let etag: string | null = null;
  let requests = 0;
  for (let page = 0; url !== null && page < RELEASE_LIMITS.pages; page++) {
    const headers: Record<string, string> = deps.api.headers(deps.token);
    if (page === 0 && cached?.etag) headers["If-None-Match"] = cached.etag;
    const response = await request(deps, url, headers, origin);
    requests++;
    if (response.status === 304 && page === 0 && cached) {
      await response.body?.cancel();
      return { repo: { ...cached, fetched_at: new Date(now(deps)).toISOString() }, notModified: true, requests };
    }
    if (!response.ok) throw await failure(deps, repo, response);
    if (page === 0) etag = validEtag(response.headers.get("etag"));
    releases.push(...(await readPage(deps, repo, response)));
    if (enough(releases)) break;
    const next = deps.api.nextPage(response, url);
    // a next page elsewhere would carry the token to another server
    url = next !== null && new URL(next).origin === origin ? next : null;
  }
  return {
    repo: { etag, releases: withinBudget(releases), fetched_at: new Date(now(deps)).toISOString() },
    notModified: false,
    requests,
  };
}

/** The newest releases keep their notes up to the repository's budget; older ones keep their version and title. */
function withinBudget(releases: StoredRelease[]): StoredRelease[] {
  let budget: number = RELEASE_LIMITS.repoNotesChars;
  return releases.map((release) => {
    if (release.notes.length <= budget) {
      budget -= release.notes.length;
      return release;
    }
    budget = 0;
    return { ...release, notes: "", notes_cut: true };
  });
}

const now = (deps: FetchDeps) => (deps.now ?? Date.now)();

const MAX_REDIRECTS = 3;

/**
 * One request (a GET unless `init` says otherwise). Redirects are followed on the API's own server
 * only (GitHub answers 301 for a renamed repository): a token never goes elsewhere. The Git room
 * speaks to the same hosts through it (pushes, pull requests).
 */
export async function request(
  deps: Pick<FetchDeps, "timeoutMs" | "fetch"> & { api: Pick<HostApi, "name"> },
  url: string,
  headers: Record<string, string>,
  origin: string,
  init: { method?: string; body?: Uint8Array<ArrayBuffer> | string } = {},
): Promise<Response> {
  try {
    const signal = AbortSignal.timeout(deps.timeoutMs);
    let at = url;
    for (let hop = 0; ; hop++) {
      const response = await (deps.fetch ?? fetch)(at, { ...init, headers, redirect: "manual", signal });
      const location = response.headers.get("location");
      if (![301, 302, 307, 308].includes(response.status) || location === null) return response;
      // nothing lost: the redirect's body is never read; cancelling only frees the connection
      await response.body?.cancel().catch(() => {});
      const next = new URL(location, at);
      if (next.origin !== origin || hop === MAX_REDIRECTS)
        throw new SvcError(
          "registry",
          `${deps.api.name} redirected the request to ${next.origin === origin ? "itself too many times" : "another server"}`,
        );
      at = next.href;
    }
  } catch (error) {
    if (error instanceof SvcError) throw error;
    const timedOut = (error as Error).name === "TimeoutError";
    throw new SvcError(
      "registry",
      `${deps.api.name} ${timedOut ? `did not answer within ${duration(deps.timeoutMs)}` : `cannot be reached (${(error as Error).message.slice(0, 200)})`}`,
    );
  }
}

async function readPage(deps: FetchDeps, repo: SourceRepo, response: Response): Promise<StoredRelease[]> {
  const what = `${deps.api.name}'s list of releases of ${repo.path}`;
  const read = await readBoundedJson(response, RELEASE_LIMITS.pageBytes, deps.api.schema);
  if ("value" in read) return read.value.flatMap((item) => deps.api.release(item, RELEASE_LIMITS.notesChars) ?? []);
  if (read.error === "over_cap")
    throw new SvcError(
      "registry",
      `${what} is larger than ${RELEASE_LIMITS.pageBytes / 1024 / 1024} MiB, the most svc reads of a page`,
    );
  throw new SvcError("registry", read.error === "not_shape" ? `${what} is not a list` : `${what} is not JSON`);
}

/** A non-2xx answer as a sentence; a rate-limit answer as RateLimited with its reset time. */
async function failure(deps: FetchDeps, repo: SourceRepo, response: Response): Promise<SvcError> {
  // nothing lost: the failure is told from the status and headers; cancelling only frees the connection
  await response.body?.cancel().catch(() => {});
  const until = rateLimitReset(response, now(deps));
  if (until !== undefined) return new RateLimited(deps.api.name, until);
  if (response.status === 404)
    return new SvcError(
      "not_found",
      `${deps.api.name} has no repository ${repo.path} (404; a private one needs a token)`,
    );
  const hint =
    response.status === 401 || response.status === 403 ? " (the token is refused, or the repository is private)" : "";
  return new SvcError(
    "registry",
    `${deps.api.name} answered ${response.status}${hint} for the releases of ${repo.path}`,
  );
}

/** One hour: a host that asks to wait longer is asked again after this. */
const MAX_WAIT_MS = 3_600_000;

/**
 * When a rate-limited host may be asked again: 429, or 403 with no requests left or a
 * Retry-After (GitHub's secondary limits). Retry-After counts seconds; x-ratelimit-reset (GitHub,
 * Gitea) and ratelimit-reset (GitLab) an epoch second. undefined: not a rate-limit answer.
 */
export function rateLimitReset(response: Response, now: number): number | undefined {
  const headers = response.headers;
  const remaining = headers.get("x-ratelimit-remaining") ?? headers.get("ratelimit-remaining");
  const retryAfter = headers.get("retry-after");
  const limited =
    response.status === 429 || (response.status === 403 && (remaining?.trim() === "0" || retryAfter !== null));
  if (!limited) return undefined;
  const seconds = Number(retryAfter);
  if (retryAfter !== null && Number.isFinite(seconds) && seconds >= 0)
    return now + Math.min(seconds * 1000, MAX_WAIT_MS);
  const reset = Number(headers.get("x-ratelimit-reset") ?? headers.get("ratelimit-reset"));
  if (Number.isFinite(reset) && reset > 0) return Math.min(Math.max(reset * 1000, now), now + MAX_WAIT_MS);
  return now + 60_000;
}

function validEtag(etag: string | null): string | null {
  return etag !== null && etag.length <= 256 && /^(W\/)?"[\x21\x23-\x7e]*"$/.test(etag) ? etag : null;
}
