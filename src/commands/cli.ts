/**
 * The thin CLI: parse, load configuration, hand over to the service. Errors print their
 * message (the stack only at debug/trace level) and map to an exit code in core/errors.ts.
 *
 * svc and each of its commands are declared here (help.ts lays their --help out from that); their
 * flags are the config room's arguments (config/args.ts), derived from the schema, which the config
 * room's parser reads too: it must know every flag to report unknown ones and to name each problem
 * as the user wrote it.
 */
import { resolve } from "node:path";
import {
  COMMAND_ARGS,
  type Config,
  defaultConfig,
  generateSample,
  type LoadResult,
  loadConfig,
  logSettings,
  type OptionSpec,
  optionArgs,
  parseArgv,
  printConfig,
  secretValues,
} from "../config/index.ts";
import { exitCodeOf, SvcError, toSvcError } from "../core/errors.ts";
import { writeRequestedFile } from "../core/files.ts";
import { VERSION } from "../core/version.ts";
import { createLogging, createRedactor, resolveFormat, type Writable } from "../log/index.ts";
import type { CommandDef } from "./help.ts";

export interface CliIO {
  env: Record<string, string | undefined>;
  cwd: string;
  stdout: Writable;
  stderr: Writable;
}

const withFlags = (flags: readonly string[]) => (option: OptionSpec) => flags.includes(option.flag);

/** `svc rollback NAME --with-data`: a switch of the command, not an option of the configuration. */
const WITH_DATA = "--with-data";

/** svc's commands; args are functions, built only when a help asks for them. */
const COMMANDS = {
  rollback: {
    meta: {
      name: "rollback",
      description:
        "Puts the container NAME back on the image it ran before svc's last update of it (known from state_dir). It goes through the same protocol as an update: the current container is kept until the one on the earlier image passes the rollback checks. The digest it leaves is then skipped until a newer one appears. When a service runs on the same state_dir with its update API, the rollback is handed to it (POST /v1/rollback on the address its owner file names, proven with the state folder's secret: no token is sent). Exit 0 when the container runs the earlier image again. Every option of svc --help is read; these matter here.",
    },
    args: () => ({
      name: { type: "positional", description: "The container to put back" },
      "with-data": {
        type: "boolean",
        description:
          "Its data too: the data guard's copy taken at that update (docs/data-guard.md) replaces what the container wrote since; the present data is copied first, so that this too can be undone",
      },
      config: COMMAND_ARGS.config,
      ...optionArgs(
        withFlags([
          "--state-dir",
          "--scope",
          "--docker-host",
          "--http-api-token",
          "--stop-timeout",
          "--rollback-startup-timeout",
          "--log-format",
        ]),
      ),
    }),
  },
  "accept-signer": {
    meta: {
      name: "accept-signer",
      description:
        "Accepts the signer an update of the container NAME is held for: its image was signed by another signer than the one svc remembers for its repository, or is no longer signed (docs/verification.md). That signer (or its absence) becomes the repository's, written to the audit log, and the next check updates the container. When a service runs on the same state_dir with its update API, the request is handed to it (POST /v1/signers/accept, proven with the state folder's secret: no token is sent). Exit 0 when the signer is accepted, 1 when no update of NAME is held for its signer. Every option of svc --help is read; these matter here.",
    },
    args: () => ({
      name: { type: "positional", description: "The container whose held update to accept" },
      config: COMMAND_ARGS.config,
      ...optionArgs(withFlags(["--state-dir", "--scope", "--docker-host", "--trusted-root", "--log-format"])),
    }),
  },
  migrate: {
    meta: {
      name: "migrate",
      description:
        "Writes svc.toml from a running Watchtower container. It reads that container's environment, arguments and labels, writes the equivalent svc.toml (to stdout, or FILE), checks it with svc's own loader, and lists every setting it could not carry over, with the reason. The engine is SVC_DOCKER_HOST, else DOCKER_HOST, else unix:///var/run/docker.sock. No other option of svc is read.",
    },
    args: () => ({
      container: {
        type: "positional",
        required: false,
        description:
          "The Watchtower container; else the one running a containrrr/watchtower image or labelled com.centurylinklabs.watchtower=true",
      },
      output: {
        type: "string",
        alias: "o",
        valueHint: "file",
        description: "Write the configuration to FILE instead of stdout",
      },
      force: { type: "boolean", description: "With --output: overwrite an existing FILE" },
      ...optionArgs((option) => option.key.startsWith("docker.")),
    }),
  },
  healthcheck: {
    meta: {
      name: "healthcheck",
      description:
        "Exits 0 when the HTTP API answers GET /v1/health on http_api.port within 3 s, 1 otherwise. It exits 0 too when no API feature is on (nothing is meant to listen). The container image's HEALTHCHECK runs it: it reads the same configuration file and environment as svc.",
    },
    args: () => ({
      config: COMMAND_ARGS.config,
      ...optionArgs(withFlags(["--http-api-port", "--http-api-update", "--http-api-metrics"])),
    }),
  },
} satisfies Record<string, CommandDef>;

