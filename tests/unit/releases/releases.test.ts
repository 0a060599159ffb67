/** The releases room's pure rules: versions, what breaks, which releases are between two versions, sources, rate limits. */
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { newMajor, saysBreaking } from "../../../src/releases/breaking.ts";
import { rateLimitReset } from "../../../src/releases/fetch.ts";
import { HOSTS, type StoredRelease } from "../../../src/releases/hosts.ts";
import { CACHED_REPOSITORIES } from "../../../src/releases/index.ts";
import { releasesBetween } from "../../../src/releases/select.ts";
import { apiUrlOf, hostNames, parseSource, tokenGoesTo } from "../../../src/releases/source.ts";
import { compareVersions, parseVersion, sameVersion } from "../../../src/releases/versions.ts";

const release = (tag: string, extra: Partial<StoredRelease> = {}): StoredRelease => ({
  tag,
  title: tag,
  published_at: null,
  url: `https://github.com/a/b/releases/tag/${tag}`,
  notes: "",
  notes_cut: false,
  prerelease: false,
  ...extra,
});

describe("versions", () => {
  test("a `v` prefix does not matter; missing parts are 0; a pre-release comes before its release", () => {
    expect(sameVersion(parseVersion("v1.2"), parseVersion("1.2.0"))).toBe(true);
    expect(sameVersion(parseVersion("V2.0.0"), parseVersion("2.0.0"))).toBe(true);
    expect(compareVersions(parseVersion("1.10.0"), parseVersion("1.9.3"))).toBeGreaterThan(0);
    expect(compareVersions(parseVersion("2.0.0-rc.2"), parseVersion("2.0.0"))).toBeLessThan(0);
    expect(compareVersions(parseVersion("2.0.0-rc.10"), parseVersion("2.0.0-rc.2"))).toBeGreaterThan(0);
    expect(parseVersion("release-2024-01").parts).toBeUndefined();
    expect(parseVersion("vision").text).toBe("vision");
  });
});

describe("what breaks", () => {
  test("a new major, or the notes say so", () => {
    expect(newMajor(parseVersion("2.0.0"), parseVersion("1.9.0"))).toBe(true);
    expect(newMajor(parseVersion("2.1.0"), parseVersion("2.0.0"))).toBe(false);
    expect(saysBreaking("BREAKING: the config moved")).toBe(true);
    expect(saysBreaking("## Breaking changes\n- x")).toBe(true);
    expect(saysBreaking("- feat(api)!: drop v0")).toBe(true);
    expect(saysBreaking("fix!: rename a flag")).toBe(true);
    expect(saysBreaking("- fixes a breaking bug? no: 'nonbreaking' tidy-up")).toBe(false);
    expect(saysBreaking("Wow! it is fast")).toBe(false);
  });

  test("hostile notes take linear time", () => {
    const started = performance.now();
    saysBreaking("a(".repeat(50_000) + "!");
    saysBreaking("(".repeat(100_000));
    expect(performance.now() - started).toBeLessThan(1000);
  });
});

