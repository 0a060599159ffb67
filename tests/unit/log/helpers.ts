/** Test helpers for the log room: writers that collect lines, and a logfmt parser to read lines back. */
import { type Config, type DeepPartial, defaultConfig, logSettings } from "../../../src/config/index.ts";
import { createLogging, type Logging, type LoggingOptions } from "../../../src/log/index.ts";

export class Collector {
  chunks: string[] = [];
  constructor(readonly isTTY = false) {}
  write(chunk: string): boolean {
    this.chunks.push(chunk);
    return true;
  }
  get text(): string {
    return this.chunks.join("");
  }
  get lines(): string[] {
    return this.text.split("\n").filter((l) => l !== "");
  }
  /** Every line parsed as JSON (throws on a line that is not). */
  get json(): any[] {
    return this.lines.map((l) => JSON.parse(l));
  }
}

export interface TestLogging extends Logging {
  stdout: Collector;
  stderr: Collector;
}

/** createLogging writing to collectors; console is left alone (tests share one process). */
export function testLogging(
  overrides: DeepPartial<Config> = {},
  options: LoggingOptions & { tty?: boolean } = {},
): TestLogging {
  const stdout = new Collector(options.tty ?? false);
  const stderr = new Collector(options.tty ?? false);
  const logging = createLogging(logSettings(defaultConfig(overrides)), {
    captureConsole: false,
    handleSighup: false,
    ...options,
    stdout,
    stderr,
  });
  return { ...logging, stdout, stderr };
}

/**
 * A strict logfmt reader: `key=value` pairs separated by single spaces; a value is bare (no space,
 * quote, `=` or backslash) or a JSON string literal.
 */
export function parseLogfmt(line: string): Record<string, string> {
  const out: Record<string, string> = {};
  let i = 0;
  while (i < line.length) {
    const eq = line.indexOf("=", i);
    if (eq < 0) throw new Error(`no '=' after position ${i} in ${line}`);
    const key = line.slice(i, eq);
    if (!/^[A-Za-z0-9_.:/-]+$/.test(key)) throw new Error(`bad key ${JSON.stringify(key)}`);
    let j = eq + 1;
    let value: string;
    if (line[j] === '"') {
      let k = j + 1;
      while (k < line.length && line[k] !== '"') k += line[k] === "\\" ? 2 : 1;
      value = JSON.parse(line.slice(j, k + 1));
      j = k + 1;
    } else {
      const end = line.indexOf(" ", j);
      value = line.slice(j, end < 0 ? line.length : end);
      if (/["=\\]/.test(value)) throw new Error(`unquoted value with special characters: ${value}`);
      j = end < 0 ? line.length : end;
    }
    if (key in out) throw new Error(`duplicate key ${key}`);
    out[key] = value;
    if (j < line.length) {
      if (line[j] !== " ") throw new Error(`expected a space at ${j} in ${line}`);
      j++;
    }
    i = j;
  }
  return out;
}
