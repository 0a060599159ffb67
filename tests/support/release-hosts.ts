/**
 * Loopback stand-ins for the three release APIs svc reads, answering as the real ones do:
 * - GitHub, "List releases" (docs.github.com/rest/releases/releases): `GET /repos/{owner}/{repo}/releases?per_page&page`,
 *   pages by `Link` (absolute URLs, rel="next"/"last"), an `ETag` and 304 on `If-None-Match`,
 *   `x-ratelimit-*` headers and 403 `{"message":"API rate limit exceeded..."}` with x-ratelimit-remaining 0
 *   and x-ratelimit-reset (epoch seconds) once the limit is reached, 404 `{"message":"Not Found"}`,
 *   301 with a Location for a renamed repository.
 * - GitLab, "Releases API" (docs.gitlab.com/api/releases): `GET /projects/{url-encoded path}/releases?per_page&page`,
 *   `description` for the notes, `_links.self`, pages by `X-Next-Page` / `X-Total-Pages` and `Link`,
 *   429 with `RateLimit-Reset` and `Retry-After` when throttled, 404 `{"message":"404 Project Not Found"}`.
 * - Gitea/Forgejo, "repoListReleases" (the API's swagger): `GET /repos/{owner}/{repo}/releases?limit&page`,
 *   pages by `Link` and `X-Total-Count`, 404 `{"message":"The target couldn't be found."}`.
 * Every request is counted (host, path, status) for the tests and the bench.
 *
 * And their pull requests (GitLab: merge requests), as svc's Git step opens them (src/git/forges.ts):
 * - GitHub, "Pulls" (docs.github.com/rest/pulls/pulls): `GET /repos/{path}/pulls?state&head=owner:branch&base&per_page&page`
 *   (pages by Link), `POST` answering 201, or 422 `{"message":"Validation Failed","errors":[{"resource":"PullRequest",
 *   "code":"custom","message":"A pull request already exists for owner:branch."}]}` for a second open one of the same
 *   head and base, `PATCH /pulls/{number}` answering 200.
 * - GitLab, "Merge requests API" (docs.gitlab.com/api/merge_requests): `GET /projects/{id}/merge_requests?state=opened&source_branch&target_branch`
 *   (pages by X-Next-Page), `POST` answering 201, or 409 `{"message":["Another open merge request already exists for
 *   this source branch: !N"]}` (gitlab-org/gitlab, app/models/merge_request.rb), `PUT /merge_requests/{iid}` answering 200.
 * - Gitea/Forgejo (the API's swagger; go-gitea/gitea models/issues/pull.go, ErrPullRequestAlreadyExists):
 *   `GET /repos/{path}/pulls?state&limit&page` (no head filter; pages by Link), `POST` answering 201, or 409
 *   `{"message":"pull request already exists for these targets [id: .., issue_id: .., head_repo_id: .., base_repo_id: ..,
 *   head_branch: .., base_branch: ..]"}`, `PATCH /pulls/{index}` answering 201.
 * Each request names its head as the forges do: GitHub and Gitea `head.repo.full_name` and
 * `head.sha`, GitLab `source_project_id` / `target_project_id` and `sha` (a fork's request: another
 * repository; the commit: what the branch holds now, through `branchCommit`, unless set).
 */

export type Host = "github" | "gitlab" | "gitea";

export interface HostRelease {
  tag: string;
  title?: string;
  body?: string;
  published_at?: string;
  prerelease?: boolean;
}

/** A pull request (GitLab: merge request) as the stand-in keeps it. */
export interface HostPull {
  number: number;
  head: string;
  base: string;
  title: string;
  body: string;
  state: "open" | "closed";
  url: string;
  /** the head's repository (owner/name), when it is not the project itself: a fork's request */
  headRepo?: string;
  /** the head's commit, when it is not what the project's branch holds now (a fork's, or a stale one) */
  sha?: string;
}

export interface SeenRequest {
  host: Host;
  method: string;
  path: string;
  status: number;
  conditional: boolean;
  authorization: string | null;
}

