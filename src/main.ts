#!/usr/bin/env bun
export {};

// `svc --version` alone answers without loading anything else (scripts and install.sh call it).
if (process.argv.length === 3 && (process.argv[2] === "--version" || process.argv[2] === "-v")) {
  const { VERSION } = await import("./core/version.ts");
  process.stdout.write(`${VERSION}\n`);
} else if (process.argv[2] === "__data-guard-helper") {
  // the data guard's helper container runs this binary as its copier (src/dataguard/helper.ts)
  const { helperMain } = await import("./dataguard/copier.ts");
  process.exitCode = helperMain(process.argv.slice(3));
} else {
  const { runCli } = await import("./commands/cli.ts");
  process.exitCode = await runCli(process.argv.slice(2));
}
