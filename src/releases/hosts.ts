/**
 * The three release APIs svc reads (docs/release-notes.md), each as its answer's shape and how it
 * pages; one fetch loop (fetch.ts) speaks to all of them.
 * - GitHub: `GET {api}/repos/{owner}/{repo}/releases?per_page=N`, newest first, pages by `Link: rel="next"`
 *   (docs.github.com, REST "List releases").
 * - GitLab: `GET {api}/projects/{url-encoded path}/releases?per_page=N`, by `released_at` newest
 *   first, pages by `X-Next-Page` (and `Link`) (docs.gitlab.com, "Releases API").
 * - Gitea/Forgejo: `GET {api}/repos/{owner}/{repo}/releases?limit=N`, newest first, pages by `Link`
 *   (the API's swagger, "repoListReleases").
 */
import { z } from "zod";
import type { HostKind, SourceRepo } from "./source.ts";

/** One release as svc keeps it (notes already capped). */
export interface StoredRelease {
  tag: string;
  title: string;
  published_at: string | null;
  url: string | null;
  notes: string;
  /** the notes were longer than svc keeps */
  notes_cut: boolean;
  prerelease: boolean;
}

export interface HostApi {
  name: string;
  firstPage(apiUrl: string, repo: SourceRepo, perPage: number): string;
  /** the next page's URL, from the answer's headers; null: the last page */
  nextPage(response: Response, current: string): string | null;
  headers(token: string | undefined): Record<string, string>;
  schema: z.ZodType<unknown[]>;
  /** one item of the answer, as svc keeps it; null: not a published release (a draft, an upcoming one) */
  release(item: unknown, notesCap: number): StoredRelease | null;
}

const text = (max: number) => z.string().transform((s) => s.slice(0, max));
const nullableText = (max: number) =>
  text(max)
    .nullish()
    .transform((s) => s ?? null);

/** The fields every host writes (the notes field's name differs), loose: a host adds fields as it likes. */
const githubItem = z.looseObject({
  tag_name: text(256),
  name: nullableText(512),
  body: z.string().nullish(),
  html_url: nullableText(2048),
  published_at: nullableText(64),
  created_at: nullableText(64),
  draft: z.boolean().optional(),
  prerelease: z.boolean().optional(),
});
const gitlabItem = z.looseObject({
  tag_name: text(256),
  name: nullableText(512),
  description: z.string().nullish(),
  released_at: nullableText(64),
  created_at: nullableText(64),
  upcoming_release: z.boolean().optional(),
  _links: z.looseObject({ self: nullableText(2048) }).optional(),
});

function cut(notes: string | null | undefined, cap: number): { notes: string; notes_cut: boolean } {
  const all = notes ?? "";
  return all.length > cap ? { notes: all.slice(0, cap), notes_cut: true } : { notes: all, notes_cut: false };
}

function linkNext(response: Response, current: string): string | null {
  const link = response.headers.get("link");
  if (!link || link.length > 8192) return null;
  for (const part of link.split(",")) {
    const match = /^\s*<([^<>]*)>\s*;(.*)$/s.exec(part);
    if (!match || !/\brel\s*=\s*"?next"?/i.test(match[2]!)) continue;
    try {
      return new URL(match[1]!, current).href;
    } catch {
      return null;
    }
  }
  return null;
}

/** owner/name as a URL path, each segment percent-encoded (parseSource allows no dot-only one). */
function encodedPath(repo: SourceRepo): string {
  return repo.path.split("/").map(encodeURIComponent).join("/");
}

const GITHUB: HostApi = {
  name: "GitHub",
  firstPage: (api, repo, perPage) =>
    `${api.replace(/\/+$/, "")}/repos/${encodedPath(repo)}/releases?per_page=${perPage}`,
  nextPage: linkNext,
  headers: (token) => ({
    Accept: "application/vnd.github+json",
    "X-GitHub-Api-Version": "2022-11-28",
    ...(token ? { Authorization: `Bearer ${token}` } : {}),
  }),
  schema: z.array(z.unknown()),
  release: (item, cap) => {
    const parsed = githubItem.safeParse(item);
    if (!parsed.success || parsed.data.draft) return null;
    const r = parsed.data;
    return {
      tag: r.tag_name,
      title: r.name || r.tag_name,
      published_at: r.published_at ?? r.created_at,
      url: r.html_url,
      prerelease: r.prerelease === true,
      ...cut(r.body, cap),
    };
  },
};

const GITLAB: HostApi = {
  name: "GitLab",
  firstPage: (api, repo, perPage) =>
    `${api.replace(/\/+$/, "")}/projects/${encodeURIComponent(repo.path)}/releases?per_page=${perPage}`,
  nextPage: (response, current) => {
    const next = response.headers.get("x-next-page")?.trim();
    if (next && /^\d{1,6}$/.test(next)) {
      const url = new URL(current);
      url.searchParams.set("page", next);
      return url.href;
    }
    return next === "" ? null : linkNext(response, current);
  },
  headers: (token) => ({ Accept: "application/json", ...(token ? { "PRIVATE-TOKEN": token } : {}) }),
  schema: z.array(z.unknown()),
  release: (item, cap) => {
    const parsed = gitlabItem.safeParse(item);
    if (!parsed.success || parsed.data.upcoming_release) return null;
    const r = parsed.data;
    return {
      tag: r.tag_name,
      title: r.name || r.tag_name,
      published_at: r.released_at ?? r.created_at,
      url: r._links?.self ?? null,
      prerelease: false,
      ...cut(r.description, cap),
    };
  },
};

const GITEA: HostApi = {
  name: "Gitea",
  firstPage: (api, repo, perPage) => `${api.replace(/\/+$/, "")}/repos/${encodedPath(repo)}/releases?limit=${perPage}`,
  nextPage: linkNext,
  headers: (token) => ({ Accept: "application/json", ...(token ? { Authorization: `token ${token}` } : {}) }),
  schema: z.array(z.unknown()),
  release: GITHUB.release,
};

export const HOSTS: Record<HostKind, HostApi> = { github: GITHUB, gitlab: GITLAB, gitea: GITEA };
