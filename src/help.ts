/**
 * `--help` of svc and of each of its commands (`svc rollback --help`, `svc migrate --help`,
 * `svc healthcheck --help`), fit to the terminal's width (80 columns when not on a terminal).
 * The options come from the schema and the command flags, as everywhere else.
 */
import { COMMAND_FLAGS, OPTIONS, describeOption, type OptionSpec } from "./config/index.ts";

export interface HelpEntry {
  /** `-c, --config <path>` */
  flags: string;
  description: string;
}

const DESCRIPTION = "Keeps running Docker containers up to date, safely.";

/** Greedy word wrap of `text` to `width` columns, each line after `indent` spaces. */
export function wrap(text: string, width: number, indent: number): string[] {
  const lines: string[] = [];
  let line = "";
  for (const word of text.split(/\s+/).filter(Boolean)) {
    if (line !== "" && indent + line.length + 1 + word.length > width) {
      lines.push(" ".repeat(indent) + line);
      line = word;
    } else {
      line = line === "" ? word : `${line} ${word}`;
    }
  }
  if (line !== "") lines.push(" ".repeat(indent) + line);
  return lines;
}

/** Flags and their descriptions: side by side when the flags are short, else the description under them. */
function entries(list: readonly HelpEntry[], width: number): string[] {
  const column = 30;
  const out: string[] = [];
  for (const { flags, description } of list) {
    const head = `  ${flags}`;
    if (head.length <= column - 2 && width >= column + 30) {
      const [first = "", ...rest] = wrap(description, width, column);
      out.push(head.padEnd(column) + first.trimStart(), ...rest);
    } else {
      out.push(head, ...wrap(description, width, 8));
    }
  }
  return out;
}

function optionEntry(option: OptionSpec): HelpEntry {
  const value = option.meta.kind === "boolean" ? "" : ` <${option.meta.kind}>`;
  const shown = option.meta.defaultText ?? (option.meta.default === undefined || (Array.isArray(option.meta.default) && option.meta.default.length === 0) ? undefined : String(option.meta.default));
  return { flags: `${option.flag}${value}`, description: `${describeOption(option)} (env ${option.env}${shown ? `; default ${shown}` : ""})` };
}

function commandFlagEntries(names: readonly string[]): HelpEntry[] {
  return names.map((name) => {
    const spec = COMMAND_FLAGS[name]!;
    const value = spec.takes === "required" ? ` <${spec.valueHint}>` : spec.takes === "optional" ? ` [${spec.valueHint}]` : "";
    return { flags: `${spec.alias ? `-${spec.alias}, ` : ""}--${name}${value}`, description: spec.description };
  });
}

const byFlag = (flags: readonly string[]): HelpEntry[] => OPTIONS.filter((o) => flags.includes(o.flag)).map(optionEntry);

interface CommandHelp {
  usage: string[];
  about: string;
  sections: [string, HelpEntry[]][];
  notes?: string;
}

const COMMANDS: Record<string, () => CommandHelp> = {
  rollback: () => ({
    usage: ["svc rollback NAME [OPTIONS]"],
    about:
      "Puts the container NAME back on the image it ran before svc's last update of it (known from state_dir), through the same protocol as an update: the current container is kept until the one on the earlier image passes the rollback checks. The digest it leaves is then skipped until a newer one appears. When a service runs on the same state_dir with its update API, the rollback is handed to it (POST /v1/rollback, with the same http_api.token). Exit 0 when the container runs the earlier image again.",
    sections: [
      ["Options that matter here (every option of svc --help is read)", [...commandFlagEntries(["config"]), ...byFlag(["--state-dir", "--scope", "--docker-host", "--http-api-token", "--stop-timeout", "--rollback-startup-timeout", "--log-format"])]],
    ],
  }),
  migrate: () => ({
    usage: ["svc migrate [CONTAINER] [--output FILE [--force]] [--docker-host URL ...]"],
    about:
      "Reads a running Watchtower container (CONTAINER, else the one running a containrrr/watchtower image or labelled com.centurylinklabs.watchtower=true): its environment, arguments and labels. Writes the equivalent svc.toml (to stdout, or FILE), checks it with svc's own loader, and lists every setting it could not carry over, with the reason.",
    sections: [
      [
        "Options",
        [
          { flags: "-o, --output <file>", description: "Write the configuration to FILE instead of stdout" },
          { flags: "--force", description: "With --output: overwrite an existing FILE" },
          ...OPTIONS.filter((o) => o.key.startsWith("docker.")).map(optionEntry),
        ],
      ],
    ],
    notes: "The engine is SVC_DOCKER_HOST, else DOCKER_HOST, else unix:///var/run/docker.sock. No other option of svc is read.",
  }),
  healthcheck: () => ({
    usage: ["svc healthcheck [OPTIONS]"],
    about:
      "Exit 0 when the HTTP API answers GET /v1/health on http_api.port within 3 s, 1 otherwise; 0 when no API feature is on (nothing is meant to listen). The container image's HEALTHCHECK runs it: it reads the same configuration file and environment as svc.",
    sections: [["Options that matter here", [...commandFlagEntries(["config"]), ...byFlag(["--http-api-port", "--http-api-update", "--http-api-metrics"])]]],
  }),
};

function render(help: CommandHelp, width: number): string {
  const out = [`Usage: ${help.usage[0]}`, ...help.usage.slice(1).map((u) => `       ${u}`), "", ...wrap(help.about, width, 0)];
  for (const [title, list] of help.sections) out.push("", `${title}:`, ...entries(list, width));
  if (help.notes) out.push("", ...wrap(help.notes, width, 0));
  return `${out.join("\n")}\n`;
}

/** The help of `svc COMMAND`, or undefined when COMMAND has none. */
export function commandHelp(name: string, width: number): string | undefined {
  const help = COMMANDS[name];
  return help && render(help(), width);
}

/** `svc --help`. */
export function mainHelp(version: string, width: number): string {
  const commands: HelpEntry[] = [
    { flags: "rollback NAME", description: "Put a container back on the image it ran before svc's last update of it" },
    { flags: "migrate [CONTAINER]", description: "Write svc.toml from a running Watchtower container" },
    { flags: "healthcheck", description: "Exit 0 when the HTTP API answers (for container healthchecks)" },
  ];
  return render(
    {
      usage: ["svc [OPTIONS] [NAMES...]", "svc COMMAND [ARGS] [OPTIONS]   (svc COMMAND --help: its own help)"],
      about: `${DESCRIPTION} (svc ${version}) NAMES: container names to update (added to --containers). Every option is also a TOML key and an SVC_* variable: docs/configuration.md.`,
      sections: [
        ["Commands", commands],
        ["Options", [...commandFlagEntries(Object.keys(COMMAND_FLAGS)), ...OPTIONS.map(optionEntry)]],
      ],
    },
    width,
  );
}

/** The width to fit: the terminal's, else 80; never under 40. */
export function helpWidth(stdout: { isTTY?: boolean; columns?: number }): number {
  return Math.max(40, stdout.isTTY && stdout.columns ? stdout.columns : 80);
}
