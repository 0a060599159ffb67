/**
 * docs/configuration.md, rendered from the schema (scripts/gen-docs.ts writes it; a test
 * fails when the committed file differs).
 */
import { TABLES, typeLabel, type OptionSpec } from "./schema.ts";
import { tomlLiteral } from "./toml.ts";

function cell(text: string): string {
  return text.replace(/\|/g, "\\|");
}

function defaultCell(option: OptionSpec): string {
  if (option.meta.defaultText) return option.meta.defaultText;
  if (option.meta.default === undefined) return "unset";
  return `\`${tomlLiteral(option.meta.default)}\``;
}

function row(option: OptionSpec): string {
  const valueHint = option.meta.kind === "boolean" ? "" : " <value>";
  const type = typeLabel(option.meta) + (option.meta.secret ? ", secret" : "");
  return `| \`${option.key}\` | \`${option.flag}${valueHint}\` | \`${option.env}\` | ${cell(type)} | ${cell(defaultCell(option))} | ${cell(option.meta.description)} |`;
}

const INTRO = `# Configuration reference

<!-- Generated from src/config/schema.ts by \`bun run docs\` (scripts/gen-docs.ts). Do not edit by hand. -->

svc reads its configuration from three sources. Every option has all three forms:

- a TOML file: \`--config PATH\` / \`-c PATH\` / \`SVC_CONFIG\`, otherwise \`./svc.toml\` when it exists.
  A file named explicitly that does not exist is an error. \`svc --generate-config [FILE]\` writes a
  fully commented sample (add \`--force\` to overwrite an existing FILE);
- environment variables \`SVC_<KEY>\` (\`notifications.mqtt.broker\` -> \`SVC_NOTIFICATIONS_MQTT_BROKER\`);
- command-line flags \`--<key>\` (\`notifications.mqtt.broker\` -> \`--notifications-mqtt-broker\`).

Precedence: flag > environment > file > default. \`docker.host\` falls back to \`DOCKER_HOST\` before its default.
Arguments that are not flags are container names, added to \`containers\`.

Value forms:

- Booleans: flags \`--x\`, \`--x=true|false\`, \`--no-x\`; environment \`true/false/1/0/yes/no\` (any case); TOML booleans only.
- Durations: \`"30s"\`, \`"5m"\`, \`"1h"\`, \`"1h30m"\`, \`"250ms"\`, or a plain integer meaning seconds.
- Arrays: comma-separated in flags and environment (\`--containers web,worker\`); a repeated array flag adds to the list.
- \`registry_credentials\` in flags and environment: \`host=H,username=U,password=P;host=H2\`
  (entries separated by \`;\`, fields by \`,\`; use a secret file for a value containing \`,\` or \`;\`).
- Secrets (marked below): a value that is a path to a readable file is replaced by the file's contents,
  surrounding whitespace trimmed. Secrets are redacted in logs, errors and \`--print-config\`.
- TOML dates and times are rejected where a string is expected: quote them.

\`svc --print-config\` prints the effective configuration with secrets redacted and where each value came from.
Bad configuration exits with status 2 before anything is touched, listing every problem found.
Environment variables starting with \`SVC_TEST_\` or \`SVC_SANDBOX_\` are reserved for svc's test suite and ignored.
`;

export function renderDocs(): string {
  const out = [INTRO];
  for (const table of TABLES) {
    out.push(`## ${table.title}${table.key ? ` (\`[${table.key}]\`)` : " (top level)"}`, "");
    out.push("| TOML key | Flag | Environment | Type | Default | Meaning |", "|---|---|---|---|---|---|");
    for (const option of table.options) out.push(row(option));
    out.push("");
  }
  return out.join("\n");
}
