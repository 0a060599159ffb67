/**
 * svc's commit in a real repository made by Debian's git: after it, `git log` shows it,
 * `git status --porcelain` is clean, `git fsck --strict` finds nothing, and the repository states
 * a careful tool leaves alone are refused with nothing changed (docs/compose.md, "Git").
 * Repositories are read loose, packed (git gc: deltas), as a linked worktree, with index versions 2-4.
 */
import { describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { commitOnBranch, type FileChange, prepare } from "../../../src/git/commit.ts";
import { parseIndex } from "../../../src/git/index-file.ts";
import { COMPOSE, git, makeRepo } from "../../support/git-repo.ts";
import { tempDir } from "../../temp.ts";

/** svc's change of the compose file (the compose writer's part), then svc's commit. */
function change(project: string, file = "compose.yaml", from = "1.25.3", to = "1.25.4"): FileChange {
  const before = readFileSync(join(project, file));
  const after = Buffer.from(before.toString().replace(from, to));
  writeFileSync(join(project, file), after);
  return { path: file, before, after };
}

const AUTHOR = { ident: "svc <svc@example.com>", when: 1_767_225_600 };

async function commitChange(project: string, changes: FileChange[]): Promise<string> {
  const prepared = await prepare(project, changes, true);
  if (!("repo" in prepared)) throw new Error(JSON.stringify(prepared));
  return commitOnBranch(prepared, AUTHOR, "web: nginx 1.25.3 -> 1.25.4\n\nFixes.\n");
}

describe("a commit in a real repository", () => {
  for (const shape of [
    { pack: false },
    { pack: true },
    { indexVersion: 2 },
    { indexVersion: 3 },
    { indexVersion: 4 },
    { pack: true, indexVersion: 4 },
  ]) {
    test(`git agrees with svc's commit (${JSON.stringify(shape)})`, async () => {
      const { top, project } = makeRepo(shape);
      const before = git(top, "rev-parse", "HEAD").trim();
      const commit = await commitChange(project, [change(project)]);
      expect(git(top, "rev-parse", "HEAD").trim()).toBe(commit);
      expect(git(top, "rev-parse", "HEAD~1").trim()).toBe(before);
      expect(git(top, "log", "-1", "--format=%an <%ae>|%s|%b")).toBe(
        "svc <svc@example.com>|web: nginx 1.25.3 -> 1.25.4|Fixes.\n\n",
      );
      expect(git(top, "status", "--porcelain")).toBe("");
      expect(git(top, "diff", "HEAD~1", "--stat")).toContain("stacks/web/compose.yaml | 2 +-");
      expect(git(top, "fsck", "--strict", "--no-progress")).toBe("");
      expect(git(top, "show", "HEAD:stacks/web/compose.yaml")).toContain("nginx:1.25.4 # pinned");
      expect(git(top, "reflog", "-1", "--format=%gs")).toBe("commit: web: nginx 1.25.3 -> 1.25.4\n");
    });
  }

  test("two files (compose.yaml and .env) in one commit", async () => {
    const { top, project } = makeRepo({ pack: true });
    await commitChange(project, [change(project), change(project, ".env", "2.3.1", "2.4.0")]);
    expect(git(top, "show", "--name-only", "--format=", "HEAD")).toBe("stacks/web/.env\nstacks/web/compose.yaml\n");
    expect(git(top, "status", "--porcelain")).toBe("");
    expect(git(top, "fsck", "--strict", "--no-progress")).toBe("");
  });

  test("in a linked worktree (a .git file pointing elsewhere)", async () => {
    const { top } = makeRepo({ pack: true });
    const other = join(tempDir("svc-git-wt-"), "wt");
    git(top, "worktree", "add", "-q", "-b", "side", other);
    const project = join(other, "stacks", "web");
    const commit = await commitChange(project, [change(project)]);
    expect(git(other, "rev-parse", "side").trim()).toBe(commit);
    expect(git(top, "rev-parse", "main").trim()).not.toBe(commit);
    expect(git(other, "status", "--porcelain")).toBe("");
    expect(git(top, "fsck", "--strict", "--no-progress")).toBe("");
  });

  test("objects packed as REF_DELTA (a pack made without offset deltas)", async () => {
    const { top, project } = makeRepo();
    git(top, "-c", "repack.useDeltaBaseOffset=false", "repack", "-q", "-a", "-d", "-f");
    git(top, "prune-packed");
    const commit = await commitChange(project, [change(project)]);
    expect(git(top, "rev-parse", "HEAD").trim()).toBe(commit);
    expect(git(top, "status", "--porcelain")).toBe("");
    expect(git(top, "fsck", "--strict", "--no-progress")).toBe("");
  });

  test("objects borrowed from another repository (objects/info/alternates, git clone --shared)", async () => {
    const { top: origin } = makeRepo({ pack: true });
    const top = join(tempDir("svc-git-shared-"), "clone");
    git("/", "clone", "-q", "--shared", origin, top);
    const project = join(top, "stacks", "web");
    const commit = await commitChange(project, [change(project)]);
    expect(git(top, "rev-parse", "HEAD").trim()).toBe(commit);
    expect(git(top, "status", "--porcelain")).toBe("");
    expect(git(top, "fsck", "--strict", "--no-progress")).toBe("");
  });

  test("the index's cache tree is invalidated: the user's next commit keeps svc's change", async () => {
    const { top, project } = makeRepo({ pack: true });
    // a commit by git leaves a fully valid cache tree in the index
    expect(parseIndex(readFileSync(join(top, ".git", "index"))).extensions.map((e) => e.signature)).toContain("TREE");
    await commitChange(project, [change(project)]);
    git(top, "commit", "-q", "--allow-empty", "-m", "the user's next commit");
    expect(git(top, "diff", "HEAD~1", "HEAD")).toBe("");
    expect(git(top, "show", "HEAD:stacks/web/compose.yaml")).toContain("nginx:1.25.4");
    writeFileSync(join(top, "README.md"), "changed by the user\n");
    git(top, "commit", "-q", "-am", "another");
    expect(git(top, "show", "HEAD:stacks/web/compose.yaml")).toContain("nginx:1.25.4");
    expect(git(top, "fsck", "--strict", "--no-progress")).toBe("");
  });

  test("a branch kept only in packed-refs", async () => {
    const { top, project } = makeRepo();
    git(top, "pack-refs", "--all");
    const commit = await commitChange(project, [change(project)]);
    expect(git(top, "rev-parse", "main").trim()).toBe(commit);
    expect(git(top, "status", "--porcelain")).toBe("");
  });
});

/** What svc could move: the refs, the index and the number of objects (read as files: git may refuse a repository svc refuses). */
function snapshot(top: string): Record<string, string> {
  const dotGit = join(top, ".git");
  const files = ["HEAD", "packed-refs", "refs/heads/main", "index", "logs/HEAD"].filter((f) =>
    existsSync(join(dotGit, f)),
  );
  const objects = readdirSync(join(dotGit, "objects"), { recursive: true }).length;
  return {
    ...Object.fromEntries(files.map((f) => [f, readFileSync(join(dotGit, f)).toString("hex")])),
    objects: String(objects),
  };
}

describe("states svc leaves alone, changing nothing", () => {
  const refused = async (project: string, changes: FileChange[]) => {
    const result = await prepare(project, changes, true);
    return "refuse" in result ? result.refuse : "skip" in result ? `skip: ${result.skip}` : "prepared";
  };
  const cases: [string, (top: string, project: string) => FileChange[], RegExp][] = [
    [
      "a detached HEAD",
      (top, project) => (git(top, "checkout", "-q", "--detach"), [change(project)]),
      /HEAD is detached/,
    ],
    [
      "a merge in progress",
      (top, project) => (
        writeFileSync(join(top, ".git", "MERGE_HEAD"), `${git(top, "rev-parse", "HEAD")}`), [change(project)]
      ),
      /merge is in progress/,
    ],
    [
      "a rebase in progress",
      (top, project) => (mkdirSync(join(top, ".git", "rebase-merge")), [change(project)]),
      /rebase is in progress/,
    ],
    [
      "the file staged with other changes",
      (top, project) => {
        writeFileSync(join(project, "compose.yaml"), `${COMPOSE}# mine\n`);
        git(top, "add", "stacks/web/compose.yaml");
        writeFileSync(join(project, "compose.yaml"), COMPOSE);
        return [change(project)];
      },
      /changes staged/,
    ],
    [
      "the file with changes not committed",
      (_top, project) => {
        writeFileSync(join(project, "compose.yaml"), `${COMPOSE}# mine\n`);
        return [change(project)];
      },
      /changes not committed/,
    ],
    [
      "a file Git does not track",
      (_top, project) => (
        writeFileSync(join(project, "new.yaml"), "x: 1\n"),
        [{ path: "new.yaml", before: Buffer.from("x: 1\n"), after: Buffer.from("x: 1\n") }]
      ),
      /not tracked/,
    ],
    [
      "a shallow clone",
      (top, project) => (writeFileSync(join(top, ".git", "shallow"), git(top, "rev-parse", "HEAD")), [change(project)]),
      /shallow clone/,
    ],
    [
      "a SHA-256 repository format",
      (top, project) => (
        git(top, "config", "core.repositoryformatversion", "1"),
        git(top, "config", "extensions.objectformat", "sha256"),
        [change(project)]
      ),
      /extension objectformat/,
    ],
    ["a split index", (top, project) => (git(top, "update-index", "--split-index"), [change(project)]), /split index/],
    [
      "an index.lock",
      (top, project) => (writeFileSync(join(top, ".git", "index.lock"), ""), [change(project)]),
      /index\.lock/,
    ],
    [
      "the file changed again after svc wrote it",
      (_top, project) => {
        const made = change(project);
        writeFileSync(join(project, "compose.yaml"), "services: {}\n");
        return [made];
      },
      /changed on disk/,
    ],
  ];
  for (const [name, arrange, reason] of cases) {
    test(name, async () => {
      const { top, project } = makeRepo({ pack: true });
      const changes = arrange(top, project);
      const before = snapshot(top);
      expect(await refused(project, changes)).toMatch(reason);
      expect(snapshot(top)).toEqual(before);
    });
  }

  test("a folder outside any work tree is skipped, not refused", async () => {
    const folder = tempDir("svc-nogit-");
    writeFileSync(join(folder, "compose.yaml"), COMPOSE);
    expect(
      await refused(folder, [{ path: "compose.yaml", before: Buffer.from(COMPOSE), after: Buffer.from(COMPOSE) }]),
    ).toMatch(/^skip: .* is not in a Git work tree/);
  });
});
