/**
 * The thin CLI: parse, load configuration, hand over to the service. Errors print their
 * message (the stack only at debug level) and map to an exit code in errors.ts.
 */
import { defineCommand, runMain, showUsage } from "citty";
import { VERSION } from "./version.ts";

const command = defineCommand({
  meta: { name: "svc", version: VERSION, description: "Keeps running Docker containers up to date, safely." },
  args: {},
  run() {},
});

export async function runCli(argv: string[]): Promise<number> {
  if (argv.includes("--version") || argv.includes("-v")) {
    console.log(VERSION);
    return 0;
  }
  if (argv.includes("--help") || argv.includes("-h")) {
    await showUsage(command);
    return 0;
  }
  await runMain(command, { rawArgs: argv });
  return 0;
}