export const command = {
  meta: {
    name: "svc",
    version: VERSION,
    description:
      "Keeps running Docker containers up to date, safely. Start here: svc --generate-config svc.toml writes every option with its meaning; set when svc runs in it (poll_interval, schedule or run_once), try svc --run-once --dry-run, then run svc. Coming from Watchtower: svc migrate. Every option below is also a TOML key and an SVC_* variable: docs/configuration.md.",
  },
  args: () => ({
    names: { type: "positional", required: false, description: "Container names to update (added to --containers)" },
    ...COMMAND_ARGS,
    ...optionArgs(),
  }),
  subCommands: COMMANDS,
} satisfies CommandDef;

async function writeHelp(io: CliIO, cmd: CommandDef, parent?: CommandDef): Promise<number> {
  const { helpWidth, renderHelp } = await import("./help.ts");
  io.stdout.write(renderHelp(helpWidth(io.stdout), cmd, parent));
  return 0;
}

const defaultIO = (): CliIO => ({
  env: process.env,
  cwd: process.cwd(),
  stdout: process.stdout,
  stderr: process.stderr,
});

export async function runCli(argv: string[], io: CliIO = defaultIO()): Promise<number> {
  // `svc rollback --help` is the command's help, never a rollback
  const sub =
    argv[0] !== undefined && Object.hasOwn(COMMANDS, argv[0]) ? COMMANDS[argv[0] as keyof typeof COMMANDS] : undefined;
  // `svc help` and `svc version` as other tools have them (no container is named help or version on purpose)
  if (argv.length === 1 && argv[0] === "help") return writeHelp(io, command);
  if (argv.length === 1 && argv[0] === "version") {
    io.stdout.write(`${VERSION}\n`);
    return 0;
  }
  if (sub && argv.slice(1).some((arg) => arg === "--help" || arg === "-h")) return writeHelp(io, sub, command);
  // the first word is a command only for `healthcheck`, `migrate`, `rollback` and `accept-signer` (and the hidden
  // `handover <old id> <new id> <name>` of a self-update's helper container).
  const healthcheck = argv[0] === "healthcheck";
  const handover =
    argv[0] === "handover" && argv.length >= 4 ? { oldId: argv[1]!, newId: argv[2]!, name: argv[3]! } : undefined;
  if (argv[0] === "migrate") return runMigrateCli(argv.slice(1), io);
  const rollback = argv[0] === "rollback" ? argv[1] : undefined;
  if (argv[0] === "rollback" && (rollback === undefined || rollback.startsWith("-"))) {
    io.stderr.write("svc rollback: name the container: svc rollback NAME [options]\n");
    return exitCodeOf(new SvcError("usage", "no container named"));
  }
  const acceptSigner = argv[0] === "accept-signer" ? argv[1] : undefined;
  if (argv[0] === "accept-signer" && (acceptSigner === undefined || acceptSigner.startsWith("-"))) {
    io.stderr.write("svc accept-signer: name the container: svc accept-signer NAME [options]\n");
    return exitCodeOf(new SvcError("usage", "no container named"));
  }
  const oneOff = rollback ?? acceptSigner;
  const withData = rollback !== undefined && argv.slice(2).includes(WITH_DATA);
  const rest = healthcheck
    ? argv.slice(1)
    : handover
      ? argv.slice(4)
      : rollback
        ? argv.slice(2).filter((arg) => arg !== WITH_DATA)
        : acceptSigner
          ? argv.slice(2)
          : argv;
  const { command: flags } = parseArgv(rest);
  let config: Config | undefined;
  try {
    if (flags.help) return await writeHelp(io, command);
    if (flags.version) {
      io.stdout.write(`${VERSION}\n`);
      return 0;
    }
    if (flags.generateConfig !== undefined) return await writeSample(flags.generateConfig, flags.force, io);

    if (flags.printConfig) {
      // what can be built is printed, the problems under it (exit 2 when there are any)
      const printed = await loadConfig({
        argv: rest,
        env: io.env,
        cwd: io.cwd,
        oneOff: oneOff !== undefined,
        keepGoing: true,
      });
      io.stdout.write(printConfig(printed, await notificationSecrets(printed.config)));
      return printed.problems?.length ? exitCodeOf(new SvcError("config", "invalid configuration")) : 0;
    }
    const loaded = await loadConfig({ argv: rest, env: io.env, cwd: io.cwd, oneOff: oneOff !== undefined });
    config = loaded.config;
    // Loaded only when needed, by literal paths (bundled by `bun build --compile`): --version,
    // --help, --generate-config and the healthcheck must not pay for the engine client and the
    // HTTP framework.
    if (healthcheck) return await (await import("./healthcheck.ts")).runHealthcheck(config);
    if (handover) return await (await import("./handover.ts")).runHandoverCommand(config, handover);
    await logWarnings(loaded, io);
    if (rollback) return await (await import("./rollback.ts")).runRollback(config, rollback, { withData });
    if (acceptSigner) return await (await import("./accept-signer.ts")).runAcceptSigner(config, acceptSigner);
    const { runService } = await import("../service/index.ts");
    return await runService(config, { stateDirChosen: loaded.sources.state_dir?.source !== "default" });
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
    // a file the shell makes for `> svc.toml` is readable by everyone; the FILE form is not. The
    // note is a TOML comment, written whole before the sample: where stderr lands in the same
    // file (`2>&1`, a terminal's `docker run -t`), the file still parses.
    if (!io.stdout.isTTY)
      io.stderr.write(
        "# svc: the sample went to stdout; a file made by the shell is readable by others: svc --generate-config FILE writes it 0600\n",
      );
    io.stdout.write(sample);
    return 0;
  }
  writeRequestedFile(resolve(io.cwd, target), sample, force, target); // soon to hold secrets
  io.stderr.write(`wrote a sample configuration to ${target}\n`);
  return 0;
}

