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
 */

export type Host = "github" | "gitlab" | "gitea";

export interface HostRelease {
  tag: string;
  title?: string;
  body?: string;
  published_at?: string;
  prerelease?: boolean;
}

export interface SeenRequest {
  host: Host;
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
  private readonly server: ReturnType<typeof Bun.serve>;

  constructor() {
    this.server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: (request) => this.answer(request) });
  }

  get origin(): string {
    return `http://127.0.0.1:${this.server.port}`;
  }

  /** The API base URLs to give svc (release_notes.*_api_url). */
  get apiUrls(): { github_api_url: string; gitlab_api_url: string; gitea_api_url: string } {
    return { github_api_url: `${this.origin}/github`, gitlab_api_url: `${this.origin}/gitlab/api/v4`, gitea_api_url: `${this.origin}/gitea/api/v1` };
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

  private answer(request: Request): Response {
    const url = new URL(request.url);
    const route = this.route(url.pathname);
    if (!route) return this.log(request, "github", url, Response.json({ message: "Not Found" }, { status: 404 }));
    const { host, path } = route;
    const limitedUntil = this.limited.get(host);
    if (limitedUntil !== undefined && limitedUntil * 1000 > Date.now()) return this.log(request, host, url, rateLimited(host, limitedUntil));
    const movedTo = this.moved.get(`${host}:${path}`);
    if (movedTo !== undefined) return this.log(request, host, url, Response.json({ message: "Moved Permanently", url: movedTo }, { status: 301, headers: { location: `${movedTo}${url.search}` } }));
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
    if (request.headers.get("if-none-match") === etag) return this.log(request, host, url, new Response(null, { status: 304, headers }));
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

  private log(request: Request, host: Host, url: URL, response: Response): Response {
    this.requests.push({ host, path: `${url.pathname}${url.search}`, status: response.status, conditional: request.headers.has("if-none-match"), authorization: request.headers.get("authorization") ?? request.headers.get("private-token") });
    return response;
  }
}

function item(host: Host, path: string, r: HostRelease): Record<string, unknown> {
  const published = r.published_at ?? "2026-01-01T00:00:00Z";
  if (host === "gitlab") {
    return { tag_name: r.tag, name: r.title ?? r.tag, description: r.body ?? "", created_at: published, released_at: published, upcoming_release: false, _links: { self: `https://gitlab.com/${path}/-/releases/${r.tag}` } };
  }
  const web = host === "github" ? `https://github.com/${path}` : `https://codeberg.org/${path}`;
  return { id: 1, tag_name: r.tag, name: r.title ?? r.tag, body: r.body ?? "", html_url: `${web}/releases/tag/${r.tag}`, draft: false, prerelease: r.prerelease ?? false, created_at: published, published_at: published };
}

function rateHeaders(host: Host): Record<string, string> {
  const reset = String(Math.floor(Date.now() / 1000) + 3600);
  return host === "gitlab" ? { "ratelimit-limit": "2000", "ratelimit-remaining": "1999", "ratelimit-reset": reset } : { "x-ratelimit-limit": "60", "x-ratelimit-remaining": "59", "x-ratelimit-reset": reset };
}

function rateLimited(host: Host, until: number): Response {
  if (host === "gitlab") {
    return new Response("Retry later\n", { status: 429, headers: { "ratelimit-limit": "2000", "ratelimit-remaining": "0", "ratelimit-reset": String(until), "retry-after": String(Math.max(0, until - Math.floor(Date.now() / 1000))) } });
  }
  const message = host === "github" ? "API rate limit exceeded for 127.0.0.1. (But here's the good news: Authenticated requests get a higher rate limit.)" : "rate limit exceeded";
  return Response.json({ message, documentation_url: "https://docs.github.com/rest/overview/resources-in-the-rest-api#rate-limiting" }, { status: 403, headers: { "x-ratelimit-limit": "60", "x-ratelimit-remaining": "0", "x-ratelimit-reset": String(until) } });
}

function notFound(host: Host): Response {
  if (host === "gitlab") return Response.json({ message: "404 Project Not Found" }, { status: 404 });
  if (host === "gitea") return Response.json({ message: "The target couldn't be found.", url: "https://codeberg.org/api/swagger", errors: [] }, { status: 404 });
  return Response.json({ message: "Not Found", documentation_url: "https://docs.github.com/rest/releases/releases#list-releases", status: "404" }, { status: 404 });
}
