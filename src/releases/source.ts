/**
 * Where an image's releases are published: a repository on GitHub, GitLab or Gitea/Forgejo, from
 * a URL (an image label, the svc.release_notes label, a `release_notes.sources` entry). Which host
 * speaks which API is told by the URL's host name (docs/release-notes.md): github.com is GitHub,
 * read through api.github.com, and so is the host of `release_notes.github_api_url` when it names
 * a GitHub Enterprise server; the host of `release_notes.gitlab_api_url` (gitlab.com by default) is
 * GitLab; the host of `release_notes.gitea_api_url` (codeberg.org by default) is Gitea. A host is
 * read only through its own API, with that API's token: gitlab.com is not read through a
 * self-hosted GitLab's API, nor github.com through an Enterprise server's, nor the other way round.
 * Anything else is not guessed at.
 */

import { spend } from "../config/work.ts";

export type HostKind = "github" | "gitlab" | "gitea";

export interface SourceRepo {
  host: HostKind;
  /** the repository's web address, e.g. https://github.com/owner/name */
  url: string;
  /** the repository's path on its host: owner/name (GitLab: group/sub/project) */
  path: string;
}

export interface HostNames {
  /** besides github.com: the host of release_notes.github_api_url when it is a GitHub Enterprise server */
  github?: readonly string[];
  gitlab: readonly string[];
  gitea: readonly string[];
}

const MAX_URL = 2048;
const SEGMENT = /^[A-Za-z0-9_.-]{1,100}$/;
/** `.`, `..`, `...`: a path segment an API's server could take for a step up */
const DOTS_ONLY = /^\.+$/;

/** The repository a URL names, or a sentence saying why it names none. */
export function parseSource(text: string, hosts: HostNames): SourceRepo | { problem: string } {
  const written = text.trim();
  if (written.length > MAX_URL) return { problem: "the source address is too long" };
  spend(written.length);
  let url: URL;
  try {
    url = new URL(written.replace(/^git\+/, ""));
  } catch {
    return { problem: `${JSON.stringify(written.slice(0, 100))} is not a repository URL` };
  }
  if (url.protocol !== "https:" && url.protocol !== "http:")
    return { problem: `${url.protocol} addresses are not read (only http and https)` };
  const host = hostKind(url.hostname.toLowerCase(), hosts);
  if (!host) return { problem: notRead(url.hostname.toLowerCase(), hosts) };
  const segments = url.pathname.split("/").filter(Boolean);
  const end = segments.indexOf("-");
  // GitLab nests groups; GitHub and Gitea are owner/name, and more segments point inside the repository
  const path = (host === "gitlab" ? segments.slice(0, end === -1 ? undefined : end) : segments.slice(0, 2)).map((s) =>
    s.replace(/\.git$/, ""),
  );
  if (path.length < 2 || !path.every((s) => SEGMENT.test(s) && !DOTS_ONLY.test(s)))
    return { problem: `${url.href} does not name a repository` };
  return { host, url: `${url.protocol}//${url.host}/${path.join("/")}`, path: path.join("/") };
}

const GITHUB_COM = ["github.com", "www.github.com"];

function hostKind(name: string, hosts: HostNames): HostKind | undefined {
  if (GITHUB_COM.includes(name) || hosts.github?.includes(name)) return "github";
  if (hosts.gitlab.includes(name)) return "gitlab";
  if (hosts.gitea.includes(name)) return "gitea";
  return undefined;
}

/** The public instances, each read only when its kind's API URL is its own (the default). */
const PUBLIC: Record<"gitlab" | "gitea", string> = { gitlab: "gitlab.com", gitea: "codeberg.org" };

/** Why a URL's host is not read: a public instance while its kind's API is another host's, or a host svc knows nothing of. */
function notRead(name: string, hosts: HostNames): string {
  for (const kind of ["gitlab", "gitea"] as const) {
    const api = hosts[kind][0];
    if (name === PUBLIC[kind] && api !== undefined)
      return `${name} is not read: release_notes.${kind}_api_url is ${api}'s API, and a host is read only through its own (docs/release-notes.md)`;
  }
  return `svc does not know which API ${name} speaks (GitHub, GitLab or Gitea: docs/release-notes.md)`;
}

/**
 * The host names each API is read for: the host of its configured API URL only (gitlab.com and
 * codeberg.org by default), so that a repository is read through its own host's API, and a
 * self-hosted instance's token never reads (nor vouches for) another host's repositories.
 */
export function hostNames(gitlabApiUrl: string, giteaApiUrl: string, githubApiUrl?: string): HostNames {
  const hostOf = (url: string) => {
    try {
      return [new URL(url).hostname.toLowerCase()];
    } catch {
      return [];
    }
  };
  const github =
    githubApiUrl === undefined ? {} : { github: hostOf(githubApiUrl).filter((host) => host !== "api.github.com") };
  return { ...github, gitlab: hostOf(gitlabApiUrl), gitea: hostOf(giteaApiUrl) };
}

/** GitHub's public API: github.com's repositories are read there, whatever `github_api_url` names. */
export const GITHUB_API = "https://api.github.com";

export interface ApiUrls {
  github: string;
  gitlab: string;
  gitea: string;
}

/**
 * The API a repository is read through: its own host's. github.com's is api.github.com even while
 * `github_api_url` names an Enterprise server, so that the server (and whoever runs it) never sees
 * what is asked of github.com, nor a token meant for github.com; the Enterprise server's own
 * repositories are read through `github_api_url`. GitLab and Gitea name one host each (hostNames).
 */
export function apiUrlOf(repo: SourceRepo, urls: ApiUrls): string {
  if (repo.host === "github" && GITHUB_COM.includes(new URL(repo.url).hostname.toLowerCase())) return GITHUB_API;
  return urls[repo.host];
}

/**
 * Whether a kind's token may go to `apiUrl`: only to the host of the API URL it was set with, so
 * that a token set for an Enterprise server is never sent to api.github.com, and the other way round.
 */
export function tokenGoesTo(apiUrl: string, configured: string): boolean {
  try {
    return new URL(apiUrl).host.toLowerCase() === new URL(configured).host.toLowerCase();
  } catch {
    return false;
  }
}
