/**
 * The Logger on top of consola. Every call becomes a consola log object carrying our target and
 * fields; consola filters by level and hands it to one reporter of ours, which redacts it and
 * writes it in the configured format. In pretty mode consola's own fancy/basic reporter draws it.
 */
// consola's core only: its full node build (fancy reporter, width tables, environment probes run at
// load) costs every start ~10 ms; it is required only in pretty mode, where a person is watching.
import {
  type ConsolaInstance,
  type ConsolaOptions,
  type ConsolaReporter,
  createConsola,
  type LogObject,
} from "consola/core";
import { formatJson, formatLogfmt, type LogRecord, logfmtFields } from "./format.ts";
import { type Redactor, sanitizeFields } from "./redact.ts";
import type { Fields, LevelName, Logger } from "./types.ts";

export type OutputFormat = "json" | "logfmt" | "pretty";

/** What the logs are written to: process.stdout / process.stderr, or a collector in tests. */
export interface Writable {
  write(chunk: string): unknown;
  isTTY?: boolean;
  columns?: number;
}

/** consola's numeric levels (error 0, warn 1, info 3, debug 4, trace 5). */
const CONSOLA_LEVEL: Record<LevelName, number> = { error: 0, warn: 1, info: 3, debug: 4, trace: 5 };

/** Writes finished records to stdout / stderr in one format. */
export class ConsoleSink {
  private readonly pretty: { reporter: ConsolaReporter; options: ConsolaOptions; fancy: boolean } | null = null;

  constructor(
    readonly format: OutputFormat,
    private readonly stdout: Writable,
    private readonly stderr: Writable,
  ) {
    if (format === "pretty") {
      // consola does not export its reporters: the instance it builds (fancy on a terminal) holds one.
      // (`fancy` is an option of consola's node build; its bundler-resolved types are the browser ones.)
      const fancy = stdout.isTTY === true;
      const full = require("consola") as typeof import("consola");
      const { options } = full.createConsola({ fancy } as Partial<ConsolaOptions>);
      const reporter = options.reporters[0];
      if (reporter) this.pretty = { reporter, options, fancy };
    }
  }

  /** Warnings and errors go to stderr, everything else to stdout (consola's convention). */
  write(record: LogRecord, stream: "auto" | "stdout" = "auto"): void {
    const out =
      stream === "stdout" || (record.level !== "warn" && record.level !== "error") ? this.stdout : this.stderr;
    if (this.pretty) {
      this.writePretty(record, out);
      return;
    }
    out.write(`${this.format === "json" ? formatJson(record) : formatLogfmt(record)}\n`);
  }

  private writePretty(record: LogRecord, out: Writable): void {
    const fields = logfmtFields(record.fields);
    const text = fields === "" ? record.message : `${record.message}  ${fields}`;
    const logObj: LogObject = {
      date: record.timestamp,
      level: CONSOLA_LEVEL[record.level],
      // The fancy reporter adds a stack trace of the logging call to a "trace": draw a plain line.
      type: record.level === "trace" && this.pretty!.fancy ? "verbose" : record.level,
      icon: "→",
      tag: record.target,
      args: [text],
    };
    const stream = out as NodeJS.WriteStream;
    this.pretty!.reporter.log(logObj, { options: { ...this.pretty!.options, stdout: stream, stderr: stream } });
  }
}

/**
 * The shared consola instance: level filter, no de-duplication of repeated lines (a throttled
 * line is a lost line, and its timer would keep the process alive), our reporter only.
 */
export function createCore(level: LevelName, sink: ConsoleSink, redact: Redactor): ConsolaInstance {
  const reporter: ConsolaReporter = {
    log(logObj) {
      sink.write(toRecord(logObj, redact));
    },
  };
  return createConsola({ level: CONSOLA_LEVEL[level], reporters: [reporter], throttle: 0 });
}

/** consola's types, named by our five levels. */
function levelOf(logObj: LogObject): LevelName {
  if (logObj.level <= 0) return "error";
  if (logObj.level === 1) return "warn";
  if (logObj.level <= 3) return "info";
  if (logObj.level === 4) return "debug";
  return "trace";
}

/**
 * A library's console line, formatted as console.log would. node:util is required here, on the
 * first such line, not at start: loading it cost every start about 1.5 ms.
 */
function formatForeign(args: unknown[]): string {
  const { formatWithOptions } = require("node:util") as typeof import("node:util");
  return formatWithOptions({ colors: false }, ...args);
}

function toRecord(logObj: LogObject, redact: Redactor): LogRecord {
  const ours = typeof logObj.svcTarget === "string";
  const message = ours ? String(logObj.args[0] ?? "") : formatForeign(logObj.args);
  return {
    timestamp: logObj.date,
    level: levelOf(logObj),
    // Lines that reach consola from elsewhere (a library's console.log) are labelled as such.
    target: ours ? (logObj.svcTarget as string) : "svc::console",
    message: redact(message),
    fields: sanitizeFields(logObj.svcFields as Fields | undefined, redact),
  };
}

export class ConsolaLogger implements Logger {
  constructor(
    private readonly core: ConsolaInstance,
    readonly target: string,
  ) {}

  trace(message: string, fields?: Fields): void {
    this.core.trace({ args: [message], svcTarget: this.target, svcFields: fields });
  }
  debug(message: string, fields?: Fields): void {
    this.core.debug({ args: [message], svcTarget: this.target, svcFields: fields });
  }
  info(message: string, fields?: Fields): void {
    this.core.info({ args: [message], svcTarget: this.target, svcFields: fields });
  }
  warn(message: string, fields?: Fields): void {
    this.core.warn({ args: [message], svcTarget: this.target, svcFields: fields });
  }
  error(message: string, fields?: Fields): void {
    this.core.error({ args: [message], svcTarget: this.target, svcFields: fields });
  }
  child(name: string): Logger {
    return new ConsolaLogger(this.core, `${this.target}::${name}`);
  }
}
