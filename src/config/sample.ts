/**
 * Text renderings of the schema and of a loaded configuration: the commented sample
 * (`--generate-config`) and the effective configuration (`--print-config`).
 */
import { createRedactor, redactValue } from "../log/redact.ts";
import type { LoadResult } from "./load.ts";
import { describeOption, type OptionSpec, TABLES, type TableSpec } from "./options.ts";
import type { Config } from "./schema.ts";
import { redactConfig } from "./secrets.ts";
import { tomlLiteral } from "./toml.ts";
import { formatDuration } from "./values.ts";

export const UNSET_MARK = "unset by default";

function header(table: TableSpec): string[] {
  const title = `# ---- ${table.title}${table.key ? ` [${table.key}]` : " (top level)"} ----`;
  return table.key ? ["", title, "", `# [${table.key}]`] : ["", title];
}

/** The one-line meaning, with the default where it is not the literal shown below it. */
function meaningLine(option: OptionSpec): string {
  const extra = option.meta.defaultText ? ` (default: ${option.meta.defaultText})` : "";
  const secret = option.meta.secret ? " [secret]" : "";
  const values = option.meta.values ? ` (${option.meta.values.join(", ")})` : "";
  return `# ${describeOption(option)}${values}${extra}${secret}. Flag ${option.flag}, env ${option.env}.`;
}

function sampleLines(option: OptionSpec): string[] {
  const name = option.path[option.path.length - 1]!;
  const lines = [meaningLine(option)];
  if (option.meta.default !== undefined) lines.push(`# ${name} = ${tomlLiteral(option.meta.default)}`);
  else lines.push(`# ${name} = ${tomlLiteral(option.meta.example ?? "")}  # ${UNSET_MARK}`);
  if ((option.meta.kind === "credentials" || option.meta.kind === "tables") && Array.isArray(option.meta.example)) {
    // Shown indented so it stays a comment even when the line above is uncommented.
    lines.push("# Example, as an array of tables (place after the top-level options):");
    for (const entry of option.meta.example as Record<string, string>[]) {
      lines.push(`#   [[${option.key}]]`);
      for (const [field, value] of Object.entries(entry)) lines.push(`#   ${field} = ${tomlLiteral(value)}`);
    }
  }
  return lines;
}

/** The fully commented sample: valid TOML that changes nothing when used as is. */
export function generateSample(version: string): string {
  const out = [
    `# svc configuration file (written by svc ${version} --generate-config).`,
    "#",
    "# Choose one thing before anything else: when svc checks for newer images. Uncomment one of",
    '#   poll_interval = "6h"          every 6 hours',
    '#   schedule = "0 0 4 * * *"      a cron schedule (here: every day at 04:00)',
    "#   run_once = true               one cycle, then exit (for a cron job or a try)",
    "# or set update = true under [http_api] (cycles only when asked over HTTP). Without one of",
    '# them svc does not start ("nothing would ever run").',
    "#",
    "# Every option is commented out and shows its default: this file, unchanged, behaves exactly",
    "# like no file. Uncomment and edit what you need.",
    "# Precedence: command-line flag > environment variable (SVC_*) > this file > default.",
    '# Durations: "30s", "5m", "1h", "1h30m", "250ms", or a plain integer meaning seconds.',
    "# Secrets may be given as a path to a file holding the value.",
  ];
  for (const table of TABLES) {
    out.push(...header(table));
    for (const option of table.options) out.push("", ...sampleLines(option));
  }
  return `${out.join("\n")}\n`;
}

function displayValue(option: OptionSpec, value: unknown): unknown {
  return option.meta.kind === "duration" && typeof value === "number" ? formatDuration(value) : value;
}

function sourceComment(result: LoadResult, key: string): string {
  const origin = result.sources[key];
  if (!origin || origin.source === "default") return "# from default";
  return `# from ${origin.source} (${origin.where ?? origin.name})`;
}

/**
 * The effective configuration as TOML, secrets redacted, each value with where it came from.
 * `derived` are the secrets other rooms find inside values that are not secret options (a token
 * in a webhook URL's path): masked wherever they appear.
 */
export function printConfig(result: LoadResult, derived: readonly string[] = []): string {
  const config = redactConfig(result.config) as Config;
  const redact = createRedactor(derived);
  const out = ["# Effective svc configuration (svc --print-config). Secrets are redacted."];
  out.push(result.file ? `# Configuration file: ${result.file}` : "# No configuration file was read.");
  for (const table of TABLES) {
    out.push("");
    if (table.key) out.push(`[${table.key}]`);
    for (const option of table.options) {
      const name = option.path[option.path.length - 1]!;
      const value = option.path.reduce<any>((node, part) => node?.[part], config);
      const comment = sourceComment(result, option.key);
      if (result.refused?.includes(option.key))
        out.push(`# ${name}: the value ${comment.slice(2)} is refused (below); svc would not start`);
      else if (value === undefined) out.push(`# ${name} is unset  ${comment}`);
      else out.push(`${name} = ${tomlLiteral(redactValue(displayValue(option, value), redact))}  ${comment}`);
    }
  }
  if (result.problems?.length)
    out.push(
      "",
      "# svc refuses to start with this configuration:",
      ...result.problems.map((problem) => `#   - ${problem}`),
    );
  return `${out.join("\n")}\n`;
}

/** A configuration file holding `values` (option key -> value), each under its table with its meaning. */
export function configFile(values: ReadonlyMap<string, unknown>, heading: readonly string[]): string {
  const out = heading.map((line) => `# ${line}`.trimEnd());
  for (const table of TABLES) {
    const set = table.options.filter((option) => values.has(option.key));
    if (set.length === 0) continue;
    out.push("");
    if (table.key) out.push(`[${table.key}]`);
    for (const option of set)
      out.push(meaningLine(option), `${option.path[option.path.length - 1]} = ${tomlLiteral(values.get(option.key))}`);
  }
  return `${out.join("\n")}\n`;
}
