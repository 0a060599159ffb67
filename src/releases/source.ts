/**
 * Where an image's releases are published: a repository on GitHub, GitLab or Gitea/Forgejo, from
 * a URL (an image label, the svc.release_notes label, a `release_notes.sources` entry). Which host
 * speaks which API is told by the URL's host name (docs/release-notes.md): github.com is GitHub;
 * the host of `release_notes.gitlab_api_url` (gitlab.com by default) is GitLab; the host of
 * `release_notes.gitea_api_url` (codeberg.org by default) is Gitea. A host is read only through its
 * own API, with that API's token: gitlab.com is not read through a self-hosted GitLab's API, nor
 * the other way round. Anything else is not guessed at.
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
  /** besides github.com (the Git room passes the host of release_notes.github_api_url: a GitHub Enterprise server) */
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

function hostKind(name: string, hosts: HostNames): HostKind | undefined {
  if (name === "github.com" || name === "www.github.com" || hosts.github?.includes(name)) return "github";
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
