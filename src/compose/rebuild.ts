/**
 * A built service rebuilt by the compose CLI, as its user would (docs/compose.md, "Built
 * services"): `docker compose -p PROJECT --project-directory DIR -f FILE... --env-file FILE...
 * --profile NAME... build --pull SERVICE`, so that the image is tagged as compose tags it and built from the bases
 * the registry names now. An environment of its own (PATH, HOME, DOCKER_CONFIG, the engine's
 * address), under a time limit; what it printed last is kept for the reason of a failure.
 */
import { statfsSync } from "node:fs";
import { SvcError } from "../core/errors.ts";
import type { ComposeCli } from "./hash.ts";
import type { ComposeProject } from "./project.ts";

/** What a failed build's reason quotes: the end of what it printed. */
const TAIL_BYTES = 8 * 1024;
/** Below this much free space where the project lives, no build starts (a build writes layers and a cache). */
export const MIN_FREE_BYTES = 1024 * 1024 * 1024;

export interface BuildRun {
  /** the engine's address for the CLI (DOCKER_HOST); absent: the CLI's default */
  dockerHost?: string;
  timeoutMs: number;
}

/** The command, as svc runs it and says it (a dry run, monitor-only); `profiles`: each enabled. */
export function buildCommand(cli: ComposeCli, project: ComposeProject, profiles: readonly string[] = []): string[] {
  const args = [...cli.command, "-p", project.name, "--project-directory", project.workingDir];
  for (const file of project.configFiles) args.push("-f", file);
  for (const file of project.envFiles) args.push("--env-file", file);
  for (const profile of profiles) args.push("--profile", profile);
  args.push("build", "--pull", project.service);
  return args;
}

/** The command as a person would type it (each argument quoted when it needs to be). */
export function describeCommand(args: readonly string[]): string {
  return args.map((a) => (/^[A-Za-z0-9_@%+=:,./-]+$/.test(a) ? a : `'${a.replaceAll("'", "'\\''")}'`)).join(" ");
}

/** Why no build should start now, or null: too little free space where the project lives. */
export function diskProblem(project: ComposeProject, minFree = MIN_FREE_BYTES): string | null {
  try {
    const fs = statfsSync(project.workingDir);
    const free = Number(fs.bavail) * Number(fs.bsize);
    if (free < minFree)
      return `only ${Math.floor(free / 1024 / 1024)} MiB free under ${project.workingDir}: a build needs ${Math.floor(minFree / 1024 / 1024)} MiB`;
    return null;
  } catch {
    // a folder svc cannot stat: the build itself will say what is wrong
    return null;
  }
}

/** Runs the build; throws with the end of its output when it fails or outlives its time. */
export async function runBuild(
  cli: ComposeCli,
  project: ComposeProject,
  run: BuildRun,
  profiles: readonly string[] = [],
): Promise<void> {
  const env: Record<string, string> = { ...cli.env };
  if (run.dockerHost) env.DOCKER_HOST = run.dockerHost;
  const args = buildCommand(cli, project, profiles);
  const proc = Bun.spawn(args, {
    env,
    cwd: project.workingDir,
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
    timeout: run.timeoutMs,
    killSignal: "SIGKILL",
  });
  const [out, err] = await Promise.all([tail(proc.stdout), tail(proc.stderr)]);
  const code = await proc.exited;
  if (code === 0) return;
  const printed = `${out}\n${err}`
    .split("\n")
    .map((l) => l.trim())
    .filter(Boolean);
  const last = printed.slice(-3).join(" | ").slice(-600);
  if (proc.signalCode === "SIGKILL")
    throw new SvcError("internal", `the build outlived its ${Math.round(run.timeoutMs / 1000)} s and was stopped`);
  throw new SvcError("internal", `compose build exited with ${code}${last ? `: ${last}` : ""}`);
}

/** The last TAIL_BYTES of a stream, read to its end. */
async function tail(stream: ReadableStream<Uint8Array>): Promise<string> {
  let kept = new Uint8Array(0);
  for await (const chunk of stream) {
    const joined = new Uint8Array(kept.length + chunk.length);
    joined.set(kept);
    joined.set(chunk, kept.length);
    kept = joined.length > TAIL_BYTES ? joined.slice(joined.length - TAIL_BYTES) : joined;
  }
  return new TextDecoder().decode(kept);
}
