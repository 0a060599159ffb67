/**
 * The releases room: what an update brings, read from the repository an image is built from
 * (docs/release-notes.md). It sits beside the registry room, below the updater, which asks it
 * about stale targets only.
 *
 * `createReleaseNotes(config, log)` is built once per service: what each repository's host
 * answered is kept for the process (and in `state_dir`, so that a restart asks conditionally too),
 * and a host's rate limit is honoured until its reset time. Each cycle takes a `session()`: a
 * repository is asked at most once per session, however many targets share it. Nothing here
 * throws: a failure is a sentence in the answer, never a failed or delayed update.
 */

import { join } from "node:path";
import { z } from "zod";
import type { Config } from "../config/index.ts";
import { toSvcError } from "../core/errors.ts";
import type { Logger } from "../log/index.ts";
import { atomicWriter, readOrSetAside, scopedFileName } from "../state/file.ts";
import { type CachedRepo, type FetchDeps, fetchReleases, RateLimited } from "./fetch.ts";
import { HOSTS, type StoredRelease } from "./hosts.ts";
import { type ReleaseView, releasesBetween } from "./select.ts";
import {
  type ApiUrls,
  apiUrlOf,
  type HostKind,
  type HostNames,
  hostNames,
  parseSource,
  type SourceRepo,
  tokenGoesTo,
} from "./source.ts";
import { compareVersions, parseVersion, sameVersion } from "./versions.ts";

export type { ReleaseView } from "./select.ts";
export { parseVersion, sameVersion } from "./versions.ts";

/** Where svc may find a target's source, in the order it looks (docs/release-notes.md). */
export interface SourceCandidate {
  /** a repository URL */
  url: string;
  /** where it was written, for the answer: "label svc.release_notes", "the new image's org.opencontainers.image.source"... */
  from: string;
}

export interface ReleaseQuery {
  sources: readonly SourceCandidate[];
  /** the running version and the candidate's; null: not known (a digest change without version labels) */
  from: string | null;
  to: string | null;
}

/** What GET /v1/containers, the page and the notifications say of what an update brings (docs/api.md). */
export interface ReleaseNotes {
  /** the repository's web address; null: no source known */
  source: string | null;
  /** where svc found it */
  source_from: string | null;
  from_version: string | null;
  to_version: string | null;
  /** newest first */
  releases: ReleaseView[];
  /** releases between the two versions beyond those shown */
  more: number;
  /** how many of the shown releases break */
  breaking: number;
  /** why the releases are missing or may be out of date; null when all is well */
  problem: string | null;
}

export interface ReleasesSession {
  between(query: ReleaseQuery): Promise<ReleaseNotes>;
}

export interface ReleaseNotesService {
  session(): ReleasesSession;
}

export interface ReleaseNotesOptions {
  /** the fetch to use (tests count requests through it) */
  fetch?: typeof fetch;
  now?: () => number;
}

/** Repositories kept in memory and in the file; the oldest read goes first. */
export const CACHED_REPOSITORIES = 100;

