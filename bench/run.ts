/**
 * `bun run bench`: measures svc against baselines measured side by side in the same run, on a
 * private sandbox of its own (engine + registry), and writes bench/results/<date>.{md,json}.
 * Exits 1 when a target is missed. Not part of the test suite.
 *
 * Each case is a file of bench/cases/; `bun run bench NAME...` runs only the cases named (after
 * the build), and prints their table without writing bench/results/; `bun run bench --record
 * NAME...` writes their rows into bench/results/ in place of those cases' rows in the latest results,
 * the others kept as they were measured (results.ts).
 */
import { rmSync } from "node:fs";
import { benchBuiltServices } from "./cases/built-services.ts";
import { benchCheckCycle } from "./cases/check-cycle.ts";
import { benchDashboard } from "./cases/dashboard.ts";
import { benchDataGuardCase } from "./cases/data-guard.ts";
import { benchFootprint } from "./cases/footprint.ts";
import { benchFootprintParts } from "./cases/footprint-parts.ts";
import { benchReleaseNotes } from "./cases/release-notes.ts";
import { benchSignatures } from "./cases/signatures.ts";
import { benchSizes } from "./cases/sizes.ts";
import { benchStartup } from "./cases/startup.ts";
import { benchSwarmServices } from "./cases/swarm-services.ts";
import { benchTagPolicies } from "./cases/tag-policies.ts";
import { benchThroughput } from "./cases/throughput.ts";
import { benchUpdateCycle } from "./cases/update-cycle.ts";
import { benchVulnerabilities } from "./cases/vulnerabilities.ts";
import { benchWindowPrePull } from "./cases/window-pre-pull.ts";
import { buildBinaries, sandboxDown, sandboxUp, WORK } from "./harness.ts";
import { stopAll } from "./lib.ts";
import { measuringStep, rows, writeResults } from "./results.ts";

const steps: [string, () => void | Promise<void>][] = [
  ["build", buildBinaries],
  ["startup", benchStartup],
  ["throughput", benchThroughput],
  ["footprint", benchFootprint],
  ["footprint parts", benchFootprintParts],
  ["check cycle", benchCheckCycle],
  ["tag policies", benchTagPolicies],
  ["built services", benchBuiltServices],
  ["update cycle", benchUpdateCycle],
  ["signatures", benchSignatures],
  ["window pre-pull", benchWindowPrePull],
  ["release notes", benchReleaseNotes],
  ["vulnerabilities", benchVulnerabilities],
  ["swarm services", benchSwarmServices],
  ["dashboard", benchDashboard],
  ["data guard", benchDataGuardCase],
  ["sizes", benchSizes],
];

const recordOnly = process.argv.includes("--record");
const only = process.argv.slice(2).filter((arg) => arg !== "--record");
let failed = false;
// stopped half-way (Ctrl-C, or a time limit's TERM): what it started and its folder go too
for (const [signal, code] of [
  ["SIGINT", 130],
  ["SIGTERM", 143],
] as const) {
  process.on(signal, async () => {
    await stopAll();
    sandboxDown();
    rmSync(WORK, { recursive: true, force: true });
    process.exit(code);
  });
}
try {
  sandboxUp();
  for (const [name, step] of steps) {
    if (only.length && name !== "build" && !only.includes(name)) continue;
    const started = performance.now();
    measuringStep(name);
    try {
      await step();
    } catch (error) {
      failed = true;
      console.error(`bench: ${name} failed: ${(error as Error).stack ?? error}`);
    }
    console.log(`bench: ${name} took ${((performance.now() - started) / 1000).toFixed(1)} s`);
  }
  await writeResults(only.length > 0, recordOnly ? only : []);
} finally {
  await stopAll();
  sandboxDown();
  rmSync(WORK, { recursive: true, force: true });
}
const missed = rows.filter((r) => r.pass === false);
if (missed.length)
  console.error(`bench: ${missed.length} target(s) missed: ${missed.map((r) => r.benchmark).join("; ")}`);
process.exit(failed || missed.length ? 1 : 0);
