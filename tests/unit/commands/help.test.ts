import { describe, expect, test } from "bun:test";
import { type CommandDef, renderHelp } from "../../../src/commands/help.ts";

const sub: CommandDef = {
  meta: { name: "sub", description: "Does the sub thing. Said only in its own help." },
  args: () => ({ target: { type: "positional", required: false, description: "What to do it to" } }),
};
const tool: CommandDef = {
  meta: {
    name: "tool",
    version: "1.2.3",
    description: "Does a thing, described at length so that it has to be wrapped to fit.",
  },
  args: () => ({
    file: { type: "positional", description: "The file" },
    out: { type: "string", alias: "o", valueHint: "file", description: "Where the result goes" },
    "a-flag-too-long-for-the-column": { type: "boolean", description: "Its description goes under it" },
  }),
  subCommands: {
    sub,
    internal: { meta: { name: "internal", hidden: true, description: "Never listed" } },
  },
};

describe("help laid out from a command's definition", () => {
  test("usage from the positionals, meta, arguments, visible commands with their first sentence, flags with alias and value hint; within the width", async () => {
    const help = await renderHelp(64, tool);
    const lines = help.split("\n");
    expect(lines.slice(0, 2)).toEqual(["Usage: tool FILE [OPTIONS]", "       tool COMMAND [ARGS] [OPTIONS]"]);
    expect(help).toContain("(tool 1.2.3)");
    expect(lines).toContain("  FILE                        The file");
    expect(lines).toContain("  sub [TARGET]                Does the sub thing.");
    expect(help).not.toContain("Said only");
    expect(help).not.toContain("internal");
    expect(lines).toContain("  -o, --out <file>            Where the result goes");
    expect(lines.slice(lines.indexOf("  --a-flag-too-long-for-the-column"))[1]).toBe(
      "        Its description goes under it",
    );
    expect(Math.max(...lines.map((line) => line.length))).toBeLessThanOrEqual(64);
  });

  test("a subcommand's help is named under its parent and says all of its description", async () => {
    const help = await renderHelp(80, sub, tool);
    expect(help).toStartWith("Usage: tool sub [TARGET] [OPTIONS]\n\nDoes the sub thing. Said only in its own help.\n");
    expect(help).not.toContain("1.2.3");
  });
});
