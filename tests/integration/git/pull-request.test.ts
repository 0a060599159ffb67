/**
 * compose.git = "pull_request": svc's commit pushed to a branch svc/<service>-<version> of a real
 * remote (git http-backend, tests/support/git-remote.ts) and a pull/merge request opened on
 * loopback stand-ins of GitHub, GitLab and Gitea (tests/support/release-hosts.ts, whose header
 * names each answer's source). One request per service and version: found and updated, never
 * duplicated, also when the forge answers that one exists (its list lagging behind); the work
 * tree is left as it was.
 */
import { afterAll, beforeEach, describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { defaultConfig } from "../../../src/config/index.ts";
import { type ComposeChange, createGitStep } from "../../../src/git/index.ts";
import type { ReleaseNotes } from "../../../src/releases/index.ts";
import { GitRemote } from "../../support/git-remote.ts";
import { COMPOSE, git, makeRepo } from "../../support/git-repo.ts";
import { recordingLogger } from "../../support/logger.ts";
import { type Host, ReleaseHosts } from "../../support/release-hosts.ts";
import { tempDir } from "../../temp.ts";

const TOKEN = "pr-token-51d0";
const remote = new GitRemote(TOKEN);
const hosts = new ReleaseHosts();
// a request's head commit, as each forge shows it: what the remote's branch holds now
hosts.branchCommit = (path, branch) => remote.branchCommit(path, branch);
afterAll(() => {
  remote.stop();
  hosts.stop();
});
beforeEach(() => {
  hosts.requests.length = 0;
  hosts.limited.clear();
  hosts.listsLagBehind = 0;
});

async function gitOverHttp(cwd: string, ...args: string[]): Promise<string> {
  const run = Bun.spawn(["git", "-c", remote.gitHeader, ...args], {
    cwd,
    env: { ...process.env, GIT_CONFIG_NOSYSTEM: "1", HOME: "/nonexistent" },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [out, err, code] = await Promise.all([
    new Response(run.stdout).text(),
    new Response(run.stderr).text(),
    run.exited,
  ]);
  if (code !== 0) throw new Error(`git ${args.join(" ")}: ${err}`);
  return out;
}

const NOTES: ReleaseNotes = {
  source: "https://github.com/nginx/nginx",
  source_from: "label svc.release_notes",
  from_version: "1.25.3",
  to_version: "2.0.0",
  releases: [
    {
      version: "2.0.0",
      title: "Two",
      published_at: null,
      url: "https://github.com/nginx/nginx/releases/tag/2.0.0",
      breaking: true,
      notes: "The config moved to /etc/nginx2.",
      notes_cut: false,
    },
    {
      version: "1.26.0",
      title: "1.26.0",
      published_at: null,
      url: "https://github.com/nginx/nginx/releases/tag/1.26.0",
      breaking: false,
      notes: "- faster",
      notes_cut: false,
    },
  ],
  more: 0,
  breaking: 1,
  problem: null,
};

/** The change as svc would make it; in pull_request mode nothing is written to the work tree. */
function change(project: string, to = "2.0.0"): ComposeChange {
  const before = readFileSync(join(project, "compose.yaml"));
  const after = Buffer.from(before.toString().replace("nginx:1.25.3", `nginx:${to}`));
  return {
    project,
    moves: [{ service: "web", from: "1.25.3", to, notes: { ...NOTES, to_version: to } }],
    files: [{ path: "compose.yaml", before, after }],
  };
}

const API_KEY: Record<Host, "github_api_url" | "gitlab_api_url" | "gitea_api_url"> = {
  github: "github_api_url",
  gitlab: "gitlab_api_url",
  gitea: "gitea_api_url",
};

describe.each(["github", "gitlab", "gitea"] as const)("%s", (host) => {
  async function setUp(name: string) {
    const { top, project } = makeRepo({ pack: true });
    const { url, dir } = remote.bare(`acme/${name}`);
    await gitOverHttp(top, "push", "-q", url, "main");
    const config = defaultConfig({
      compose: { git: "pull_request", git_remote: url, git_token: TOKEN },
      release_notes: { [API_KEY[host]]: hosts.apiUrls[API_KEY[host]] },
    });
    const log = recordingLogger();
    return { top, project, url, dir, config, log, step: createGitStep(config, log, { now: () => 1_767_225_600 }) };
  }
  const receivePacks = () =>
    remote.requests.filter((r) => r.method === "POST" && r.path.endsWith("/git-receive-pack")).length;

  test("opens one request with the notes, pushes the branch, leaves the work tree alone", async () => {
    const { top, project, url, dir, step } = await setUp(`pr-${host}`);
    const head = git(top, "rev-parse", "HEAD");
    const outcome = await step.record(change(project));
    expect(outcome.problem).toBeNull();
    expect(outcome).toMatchObject({
      done: "pull_request",
      branch: "svc/web-2.0.0",
      pull_request: { number: 1, created: true },
    });
    const pulls = hosts.pullsOf(host, "acme/" + `pr-${host}`);
    expect(pulls).toHaveLength(1);
    expect(outcome.pull_request!.url).toBe(pulls[0]!.url);
    expect(pulls[0]).toMatchObject({ head: "svc/web-2.0.0", base: "main", title: "Update web to 2.0.0" });
    expect(pulls[0]!.body).toContain("**Breaking:** one release between the two versions says it breaks.");
    expect(pulls[0]!.body).toContain("### 2.0.0: Two (breaking)");
    expect(pulls[0]!.body).toContain("The config moved to /etc/nginx2.");
    // the token the forge saw, in its own header form (the releases room's)
    const sent = hosts.requests.find((r) => r.method === "POST")!.authorization;
    expect(sent).toBe(host === "gitlab" ? TOKEN : host === "github" ? `Bearer ${TOKEN}` : `token ${TOKEN}`);
    // the branch on the remote holds the change on top of main
    const remoteRefs = await gitOverHttp("/", "ls-remote", url);
    expect(remoteRefs).toContain(`${outcome.commit}\trefs/heads/svc/web-2.0.0`);
    expect(remoteRefs).toContain(`${head.trim()}\trefs/heads/main`);
    expect(git(dir, "show", "svc/web-2.0.0:stacks/web/compose.yaml")).toContain("nginx:2.0.0 # pinned");
    expect(git(dir, "fsck", "--strict", "--no-progress")).toBe("");
    // the work tree, its branch and its file are untouched
    expect(git(top, "rev-parse", "HEAD")).toBe(head);
    expect(git(top, "status", "--porcelain")).toBe("");
    expect(readFileSync(join(project, "compose.yaml"), "utf8")).toBe(COMPOSE);
  });

  test("a clone behind its remote: the request is based on the clone's commit, only svc's objects are sent", async () => {
    const { top, project, url, step } = await setUp(`behind-${host}`);
    await gitOverHttp(top, "fetch", "-q", url, "+refs/heads/main:refs/remotes/origin/main");
    const head = git(top, "rev-parse", "HEAD").trim();
    const other = join(tempDir("svc-git-other-"), "clone");
    await gitOverHttp("/", "clone", "-q", url, other);
    writeFileSync(join(other, "README.md"), "merged on the forge meanwhile\n");
    git(other, "commit", "-q", "-am", "meanwhile");
    await gitOverHttp(other, "push", "-q", "origin", "main");
    const outcome = await step.record(change(project));
    expect(outcome.problem).toBeNull();
    expect(git(top, "rev-parse", `${outcome.commit}^`).trim()).toBe(head);
    // the commit, its three trees (root, stacks, stacks/web) and the compose file's blob
    expect(
      remote.requests.filter((r) => r.path === `/acme/behind-${host}.git/git-receive-pack`).at(-1)?.packObjects,
    ).toBe(5);
    expect(hosts.pullsOf(host, `acme/behind-${host}`)).toHaveLength(1);
  });

  test("the same service and version again: the open request is updated, nothing pushed, none duplicated", async () => {
    const { project, step } = await setUp(`again-${host}`);
    const first = await step.record(change(project));
    const pushes = receivePacks();
    const notes = {
      ...NOTES,
      releases: [NOTES.releases[0]!, { ...NOTES.releases[1]!, notes: "- faster, and smaller" }],
    };
    const second = await step.record({
      ...change(project),
      moves: [{ service: "web", from: "1.25.3", to: "2.0.0", notes }],
    });
    expect(second.problem).toBeNull();
    expect(second.pull_request).toEqual({ ...first.pull_request!, created: false });
    expect(second.commit).toBe(first.commit);
    expect(receivePacks()).toBe(pushes);
    const pulls = hosts.pullsOf(host, `acme/again-${host}`);
    expect(pulls).toHaveLength(1);
    expect(pulls[0]!.body).toContain("faster, and smaller");
    expect(
      hosts.requests.filter((r) => r.method === (host === "gitlab" ? "PUT" : "PATCH")).map((r) => r.status),
    ).toEqual([host === "gitea" ? 201 : 200]);
  });

  test("'already exists' from the forge (its list lagging): found and updated, not duplicated", async () => {
    const { project, step } = await setUp(`race-${host}`);
    await step.record(change(project));
    hosts.listsLagBehind = 1;
    const outcome = await step.record(change(project));
    expect(outcome.problem).toBeNull();
    expect(outcome.pull_request).toMatchObject({ number: 1, created: false });
    const exists = host === "github" ? 422 : 409;
    expect(hosts.requests.filter((r) => r.method === "POST").map((r) => r.status)).toEqual([201, exists]);
    expect(hosts.pullsOf(host, `acme/race-${host}`)).toHaveLength(1);
  });

  test("a newer version: its own branch and request", async () => {
    const { project, step } = await setUp(`next-${host}`);
    await step.record(change(project));
    const outcome = await step.record(change(project, "2.0.1"));
    expect(outcome).toMatchObject({ branch: "svc/web-2.0.1", pull_request: { number: 2, created: true } });
    expect(hosts.pullsOf(host, `acme/next-${host}`).map((p) => p.head)).toEqual(["svc/web-2.0.0", "svc/web-2.0.1"]);
  });

  // svc/<service>-<version> is predictable: anyone may open a request from a fork's branch of that name
  test("a stranger's request from a fork under svc's branch name is not svc's: left as it is, svc opens its own", async () => {
    const { project, step } = await setUp(`fork-${host}`);
    const pulls = hosts.pullsOf(host, `acme/fork-${host}`);
    pulls.push({
      number: 1,
      head: "svc/web-2.0.0",
      base: "main",
      title: "Update web to 2.0.0",
      body: "mallory's compose file",
      state: "open",
      url: `https://forge.example/acme/fork-${host}/pulls/1`,
      headRepo: `mallory/fork-${host}`,
      sha: "f".repeat(40),
    });
    const outcome = await step.record(change(project));
    expect(outcome.problem).toBeNull();
    expect(outcome.pull_request).toMatchObject({ number: 2, created: true });
    expect(pulls[0]).toMatchObject({ title: "Update web to 2.0.0", body: "mallory's compose file" });
    expect(hosts.requests.filter((r) => r.method === "PATCH" || r.method === "PUT")).toHaveLength(0);
  });

  test("a request from svc's branch whose head is not svc's commit is not svc's: said, left as it is", async () => {
    const { project, step } = await setUp(`stale-${host}`);
    const pulls = hosts.pullsOf(host, `acme/stale-${host}`);
    pulls.push({
      number: 1,
      head: "svc/web-2.0.0",
      base: "main",
      title: "Update web to 2.0.0",
      body: "someone else's commit",
      state: "open",
      url: `https://forge.example/acme/stale-${host}/pulls/1`,
      sha: "e".repeat(40),
    });
    const outcome = await step.record(change(project));
    expect(outcome.problem).toMatch(/exists, but lists none open from this repository at svc's commit/);
    expect(pulls).toHaveLength(1);
    expect(pulls[0]!.body).toBe("someone else's commit");
    expect(hosts.requests.filter((r) => r.method === "PATCH" || r.method === "PUT")).toHaveLength(0);
  });

  test("a rate-limited forge: told with its reset time, nothing opened", async () => {
    const { project, step } = await setUp(`limited-${host}`);
    hosts.limited.set(host, Math.floor(Date.now() / 1000) + 600);
    const outcome = await step.record(change(project));
    expect(outcome.done).toBe("nothing");
    expect(outcome.problem).toMatch(
      /^pull request not made: .*rate limit reached while it listed (pull|merge) requests; asked again after /,
    );
    expect(hosts.pullsOf(host, `acme/limited-${host}`)).toHaveLength(0);
  });
});

test("a pull request without the files' new text: said, nothing pushed", async () => {
  const { project } = makeRepo();
  const before = remote.requests.length;
  const config = defaultConfig({
    compose: { git: "pull_request", git_remote: `${remote.origin}/acme/none.git`, git_token: TOKEN },
    release_notes: { github_api_url: hosts.apiUrls.github_api_url },
  });
  const { files, ...rest } = change(project);
  const outcome = await createGitStep(config, recordingLogger()).record({
    ...rest,
    files: files.map(({ path, before }) => ({ path, before })),
  });
  expect(outcome.problem).toBe("a pull request needs each file's new text (files[].after)");
  expect(remote.requests.length).toBe(before);
});

test("a remote on a host svc cannot tell the forge of: said, nothing pushed", async () => {
  const { project } = makeRepo();
  const before = remote.requests.length;
  const step = createGitStep(
    defaultConfig({
      compose: { git: "pull_request", git_remote: `${remote.origin}/acme/unknown.git`, git_token: TOKEN },
    }),
    recordingLogger(),
  );
  const outcome = await step.record(change(project));
  expect(outcome.problem).toMatch(/svc does not know which forge 127\.0\.0\.1 is/);
  expect(remote.requests.length).toBe(before);
});

test("a github.com remote while github_api_url names an Enterprise server: its request and git_token go to api.github.com, never to the server", async () => {
  const { top, project } = makeRepo({ pack: true });
  const { url } = remote.bare("acme/on-github-com");
  await gitOverHttp(top, "push", "-q", url, "main");
  // github.com and api.github.com answered on loopback: the Git remote, and a second forge stand-in
  const githubCom = new ReleaseHosts();
  githubCom.branchCommit = (path, branch) => remote.branchCommit(path, branch);
  const asked: { url: string; authorization: string | null }[] = [];
  const loopbackOnly = (async (input: string | URL | Request, init?: RequestInit) => {
    const at = new URL(input instanceof Request ? input.url : String(input));
    asked.push({ url: at.href, authorization: new Headers(init?.headers).get("authorization") });
    const base = { "github.com": remote.origin, "api.github.com": `${githubCom.origin}/github` }[at.hostname];
    if (at.hostname === "127.0.0.1") return fetch(input, init);
    if (base === undefined) throw new Error(`no traffic beyond loopback: ${at.href}`);
    return fetch(`${base}${at.pathname}${at.search}`, init);
  }) as typeof fetch;
  try {
    const config = defaultConfig({
      compose: { git: "pull_request", git_remote: "https://github.com/acme/on-github-com.git", git_token: TOKEN },
      release_notes: { github_api_url: hosts.apiUrls.github_api_url },
    });
    const outcome = await createGitStep(config, recordingLogger(), {
      now: () => 1_767_225_600,
      fetch: loopbackOnly,
    }).record(change(project));
    expect(outcome.problem).toBeNull();
    expect(outcome).toMatchObject({ done: "pull_request", pull_request: { number: 1, created: true } });
    expect(githubCom.pullsOf("github", "acme/on-github-com")).toHaveLength(1);
    expect(hosts.requests).toEqual([]);
    expect(asked.filter((a) => new URL(a.url).hostname === "127.0.0.1")).toEqual([]);
    const toApi = asked.filter((a) => a.url.startsWith("https://api.github.com/repos/acme/on-github-com/pulls"));
    expect(toApi.length).toBeGreaterThan(0);
    expect(toApi.every((a) => a.authorization?.includes(TOKEN))).toBe(true);
  } finally {
    githubCom.stop();
  }
});
