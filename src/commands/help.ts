/**
 * `--help` of svc and of each of its commands, laid out from their definitions (cli.ts: meta,
 * arguments, subcommands) and fit to the terminal's width (80 columns when not on a terminal).
 */
import type { ArgDef, ArgsDef } from "../config/args.ts";

/** A command as cli.ts declares it: its arguments built only when a help or a parse asks. */
export interface CommandDef {
  meta: { name: string; description: string; version?: string; hidden?: boolean };
  args?: () => ArgsDef;
  subCommands?: Record<string, CommandDef>;
}

interface HelpEntry {
  /** `-c, --config <path>` */
  flags: string;
  description: string;
}

/** A command with its arguments built and its hidden subcommands left out. */
interface Described {
  meta: CommandDef["meta"];
  args: [string, ArgDef][];
  subCommands: [string, Described][];
}

function describe(command: CommandDef): Described {
  const subs = Object.entries(command.subCommands ?? {}).map(([name, sub]): [string, Described] => [
    name,
    describe(sub),
  ]);
  return {
    meta: command.meta,
    args: Object.entries(command.args?.() ?? {}),
    subCommands: subs.filter(([, sub]) => !sub.meta.hidden),
  };
}

/** Greedy word wrap of `text` to `width` columns, each line after `indent` spaces. */
function wrap(text: string, width: number, indent: number): string[] {
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

/**
 * Flags and their descriptions: side by side when the flags are short and every word of the
 * description fits beside them, else the description under them.
 */
function entries(list: readonly HelpEntry[], width: number): string[] {
  const column = 30;
  const out: string[] = [];
  for (const { flags, description } of list) {
    const head = `  ${flags}`;
    const fitsBeside = width >= column + 30 && description.split(/\s+/).every((word) => column + word.length <= width);
    if (head.length <= column - 2 && fitsBeside) {
      const [first = "", ...rest] = wrap(description, width, column);
      out.push(head.padEnd(column) + first.trimStart(), ...rest);
    } else {
      out.push(head, ...wrap(description, width, 8));
    }
  }
  return out;
}

/** `NAME`, or `[NAME]` when optional (a positional is required unless it says not). */
const positionalUsage = ([name, arg]: [string, ArgDef]) =>
  arg.required === false ? `[${name.toUpperCase()}]` : name.toUpperCase();

const isPositional = ([, arg]: [string, ArgDef]) => arg.type === "positional";

function flagEntry([name, arg]: [string, ArgDef]): HelpEntry {
  const alias = arg.alias ? `-${arg.alias}, ` : "";
  return {
    flags: `${alias}--${name}${arg.valueHint ? ` <${arg.valueHint}>` : ""}`,
    description: arg.description,
  };
}

/** What a list of commands says of one: the first sentence of its description. */
const summary = (description = "") => description.split(/(?<=\.)\s/)[0]!;

function layout(command: Described, path: string, width: number): string {
  const positionals = command.args.filter(isPositional);
  const usage = [`Usage: ${[path, ...positionals.map(positionalUsage), "[OPTIONS]"].join(" ")}`];
  if (command.subCommands.length > 0) usage.push(`       ${path} COMMAND [ARGS] [OPTIONS]`);
  const version = command.meta.version ? ` (${path} ${command.meta.version})` : "";
  const out = [...usage, "", ...wrap(`${command.meta.description}${version}`, width, 0)];
  const section = (title: string, list: HelpEntry[]) =>
    list.length > 0 && out.push("", `${title}:`, ...entries(list, width));
  section(
    "Arguments",
    positionals.map(([name, arg]) => ({ flags: name.toUpperCase(), description: arg.description })),
  );
  section(
    "Commands",
    command.subCommands.map(([name, sub]) => ({
      flags: [name, ...sub.args.filter(isPositional).map(positionalUsage)].join(" "),
      description: summary(sub.meta.description),
    })),
  );
  if (command.subCommands.length > 0)
    out.push("", ...wrap(`${path} COMMAND --help prints the help of that command.`, width, 0));
  section("Options", command.args.filter((arg) => !isPositional(arg)).map(flagEntry));
  return `${out.join("\n")}\n`;
}

/** The help of `command` (a subcommand of `parent`, if given), fit to `width` columns. */
export function renderHelp(width: number, command: CommandDef, parent?: CommandDef): string {
  const described = describe(command);
  const path = [parent?.meta.name, described.meta.name].filter(Boolean).join(" ");
  return layout(described, path, width);
}

/** The width to fit: the terminal's, else 80; never under 40. */
export function helpWidth(stdout: { isTTY?: boolean; columns?: number }): number {
  return Math.max(40, stdout.isTTY && stdout.columns ? stdout.columns : 80);
}