export class ReleaseHosts {
  readonly requests: SeenRequest[] = [];
  private readonly repos = new Map<string, HostRelease[]>();
  /** `host:path` -> where a request for it is redirected (301), as GitHub answers for a renamed repository */
  readonly moved = new Map<string, string>();
  /** hosts answering "rate limited" until the given epoch second */
  readonly limited = new Map<Host, number>();
  /** `host:path` -> its pull requests, oldest first */
  readonly pulls = new Map<string, HostPull[]>();
  /** list requests still to be answered as if no request were open (a forge's lists lag behind its writes) */
  listsLagBehind = 0;
  /**
   * What a branch of a repository holds now, as the forge shows it in a request's head (`head.sha`,
   * GitLab's `sha`): tests point it at the Git remote's bare repositories.
   */
  branchCommit: (path: string, branch: string) => string | undefined = () => undefined;
  private readonly server: ReturnType<typeof Bun.serve>;

  constructor() {
    this.server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: (request) => this.answer(request) });
  }

  get origin(): string {
    return `http://127.0.0.1:${this.server.port}`;
  }

  /** The API base URLs to give svc (release_notes.*_api_url). */
  get apiUrls(): { github_api_url: string; gitlab_api_url: string; gitea_api_url: string } {
    return {
      github_api_url: `${this.origin}/github`,
      gitlab_api_url: `${this.origin}/gitlab/api/v4`,
      gitea_api_url: `${this.origin}/gitea/api/v1`,
    };
  }

  /** The releases of a repository (owner/name, GitLab group/project), newest first. */
  set(host: Host, path: string, releases: HostRelease[]): void {
    this.repos.set(`${host}:${path}`, releases);
  }

  count(host?: Host): number {
    return this.requests.filter((r) => host === undefined || r.host === host).length;
  }

  stop(): void {
    this.server.stop(true);
  }

  /** The pull requests of a repository (the GitLab project's merge requests). */
  pullsOf(host: Host, path: string): HostPull[] {
    const key = `${host}:${path}`;
    if (!this.pulls.has(key)) this.pulls.set(key, []);
    return this.pulls.get(key)!;
  }

  private async answer(request: Request): Promise<Response> {
    const url = new URL(request.url);
    const pullRoute = this.pullRoute(url.pathname);
    if (pullRoute) {
      const limitedUntil = this.limited.get(pullRoute.host);
      if (limitedUntil !== undefined && limitedUntil * 1000 > Date.now())
        return this.log(request, pullRoute.host, url, rateLimited(pullRoute.host, limitedUntil));
      return this.log(request, pullRoute.host, url, await this.answerPulls(request, url, pullRoute));
    }
    const route = this.route(url.pathname);
    if (!route) return this.log(request, "github", url, Response.json({ message: "Not Found" }, { status: 404 }));
    const { host, path } = route;
    const limitedUntil = this.limited.get(host);
    if (limitedUntil !== undefined && limitedUntil * 1000 > Date.now())
      return this.log(request, host, url, rateLimited(host, limitedUntil));
    const movedTo = this.moved.get(`${host}:${path}`);
    if (movedTo !== undefined)
      return this.log(
        request,
        host,
        url,
        Response.json(
          { message: "Moved Permanently", url: movedTo },
          { status: 301, headers: { location: `${movedTo}${url.search}` } },
        ),
      );
    const releases = this.repos.get(`${host}:${path}`);
    if (!releases) return this.log(request, host, url, notFound(host));
    const perPage = Math.min(100, Number(url.searchParams.get(host === "gitea" ? "limit" : "per_page") ?? 30) || 30);
    const page = Math.max(1, Number(url.searchParams.get("page") ?? 1) || 1);
    const items = releases.slice((page - 1) * perPage, page * perPage).map((r) => item(host, path, r));
    const body = JSON.stringify(items);
    const etag = `W/"${new Bun.CryptoHasher("sha256").update(body).digest("hex").slice(0, 32)}"`;
    const headers = new Headers({ "content-type": "application/json; charset=utf-8", etag, ...rateHeaders(host) });
    const pages = Math.max(1, Math.ceil(releases.length / perPage));
    const pageUrl = (n: number) => {
      const next = new URL(url);
      next.searchParams.set("page", String(n));
      return next.href;
    };
    const links = [...(page < pages ? [`<${pageUrl(page + 1)}>; rel="next"`] : []), `<${pageUrl(pages)}>; rel="last"`];
    headers.set("link", links.join(", "));
    if (host === "gitlab") {
      headers.set("x-page", String(page));
      headers.set("x-per-page", String(perPage));
      headers.set("x-total", String(releases.length));
      headers.set("x-total-pages", String(pages));
      headers.set("x-next-page", page < pages ? String(page + 1) : "");
    }
    if (host === "gitea") headers.set("x-total-count", String(releases.length));
    if (request.headers.get("if-none-match") === etag)
      return this.log(request, host, url, new Response(null, { status: 304, headers }));
    return this.log(request, host, url, new Response(body, { headers }));
  }

  private route(pathname: string): { host: Host; path: string } | undefined {
    let match = /^\/github\/repos\/([^/]+\/[^/]+)\/releases$/.exec(pathname);
    if (match) return { host: "github", path: match[1]! };
    match = /^\/gitlab\/api\/v4\/projects\/([^/]+)\/releases$/.exec(pathname);
    if (match) return { host: "gitlab", path: decodeURIComponent(match[1]!) };
    match = /^\/gitea\/api\/v1\/repos\/([^/]+\/[^/]+)\/releases$/.exec(pathname);
    if (match) return { host: "gitea", path: match[1]! };
    return undefined;
  }

  private pullRoute(pathname: string): { host: Host; path: string; number?: number } | undefined {
    let match = /^\/github\/repos\/([^/]+\/[^/]+)\/pulls(?:\/(\d+))?$/.exec(pathname);
    if (match) return { host: "github", path: match[1]!, ...(match[2] ? { number: Number(match[2]) } : {}) };
    match = /^\/gitlab\/api\/v4\/projects\/([^/]+)\/merge_requests(?:\/(\d+))?$/.exec(pathname);
    if (match)
      return { host: "gitlab", path: decodeURIComponent(match[1]!), ...(match[2] ? { number: Number(match[2]) } : {}) };
    match = /^\/gitea\/api\/v1\/repos\/([^/]+\/[^/]+)\/pulls(?:\/(\d+))?$/.exec(pathname);
    if (match) return { host: "gitea", path: match[1]!, ...(match[2] ? { number: Number(match[2]) } : {}) };
    return undefined;
  }

  private async answerPulls(
    request: Request,
    url: URL,
    route: { host: Host; path: string; number?: number },
  ): Promise<Response> {
    const { host, path } = route;
    const pulls = this.pullsOf(host, path);
    const headers = { "content-type": "application/json; charset=utf-8", ...rateHeaders(host) };
    const json = (body: unknown, status = 200) => new Response(JSON.stringify(body), { status, headers });
    if (request.method === "GET" && route.number === undefined) {
      const params = url.searchParams;
      const wanted =
        host === "gitlab"
          ? params.get("state") === "opened"
            ? "open"
            : params.get("state")
          : (params.get("state") ?? "open");
      let list =
        this.listsLagBehind > 0
          ? (this.listsLagBehind--, [])
          : pulls.filter((p) => wanted === "all" || p.state === wanted);
      // GitHub filters by head (owner:branch) and base; GitLab by source and target branch; Gitea lists them all
      if (host === "github" && params.get("head"))
        list = list.filter((p) => `${(p.headRepo ?? path).split("/")[0]}:${p.head}` === params.get("head"));
      if (host === "github" && params.get("base")) list = list.filter((p) => p.base === params.get("base"));
      if (host === "gitlab" && params.get("source_branch"))
        list = list.filter((p) => p.head === params.get("source_branch"));
      if (host === "gitlab" && params.get("target_branch"))
        list = list.filter((p) => p.base === params.get("target_branch"));
      const perPage = Math.min(
        100,
        Number(
          params.get(host === "gitea" ? "limit" : "per_page") ?? (host === "gitea" ? 30 : host === "gitlab" ? 20 : 30),
        ) || 30,
      );
      const page = Math.max(1, Number(params.get("page") ?? 1) || 1);
      const pages = Math.max(1, Math.ceil(list.length / perPage));
      const response = json(
        list.slice((page - 1) * perPage, page * perPage).map((p) => pullItem(host, path, p, this.branchCommit)),
      );
      if (page < pages) {
        const next = new URL(url);
        next.searchParams.set("page", String(page + 1));
        response.headers.set("link", `<${next.href}>; rel="next"`);
        if (host === "gitlab") response.headers.set("x-next-page", String(page + 1));
      } else if (host === "gitlab") response.headers.set("x-next-page", "");
      if (host === "gitea") response.headers.set("x-total-count", String(list.length));
      return response;
    }
    const body = (await request.json().catch(() => ({}))) as Record<string, unknown>;
    const head = String(body[host === "gitlab" ? "source_branch" : "head"] ?? "");
    const base = String(body[host === "gitlab" ? "target_branch" : "base"] ?? "");
    const text = String(body[host === "gitlab" ? "description" : "body"] ?? "");
    if (request.method === "POST" && route.number === undefined) {
      if (!head || !base || !body.title)
        return host === "github"
          ? json(
              {
                message: "Validation Failed",
                errors: [{ resource: "PullRequest", code: "missing_field" }],
                status: "422",
              },
              422,
            )
          : json({ message: "title is missing" }, host === "gitlab" ? 400 : 422);
      // one open request per head repository and branch (and base): a fork's of the same name is another
      const open = pulls.find(
        (p) => p.state === "open" && !p.headRepo && p.head === head && (host === "gitlab" || p.base === base),
      );
      if (open) return exists(host, path, open);
      const number = pulls.length + 1;
      const web =
        host === "github"
          ? `https://github.com/${path}/pull/${number}`
          : host === "gitlab"
            ? `https://gitlab.com/${path}/-/merge_requests/${number}`
            : `https://codeberg.org/${path}/pulls/${number}`;
      const pull: HostPull = { number, head, base, title: String(body.title), body: text, state: "open", url: web };
      pulls.push(pull);
      return json(pullItem(host, path, pull, this.branchCommit), 201);
    }
    const pull = pulls.find((p) => p.number === route.number);
    if (!pull) return notFound(host);
    if ((request.method === "PATCH" && host !== "gitlab") || (request.method === "PUT" && host === "gitlab")) {
      if (body.title !== undefined) pull.title = String(body.title);
      if (body[host === "gitlab" ? "description" : "body"] !== undefined) pull.body = text;
      return json(pullItem(host, path, pull, this.branchCommit), host === "gitea" ? 201 : 200);
    }
    if (request.method === "GET") return json(pullItem(host, path, pull, this.branchCommit));
    return json({ message: "Method Not Allowed" }, 405);
  }

  private log(request: Request, host: Host, url: URL, response: Response): Response {
    this.requests.push({
      host,
      method: request.method,
      path: `${url.pathname}${url.search}`,
      status: response.status,
      conditional: request.headers.has("if-none-match"),
      authorization: request.headers.get("authorization") ?? request.headers.get("private-token"),
    });
    return response;
  }
}

