/**
 * Pull requests (GitHub, Gitea/Forgejo) and merge requests (GitLab) for svc's branches, one per
 * service and version: the open request of the branch is looked up first and updated; else one is
 * opened, and when the forge answers that one exists already (a request opened meanwhile) it is
 * looked up again and updated, never duplicated (docs/compose.md, "Git"). Spoken through the
 * releases room's hosts (their headers, their pages, their rate-limit answers) and its request.
 * - GitHub (docs.github.com, REST "Pulls"): `GET /repos/{path}/pulls?state=open&head=owner:branch&base=`,
 *   `POST /repos/{path}/pulls` (201; 422 "A pull request already exists for owner:branch."),
 *   `PATCH /repos/{path}/pulls/{number}`.
 * - GitLab (docs.gitlab.com, "Merge requests API"): `GET /projects/{id}/merge_requests?state=opened&source_branch=&target_branch=`,
 *   `POST /projects/{id}/merge_requests` (201; 409 "Another open merge request already exists for this source branch"),
 *   `PUT /projects/{id}/merge_requests/{iid}`.
 * - Gitea/Forgejo (the API's swagger): `GET /repos/{path}/pulls?state=open` (pages by Link),
 *   `POST /repos/{path}/pulls` (201; 409 "pull request already exists for these targets"),
 *   `PATCH /repos/{path}/pulls/{index}` (201).
 *
 * A listed request is svc's only when its head is the project's own repository and its head
 * commit the one svc pushed (the branch's name is predictable: anyone may open a request from a
 * fork's `svc/<service>-<version>`, and svc would rewrite it with the operator's token and show it
 * as its proposal). GitHub's list is filtered by `owner:branch` besides; GitLab's and Gitea's
 * lists are not, and are checked by the head repository (GitHub, Gitea: `head.repo.full_name`;
 * GitLab: `source_project_id` equal to `target_project_id`) and commit (`head.sha`, `sha`).
 */
import { z } from "zod";
import { readBoundedJson } from "../core/bounded.ts";
import { SvcError } from "../core/errors.ts";
import { httpUrl } from "../core/urls.ts";
import { rateLimitReset, request } from "../releases/fetch.ts";
import { HOSTS } from "../releases/hosts.ts";
import type { HostKind, SourceRepo } from "../releases/source.ts";

export interface Forge {
  repo: SourceRepo;
  /** the forge's API base URL */
  apiUrl: string;
  token: string | undefined;
  timeoutMs: number;
  fetch?: typeof fetch;
}

export interface PullRequestAsk {
  /** the branch holding svc's commit */
  branch: string;
  /** the branch it is to be merged into */
  base: string;
  /** the commit svc pushed to `branch` (or found there, holding the same change) */
  commit: string;
  title: string;
  body: string;
}

export interface PullRequest {
  url: string;
  number: number;
  /** opened now; false: an open one was updated */
  created: boolean;
}

const ANSWER_BYTES = 4 * 1024 * 1024;
const LIST_PAGES = 10;

/** A request's page, shown and sent on: an http(s) link, as every link that leaves svc. */
const link = z
  .string()
  .transform(
    (text, ctx) => httpUrl(text) ?? (ctx.addIssue({ code: "custom", message: "not an http(s) link" }), z.NEVER),
  );
const githubPull = z.looseObject({
  number: z.number().int(),
  html_url: link,
  head: z.looseObject({
    ref: z.string(),
    sha: z.string().nullish(),
    // null once the fork it came from is deleted
    repo: z.looseObject({ full_name: z.string() }).nullish(),
  }),
  base: z.looseObject({ ref: z.string() }),
});
const gitlabMerge = z.looseObject({
  iid: z.number().int(),
  web_url: link,
  source_branch: z.string(),
  target_branch: z.string(),
  sha: z.string().nullish(),
  source_project_id: z.number().int().nullish(),
  target_project_id: z.number().int().nullish(),
});

/** A pull request (GitHub, Gitea) of `ask`: from the project's own branch, at svc's commit. */
const isOwnPull = (forge: Forge, ask: PullRequestAsk) => (p: z.infer<typeof githubPull>) =>
  p.head.ref === ask.branch &&
  p.base.ref === ask.base &&
  p.head.repo?.full_name.toLowerCase() === forge.repo.path.toLowerCase() &&
  p.head.sha === ask.commit;

/** A merge request of `ask`: from the project itself (the list is the project's: its target), at svc's commit. */
const isOwnMerge = (ask: PullRequestAsk) => (m: z.infer<typeof gitlabMerge>) =>
  m.source_branch === ask.branch &&
  m.target_branch === ask.base &&
  typeof m.source_project_id === "number" &&
  m.source_project_id === m.target_project_id &&
  m.sha === ask.commit;

