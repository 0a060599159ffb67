/**
 * The releases room against loopback stand-ins of GitHub, GitLab and Gitea (tests/support/release-hosts.ts):
 * what is between two versions, pages, conditional requests, rate limits, unknown repositories, the
 * cache in state_dir, and hostile answers.
 */
import { afterAll, beforeEach, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { defaultConfig } from "../../../src/config/index.ts";
import { createReleaseNotes, type ReleaseQuery } from "../../../src/releases/index.ts";
import { recordingLogger } from "../../support/logger.ts";
import { type HostRelease, ReleaseHosts } from "../../support/release-hosts.ts";

const hosts = new ReleaseHosts();
afterAll(() => hosts.stop());

const config = (overrides: Record<string, unknown> = {}) =>
  defaultConfig({ release_notes: { ...hosts.apiUrls, timeout: 2000, cache_for: 0, ...overrides } } as never);
const serviceOf = (overrides: Record<string, unknown> = {}, stateDir?: string) =>
  createReleaseNotes({ ...config(overrides), state_dir: stateDir }, recordingLogger());
const query = (url: string, from: string | null, to: string | null): ReleaseQuery => ({
  sources: [{ url, from: "the newer image's org.opencontainers.image.source" }],
  from,
  to,
});

/** 1.0.0 ... 2.0.0 as a project publishes them, newest first, tags with a `v`. */
const HISTORY: HostRelease[] = [
  { tag: "v2.1.0", title: "2.1.0" },
  { tag: "v2.0.0", title: "Version 2", body: "The config file moved." },
  { tag: "v1.2.0", title: "1.2.0", body: "feat(api)!: drop the v0 endpoints" },
  { tag: "v1.1.0", title: "1.1.0", body: "- a new flag" },
  { tag: "v1.1.0-rc.1", title: "1.1.0 rc", prerelease: true },
  { tag: "v1.0.0", title: "1.0.0" },
  { tag: "v0.9.0", title: "0.9.0" },
];

beforeEach(() => {
  hosts.requests.length = 0;
  hosts.limited.clear();
});

/**
 * A host is read only through its own API (docs/release-notes.md): the stand-ins are a GitHub
 * Enterprise server, a self-hosted GitLab and a self-hosted Gitea on 127.0.0.1, so their
 * repositories are named there, each kind tested with the other kinds' APIs at their public
 * defaults (one host is one kind).
 */
const SELF_HOSTED = { github: "http://127.0.0.1", gitlab: "http://127.0.0.1", gitea: "http://127.0.0.1" };
const PUBLIC_APIS = {
  github_api_url: "https://api.github.com",
  gitlab_api_url: "https://gitlab.com/api/v4",
  gitea_api_url: "https://codeberg.org/api/v1",
};
const alone = (host: "github" | "gitlab" | "gitea") => {
  const key = `${host}_api_url` as const;
  return { ...PUBLIC_APIS, [key]: hosts.apiUrls[key] };
};
/** A service reading the GitHub stand-in as an Enterprise server (the rows below the three kinds' own) */
const service = (overrides: Record<string, unknown> = {}, stateDir?: string) =>
  serviceOf({ ...alone("github"), ...overrides }, stateDir);
const GHE = SELF_HOSTED.github;

describe.each(["github", "gitlab", "gitea"] as const)("%s", (host) => {
  const web = {
    github: `${SELF_HOSTED.github}/acme/app`,
    gitlab: `${SELF_HOSTED.gitlab}/acme/tools/app`,
    gitea: `${SELF_HOSTED.gitea}/acme/app`,
  }[host];
  const path = new URL(web).pathname.slice(1);
  const service = (overrides: Record<string, unknown> = {}, stateDir?: string) =>
    serviceOf({ ...alone(host), ...overrides }, stateDir);

  test("the releases after the running version up to the candidate, newest first, the breaking ones flagged; a `v` prefix does not matter", async () => {
    hosts.set(host, path, HISTORY);
    const notes = await service()
      .session()
      .between(query(`${web}.git`, "1.0.0", "v2.0.0"));
    expect(notes.problem).toBeNull();
    expect(notes.source).toBe(web);
    expect(notes.releases.map((r) => [r.version, r.breaking])).toEqual([
      ["2.0.0", true],
      ["1.2.0", true],
      ["1.1.0", false],
    ]);
    expect(notes.breaking).toBe(2);
    expect(notes.releases[0]!.notes).toBe("The config file moved.");
    expect(notes.releases[0]!.url).toStartWith("https://");
  });

  test("pages are followed until the running version; a second session asks conditionally and gets 304; one request per session however many targets", async () => {
    const many = Array.from({ length: 120 }, (_, i) => ({ tag: `1.${119 - i}.0` }));
    hosts.set(host, path, many);
    const releases = service();
    const first = releases.session();
    const [a, b] = await Promise.all([
      first.between(query(web, "1.5.0", "1.119.0")),
      first.between(query(web, "1.5.0", "1.100.0")),
    ]);
    expect(a.releases.length + a.more).toBe(114);
    expect(a.releases).toHaveLength(50);
    expect(a.more).toBe(64);
    expect(b.releases[0]!.version).toBe("1.100.0");
    expect(hosts.requests.map((r) => r.status)).toEqual([200, 200, 200]);
    hosts.requests.length = 0;
    const again = await releases.session().between(query(web, "1.5.0", "1.119.0"));
    expect(again.releases).toHaveLength(50);
    expect(hosts.requests.map((r) => [r.status, r.conditional])).toEqual([[304, true]]);
  });

  test("an unknown repository is a sentence, not an error", async () => {
    const notes = await service()
      .session()
      .between(query(`${web}-gone`, "1.0.0", "2.0.0"));
    expect(notes.releases).toEqual([]);
    expect(notes.problem).toContain("(404");
  });

  test("a rate-limited host is not asked again before its reset; what was read before is shown with a note", async () => {
    hosts.set(host, path, HISTORY);
    const releases = service();
    await releases.session().between(query(web, "1.0.0", "2.0.0"));
    hosts.limited.set(host, Math.floor(Date.now() / 1000) + 600);
    const limited = await releases.session().between(query(web, "1.0.0", "2.0.0"));
    expect(limited.problem).toContain("rate limit reached");
    expect(limited.releases).toHaveLength(3);
    const before = hosts.count(host);
    const later = await releases.session().between(query(web, "1.0.0", "2.0.0"));
    expect(hosts.count(host)).toBe(before);
    expect(later.problem).toContain("asked again after");
  });
});

test("cache_for: a repository read moments ago is not asked again at all", async () => {
  hosts.set("github", "acme/recent", HISTORY);
  const releases = service({ cache_for: 300_000 });
  await releases.session().between(query(`${GHE}/acme/recent`, "1.0.0", "2.0.0"));
  const again = await releases.session().between(query(`${GHE}/acme/recent`, "1.0.0", "2.0.0"));
  expect(again.releases).toHaveLength(3);
  expect(hosts.requests.map((r) => r.status)).toEqual([200]);
});

test("a renamed repository is followed on the API's own server, never to another one", async () => {
  hosts.set("github", "acme/new-name", HISTORY);
  hosts.moved.set("github:acme/old-name", `${hosts.origin}/github/repos/acme/new-name/releases`);
  hosts.moved.set("github:acme/elsewhere", "http://127.0.0.2:1/github/repos/acme/new-name/releases");
  const releases = service({ github_token: "gh-secret" }).session();
  expect((await releases.between(query(`${GHE}/acme/old-name`, "1.0.0", "2.0.0"))).releases).toHaveLength(3);
  const elsewhere = await releases.between(query(`${GHE}/acme/elsewhere`, "1.0.0", "2.0.0"));
  expect(elsewhere.problem).toContain("redirected the request to another server");
  expect(hosts.requests.map((r) => r.status)).toEqual([301, 200, 301]);
});

test("tokens go to their own host only, in each host's header", async () => {
  hosts.set("github", "acme/app", HISTORY);
  hosts.set("gitlab", "acme/app", HISTORY);
  // both tokens set each time; the stand-in is one host, so it is GitHub's, then GitLab's
  const tokens = { github_token: "gh-secret", gitlab_token: "gl-secret" };
  await service(tokens)
    .session()
    .between(query(`${GHE}/acme/app`, "1.0.0", "2.0.0"));
  await serviceOf({ ...alone("gitlab"), ...tokens })
    .session()
    .between(query(`${SELF_HOSTED.gitlab}/acme/app`, "1.0.0", "2.0.0"));
  expect(hosts.requests.map((r) => [r.host, r.authorization])).toEqual([
    ["github", "Bearer gh-secret"],
    ["gitlab", "gl-secret"],
  ]);
});

test("with github_api_url an Enterprise server, a github.com address is read through api.github.com, without the server's token; the server's own through it, with the token", async () => {
  hosts.set("github", "acme/app", HISTORY);
  // what leaves for another host than the stand-in is recorded and answered here: no traffic beyond loopback
  const elsewhere: { url: string; authorization: string | null }[] = [];
  const loopbackOnly = (async (input: string | URL, init?: RequestInit) => {
    const at = new URL(String(input));
    if (at.hostname === "127.0.0.1") return fetch(at, init);
    elsewhere.push({ url: at.href, authorization: new Headers(init?.headers).get("authorization") });
    return Response.json({ message: "Not Found" }, { status: 404 });
  }) as typeof fetch;
  const releases = createReleaseNotes(
    { ...config({ ...alone("github"), github_token: "ghe-secret" }), state_dir: undefined },
    recordingLogger(),
    { fetch: loopbackOnly },
  ).session();
  const onGithubCom = await releases.between(query("https://github.com/acme/app", "1.0.0", "2.0.0"));
  expect(onGithubCom.problem).toContain("(404");
  expect(hosts.requests).toEqual([]);
  expect(elsewhere).toEqual([
    { url: "https://api.github.com/repos/acme/app/releases?per_page=50", authorization: null },
  ]);
  const onServer = await releases.between(query(`${GHE}/acme/app`, "1.0.0", "2.0.0"));
  expect(onServer.releases).toHaveLength(3);
  expect(hosts.requests.map((r) => [r.host, r.authorization])).toEqual([["github", "Bearer ghe-secret"]]);
  expect(elsewhere).toHaveLength(1);
});

test("a gitlab.com address is never read through a self-hosted gitlab_api_url with its token, nor a self-hosted one through gitlab.com's", async () => {
  hosts.set("gitlab", "acme/app", HISTORY);
  const selfHosted = serviceOf({ ...alone("gitlab"), gitlab_token: "gl-secret" }).session();
  const publicOne = await selfHosted.between(query("https://gitlab.com/acme/app", "1.0.0", "2.0.0"));
  expect(publicOne.releases).toEqual([]);
  expect(publicOne.problem).toContain(
    "gitlab.com is not read: release_notes.gitlab_api_url is 127.0.0.1's API, and a host is read only through its own (docs/release-notes.md)",
  );
  const onGitlabCom = serviceOf({ ...PUBLIC_APIS, gitlab_token: "gl-secret" }).session();
  expect((await onGitlabCom.between(query(`${SELF_HOSTED.gitlab}/acme/app`, "1.0.0", "2.0.0"))).problem).toContain(
    "svc does not know which API 127.0.0.1 speaks",
  );
  expect(hosts.requests).toEqual([]);
});

test("a repository path of dots climbs nowhere: no request is made with the token", async () => {
  const releases = service({ github_token: "gh-secret" }).session();
  const notes = await releases.between(query(`${GHE}/acme/...git`, "1.0.0", "2.0.0"));
  expect(notes.problem).toContain(`${GHE}/acme/...git does not name a repository`);
  expect(hosts.requests).toEqual([]);
});

test("the cache in state_dir: a restarted svc asks conditionally", async () => {
  hosts.set("github", "acme/cached", HISTORY);
  const dir = mkdtempSync(join(tmpdir(), "svc-releases-"));
  await service({}, dir)
    .session()
    .between(query(`${GHE}/acme/cached`, "1.0.0", "2.0.0"));
  expect(
    JSON.parse(readFileSync(join(dir, "releases.json"), "utf8")).repositories[`${GHE}/acme/cached`].etag,
  ).toStartWith('W/"');
  hosts.requests.length = 0;
  const notes = await service({}, dir)
    .session()
    .between(query(`${GHE}/acme/cached`, "1.0.0", "2.0.0"));
  expect(notes.releases).toHaveLength(3);
  expect(hosts.requests.map((r) => r.status)).toEqual([304]);
});

test("no source, an unknown host, a digest change without versions: each said as such, no request", async () => {
  const releases = service().session();
  expect((await releases.between({ sources: [], from: "1", to: "2" })).problem).toBe(
    "no source known: set the svc.release_notes label (docs/release-notes.md)",
  );
  expect((await releases.between(query("https://example.com/acme/app", "1", "2"))).problem).toContain(
    "does not know which API example.com speaks",
  );
  expect((await releases.between(query(`${GHE}/acme/app`, null, null))).problem).toContain("digest change");
  expect(hosts.requests).toEqual([]);
});

test("a host that is down: a sentence, at once", async () => {
  const down = createReleaseNotes(
    defaultConfig({ release_notes: { github_api_url: "http://127.0.0.1:9", timeout: 2000 } }),
    recordingLogger(),
  );
  const notes = await down.session().between(query(`${GHE}/acme/app`, "1.0.0", "2.0.0"));
  expect(notes.problem).toContain("cannot be reached");
});

test("hostile answers: huge notes are cut, only http(s) links are kept, a page past the cap is refused", async () => {
  hosts.set("github", "acme/hostile", [
    { tag: "2.0.0", body: "x".repeat(100_000) },
    { tag: "1.1.0", body: "<script>alert(1)</script> [click](javascript:alert(1))" },
    { tag: "1.0.0" },
  ]);
  // a hang limit, not the 2 s of the other rows: at a load of 40 the 8 MiB page below took longer
  const patient = () => service({ timeout: 30_000 });
  const notes = await patient()
    .session()
    .between(query(`${GHE}/acme/hostile`, "1.0.0", "2.0.0"));
  expect(notes.releases[0]!.notes.length).toBe(8192);
  expect(notes.releases[0]!.notes_cut).toBe(true);
  // the text is kept as text: the page renders it with textContent (tests/integration/ui)
  expect(notes.releases[1]!.notes).toContain("<script>");
  hosts.set(
    "github",
    "acme/huge",
    Array.from({ length: 50 }, (_, i) => ({ tag: `1.${50 - i}.0`, body: "y".repeat(200_000) })),
  );
  const huge = await patient()
    .session()
    .between(query(`${GHE}/acme/huge`, "1.0.0", "1.50.0"));
  expect(huge.problem).toContain("larger than 8 MiB");
});
