/**
 * docs/configuration.md, rendered from the schema (scripts/gen-docs.ts writes it; a test
 * fails when the committed file differs).
 */
import { DECLARED_LABELS } from "./labels.ts";
import { describeOption, type OptionSpec, TABLES, typeLabel } from "./options.ts";
import { tomlLiteral } from "./toml.ts";
import { svcFlagFor, switchOverSteps, type WatchtowerAlias } from "./watchtower.ts";

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
  return `| \`${option.key}\` | \`${option.flag}${valueHint}\` | \`${option.env}\` | ${cell(type)} | ${cell(defaultCell(option))} | ${cell(describeOption(option))} |`;
}

const INTRO = `# Configuration reference

<!-- Generated from src/config/schema.ts and src/config/labels.ts by \`bun run docs\` (scripts/gen-docs.ts). Do not edit by hand. -->

svc reads its configuration from three sources. Every option has all three forms:

- a TOML file: \`--config PATH\` / \`-c PATH\` / \`SVC_CONFIG\`, otherwise \`./svc.toml\` when it exists.
  A file named explicitly that does not exist is an error. \`svc --generate-config [FILE]\` writes a
  fully commented sample (add \`--force\` to overwrite an existing FILE);
- environment variables \`SVC_<KEY>\` (\`notifications.mqtt.broker\` -> \`SVC_NOTIFICATIONS_MQTT_BROKER\`);
- command-line flags \`--<key>\` (\`notifications.mqtt.broker\` -> \`--notifications-mqtt-broker\`).

Precedence: flag > environment > file > default. \`docker.host\` falls back to \`DOCKER_HOST\` before its default.
When svc runs (\`poll_interval\`, \`schedule\`, \`run_once\`) is one choice: one given on a later level replaces
those below it, with a warning saying so (\`svc --run-once\` beside a file's \`poll_interval\` runs once); two
given on one level are refused.
Arguments that are not flags are container names, added to \`containers\`.

Value forms:

- Booleans: flags \`--x\`, \`--x=true|false\`, \`--no-x\`; environment \`true/false/1/0/yes/no\` (any case); TOML booleans only.
- Durations: \`"30s"\`, \`"5m"\`, \`"1h"\`, \`"1h30m"\`, \`"250ms"\`, or a plain integer meaning seconds.
- Arrays of names (containers, hosts, addresses): separated by commas or spaces in flags and environment
  (\`--containers web,worker\`, \`SVC_DISABLE_CONTAINERS="db cache"\`), as Watchtower reads them; a TOML entry
  holds one name. Notification URLs are separated by spaces (a URL may hold commas). A repeated array flag adds
  to the list.
- \`registry_credentials\` in flags and environment: \`host=H,username=U,password=P;host=H2\`
- \`peers\` in flags and environment: \`name=N,url=U,token=T;name=N2,url=U2,token=T2\`
  (entries separated by \`;\`, fields by \`,\`; use a secret file for a value containing \`,\` or \`;\`).
- Secrets (marked below): a value that is a path to a readable file is replaced by the file's contents,
  surrounding whitespace trimmed. A value shaped like a path (starting with \`/\`, \`./\`, \`../\` or
  \`~/\`) must name a readable regular file: otherwise svc does not start (exit 2), naming the option
  and the path, rather than take the path as the secret. Secrets, and those inside notification
  URLs and headers, are redacted in logs, errors, the audit log, reports and \`--print-config\`
  (docs/security.md).
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
  out.push(...labelTables());
  return out.join("\n");
}

const code = (text: string | undefined) => (text ? `\`${text}\`` : "-");

/** The labels, as src/config/labels.ts declares them: those a container is given, then those svc writes. */
function labelTables(): string[] {
  const out = [
    "## Container labels",
    "",
    "A label on one container overrides the option it names for that container, or asks svc for what it says.",
    "Watchtower's label of the same meaning is read too; svc's own wins when both are set.",
    "",
    "| Label | Watchtower label | Meaning |",
    "|---|---|---|",
  ];
  for (const label of DECLARED_LABELS.filter((l) => !l.written)) {
    const meaning = label.option ? `${label.only ?? "overrides"} \`${label.option}\`` : label.about!;
    out.push(`| \`${label.name}\` | ${code(label.watchtower)} | ${cell(meaning)} |`);
  }
  out.push("", "svc writes these on the containers it makes:", "", "| Label | Meaning |", "|---|---|");
  for (const label of DECLARED_LABELS.filter((l) => l.written))
    out.push(`| \`${label.name}\` | ${cell(label.about!)} |`);
  out.push("");
  return out;
}

