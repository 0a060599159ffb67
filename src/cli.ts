/**
 * The thin CLI: parse, load configuration, hand over to the service. Errors print their
 * message (the stack only at debug/trace level) and map to an exit code in errors.ts.
 *
 * citty describes the command (and renders --help from flags generated from the config
 * schema); the arguments themselves are parsed by the config room, which must know every
 * flag to report unknown ones and to name each problem as the user wrote it.
 */
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { defineCommand, renderUsage, type ArgsDef } from "citty";
import { COMMAND_FLAGS, OPTIONS, defaultConfig, describeOption, generateSample, loadConfig, parseArgv, printConfig, secretValues, type Config, type LoadResult } from "./config/index.ts";
import { SvcError, exitCodeOf, toSvcError } from "./errors.ts";
import { writeFileAtomically } from "./files.ts";
import { createLogging, createRedactor, resolveFormat, type Writable } from "./log/index.ts";
import { VERSION } from "./version.ts";

export interface CliIO {
  env: Record<string, string | undefined>;
  cwd: string;
  stdout: Writable;
  stderr: Writable;
}

const DESCRIPTION = "Keeps running Docker containers up to date, safely.";

function commandArgs(): ArgsDef {
  const args: ArgsDef = {
    names: { type: "positional", required: false, description: "Container names to update (added to --containers)" },
  };
  for (const [name, spec] of Object.entries(COMMAND_FLAGS)) {
    const alias = spec.alias ? { alias: spec.alias } : {};
    args[name] = spec.takes ? { type: "string", valueHint: spec.valueHint, description: spec.description, ...alias } : { type: "boolean", description: spec.description, ...alias };
  }
  for (const option of OPTIONS) {
    const name = option.flag.slice(2);
    const env = `env ${option.env}`;
    if (option.meta.kind === "boolean") {
      args[name] = { type: "boolean", description: `${describeOption(option)} (${env}; default ${option.meta.default})` };
    } else {
      const shown = option.meta.defaultText ?? (option.meta.default === undefined || (Array.isArray(option.meta.default) && option.meta.default.length === 0) ? undefined : String(option.meta.default));
      args[name] = { type: "string", valueHint: option.meta.kind, description: `${describeOption(option)} (${env}${shown ? `; default ${shown}` : ""})` };
    }
  }
  return args;
}

export const command = defineCommand({
  meta: { name: "svc", version: VERSION, description: DESCRIPTION },
  args: commandArgs(),
  subCommands: {
    healthcheck: defineCommand({ meta: { name: "healthcheck", description: "Exit 0 when the HTTP API answers GET /v1/health (for container healthchecks)" } }),
    migrate: defineCommand({
      meta: { name: "migrate", description: "Write svc.toml from a running Watchtower container (svc migrate [CONTAINER] [--output FILE [--force]])" },
    }),
    rollback: defineCommand({
      meta: { name: "rollback", description: "Put a container back on the image it ran before svc's last update of it (svc rollback NAME [OPTIONS]; needs state_dir)" },
    }),
  },
});

/** citty's usage, with the usage line saying that `healthcheck` is an alternative, not a suffix. */
async function helpText(color: boolean): Promise<string> {
  const usage = (await renderUsage(command)).replace(/\[NAMES\] healthcheck\|migrate\|rollback/, "[NAMES...]  |  svc healthcheck [OPTIONS]  |  svc migrate [CONTAINER]  |  svc rollback NAME [OPTIONS]");
  return color ? usage : Bun.stripANSI(usage);
}

const defaultIO = (): CliIO => ({
  env: process.env,
  cwd: process.cwd(),
  stdout: process.stdout,
  stderr: process.stderr,
});

export async function runCli(argv: string[], io: CliIO = defaultIO()): Promise<number> {
  // citty would take any first word for a subcommand; only `healthcheck` is one (and the hidden
  // `handover <old id> <new id> <name>` of a self-update's helper container).
  const healthcheck = argv[0] === "healthcheck";
  const handover = argv[0] === "handover" && argv.length >= 4 ? { oldId: argv[1]!, newId: argv[2]!, name: argv[3]! } : undefined;
  if (argv[0] === "migrate") return runMigrateCli(argv.slice(1), io);
  const rollback = argv[0] === "rollback" ? argv[1] : undefined;
  if (argv[0] === "rollback" && (rollback === undefined || rollback.startsWith("-"))) {
    io.stderr.write("svc rollback: name the container: svc rollback NAME [options]\n");
    return exitCodeOf(new SvcError("usage", "no container named"));
  }
  const rest = healthcheck ? argv.slice(1) : handover ? argv.slice(4) : rollback ? argv.slice(2) : argv;
  const { command: flags } = parseArgv(rest);
  let config: Config | undefined;
  try {
    if (flags.help) {
      io.stdout.write(`${await helpText(io.stdout.isTTY === true)}\n`);
      return 0;
    }
    if (flags.version) {
      io.stdout.write(`${VERSION}\n`);
      return 0;
    }
    if (flags.generateConfig !== undefined) return await writeSample(flags.generateConfig, flags.force, io);

    const loaded = await loadConfig({ argv: rest, env: io.env, cwd: io.cwd, oneOff: rollback !== undefined });
    config = loaded.config;
    if (flags.printConfig) {
      io.stdout.write(printConfig(loaded, await notificationSecrets(loaded.config)));
      return 0;
    }
    // Loaded only when needed, by literal paths (bundled by `bun build --compile`): --version,
    // --help, --generate-config and the healthcheck must not pay for the engine client and the
    // HTTP framework.
    if (healthcheck) return await (await import("./healthcheck.ts")).runHealthcheck(config);
    if (handover) return await (await import("./handover.ts")).runHandoverCommand(config, handover);
    await logWarnings(loaded, io);
    const { runRollback, runService } = await import("./service.ts");
    if (rollback) return await runRollback(config, rollback);
    return await runService(config);
  } catch (error) {
    await reportFailure(error, config, rest, io);
    return exitCodeOf(error);
  }
}

