/** Repositories made by Debian's git for the Git room's tests (docs/compose.md, "Git"). */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { tempDir } from "../temp.ts";

const GIT_ENV = {
  ...process.env,
  GIT_AUTHOR_NAME: "Ann",
  GIT_AUTHOR_EMAIL: "ann@example.com",
  GIT_COMMITTER_NAME: "Ann",
  GIT_COMMITTER_EMAIL: "ann@example.com",
  GIT_CONFIG_NOSYSTEM: "1",
  HOME: "/nonexistent",
};

export function git(cwd: string, ...args: string[]): string {
  const run = Bun.spawnSync(["git", ...args], { cwd, env: GIT_ENV, stdout: "pipe", stderr: "pipe" });
  if (run.exitCode !== 0) throw new Error(`git ${args.join(" ")}: ${run.stderr.toString()}`);
  return run.stdout.toString();
}

export const COMPOSE = "services:\n  web:\n    image: nginx:1.25.3 # pinned\n  db:\n    image: postgres:16\n";

/** A repository holding a compose project in stacks/web, with some history; answers the project folder. */
export function makeRepo(options: { pack?: boolean; indexVersion?: number } = {}): { top: string; project: string } {
  const top = tempDir("svc-git-");
  git(top, "init", "-q", "-b", "main");
  const project = join(top, "stacks", "web");
  mkdirSync(project, { recursive: true });
  writeFileSync(join(project, "compose.yaml"), COMPOSE);
  writeFileSync(join(project, ".env"), "APP_TAG=2.3.1\n");
  writeFileSync(join(top, "README.md"), "stacks\n");
  git(top, "add", ".");
  git(top, "commit", "-q", "-m", "first");
  for (let n = 0; n < 3; n++) {
    writeFileSync(join(top, "README.md"), `stacks ${n}\n${"line\n".repeat(50 + n)}`);
    git(top, "commit", "-q", "-am", `readme ${n}`);
  }
  if (options.pack) git(top, "gc", "-q", "--aggressive");
  if (options.indexVersion) git(top, "update-index", "--index-version", String(options.indexVersion));
  return { top, project };
}