export function createReleaseNotes(
  config: Config,
  log: Logger,
  options: ReleaseNotesOptions = {},
): ReleaseNotesService {
  const settings = config.release_notes;
  const logger = log.child("releases");
  const names = hostNames(settings.gitlab_api_url, settings.gitea_api_url, settings.github_api_url);
  const store = openCache(config.state_dir, config.scope, logger);
  // keyed by API URL: github.com and an Enterprise server are limited (and queued) each on its own
  const blockedUntil = new Map<string, number>();
  // one request at a time per host, as GitHub asks of its clients (secondary rate limits)
  const queues = new Map<string, Promise<unknown>>();
  const inTurn = <T>(host: string, task: () => Promise<T>): Promise<T> => {
    const turn = (queues.get(host) ?? Promise.resolve()).then(task, task);
    queues.set(
      host,
      // nothing lost: the task's caller gets its error through `turn`; the queue only keeps the order
      turn.catch(() => {}),
    );
    return turn;
  };
  const now = options.now ?? Date.now;
  const apiUrls: ApiUrls = {
    github: settings.github_api_url,
    gitlab: settings.gitlab_api_url,
    gitea: settings.gitea_api_url,
  };
  const token: Record<HostKind, string | undefined> = {
    github: settings.github_token,
    gitlab: settings.gitlab_token,
    gitea: settings.gitea_token,
  };

  const read = async (repo: SourceRepo, from: string): Promise<{ list: CachedRepo; problem: string | null }> => {
    const cached = store.get(repo.url);
    // read moments ago (the dashboard's dry runs, cycles close together): no request at all
    if (cached && now() - Date.parse(cached.fetched_at) < settings.cache_for) return { list: cached, problem: null };
    const apiUrl = apiUrlOf(repo, apiUrls);
    const blocked = blockedUntil.get(apiUrl) ?? 0;
    const api = HOSTS[repo.host];
    if (blocked > now()) {
      const problem = `${api.name} rate limit reached; asked again after ${new Date(blocked).toISOString()}`;
      if (cached) return { list: cached, problem: `${problem}: the releases as read at ${cached.fetched_at}` };
      throw new Error(problem);
    }
    const deps: FetchDeps = {
      api,
      apiUrl,
      token: tokenGoesTo(apiUrl, apiUrls[repo.host]) ? token[repo.host] : undefined,
      timeoutMs: settings.timeout,
      fetch: options.fetch,
      now,
    };
    try {
      const fetched = await fetchReleases(deps, repo, cached, reachesBack(from));
      store.set(repo.url, fetched.repo, !fetched.notModified);
      logger.debug("releases read", {
        repository: repo.url,
        not_modified: fetched.notModified,
        requests: fetched.requests,
        releases: fetched.repo.releases.length,
      });
      return { list: fetched.repo, problem: null };
    } catch (error) {
      if (error instanceof RateLimited) {
        blockedUntil.set(apiUrl, error.until);
        logger.warn("source host rate limit reached", { host: api.name, until: new Date(error.until).toISOString() });
      }
      if (cached)
        return { list: cached, problem: `${toSvcError(error).message}: the releases as read at ${cached.fetched_at}` };
      throw error;
    }
  };

  return {
    session: () => {
      const reads = new Map<string, Promise<{ list: CachedRepo; problem: string | null }>>();
      return {
        between: async (query) => {
          const found = findSource(query.sources, names);
          const base: ReleaseNotes = {
            source: null,
            source_from: null,
            from_version: query.from,
            to_version: query.to,
            releases: [],
            more: 0,
            breaking: 0,
            problem: null,
          };
          if ("problem" in found) return { ...base, problem: found.problem };
          const answer = { ...base, source: found.repo.url, source_from: found.from };
          if (query.from === null || query.to === null)
            return { ...answer, problem: "a new image of the same version (a digest change): no version to look up" };
          if (sameVersion(parseVersion(query.from), parseVersion(query.to)))
            return { ...answer, problem: `a new image of the same version ${query.to}` };
          let reading = reads.get(found.repo.url);
          if (!reading) {
            const repo = found.repo;
            const from = query.from;
            reading = inTurn(apiUrlOf(repo, apiUrls), () => read(repo, from));
            reads.set(found.repo.url, reading);
          }
          try {
            const { list, problem } = await reading;
            const selection = releasesBetween(list.releases, query.from, query.to, settings.max_releases);
            const breaking = selection.releases.filter((r) => r.breaking).length;
            return {
              ...answer,
              releases: selection.releases,
              more: selection.more,
              breaking,
              problem: problem ?? selection.problem,
            };
          } catch (error) {
            return { ...answer, problem: `releases not read: ${toSvcError(error).message}` };
          }
        },
      };
    },
  };
}

/** The first candidate that names a repository on a known host; else why none does. */
function findSource(
  candidates: readonly SourceCandidate[],
  names: HostNames,
): { repo: SourceRepo; from: string } | { problem: string } {
  const problems: string[] = [];
  for (const candidate of candidates) {
    const parsed = parseSource(candidate.url, names);
    if (!("problem" in parsed)) return { repo: parsed, from: candidate.from };
    problems.push(`${candidate.from}: ${parsed.problem}`);
  }
  if (problems.length === 0)
    return { problem: "no source known: set the svc.release_notes label (docs/release-notes.md)" };
  return { problem: `no usable source (${problems.join("; ")}): set the svc.release_notes label` };
}

/** Pages are read until a release as old as the running version is seen. */
function reachesBack(from: string): (releases: StoredRelease[]) => boolean {
  const older = parseVersion(from);
  return (releases) =>
    releases.some((release) => {
      const version = parseVersion(release.tag);
      return (
        sameVersion(version, older) ||
        (version.parts !== undefined && older.parts !== undefined && compareVersions(version, older) < 0)
      );
    });
}

const storedRelease = z.object({
  tag: z.string().max(256),
  title: z.string().max(512),
  published_at: z.string().max(64).nullable(),
  url: z.string().max(2048).nullable(),
  notes: z.string().max(64 * 1024),
  notes_cut: z.boolean(),
  prerelease: z.boolean(),
});
const cacheFile = z.object({
  version: z.literal(1),
  repositories: z.record(
    z.string().max(2048),
    z.object({
      etag: z.string().max(256).nullable(),
      releases: z.array(storedRelease).max(1000),
      fetched_at: z.string().max(64),
    }),
  ),
});

interface RepoCache {
  get(url: string): CachedRepo | undefined;
  /** `persist`: the releases changed, so the file is written too */
  set(url: string, repo: CachedRepo, persist: boolean): void;
}

/** What each repository answered last: in memory, and in `releases.json` under state_dir when it is set. */
function openCache(dir: string | undefined, scope: string | undefined, log: Logger): RepoCache {
  const file = dir === undefined ? undefined : join(dir, scopedFileName("releases", scope));
  const parse = (text: string) => new Map(Object.entries(cacheFile.parse(JSON.parse(text)).repositories));
  const repos: Map<string, CachedRepo> =
    file === undefined ? new Map() : readOrSetAside(file, parse, () => new Map(), log, "release notes cache");
  const write = atomicWriter(dir, file, log, "release notes cache");
  return {
    get: (url) => repos.get(url),
    set: (url, repo, persist) => {
      repos.delete(url);
      repos.set(url, repo);
      for (const oldest of repos.keys()) {
        if (repos.size <= CACHED_REPOSITORIES) break;
        repos.delete(oldest);
      }
      if (persist) write(JSON.stringify({ version: 1, repositories: Object.fromEntries(repos) }));
    },
  };
}