/** A logger on the console only (no log files), for the CLI's own few messages. */
async function consoleLogging(config: Config, io: CliIO) {
  const quiet: Config = { ...config, audit_log: undefined, http_api: { ...config.http_api, access_log: undefined } };
  return createLogging(logSettings(quiet), {
    stdout: io.stdout,
    stderr: io.stderr,
    secrets: await notificationSecrets(config),
  });
}

/** The secrets inside notification settings (docs/security.md), loaded only when output needs them. */
async function notificationSecrets(config: Config): Promise<string[]> {
  return (await import("../notify/secrets.ts")).notificationSecrets(config.notifications);
}

/** Warnings (and notes, at info) found while loading go through the configured logger (so json logs stay json). */
async function logWarnings(loaded: LoadResult, io: CliIO): Promise<void> {
  if (loaded.warnings.length === 0 && loaded.notes.length === 0) return;
  const logging = await consoleLogging(loaded.config, io);
  const log = logging.log.child("config");
  for (const note of loaded.notes) log.info(note);
  for (const warning of loaded.warnings) log.warn(warning);
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
async function reportFailure(
  error: unknown,
  config: Config | undefined,
  argv: readonly string[],
  io: CliIO,
): Promise<void> {
  const failure = toSvcError(error);
  const verbose = config?.log_level === "debug" || config?.log_level === "trace";
  const stack = verbose ? failure.stack : undefined;
  const format = resolveFormat(failureFormat(config, argv, io), io.stdout);
  if (format === "pretty") {
    const lines = [`svc: ${failure.message}`, ...failure.details.map((d) => `  - ${d}`), ...(stack ? [stack] : [])];
    const redact = config
      ? createRedactor([...secretValues(config), ...(await notificationSecrets(config))])
      : (text: string) => text;
    io.stderr.write(`${redact(lines.join("\n"))}\n`);
    return;
  }
  const logging = await consoleLogging(config ?? defaultConfig({ log_format: format }), io);
  const log = logging.log.child(failure.kind === "config" ? "config" : "cli");
  log.error(failure.message, { kind: failure.kind, ...(stack ? { stack } : {}) });
  for (const detail of failure.details) log.error(detail);
  await logging.close();
}