function pullItem(
  host: Host,
  path: string,
  p: HostPull,
  branchCommit: (path: string, branch: string) => string | undefined,
): Record<string, unknown> {
  const headRepo = p.headRepo ?? path;
  const sha = p.sha ?? branchCommit(headRepo, p.head) ?? null;
  if (host === "gitlab")
    return {
      id: 1000 + p.number,
      iid: p.number,
      title: p.title,
      description: p.body,
      state: p.state === "open" ? "opened" : "closed",
      source_branch: p.head,
      target_branch: p.base,
      web_url: p.url,
      sha,
      // the project is 1, a fork another
      source_project_id: p.headRepo ? 2 : 1,
      target_project_id: 1,
    };
  const owner = path.split("/")[0];
  return {
    id: 1000 + p.number,
    number: p.number,
    title: p.title,
    body: p.body,
    state: p.state,
    html_url: p.url,
    head: {
      ref: p.head,
      label: `${headRepo.split("/")[0]}:${p.head}`,
      sha,
      repo: { full_name: headRepo, ...(host === "gitea" ? { id: p.headRepo ? 2 : 1 } : {}) },
    },
    base: { ref: p.base, label: `${owner}:${p.base}` },
  };
}

/** What each forge answers to a second open request of the same branches. */
function exists(host: Host, path: string, open: HostPull): Response {
  if (host === "github") {
    const body = {
      message: "Validation Failed",
      errors: [
        {
          resource: "PullRequest",
          code: "custom",
          message: `A pull request already exists for ${path.split("/")[0]}:${open.head}.`,
        },
      ],
      documentation_url: "https://docs.github.com/rest/pulls/pulls#create-a-pull-request",
      status: "422",
    };
    return Response.json(body, { status: 422 });
  }
  if (host === "gitlab")
    return Response.json(
      { message: [`Another open merge request already exists for this source branch: !${open.number}`] },
      { status: 409 },
    );
  const message = `pull request already exists for these targets [id: ${1000 + open.number}, issue_id: ${open.number}, head_repo_id: 1, base_repo_id: 1, head_branch: ${open.head}, base_branch: ${open.base}]`;
  return Response.json({ message, url: "https://codeberg.org/api/swagger" }, { status: 409 });
}

