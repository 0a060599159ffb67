/**
 * The shape of svc's command line: each flag and positional as `--help` shows it and the parser
 * (sources.ts) reads it. The schema derives the options' (`optionArgs`), the commands add their
 * own (commands/cli.ts). Plain data: citty, which these once were, parsed none of it
 * (docs/decisions.md).
 */

/** One flag or positional argument. */
export interface ArgDef {
  type: "boolean" | "string" | "positional";
  description: string;
  /** the one-letter flag beside the long one (`o` for `-o`) */
  alias?: string;
  /** what the value is, shown as `<hint>` */
  valueHint?: string;
  /** a positional is required unless it says not */
  required?: boolean;
}

export type ArgsDef = Record<string, ArgDef>;