describe("the releases between two versions", () => {
  const list = [
    release("v3.0.0"),
    release("v2.0.0"),
    release("2.0.0-rc.1", { prerelease: true }),
    release("v1.1.0", { notes: "BREAKING: x" }),
    release("v1.0.1"),
    release("v1.0.0"),
  ];

  test("after the running one, up to and including the candidate, newest first; pre-releases only towards a pre-release", () => {
    const chosen = releasesBetween(list, "1.0.0", "v2.0.0");
    expect(chosen.releases.map((r) => [r.version, r.breaking])).toEqual([
      ["2.0.0", true],
      ["1.1.0", true],
      ["1.0.1", false],
    ]);
    expect(releasesBetween(list, "1.1.0", "2.0.0-rc.1").releases.map((r) => r.version)).toEqual(["2.0.0-rc.1"]);
  });

  test("capped, the rest counted; the notes of one answer capped together", () => {
    const many = Array.from({ length: 80 }, (_, i) => release(`1.${80 - i}.0`, { notes: "n".repeat(4000) }));
    const chosen = releasesBetween(many, "1.0.0", "1.80.0", 50);
    expect(chosen.releases).toHaveLength(50);
    expect(chosen.more).toBe(30);
    expect(chosen.releases.reduce((sum, r) => sum + r.notes.length, 0)).toBeLessThanOrEqual(64 * 1024);
    expect(chosen.releases.at(-1)).toMatchObject({ notes: "", notes_cut: true });
  });

  test("versions that are not numbers: the host's order, from the candidate down to the running one", () => {
    const named = [release("hydrogen"), release("helium"), release("lithium"), release("beryllium")];
    expect(releasesBetween(named, "beryllium", "helium").releases.map((r) => r.version)).toEqual(["helium", "lithium"]);
    expect(releasesBetween(named, "beryllium", "boron").problem).toBe(
      "no release boron found in the source's releases",
    );
  });

  test("only http(s) links are kept", () => {
    const chosen = releasesBetween([release("2.0.0", { url: "javascript:alert(1)" })], "1.0.0", "2.0.0");
    expect(chosen.releases[0]!.url).toBeNull();
  });
});