const MIGRATION_INTRO = `# Migrating from Watchtower

<!-- Generated from src/config/schema.ts, src/config/watchtower.ts and src/config/labels.ts by \`bun run docs\`. Do not edit by hand. -->

svc reads what a Watchtower user already has:

- **Labels** on your containers mean the same to svc as its own \`svc.*\` labels (table below).
  When a container has both, svc's own label wins.
- **\`WATCHTOWER_*\` variables** (and \`REPO_USER\`/\`REPO_PASS\`) are read as svc's options, in
  Watchtower's syntax (a poll interval in plain seconds, a 6-field cron schedule, a space-separated
  list of names). svc's own \`SVC_*\` variable wins when both are set, and each one read is named in
  a notice at startup with svc's own name, so you can rename them at your pace. A variable svc has no
  counterpart for is a warning, never an error.
- **\`svc migrate [CONTAINER]\`** reads a running Watchtower container (by name, or the one running
  a \`containrrr/watchtower\` image or labelled \`com.centurylinklabs.watchtower=true\`): its
  environment, its command-line arguments and its labels. It writes the equivalent \`svc.toml\`
  (\`--output FILE\`, \`--force\` to overwrite; stdout otherwise), checks it with svc's own loader, and
  lists every setting it could not carry over, with the reason.

Two flags are commands in svc: Watchtower's \`--help\` is \`svc --help\`, and \`--health-check\` is
\`svc healthcheck\` (the image's \`HEALTHCHECK\` runs it).

Differences worth knowing:

- Without \`scope\`, svc takes only containers that have no scope label; Watchtower without a scope
  takes every container.
- Watchtower's \`monitor-only\` and \`no-pull\` labels can only turn the option on unless
  \`--label-take-precedence\`; svc's labels (and these, read as svc's) win over the global option
  either way, unless \`global_takes_precedence\`.
- svc keeps the old container until its replacement passes the rollback checks, and puts it back
  when it fails; Watchtower has no rollback.
- Notifications: \`WATCHTOWER_NOTIFICATION_URL\`'s shoutrrr URLs work unchanged
  (\`notifications.urls\`), and the older \`WATCHTOWER_NOTIFICATIONS=slack msteams gotify\` with their
  variables become such URLs too; a Go template is not read (docs/notifications.md, "Coming from
  Watchtower"). \`svc migrate\` also reads them from the Watchtower container's flags.
- Lifecycle hooks run only with \`lifecycle_hooks = true\`, as Watchtower's only with
  \`--enable-lifecycle-hooks\` (which \`svc migrate\` carries over); \`svc.hooks.timeout\` can shorten
  \`hook_timeout\`, never lengthen it (docs/security.md).

## Switching over

Watchtower and svc must not run at the same time: both would update the same containers. From a
running Watchtower container (here named \`watchtower\`) to a running svc:

<!-- command: switch-over -->
\`\`\`sh
svc migrate watchtower --output svc.toml       # the file; what it could not carry over is listed
svc --config svc.toml --run-once --dry-run     # what svc would update; nothing is touched
docker stop watchtower && docker rm watchtower # two updaters on one engine race
svc --config svc.toml                          # the service; its last start line: "next check at ..."
\`\`\`

\`svc migrate --output FILE\` ends with these steps, naming your container and file:

\`\`\`text
${switchOverSteps("watchtower", "svc.toml").join("\n")}
\`\`\`

In a compose project, delete Watchtower's service and add svc's ([compose.yaml](compose.yaml), with
\`svc.toml\` mounted at \`/svc.toml\` and owned by 65532, and without \`SVC_POLL_INTERVAL\`: the
file says when), then \`docker compose up -d --remove-orphans\`.
`;

export function renderMigrationGuide(
  aliases: readonly WatchtowerAlias[],
  unmapped: Record<string, { flags: readonly string[]; reason: string }>,
): string {
  const out = [MIGRATION_INTRO, "## Labels", "", "| Watchtower label | svc label |", "|---|---|"];
  for (const { name, watchtower, written } of DECLARED_LABELS) {
    if (!written) out.push(`| ${watchtower ? `\`${watchtower}\`` : "(none)"} | \`${name}\` |`);
  }
  out.push(
    "| `com.centurylinklabs.watchtower.lifecycle.*-timeout` (minutes, per hook) | none: `svc.hooks.timeout` (a duration) is one for all four |",
    "",
  );
  out.push(
    "## Variables and flags",
    "",
    "| Watchtower variable | Watchtower flags | svc option | svc variable |",
    "|---|---|---|---|",
  );
  for (const { option, name } of aliases) {
    const flags = name.flags.map((f) => `\`${f}\``).join(", ") || "-";
    const startup =
      name.env.startsWith("WATCHTOWER_") || name.env.startsWith("REPO_") ? "" : " (read by `svc migrate` only)";
    out.push(`| \`${name.env}\`${startup} | ${flags} | \`${option.key}\` | \`${option.env}\` |`);
  }
  out.push(...rejectedFlags(aliases, unmapped));
  out.push("", "## Without a counterpart", "", "| Watchtower variable | Watchtower flags | Why |", "|---|---|---|");
  for (const [env, { flags, reason }] of Object.entries(unmapped)) {
    out.push(`| \`${env}\` | ${flags.map((f) => `\`${f}\``).join(", ") || "-"} | ${cell(reason)} |`);
  }
  out.push("");
  return out.join("\n");
}

/** The Watchtower flags svc's command line refuses, each with what to use instead (watchtowerFlagAdvice says the same). */
function rejectedFlags(
  aliases: readonly WatchtowerAlias[],
  unmapped: Record<string, { flags: readonly string[] }>,
): string[] {
  const out = [
    "",
    "## Watchtower flags on svc's command line",
    "",
    "svc's command line takes svc's own flags only (the svc option's name, as in the table above). A Watchtower",
    "flag it does not take is refused (exit 2, nothing is touched) with what to use instead:",
    "",
    "| Watchtower flag | use instead |",
    "|---|---|",
  ];
  const seen = new Set<string>();
  for (const { option, name } of aliases) {
    for (const flag of name.flags) {
      if (flag === option.flag || seen.has(flag)) continue;
      seen.add(flag);
      out.push(`| \`${flag}\` | \`${svcFlagFor({ option, name })}\` |`);
    }
  }
  for (const { flags } of Object.values(unmapped))
    for (const flag of flags) out.push(`| \`${flag}\` | none (see below) |`);
  out.push(
    "",
    "`-c` is svc's `--config`: Watchtower's `-c` (cleanup) is `--cleanup`, and svc says so when `-c` is not followed by a file.",
  );
  return out;
}