interface Found {
  number: number;
  url: string;
}

interface ForgeApi {
  find(forge: Forge, ask: PullRequestAsk): Promise<Found | undefined>;
  create(forge: Forge, ask: PullRequestAsk): Promise<Found | "exists">;
  update(forge: Forge, found: Found, ask: PullRequestAsk): Promise<void>;
}

/** Opens the request of `ask.branch`, or updates the open one. */
export async function openOrUpdate(forge: Forge, ask: PullRequestAsk): Promise<PullRequest> {
  const api = APIS[forge.repo.host];
  const open = await api.find(forge, ask);
  if (open) {
    await api.update(forge, open, ask);
    return { ...open, created: false };
  }
  const created = await api.create(forge, ask);
  if (created !== "exists") return { ...created, created: true };
  const found = await api.find(forge, ask);
  if (!found)
    throw forgeError(
      forge,
      `says a request for ${ask.branch} exists, but lists none open from this repository at svc's commit ${ask.commit.slice(0, 12)}`,
    );
  await api.update(forge, found, ask);
  return { ...found, created: false };
}

const base = (forge: Forge) => forge.apiUrl.replace(/\/+$/, "");
const name = (forge: Forge) => HOSTS[forge.repo.host].name;

function forgeError(forge: Forge, what: string): SvcError {
  return new SvcError("registry", `${name(forge)} ${what}`);
}

async function call(forge: Forge, url: string, method: string, body?: unknown): Promise<Response> {
  const headers = {
    ...HOSTS[forge.repo.host].headers(forge.token),
    ...(body === undefined ? {} : { "Content-Type": "application/json" }),
  };
  return request(
    { api: { name: name(forge) }, timeoutMs: forge.timeoutMs, fetch: forge.fetch },
    url,
    headers,
    new URL(base(forge)).origin,
    { method, ...(body === undefined ? {} : { body: JSON.stringify(body) }) },
  );
}

async function json(forge: Forge, response: Response): Promise<unknown> {
  const read = await readBoundedJson(response, ANSWER_BYTES);
  if ("value" in read) return read.value;
  if (read.error === "over_cap") throw forgeError(forge, `answered more than ${ANSWER_BYTES / 1024 / 1024} MiB`);
  throw forgeError(forge, `answered ${response.status} with a body that is not JSON`);
}

/** A 2xx answer's JSON; anything else an error that says what the forge said (rate limits with their reset). */
async function ok(forge: Forge, response: Response, what: string): Promise<unknown> {
  if (response.ok) return json(forge, response);
  const until = rateLimitReset(response, Date.now());
  // nothing lost: the forge's words only add to the status, which the error below names
  const said = await json(forge, response).catch(() => undefined);
  const message =
    typeof said === "object" && said !== null && "message" in said
      ? JSON.stringify((said as { message: unknown }).message).slice(0, 300)
      : "";
  if (until !== undefined)
    throw forgeError(forge, `rate limit reached while it ${what}; asked again after ${new Date(until).toISOString()}`);
  const hint =
    response.status === 401 || response.status === 403
      ? " (compose.git_token is missing or may not do this)"
      : response.status === 404
        ? " (no such repository, or the token may not see it)"
        : "";
  throw forgeError(forge, `answered ${response.status}${hint} when it ${what}${message ? `: ${message}` : ""}`);
}

/** Pages of a list (Link rel="next", GitLab's X-Next-Page), up to LIST_PAGES, on the API's own server. */
async function* pages(forge: Forge, first: string, what: string): AsyncGenerator<unknown[]> {
  let url: string | null = first;
  for (let page = 0; url !== null && page < LIST_PAGES; page++) {
    const response = await call(forge, url, "GET");
    const items = z.array(z.unknown()).safeParse(await ok(forge, response, what));
    if (!items.success) throw forgeError(forge, `answered something other than a list when it ${what}`);
    yield items.data;
    const next = HOSTS[forge.repo.host].nextPage(response, url);
    url = next !== null && new URL(next).origin === new URL(base(forge)).origin ? next : null;
  }
}

async function firstMatch<T>(
  forge: Forge,
  url: string,
  what: string,
  schema: z.ZodType<T>,
  matches: (item: T) => boolean,
): Promise<T | undefined> {
  for await (const items of pages(forge, url, what)) {
    for (const item of items) {
      const parsed = schema.safeParse(item);
      if (parsed.success && matches(parsed.data)) return parsed.data;
    }
  }
  return undefined;
}

const owner = (forge: Forge) => forge.repo.path.split("/")[0]!;

