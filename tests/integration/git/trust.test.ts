/**
 * A repository found walking up from a compose project is what svc commits in, often as root: it
 * must be one Git itself would trust (its owner, as Git's safe.directory rule has it), its ref
 * names ones `git check-ref-format` allows, and no link inside its git folder may send svc's
 * writes elsewhere. Each case goes through the Git step svc runs after a compose write (commit
 * mode), on a real repository made by Debian's git; a refusal changes nothing, in or out of it.
 */
import { describe, expect, test } from "bun:test";
import { chownSync, existsSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { defaultConfig } from "../../../src/config/index.ts";
import { type ComposeChange, createGitStep } from "../../../src/git/index.ts";
import { COMPOSE, git, makeRepo } from "../../support/git-repo.ts";
import { recordingLogger } from "../../support/logger.ts";
import { tempDir } from "../../temp.ts";

/** svc's compose write (the file now holds the new tag), as the Git step is handed it. */
function written(project: string): ComposeChange {
  const after = COMPOSE.replace("nginx:1.25.3", "nginx:1.25.4");
  writeFileSync(join(project, "compose.yaml"), after);
  return {
    project,
    moves: [{ service: "web", from: "1.25.3", to: "1.25.4", notes: null }],
    files: [{ path: "compose.yaml", before: COMPOSE, after }],
  };
}

const step = (safe: string[] = []) =>
  createGitStep(defaultConfig({ compose: { git: "commit", git_safe_directories: safe } }), recordingLogger(), {
    now: () => 1_767_225_600,
  });

/** The branch's commit as the loose ref holds it (read as a file: git refuses another user's repository). */
const branchOf = (top: string) => readFileSync(join(top, ".git", "refs", "heads", "main"), "utf8").trim();

function chownTree(path: string, uid: number): void {
  const run = Bun.spawnSync(["chown", "-R", `${uid}:${uid}`, path]);
  if (run.exitCode !== 0) throw new Error(run.stderr.toString());
}

describe("the repository's owner, as Git's safe.directory rule", () => {
  const root = process.geteuid?.() === 0;

  test.skipIf(!root)("another user's repository: refused, nothing written; named as safe: committed", async () => {
    const { top, project } = makeRepo();
    const before = branchOf(top);
    chownTree(top, 4242);
    const refused = await step().record(written(project));
    expect(refused.done).toBe("nothing");
    expect(refused.problem).toMatch(/belongs to user 4242, not to the user svc runs as \(0\).*safe\.directory/);
    expect(branchOf(top)).toBe(before);
    expect(existsSync(join(top, ".git", "index.lock"))).toBe(false);

    const allowed = await step([`${top}/`]).record(written(project));
    expect(allowed.problem).toBeNull();
    expect(allowed.done).toBe("committed");
    expect(branchOf(top)).toBe(allowed.commit!);
  });

  test.skipIf(!root)(
    "as root, the repository of the user sudo was run by (SUDO_UID) is taken, as Git takes it",
    async () => {
      const { top, project } = makeRepo();
      chownTree(top, 4243);
      const saved = process.env.SUDO_UID;
      process.env.SUDO_UID = "4243";
      try {
        const outcome = await step().record(written(project));
        expect(outcome.problem).toBeNull();
        expect(outcome.done).toBe("committed");
      } finally {
        if (saved === undefined) delete process.env.SUDO_UID;
        else process.env.SUDO_UID = saved;
        chownSync(top, 0, 0);
      }
    },
  );
});

describe("ref names, as git check-ref-format allows them", () => {
  test("HEAD naming a branch that climbs out of refs/ (and packed-refs holding it): refused, no file made", async () => {
    const { top, project } = makeRepo();
    const outside = tempDir("svc-outside-");
    const climbing = `refs/heads/../../../../../../../../..${outside}/planted`;
    const head = git(top, "rev-parse", "HEAD").trim();
    writeFileSync(
      join(top, ".git", "packed-refs"),
      `# pack-refs with: peeled fully-peeled sorted \n${head} ${climbing}\n`,
    );
    writeFileSync(join(top, ".git", "HEAD"), `ref: ${climbing}\n`);
    const outcome = await step().record(written(project));
    expect(outcome.done).toBe("nothing");
    expect(outcome.problem).toMatch(/not a ref name Git allows/);
    expect(existsSync(join(outside, "planted"))).toBe(false);
    expect(existsSync(join(outside, "planted.lock"))).toBe(false);
  });
});

describe("no link followed inside the git folder", () => {
  test("a link at .git/logs/HEAD: refused before anything moves, its target untouched", async () => {
    const { top, project } = makeRepo();
    const before = branchOf(top);
    const target = join(tempDir("svc-outside-"), "victim");
    writeFileSync(target, "root's file\n");
    rmSync(join(top, ".git", "logs", "HEAD"));
    symlinkSync(target, join(top, ".git", "logs", "HEAD"));
    const outcome = await step().record(written(project));
    expect(outcome.done).toBe("nothing");
    expect(outcome.problem).toMatch(/logs\/HEAD is a link: svc follows no link inside a Git folder/);
    expect(readFileSync(target, "utf8")).toBe("root's file\n");
    expect(branchOf(top)).toBe(before);
  });

  test("a link for the branch's folder of loose refs: refused, nothing written where it points", async () => {
    const { top, project } = makeRepo();
    const elsewhere = tempDir("svc-outside-");
    writeFileSync(join(elsewhere, "main"), `${branchOf(top)}\n`);
    rmSync(join(top, ".git", "refs", "heads"), { recursive: true });
    symlinkSync(elsewhere, join(top, ".git", "refs", "heads"));
    const before = readFileSync(join(elsewhere, "main"), "utf8");
    const outcome = await step().record(written(project));
    expect(outcome.done).toBe("nothing");
    expect(outcome.problem).toMatch(/is a link: svc follows no link inside a Git folder/);
    expect(readFileSync(join(elsewhere, "main"), "utf8")).toBe(before);
  });
});