/** `svc migrate`: its own arguments (no configuration is loaded: it writes one). */
async function runMigrateCli(argv: string[], io: CliIO): Promise<number> {
  try {
    return await (await import("./migrate.ts")).runMigrateCommand(argv, io);
  } catch (error) {
    await reportFailure(error, undefined, argv, io);
    return exitCodeOf(error);
  }
}

async function writeSample(target: true | string, force: boolean, io: CliIO): Promise<number> {
  const sample = generateSample(VERSION);
  if (target === true) {
    io.stdout.write(sample);
    return 0;
  }
  const path = resolve(io.cwd, target);
  if (existsSync(path) && !force) {
    throw new SvcError("usage", `${target} already exists; add --force to overwrite it`);
  }
  writeFileAtomically(path, sample); // soon to hold secrets
  io.stderr.write(`wrote a sample configuration to ${target}\n`);
  return 0;
}

/** A logger on the console only (no log files), for the CLI's own few messages. */
async function consoleLogging(config: Config, io: CliIO) {
  const quiet: Config = { ...config, audit_log: undefined, http_api: { ...config.http_api, access_log: undefined } };
  return createLogging(quiet, { stdout: io.stdout, stderr: io.stderr, secrets: await notificationSecrets(config) });
}

/** The secrets inside notification settings (docs/security.md), loaded only when output needs them. */
async function notificationSecrets(config: Config): Promise<string[]> {
  return (await import("./notify/secrets.ts")).notificationSecrets(config.notifications);
}

/**
 * Warnings found while loading go through the configured logger (so json logs stay json).
 * The run-once one is left out: the service logs it itself when it starts in that mode.
 */
async function logWarnings(loaded: LoadResult, io: CliIO): Promise<void> {
  const warnings = loaded.warnings.filter((w) => !w.startsWith("run_once:"));
  if (warnings.length === 0) return;
  const logging = await consoleLogging(loaded.config, io);
  const log = logging.log.child("config");
  for (const warning of warnings) log.warn(warning);
  await logging.close();
}

/** The log format in force, even when the configuration could not be loaded (best effort). */
function failureFormat(config: Config | undefined, argv: readonly string[], io: CliIO): Config["log_format"] {
  if (config) return config.log_format;
  const formats: readonly string[] = ["auto", "json", "logfmt", "pretty"];
  const fromFlag = parseArgv(argv).layer.get("log_format")?.value;
  const wanted = typeof fromFlag === "string" ? fromFlag : io.env.SVC_LOG_FORMAT;
  return (wanted && formats.includes(wanted) ? wanted : "auto") as Config["log_format"];
}

/**
 * Prints the message and every detail (each configuration problem) on stderr: plain lines for a
 * person at a terminal, one log record each in json/logfmt. The stack only at debug/trace.
 */
async function reportFailure(error: unknown, config: Config | undefined, argv: readonly string[], io: CliIO): Promise<void> {
  const failure = toSvcError(error);
  const verbose = config?.log_level === "debug" || config?.log_level === "trace";
  const stack = verbose ? failure.stack : undefined;
  const format = resolveFormat(failureFormat(config, argv, io), io.stdout);
  if (format === "pretty") {
    const lines = [`svc: ${failure.message}`, ...failure.details.map((d) => `  - ${d}`), ...(stack ? [stack] : [])];
    const redact = config ? createRedactor([...secretValues(config), ...(await notificationSecrets(config))]) : (text: string) => text;
    io.stderr.write(`${redact(lines.join("\n"))}\n`);
    return;
  }
  const logging = await consoleLogging(config ?? defaultConfig({ log_format: format }), io);
  const log = logging.log.child(failure.kind === "config" ? "config" : "cli");
  log.error(failure.message, { kind: failure.kind, ...(stack ? { stack } : {}) });
  for (const detail of failure.details) log.error(detail);
  await logging.close();
}