describe("sources", () => {
  const names = hostNames("https://git.example.org/api/v4", "https://codeberg.org/api/v1");
  test("GitHub, GitLab (nested groups, self-hosted), Gitea; deeper paths point inside the repository", () => {
    expect(parseSource("https://github.com/acme/app/tree/main/docker", names)).toEqual({
      host: "github",
      url: "https://github.com/acme/app",
      path: "acme/app",
    });
    expect(parseSource("git+https://github.com/acme/app.git", names)).toMatchObject({ path: "acme/app" });
    expect(
      parseSource("https://gitlab.com/group/sub/project/-/releases", hostNames("https://gitlab.com/api/v4", "")),
    ).toEqual({ host: "gitlab", url: "https://gitlab.com/group/sub/project", path: "group/sub/project" });
    expect(parseSource("https://git.example.org/team/app", names)).toMatchObject({ host: "gitlab", path: "team/app" });
    expect(parseSource("https://codeberg.org/forgejo/forgejo", names)).toMatchObject({
      host: "gitea",
      path: "forgejo/forgejo",
    });
  });
  test("each host through its own API: github.com through api.github.com even while github_api_url names an Enterprise server; a token only to its own API's host", () => {
    const urls = {
      github: "https://ghe.example.com/api/v3",
      gitlab: "https://gitlab.com/api/v4",
      gitea: "https://codeberg.org/api/v1",
    };
    const enterprise = hostNames(urls.gitlab, urls.gitea, urls.github);
    const onGithubCom = parseSource("https://github.com/acme/app", enterprise);
    const onServer = parseSource("https://ghe.example.com/acme/app", enterprise);
    if ("problem" in onGithubCom || "problem" in onServer) throw new Error("both are GitHub repositories");
    expect(onServer.host).toBe("github");
    expect(apiUrlOf(onGithubCom, urls)).toBe("https://api.github.com");
    expect(apiUrlOf(onServer, urls)).toBe(urls.github);
    expect(tokenGoesTo(apiUrlOf(onGithubCom, urls), urls.github)).toBe(false);
    expect(tokenGoesTo(apiUrlOf(onServer, urls), urls.github)).toBe(true);
    expect(tokenGoesTo("https://api.github.com", "https://api.github.com")).toBe(true);
    // github_api_url at its default names no Enterprise host
    expect(
      parseSource("https://ghe.example.com/acme/app", hostNames(urls.gitlab, urls.gitea, "https://api.github.com")),
    ).toHaveProperty("problem");
  });
  test("a path is never climbed out of: no dot-only segment (`...git` was `..`), every segment percent-encoded", () => {
    const github = hostNames("https://api.github.com", "https://codeberg.org/api/v1");
    for (const url of [
      "https://github.com/acme/...git",
      "https://github.com/acme/...",
      "https://github.com/.../app",
      "https://codeberg.org/acme/..git",
    ]) {
      expect(parseSource(url, github)).toHaveProperty("problem");
    }
    expect(
      parseSource(
        "https://gitlab.com/group/.../app",
        hostNames("https://gitlab.com/api/v4", "https://codeberg.org/api/v1"),
      ),
    ).toHaveProperty("problem");
    const odd = { host: "github", url: "https://github.com/a b/c?d", path: "a b/c?d#e" } as const;
    expect(HOSTS.github.firstPage("https://api.github.com", odd, 50)).toBe(
      "https://api.github.com/repos/a%20b/c%3Fd%23e/releases?per_page=50",
    );
    expect(HOSTS.gitea.firstPage("https://codeberg.org/api/v1", { ...odd, host: "gitea" }, 50)).toBe(
      "https://codeberg.org/api/v1/repos/a%20b/c%3Fd%23e/releases?limit=50",
    );
    expect(HOSTS.gitlab.firstPage("https://gitlab.com/api/v4", { ...odd, host: "gitlab" }, 50)).toBe(
      "https://gitlab.com/api/v4/projects/a%20b%2Fc%3Fd%23e/releases?per_page=50",
    );
  });
  test("a host is read only through its own API: gitlab.com never through a self-hosted gitlab_api_url (nor codeberg.org through a self-hosted Forgejo), and the other way round", () => {
    expect(parseSource("https://gitlab.com/acme/app", names)).toEqual({
      problem:
        "gitlab.com is not read: release_notes.gitlab_api_url is git.example.org's API, and a host is read only through its own (docs/release-notes.md)",
    });
    const forgejo = hostNames("https://gitlab.com/api/v4", "https://forge.example.org/api/v1");
    expect(parseSource("https://codeberg.org/acme/app", forgejo)).toHaveProperty("problem");
    expect(parseSource("https://forge.example.org/acme/app", forgejo)).toMatchObject({ host: "gitea" });
    expect(
      parseSource(
        "https://git.example.org/acme/app",
        hostNames("https://gitlab.com/api/v4", "https://codeberg.org/api/v1"),
      ),
    ).toHaveProperty("problem");
  });
  test("docs/release-notes.md says how many repositories the cache keeps, as the code does", () => {
    const said = /at most (\d+) repositories/.exec(
      readFileSync(new URL("../../../docs/release-notes.md", import.meta.url), "utf8"),
    );
    expect(Number(said?.[1])).toBe(CACHED_REPOSITORIES);
  });
  test("anything else is not guessed at", () => {
    expect(parseSource("https://example.com/acme/app", names)).toHaveProperty("problem");
    expect(parseSource("ssh://github.com/acme/app", names)).toHaveProperty("problem");
    expect(parseSource("https://github.com/acme", names)).toHaveProperty("problem");
    expect(parseSource("not a url", names)).toHaveProperty("problem");
  });
});

describe("rate limits", () => {
  const now = 1_700_000_000_000;
  const answer = (status: number, headers: Record<string, string>) => new Response(null, { status, headers });
  test("GitHub's 403 with no requests left waits until its reset; 429 with Retry-After; GitLab's RateLimit-Reset", () => {
    expect(
      rateLimitReset(answer(403, { "x-ratelimit-remaining": "0", "x-ratelimit-reset": String(now / 1000 + 120) }), now),
    ).toBe(now + 120_000);
    expect(rateLimitReset(answer(429, { "retry-after": "30" }), now)).toBe(now + 30_000);
    expect(rateLimitReset(answer(429, { "ratelimit-reset": String(now / 1000 + 60) }), now)).toBe(now + 60_000);
    // at most an hour, whatever a host says
    expect(rateLimitReset(answer(429, { "retry-after": "999999" }), now)).toBe(now + 3_600_000);
  });
  test("a 403 without the signs of a rate limit is not one", () => {
    expect(rateLimitReset(answer(403, { "x-ratelimit-remaining": "12" }), now)).toBeUndefined();
    expect(rateLimitReset(answer(404, {}), now)).toBeUndefined();
  });
});