function item(host: Host, path: string, r: HostRelease): Record<string, unknown> {
  const published = r.published_at ?? "2026-01-01T00:00:00Z";
  if (host === "gitlab") {
    return {
      tag_name: r.tag,
      name: r.title ?? r.tag,
      description: r.body ?? "",
      created_at: published,
      released_at: published,
      upcoming_release: false,
      _links: { self: `https://gitlab.com/${path}/-/releases/${r.tag}` },
    };
  }
  const web = host === "github" ? `https://github.com/${path}` : `https://codeberg.org/${path}`;
  return {
    id: 1,
    tag_name: r.tag,
    name: r.title ?? r.tag,
    body: r.body ?? "",
    html_url: `${web}/releases/tag/${r.tag}`,
    draft: false,
    prerelease: r.prerelease ?? false,
    created_at: published,
    published_at: published,
  };
}

function rateHeaders(host: Host): Record<string, string> {
  const reset = String(Math.floor(Date.now() / 1000) + 3600);
  return host === "gitlab"
    ? { "ratelimit-limit": "2000", "ratelimit-remaining": "1999", "ratelimit-reset": reset }
    : { "x-ratelimit-limit": "60", "x-ratelimit-remaining": "59", "x-ratelimit-reset": reset };
}

function rateLimited(host: Host, until: number): Response {
  if (host === "gitlab") {
    return new Response("Retry later\n", {
      status: 429,
      headers: {
        "ratelimit-limit": "2000",
        "ratelimit-remaining": "0",
        "ratelimit-reset": String(until),
        "retry-after": String(Math.max(0, until - Math.floor(Date.now() / 1000))),
      },
    });
  }
  const message =
    host === "github"
      ? "API rate limit exceeded for 127.0.0.1. (But here's the good news: Authenticated requests get a higher rate limit.)"
      : "rate limit exceeded";
  return Response.json(
    { message, documentation_url: "https://docs.github.com/rest/overview/resources-in-the-rest-api#rate-limiting" },
    {
      status: 403,
      headers: { "x-ratelimit-limit": "60", "x-ratelimit-remaining": "0", "x-ratelimit-reset": String(until) },
    },
  );
}

function notFound(host: Host): Response {
  if (host === "gitlab") return Response.json({ message: "404 Project Not Found" }, { status: 404 });
  if (host === "gitea")
    return Response.json(
      { message: "The target couldn't be found.", url: "https://codeberg.org/api/swagger", errors: [] },
      { status: 404 },
    );
  return Response.json(
    {
      message: "Not Found",
      documentation_url: "https://docs.github.com/rest/releases/releases#list-releases",
      status: "404",
    },
    { status: 404 },
  );
}
