/**
 * Where an image's releases are published: a repository on GitHub, GitLab or Gitea/Forgejo, from
 * a URL (an image label, the svc.release_notes label, a `release_notes.sources` entry). Which host
 * speaks which API is told by the URL's host name (docs/release-notes.md): github.com is GitHub;
 * gitlab.com and the host of `release_notes.gitlab_api_url` are GitLab; codeberg.org and the host of
 * `release_notes.gitea_api_url` are Gitea. Anything else is not guessed at.
 */

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

/** The repository a URL names, or a sentence saying why it names none. */
export function parseSource(text: string, hosts: HostNames): SourceRepo | { problem: string } {
  const written = text.trim();
  if (written.length > MAX_URL) return { problem: "the source address is too long" };
  let url: URL;
  try {
    url = new URL(written.replace(/^git\+/, ""));
  } catch {
    return { problem: `${JSON.stringify(written.slice(0, 100))} is not a repository URL` };
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") return { problem: `${url.protocol} addresses are not read (only http and https)` };
  const host = hostKind(url.hostname.toLowerCase(), hosts);
  if (!host) return { problem: `svc does not know which API ${url.hostname} speaks (GitHub, GitLab or Gitea: docs/release-notes.md)` };
  const segments = url.pathname.split("/").filter(Boolean);
  const end = segments.indexOf("-");
  // GitLab nests groups; GitHub and Gitea are owner/name, and more segments point inside the repository
  const path = (host === "gitlab" ? segments.slice(0, end === -1 ? undefined : end) : segments.slice(0, 2)).map((s) => s.replace(/\.git$/, ""));
  if (path.length < 2 || !path.every((s) => SEGMENT.test(s))) return { problem: `${url.href} does not name a repository` };
  return { host, url: `${url.protocol}//${url.host}/${path.join("/")}`, path: path.join("/") };
}

function hostKind(name: string, hosts: HostNames): HostKind | undefined {
  if (name === "github.com" || name === "www.github.com" || hosts.github?.includes(name)) return "github";
  if (hosts.gitlab.includes(name)) return "gitlab";
  if (hosts.gitea.includes(name)) return "gitea";
  return undefined;
}

/** The host names each API is recognised by: the public instance, and the host of its configured API URL. */
export function hostNames(gitlabApiUrl: string, giteaApiUrl: string, githubApiUrl?: string): HostNames {
  const hostOf = (url: string) => {
    try {
      return [new URL(url).hostname.toLowerCase()];
    } catch {
      return [];
    }
  };
  const github = githubApiUrl === undefined ? {} : { github: hostOf(githubApiUrl).filter((host) => host !== "api.github.com") };
  return { ...github, gitlab: ["gitlab.com", ...hostOf(gitlabApiUrl)], gitea: ["codeberg.org", ...hostOf(giteaApiUrl)] };
}