/** The request a forge just opened, read with its schema: a reply svc cannot read is the forge's error. */
async function opened<T>(
  forge: Forge,
  response: Response,
  schema: z.ZodType<T>,
  what: string,
  found: (request: T) => Found,
): Promise<Found> {
  const parsed = schema.safeParse(await ok(forge, response, `opened ${what}`));
  if (!parsed.success) throw forgeError(forge, `answered ${what} svc cannot read`);
  return found(parsed.data);
}

/** GitLab and Gitea say 409 when the branch's request exists already (its body unread). */
async function conflict(response: Response): Promise<boolean> {
  if (response.status !== 409) return false;
  // nothing lost: the status is the answer; cancelling only frees the connection
  await response.body?.cancel().catch(() => {});
  return true;
}

const pullFound = (pull: z.infer<typeof githubPull>): Found => ({ number: pull.number, url: pull.html_url });
const mergeFound = (merge: z.infer<typeof gitlabMerge>): Found => ({ number: merge.iid, url: merge.web_url });

/** Opens a pull request the way GitHub and Gitea both take it. */
const openPull = (forge: Forge, ask: PullRequestAsk) =>
  call(forge, `${base(forge)}/repos/${forge.repo.path}/pulls`, "POST", {
    title: ask.title,
    head: ask.branch,
    base: ask.base,
    body: ask.body,
  });

/** Retitles a pull request the way GitHub and Gitea both take it. */
const updatePull: ForgeApi["update"] = async (forge, found, ask) => {
  await ok(
    forge,
    await call(forge, `${base(forge)}/repos/${forge.repo.path}/pulls/${found.number}`, "PATCH", {
      title: ask.title,
      body: ask.body,
    }),
    "updated a pull request",
  );
};

const GITHUB: ForgeApi = {
  find: async (forge, ask) => {
    const query = new URLSearchParams({
      state: "open",
      head: `${owner(forge)}:${ask.branch}`,
      base: ask.base,
      per_page: "100",
    });
    const pull = await firstMatch(
      forge,
      `${base(forge)}/repos/${forge.repo.path}/pulls?${query}`,
      "listed pull requests",
      githubPull,
      isOwnPull(forge, ask),
    );
    return pull && pullFound(pull);
  },
  create: async (forge, ask) => {
    const response = await openPull(forge, ask);
    if (response.status === 422) {
      const said = JSON.stringify(await json(forge, response));
      if (/already exists/i.test(said)) return "exists";
      throw forgeError(forge, `refused the pull request (422): ${said.slice(0, 300)}`);
    }
    return opened(forge, response, githubPull, "a pull request", pullFound);
  },
  update: updatePull,
};

const GITLAB: ForgeApi = {
  find: async (forge, ask) => {
    const query = new URLSearchParams({
      state: "opened",
      source_branch: ask.branch,
      target_branch: ask.base,
      per_page: "100",
    });
    const merge = await firstMatch(
      forge,
      `${base(forge)}/projects/${encodeURIComponent(forge.repo.path)}/merge_requests?${query}`,
      "listed merge requests",
      gitlabMerge,
      isOwnMerge(ask),
    );
    return merge && mergeFound(merge);
  },
  create: async (forge, ask) => {
    const response = await call(
      forge,
      `${base(forge)}/projects/${encodeURIComponent(forge.repo.path)}/merge_requests`,
      "POST",
      { source_branch: ask.branch, target_branch: ask.base, title: ask.title, description: ask.body },
    );
    if (await conflict(response)) return "exists";
    return opened(forge, response, gitlabMerge, "a merge request", mergeFound);
  },
  update: async (forge, found, ask) => {
    await ok(
      forge,
      await call(
        forge,
        `${base(forge)}/projects/${encodeURIComponent(forge.repo.path)}/merge_requests/${found.number}`,
        "PUT",
        { title: ask.title, description: ask.body },
      ),
      "updated a merge request",
    );
  },
};

const GITEA: ForgeApi = {
  find: async (forge, ask) => {
    const pull = await firstMatch(
      forge,
      `${base(forge)}/repos/${forge.repo.path}/pulls?state=open&limit=50`,
      "listed pull requests",
      githubPull,
      isOwnPull(forge, ask),
    );
    return pull && pullFound(pull);
  },
  create: async (forge, ask) => {
    const response = await openPull(forge, ask);
    if (await conflict(response)) return "exists";
    return opened(forge, response, githubPull, "a pull request", pullFound);
  },
  update: updatePull,
};

const APIS: Record<HostKind, ForgeApi> = { github: GITHUB, gitlab: GITLAB, gitea: GITEA };
