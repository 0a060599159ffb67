/**
 * createLogging: the one place that turns the configuration into the service's logger, audit log
 * and access-log sink, and owns the files behind them (opened at startup, reopened on SIGHUP,
 * flushed and closed on shutdown).
 */
import type { ConsolaInstance } from "consola";
import { createAccessLog } from "./access.ts";
import { createAuditLog } from "./audit.ts";
import { LogFile } from "./file.ts";
import { ConsolaLogger, ConsoleSink, createCore, type OutputFormat, type Writable } from "./logger.ts";
import { createRedactor, describeError } from "./redact.ts";
import type { AccessLog, AuditLog, LevelName, Logger } from "./types.ts";

/**
 * What the logs are built from: the log options, and the configuration's secret values, always
 * redacted (the config room derives both from the configuration: logSettings).
 */
export interface LogSettings {
  log_format: "auto" | OutputFormat;
  log_level: LevelName;
  audit_log?: string;
  access_log?: string;
  log_audit_to_stdout: boolean;
  log_access_to_stdout: boolean;
  secrets: readonly string[];
}

export interface LoggingOptions {
  /** Values to redact besides the settings' own secrets (which are always redacted). */
  secrets?: string[];
  /** Defaults to process.stdout / process.stderr. */
  stdout?: Writable;
  stderr?: Writable;
  /**
   * Take over what the process prints outside the logger, so that in json and logfmt no line is
   * raw: console.* (libraries) is routed through the logger, and an uncaught exception or
   * unhandled rejection is logged as an error before the process exits with status 1.
   * Default: on for json and logfmt. Tests that build several loggers in one process turn it off.
   */
  captureConsole?: boolean;
  /** Reopen the log files on SIGHUP (default true; only installed when a log file is configured). */
  handleSighup?: boolean;
}

export interface Logging {
  /** the root logger, target "svc" */
  log: Logger;
  audit: AuditLog;
  access: AccessLog;
  /** the format actually used ("auto" resolved) */
  format: OutputFormat;
  /** Reopens the audit and access files (what SIGHUP does). */
  reopen(): Promise<void>;
  /** Resolves when every queued audit / access line is written. */
  flush(): Promise<void>;
  /** Flushes, closes the files, removes the SIGHUP handler and gives console back. */
  close(): Promise<void>;
}

export const ROOT_TARGET = "svc";

/** `auto` is pretty for a person at a terminal and JSON for anything reading a pipe. */
export function resolveFormat(format: LogSettings["log_format"], stdout: Writable): OutputFormat {
  if (format === "auto") return stdout.isTTY === true ? "pretty" : "json";
  return format;
}

/** Throws SvcError("startup") when a log file cannot be opened. */
export function createLogging(settings: LogSettings, options: LoggingOptions = {}): Logging {
  const stdout = options.stdout ?? (process.stdout as Writable);
  const stderr = options.stderr ?? (process.stderr as Writable);
  const format = resolveFormat(settings.log_format, stdout);
  const redact = createRedactor([...settings.secrets, ...(options.secrets ?? [])]);
  const sink = new ConsoleSink(format, stdout, stderr);
  const core = createCore(settings.log_level, sink, redact);
  const log = new ConsolaLogger(core, ROOT_TARGET);

  const files: LogFile[] = [];
  const openFile = (path: string | undefined, what: string): LogFile | undefined => {
    if (!path) return undefined;
    const onError = (message: string, error: unknown) =>
      log.error(
        message,
        error ? { file: what, error: error instanceof Error ? describeError(error) : String(error) } : { file: what },
      );
    let file: LogFile;
    try {
      file = new LogFile(path, { onError });
    } catch (error) {
      // The caller never gets the files opened so far: close them here.
      for (const opened of files) void opened.close();
      throw error;
    }
    files.push(file);
    return file;
  };
  const auditFile = openFile(settings.audit_log, "audit_log");
  const accessFile = openFile(settings.access_log, "http_api.access_log");

  const toStdout = { write: (record: Parameters<ConsoleSink["write"]>[0]) => sink.write(record, "stdout") };
  const audit = createAuditLog({
    file: auditFile,
    stdout: settings.log_audit_to_stdout ? toStdout : undefined,
    redact,
  });
  const access = createAccessLog({
    file: accessFile,
    stdout: settings.log_access_to_stdout ? toStdout : undefined,
    redact,
  });

  const reopen = async (): Promise<void> => {
    await Promise.all(files.map((file) => file.reopen()));
  };
  const onSighup = (): void => {
    void reopen().then(() => log.info("log files reopened", { files: files.map((file) => file.path) }));
  };
  const handleSighup = (options.handleSighup ?? true) && files.length > 0;
  if (handleSighup) process.on("SIGHUP", onSighup);

  const capture = options.captureConsole ?? format !== "pretty";
  const releaseProcessOutput = capture ? captureProcessOutput(core, log) : () => {};

  let closed: Promise<void> | null = null;
  return {
    log,
    audit,
    access,
    format,
    reopen,
    async flush() {
      await nextTick(); // stdout copies of access entries are written on the next tick
      await Promise.all(files.map((file) => file.flush()));
    },
    close() {
      closed ??= (async () => {
        if (handleSighup) process.off("SIGHUP", onSighup);
        releaseProcessOutput();
        await nextTick();
        await Promise.all(files.map((file) => file.close()));
      })();
      return closed;
    },
  };
}

/**
 * Routes console.* through the logger and logs a crash as an error line before exiting with
 * status 1, as the runtime would after printing it raw. Returns the undo.
 */
function captureProcessOutput(core: ConsolaInstance, log: Logger): () => void {
  const onCrash = (what: string) => (error: unknown) => {
    log.error(what, {
      error: error instanceof Error ? describeError(error) : String(error),
      stack: error instanceof Error ? error.stack : undefined,
    });
    process.exit(1);
  };
  const onUncaught = onCrash("uncaught exception");
  const onUnhandled = onCrash("unhandled promise rejection");
  core.wrapConsole();
  process.on("uncaughtException", onUncaught);
  process.on("unhandledRejection", onUnhandled);
  return () => {
    core.restoreConsole();
    process.off("uncaughtException", onUncaught);
    process.off("unhandledRejection", onUnhandled);
  };
}

function nextTick(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
