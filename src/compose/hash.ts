/**
 * Compose's config hash of a service (`com.docker.compose.config-hash`): compose recreates a
 * container whose label differs from the hash of its service in the files (docker/compose,
 * pkg/compose/convergence.go mustRecreate and hash.go ServiceHash: the sha256 of the service's
 * JSON as compose-go loads it). svc asks the compose CLI where there is one (`docker compose
 * config --hash SERVICE`), with an environment of its own that holds none of svc's variables, and
 * trusts the answer only when the same question over the files as they were gives the hash the
 * running container carries (docs/compose.md, "Applied as compose would").
 */
import { SvcError } from "../core/errors.ts";
import type { ComposeProject } from "./project.ts";

const TIMEOUT_MS = 30_000;
const MAX_OUTPUT = 64 * 1024;

export interface ComposeCli {
  /** what runs compose: ["docker", "compose"] or ["docker-compose"] */
  command: string[];
  version: string;
  env: Record<string, string>;
}

/** The compose CLI on this machine, or null (svc's scratch image has none). */
export async function findComposeCli(
  options: { dockerConfig?: string; path?: string } = {},
): Promise<ComposeCli | null> {
  const path = options.path ?? process.env.PATH ?? "/usr/local/bin:/usr/bin:/bin";
  const env: Record<string, string> = { PATH: path };
  if (process.env.HOME) env.HOME = process.env.HOME;
  const dockerConfig = options.dockerConfig ?? process.env.DOCKER_CONFIG;
  if (dockerConfig) env.DOCKER_CONFIG = dockerConfig;
  const candidates = [[Bun.which("docker", { PATH: path }), "compose"], [Bun.which("docker-compose", { PATH: path })]];
  for (const [binary, ...rest] of candidates) {
    if (!binary) continue;
    const command = [binary, ...(rest as string[])];
    // nothing lost: a candidate that does not run is passed over for the next, or none is found
    const answer = await run([...command, "version", "--short"], env).catch(() => null);
    const version = answer?.trim() ?? "";
    if (/^v?2\.|^v?[3-9]\./.test(version)) return { command, version, env };
  }
  return null;
}

/** `docker compose config --hash SERVICE` over the project's files as they are now. */
export async function serviceHash(cli: ComposeCli, project: ComposeProject): Promise<string> {
  const args = [...cli.command, "--project-name", project.name, "--project-directory", project.workingDir];
  for (const file of project.configFiles) args.push("--file", file);
  for (const file of project.envFiles) args.push("--env-file", file);
  args.push("config", "--hash", project.service);
  const out = await run(args, cli.env, project.workingDir);
  const line = out.split("\n").find((l) => l.startsWith(`${project.service} `));
  const hash = line?.slice(project.service.length + 1).trim();
  if (!hash || !/^[0-9a-f]{64}$/.test(hash))
    throw new SvcError("internal", `compose config --hash gave no hash for ${project.service}`);
  return hash;
}

async function run(args: string[], env: Record<string, string>, cwd?: string): Promise<string> {
  const proc = Bun.spawn(args, {
    env,
    cwd,
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
    timeout: TIMEOUT_MS,
    killSignal: "SIGKILL",
  });
  const [out, err] = await Promise.all([capped(proc.stdout), capped(proc.stderr)]);
  const code = await proc.exited;
  if (code !== 0)
    throw new SvcError(
      "internal",
      `${args.slice(0, 2).join(" ")} exited with ${code}: ${err.trim().split("\n").at(-1) ?? ""}`,
    );
  return out;
}

async function capped(stream: ReadableStream<Uint8Array>): Promise<string> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of stream) {
    if (size < MAX_OUTPUT) chunks.push(chunk.subarray(0, MAX_OUTPUT - size));
    size += chunk.byteLength;
  }
  return new TextDecoder().decode(Buffer.concat(chunks));
}
