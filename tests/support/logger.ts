/** The one recording logger of the test suite: every call kept, to assert what was (and never was) logged. */
import type { Fields, Logger } from "../../src/log/index.ts";

export interface RecordedLine {
  level: string;
  target: string;
  message: string;
  fields: Fields;
}

export type RecordingLogger = Logger & { lines: RecordedLine[]; text(): string };

export function recordingLogger(lines: RecordedLine[] = [], target = "svc"): RecordingLogger {
  const at =
    (level: string) =>
    (message: string, fields: Fields = {}) => {
      lines.push({ level, target, message, fields });
    };
  return {
    lines,
    trace: at("trace"),
    debug: at("debug"),
    info: at("info"),
    warn: at("warn"),
    error: at("error"),
    child: (name: string) => recordingLogger(lines, `${target}::${name}`),
    text: () => lines.map((l) => `${l.level} ${l.target} ${l.message} ${JSON.stringify(l.fields)}`).join("\n"),
  };
}
