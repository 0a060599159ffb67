/** Helpers for the build tests: run build.ts into a temp folder, run commands, know the version. */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import pkg from "../../package.json" with { type: "json" };

export const ROOT = resolve(import.meta.dir, "../..");

export interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

export function run(cmd: string[], options: { cwd?: string; env?: Record<string, string | undefined> } = {}): Run {
  const proc = Bun.spawnSync(cmd, {
    cwd: options.cwd ?? ROOT,
    env: options.env ?? process.env,
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  return { code: proc.exitCode ?? -1, stdout: proc.stdout.toString(), stderr: proc.stderr.toString() };
}

export function tempDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), `svc-${prefix}-`));
}

/**
 * Runs `bun build.ts ARGS --outdir DIR` the way `bun run build` does; throws with its output.
 * Returns the versions the binary may carry: other engineers commit in this checkout while the
 * tests run, so HEAD may move during the build.
 */
export function build(outdir: string, ...args: string[]): string[] {
  const before = expectedVersion();
  const result = run(["bun", "build.ts", ...args, "--outdir", outdir]);
  if (result.code !== 0) throw new Error(`build failed (${result.code}): ${result.stdout}${result.stderr}`);
  return [...new Set([before, expectedVersion()])];
}

/** What `svc --version` must print: package.json's version, plus the commit when built from git. */
export function expectedVersion(): string {
  const git = run(["git", "rev-parse", "--short", "HEAD"]);
  return git.code === 0 ? `${pkg.version}+${git.stdout.trim()}` : pkg.version;
}

/** The release file that runs natively here. */
export function hostReleaseFile(): string {
  return process.arch === "arm64" ? "svc-linux-arm64" : "svc-linux-x64";
}
