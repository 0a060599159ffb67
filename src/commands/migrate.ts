/**
 * `svc migrate [CONTAINER] [--output FILE [--force]]`: reads a Watchtower container through the
 * engine (its environment, arguments and labels), writes the equivalent svc.toml, checks it with
 * svc's own loader, and lists every setting it could not carry over
 * (docs/migrating-from-watchtower.md).
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import {
  type Config,
  configFile,
  type DeepPartial,
  defaultConfig,
  loadConfig,
  migrateWatchtower,
  parseArgv,
  scheduleNote,
  WATCHTOWER_LABEL,
} from "../config/index.ts";
import { switchOverSteps } from "../config/watchtower.ts";
import { SvcError } from "../core/errors.ts";
import { writeRequestedFile } from "../core/files.ts";
import type { ContainerSummary, Engine } from "../engine/port.ts";
import { silentLogger } from "../log/index.ts";

export interface MigrateJob {
  container?: string;
  output?: string;
  force: boolean;
  cwd: string;
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown };
}

const WATCHTOWER_IMAGE = /(^|\/)(containrrr|nickfedor|beatkind)\/watchtower([:@]|$)/;

/** The container to read: the one named, else the one that looks like Watchtower. */
export function findWatchtower(containers: readonly ContainerSummary[], name?: string): ContainerSummary {
  if (name !== undefined) {
    const named = containers.find((c) => c.name === name.replace(/^\//, "") || c.id.startsWith(name));
    if (!named) throw new SvcError("usage", `no container named ${name}`);
    return named;
  }
  const found = containers.filter((c) => WATCHTOWER_IMAGE.test(c.image) || c.labels[WATCHTOWER_LABEL] === "true");
  if (found.length === 0)
    throw new SvcError(
      "usage",
      "no Watchtower container found (by its image or the label com.centurylinklabs.watchtower=true): name it, svc migrate CONTAINER",
    );
  if (found.length > 1)
    throw new SvcError(
      "usage",
      `several Watchtower containers (${found.map((c) => c.name).join(", ")}): name one, svc migrate CONTAINER`,
    );
  return found[0]!;
}

/** Watchtower's own arguments: the command after its entry point. */
function watchtowerArgs(entrypoint: string[] | null | undefined, cmd: string[] | null | undefined): string[] {
  const command = [...(entrypoint ?? []), ...(cmd ?? [])];
  const at = command.findIndex((part) => /(^|\/)watchtower$/.test(part));
  return at >= 0 ? command.slice(at + 1) : (cmd ?? []);
}

export async function runMigrate(engine: Engine, job: MigrateJob): Promise<number> {
  const watchtower = findWatchtower(await engine.listContainers(), job.container);
  const inspect = await engine.inspectContainer(watchtower.id);
  const { values, unmapped } = migrateWatchtower({
    env: inspect.Config.Env ?? [],
    args: watchtowerArgs(inspect.Config.Entrypoint as string[] | null, inspect.Config.Cmd as string[] | null),
    labels: inspect.Config.Labels ?? {},
  });
  const text = configFile(values, [
    `svc configuration written by svc migrate from the Watchtower container ${watchtower.name} (${watchtower.image}).`,
    "It may hold secrets (tokens, passwords) as Watchtower had them: keep it private, or move them to files.",
    values.get("lifecycle_hooks") === true
      ? "Lifecycle hooks run, as Watchtower's --enable-lifecycle-hooks had them (docs/policies.md)."
      : "Lifecycle hooks stay off, as in this Watchtower; lifecycle_hooks = true turns them on (docs/policies.md).",
    scheduleNote(values),
    ...(unmapped.length > 0 ? ["", "Not carried over:", ...unmapped.map((line) => `  ${line}`)] : []),
  ]);
  await checkLoads(text);
  const notes = [
    `svc migrate: read ${watchtower.name}; ${values.size} settings carried over${job.output ? ` to ${job.output}` : ""}`,
    `  ${scheduleNote(values)}`,
    ...unmapped.map((line) => `  not carried over: ${line}`),
    ...(job.output !== undefined
      ? switchOverSteps(watchtower.name, job.output)
      : [
          `Then write it to a file (svc migrate --output svc.toml) and switch over: docs/migrating-from-watchtower.md, "Switching over".`,
        ]),
  ];
  if (job.output === undefined) {
    // the sample goes to stdout: where stderr lands in the same file (2>&1, docker run -t), the
    // notes are TOML comments written whole before it, so the file still loads
    job.stderr.write(`${notes.map((line) => `# ${line}`).join("\n")}\n`);
    job.stdout.write(text);
  } else {
    writeRequestedFile(resolve(job.cwd, job.output), text, job.force); // it may hold Watchtower's secrets
    job.stderr.write(`${notes.join("\n")}\n`);
  }
  return 0;
}

/** The written file must load as it is: svc's own loader says what is wrong with it. */
async function checkLoads(text: string): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "svc-migrate-"));
  try {
    writeFileSync(join(dir, "svc.toml"), text);
    await loadConfig({ argv: ["--config", join(dir, "svc.toml")], env: {}, cwd: dir }).catch((error) => {
      throw new SvcError("config", "the migrated configuration does not load", {
        details: [...((error as SvcError).details ?? [(error as Error).message])],
        cause: error,
      });
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The command line of `svc migrate`: an optional container, `--output FILE`, `--force`, and svc's
 * own `--docker-*` flags (with SVC_DOCKER_HOST, else DOCKER_HOST) to reach the engine.
 */
export async function runMigrateCommand(
  argv: readonly string[],
  io: { env: Record<string, string | undefined>; cwd: string } & Pick<MigrateJob, "stdout" | "stderr">,
): Promise<number> {
  const rest = [...argv];
  let output: string | undefined;
  const at = rest.findIndex((arg) => arg === "--output" || arg === "-o" || arg.startsWith("--output="));
  if (at >= 0) {
    const arg = rest[at]!;
    output = arg.startsWith("--output=") ? arg.slice("--output=".length) : rest[at + 1];
    rest.splice(at, arg.startsWith("--output=") ? 1 : 2);
    if (!output) throw new SvcError("usage", "--output needs a file");
  }
  const parsed = parseArgv(rest);
  const problems = [
    ...parsed.problems,
    ...[...parsed.layer.keys()]
      .filter((key) => !key.startsWith("docker."))
      .map((key) => `${parsed.layer.get(key)!.origin.name}: not an option of svc migrate`),
  ];
  if (parsed.positionals.length > 1) problems.push(`one container at most (got ${parsed.positionals.join(", ")})`);
  if (problems.length > 0)
    throw new SvcError("usage", "svc migrate [CONTAINER] [--output FILE [--force]] [--docker-host URL ...]", {
      details: problems,
    });
  const host = io.env.SVC_DOCKER_HOST ?? io.env.DOCKER_HOST;
  const docker: Record<string, unknown> = { ...(host ? { host } : {}) };
  for (const [key, entry] of parsed.layer) docker[key.slice("docker.".length)] = entry.value;
  const config = defaultConfig({ docker: docker as DeepPartial<Config>["docker"] });
  const { createDockerEngine } = await import("../engine/index.ts");
  const engine = await createDockerEngine(config.docker, silentLogger);
  return runMigrate(engine, {
    container: parsed.positionals[0],
    output,
    force: parsed.command.force,
    cwd: io.cwd,
    stdout: io.stdout,
    stderr: io.stderr,
  });
}
