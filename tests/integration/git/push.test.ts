/**
 * compose.git = "push" against a real remote: Debian's git http-backend behind a token check
 * (tests/support/git-remote.ts). After svc's commit and push, a `git clone` of the remote shows
 * svc's commit and `git fsck` of the remote finds nothing; a remote that moved on refuses nothing
 * silently: the push is a clear error and the remote's branch is untouched; a wrong token is told
 * as such and never printed.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { defaultConfig } from "../../../src/config/index.ts";
import { type ComposeChange, createGitStep } from "../../../src/git/index.ts";
import { GitRemote } from "../../support/git-remote.ts";
import { git, makeRepo } from "../../support/git-repo.ts";
import { recordingLogger } from "../../support/logger.ts";
import { tempDir } from "../../temp.ts";

const TOKEN = "t0ken-for-the-remote-7f3a";
const remote = new GitRemote(TOKEN);
afterAll(() => remote.stop());

/** git talking to the remote: asynchronously, since the remote is served by this process. */
async function gitOverHttp(cwd: string, ...args: string[]): Promise<string> {
  const run = Bun.spawn(["git", "-c", remote.gitHeader, ...args], {
    cwd,
    env: {
      ...process.env,
      GIT_CONFIG_NOSYSTEM: "1",
      HOME: "/nonexistent",
      GIT_AUTHOR_NAME: "Bo",
      GIT_AUTHOR_EMAIL: "bo@example.com",
      GIT_COMMITTER_NAME: "Bo",
      GIT_COMMITTER_EMAIL: "bo@example.com",
    },
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

/** A work tree cloned from a new remote repository; answers both. */
async function clonedProject(
  name: string,
  options: { pack?: boolean } = {},
): Promise<{ top: string; project: string; url: string; dir: string }> {
  const { top, project } = makeRepo(options);
  const { url, dir } = remote.bare(`acme/${name}`);
  await gitOverHttp(top, "push", "-q", url, "main");
  git(top, "remote", "add", "origin", url);
  return { top, project, url, dir };
}

function moveVersion(project: string): ComposeChange {
  const file = join(project, "compose.yaml");
  const before = readFileSync(file);
  const after = Buffer.from(before.toString().replace("nginx:1.25.3", "nginx:1.25.4"));
  writeFileSync(file, after);
  const notes = {
    source: "https://github.com/nginx/nginx",
    source_from: "label",
    from_version: "1.25.3",
    to_version: "1.25.4",
    releases: [
      {
        version: "1.25.4",
        title: "nginx 1.25.4",
        published_at: null,
        url: "https://github.com/nginx/nginx/releases/tag/release-1.25.4",
        breaking: false,
        notes: "Bugfixes.",
        notes_cut: false,
      },
    ],
    more: 0,
    breaking: 0,
    problem: null,
  };
  return {
    project,
    moves: [{ service: "web", from: "1.25.3", to: "1.25.4", notes }],
    files: [{ path: "compose.yaml", before, after }],
  };
}

const step = (url: string, token = TOKEN) => {
  const log = recordingLogger();
  return {
    log,
    step: createGitStep(defaultConfig({ compose: { git: "push", git_remote: url, git_token: token } }), log, {
      now: () => 1_767_225_600,
    }),
  };
};

async function cloneOf(url: string): Promise<string> {
  const into = join(tempDir("svc-git-clone-"), "clone");
  await gitOverHttp("/", "clone", "-q", url, into);
  return into;
}

describe("compose.git = push", () => {
  for (const pack of [false, true]) {
    test(`svc's commit reaches the remote (${pack ? "packed" : "loose"} objects)`, async () => {
      const { top, project, url, dir } = await clonedProject(`stacks-${pack}`, { pack });
      const { step: gitStep } = step(url);
      const outcome = await gitStep.record(moveVersion(project));
      expect(outcome).toMatchObject({ done: "pushed", branch: "main", problem: null });
      const clone = await cloneOf(url);
      expect(git(clone, "log", "-1", "--format=%H|%an|%s")).toBe(`${outcome.commit}|svc|web: 1.25.3 -> 1.25.4\n`);
      expect(git(clone, "log", "-1", "--format=%b")).toContain(
        "https://github.com/nginx/nginx/releases/tag/release-1.25.4",
      );
      expect(readFileSync(join(clone, "stacks", "web", "compose.yaml"), "utf8")).toContain("nginx:1.25.4 # pinned");
      expect(git(dir, "fsck", "--strict", "--no-progress")).toBe("");
      expect(git(top, "status", "--porcelain")).toBe("");
      const svcAuth = `Basic ${Buffer.from(`oauth2:${TOKEN}`).toString("base64")}`;
      const posts = remote.requests.filter(
        (r) =>
          r.method === "POST" && r.path === `/acme/stacks-${pack}.git/git-receive-pack` && r.authorization === svcAuth,
      );
      expect(posts.map((r) => r.status)).toEqual([200]);
      // only what the remote lacked: the commit, three trees (root, stacks, stacks/web) and the blob
      expect(posts[0]!.packObjects).toBe(5);
    });
  }

  test("from a work tree made by git clone (one received pack, packed-refs, refs/remotes)", async () => {
    const { url, dir } = await clonedProject("cloned", { pack: true });
    const clone = await cloneOf(url);
    const project = join(clone, "stacks", "web");
    const { step: gitStep } = step(url);
    const outcome = await gitStep.record(moveVersion(project));
    expect(outcome).toMatchObject({ done: "pushed", problem: null });
    expect(git(dir, "rev-parse", "main").trim()).toBe(outcome.commit!);
    // the remote-tracking ref moved as git push moves it
    expect(git(clone, "status", "--porcelain", "--branch")).toBe("## main...origin/main\n");
    expect(git(dir, "fsck", "--strict", "--no-progress")).toBe("");
  });

  test("a remote that moved on: a clear error, the remote's branch untouched, svc's commit kept here", async () => {
    const { top, project, url } = await clonedProject("moved");
    const other = await cloneOf(url);
    writeFileSync(join(other, "README.md"), "someone else\n");
    git(other, "commit", "-q", "-am", "someone else's change");
    await gitOverHttp(other, "push", "-q", "origin", "main");
    const remoteHead = git(other, "rev-parse", "HEAD");
    const { step: gitStep } = step(url);
    const outcome = await gitStep.record(moveVersion(project));
    expect(outcome.done).toBe("committed");
    expect(outcome.problem).toMatch(
      /^committed, not pushed: not a fast-forward: the remote's main holds commits this clone does not have/,
    );
    expect(git(top, "rev-parse", "HEAD").trim()).toBe(outcome.commit!);
    expect(git(await cloneOf(url), "rev-parse", "HEAD")).toBe(remoteHead);
  });

  test("a push the remote's hook refuses: its reason, the remote untouched", async () => {
    const { project, url, dir } = await clonedProject("hooked");
    writeFileSync(join(dir, "hooks", "pre-receive"), "#!/bin/sh\necho 'main is protected' >&2\nexit 1\n", {
      mode: 0o755,
    });
    const remoteHead = git(dir, "rev-parse", "main");
    const { step: gitStep } = step(url);
    const outcome = await gitStep.record(moveVersion(project));
    expect(outcome.done).toBe("committed");
    expect(outcome.problem).toBe(
      "committed, not pushed: the Git remote refused to move refs/heads/main: pre-receive hook declined",
    );
    expect(git(dir, "rev-parse", "main")).toBe(remoteHead);
  });

  test("compose.git = commit: the commit, nothing sent; off: nothing at all", async () => {
    const { top, project } = await clonedProject("commit-only");
    const before = remote.requests.length;
    const commitStep = createGitStep(defaultConfig({ compose: { git: "commit" } }), recordingLogger());
    const outcome = await commitStep.record(moveVersion(project));
    expect(outcome).toMatchObject({ mode: "commit", done: "committed", branch: "main", problem: null });
    expect(git(top, "rev-parse", "HEAD").trim()).toBe(outcome.commit!);
    expect(git(top, "log", "-1", "--format=%an <%ae>")).toBe("svc <svc@localhost>\n");
    const head = git(top, "rev-parse", "HEAD");
    const off = await createGitStep(defaultConfig(), recordingLogger()).record(moveVersion(project));
    expect(off).toMatchObject({ mode: "off", done: "nothing", problem: null });
    expect(git(top, "rev-parse", "HEAD")).toBe(head);
    expect(remote.requests.length).toBe(before);
  });

  test("a stack's services moved in one write: one commit, pushed once", async () => {
    const { top, project, url } = await clonedProject("stack");
    const file = join(project, "compose.yaml");
    const before = readFileSync(file);
    const after = Buffer.from(
      before.toString().replace("nginx:1.25.3", "nginx:1.25.4").replace("postgres:16", "postgres:17"),
    );
    writeFileSync(file, after);
    const moves = [
      { service: "web", from: "1.25.3", to: "1.25.4", notes: null },
      { service: "db", from: "16", to: "17", notes: null },
    ];
    const outcome = await step(url).step.record({ project, moves, files: [{ path: "compose.yaml", before, after }] });
    expect(outcome).toMatchObject({ done: "pushed", problem: null });
    expect(git(top, "log", "-1", "--format=%s")).toBe("web 1.25.3 -> 1.25.4, db 16 -> 17\n");
    expect(git(await cloneOf(url), "show", "HEAD:stacks/web/compose.yaml")).toContain("postgres:17");
    expect(git(top, "status", "--porcelain")).toBe("");
    // handed again, or service by service: committed already, nothing more
    const again = await step(url).step.record({
      project,
      moves: moves.slice(1),
      files: [{ path: "compose.yaml", before }],
    });
    expect(again).toMatchObject({ done: "nothing", commit: null, problem: null });
    expect(git(top, "log", "-1", "--format=%s")).toBe("web 1.25.3 -> 1.25.4, db 16 -> 17\n");
  });

  test("a rollback writing the file back is a commit of its own, pushed", async () => {
    const { top, project, url } = await clonedProject("rollback");
    const { step: gitStep } = step(url);
    const forward = moveVersion(project);
    expect((await gitStep.record(forward)).done).toBe("pushed");
    const file = forward.files[0]!;
    writeFileSync(join(project, "compose.yaml"), file.before);
    // as the compose writer hands it: image references, the file's absolute path, no new text (the file holds it)
    const moves = [{ service: "web", from: "nginx:1.25.4", to: "nginx:1.25.3", notes: null }];
    const back = await gitStep.record({
      project,
      moves,
      files: [{ path: join(project, "compose.yaml"), before: file.after! }],
      note: "Rolled back: the new container was not healthy",
    });
    expect(back).toMatchObject({ done: "pushed", problem: null });
    expect(git(top, "log", "-2", "--format=%s|%b")).toBe(
      "web: 1.25.4 -> 1.25.3|Rolled back: the new container was not healthy\n\nRelease notes: not read.\n\nweb: 1.25.3 -> 1.25.4|- 1.25.4: nginx 1.25.4\n\nhttps://github.com/nginx/nginx/releases/tag/release-1.25.4\n\n",
    );
    expect(git(await cloneOf(url), "show", "HEAD:stacks/web/compose.yaml")).toContain("nginx:1.25.3 # pinned");
    expect(git(top, "status", "--porcelain")).toBe("");
  });

  test("a wrong token: told as refused, never printed", async () => {
    const { project, url } = await clonedProject("token");
    const { step: gitStep, log } = step(url, "not-the-token-9c1e");
    const outcome = await gitStep.record(moveVersion(project));
    expect(outcome.problem).toMatch(/the Git remote answered 401 \(compose.git_token is missing or refused\)/);
    expect(JSON.stringify(outcome)).not.toContain("not-the-token-9c1e");
    expect(log.text()).toContain("git step not done");
    expect(log.text()).not.toContain("not-the-token-9c1e");
  });

  test("push without a remote: check() says so before anything is written", async () => {
    const { project } = await clonedProject("no-remote");
    const gitStep = createGitStep(defaultConfig({ compose: { git: "push" } }), recordingLogger());
    expect(await gitStep.check(moveVersionDry(project))).toBe('compose.git = "push" needs compose.git_remote');
    expect(
      await createGitStep(defaultConfig({ compose: { git: "commit" } }), recordingLogger()).check(
        moveVersionDry(project),
      ),
    ).toBeNull();
  });

  test("plain http to another machine is refused before anything is sent", async () => {
    const { project } = await clonedProject("plain");
    const before = remote.requests.length;
    const { step: gitStep } = step("http://git.example.com/acme/plain.git");
    expect(await gitStep.check(moveVersionDry(project))).toMatch(/must be an https:\/\/ address/);
    expect(remote.requests.length).toBe(before);
  });
});

/** The change as svc is about to write it: the files still hold `before`. */
function moveVersionDry(project: string): ComposeChange {
  const before = readFileSync(join(project, "compose.yaml"));
  const change = moveVersion(project);
  writeFileSync(join(project, "compose.yaml"), before);
  return {
    ...change,
    files: [{ path: "compose.yaml", before, after: Buffer.from(before.toString().replace("1.25.3", "1.25.4")) }],
  };
}
