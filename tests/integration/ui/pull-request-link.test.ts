/**
 * A compose move that went into a pull request (`[compose] git = "pull_request"`, docs/compose.md,
 * "Git"), on the dashboard in Chromium: svc on the sandbox engine and registry, a compose project
 * made by real compose in a Git work tree, a real remote (git http-backend,
 * tests/support/git-remote.ts) and a loopback stand-in of GitHub's API
 * (tests/support/release-hosts.ts). After the row's Update, the row says the version went into a
 * pull request (the last cycle's note, the page's own check finding the update again), and links to it.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { docker, inspect } from "../../harness.ts";
import { GitRemote } from "../../support/git-remote.ts";
import { git, makeRepo } from "../../support/git-repo.ts";
import { ReleaseHosts } from "../../support/release-hosts.ts";
import { confirm, type Dashboard, rowOf, startDashboard } from "./support.ts";

const TOKEN = "ui-pr-token-7a1c";
const remote = new GitRemote(TOKEN);
const hosts = new ReleaseHosts();
const composeWorks = docker(["compose", "version"], { allowFailure: true }).code === 0;
const { top, project } = makeRepo();
const { url } = remote.bare("acme/stacks");
hosts.branchCommit = (path, branch) => remote.branchCommit(path, branch);
let ui: Dashboard;
let projectName = "";

beforeAll(async () => {
  ui = await startDashboard("uipr", [
    "--compose-git",
    "pull_request",
    "--compose-git-remote",
    url,
    "--compose-git-token",
    TOKEN,
    "--release-notes-github-api-url",
    hosts.apiUrls.github_api_url,
  ]);
}, 120_000);

afterAll(async () => {
  if (projectName)
    docker(["compose", "--project-directory", project, "-p", projectName, "down", "-v"], { allowFailure: true });
  await ui?.close();
  remote.stop();
  hosts.stop();
}, 120_000);

test.skipIf(!composeWorks)(
  "a move proposed in a pull request: the row says so and links to the request",
  async () => {
    const v1 = ui.fx.image("web", { tag: "1.0.0" });
    const v2 = ui.fx.image("web", { tag: "1.1.0" });
    writeFileSync(
      join(project, "compose.yaml"),
      `services:\n  web:\n    image: ${v1.ref}\n    command: ["/bin/sleep", "3600"]\n    labels: { svc.scope: ${ui.scope}, svc.tag_policy: "semver:minor" }\n`,
    );
    git(top, "commit", "-q", "-am", "the web stack");
    // asynchronously: the remote answers from this process
    const push = Bun.spawn(["git", "-c", remote.gitHeader, "push", "-q", url, "main"], {
      cwd: top,
      env: { ...process.env, GIT_CONFIG_NOSYSTEM: "1", HOME: "/nonexistent" },
      stdout: "ignore",
      stderr: "inherit",
    });
    expect(await push.exited).toBe(0);
    projectName = `${ui.scope}-web`.toLowerCase().replace(/[^a-z0-9_-]/g, "");
    docker(["compose", "--project-directory", project, "-p", projectName, "up", "-d"]);
    const name = String(inspect(`${projectName}-web-1`).Name).slice(1);

    const page = await ui.open();
    const row = await rowOf(page, name);
    await row.getByRole("button", { name: `Update ${name}` }).click();
    await confirm(page, "Update");
    // the page's own check then finds the update again (a dry run): the request is the last cycle's
    await row
      // "last cycle now", or "3 s ago" when the page drew the row a moment later
      .locator(".note", { hasText: /last cycle (now|[^:]+ ago): 1\.1\.0 proposed in a pull request/ })
      .waitFor({ timeout: 60_000 })
      .catch(async (error) => {
        throw new Error(`the row says: ${await row.locator("td[data-label=State]").textContent()} (${error})`);
      });
    const link = row.getByRole("link", { name: "Pull request" });
    expect(await link.getAttribute("href")).toBe("https://github.com/acme/stacks/pull/1");
    expect(await link.getAttribute("rel")).toBe("noopener noreferrer");
    // svc applied nothing: the container runs the old image, the request carries the move
    expect(inspect(name).Image).toBe(v1.id);
    expect(hosts.pullsOf("github", "acme/stacks").map((p) => p.head)).toEqual(["svc/web-1.1.0"]);
    expect(v2.ref).toEndWith(":1.1.0");
    await page.close();
  },
  120_000,
);
