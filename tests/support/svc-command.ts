/**
 * How the tests start svc. The test command compiles svc once for the whole run (`bun build.ts`,
 * the binary users download) and names it in SVC_TEST_BINARY: a start of the compiled binary costs
 * about a fifth of the CPU of `bun src/main.ts` (docs/testing.md), and a run starts svc some two
 * thousand times. Without it (a single file run by hand), `bun src/main.ts` of this checkout.
 */
import { join, resolve } from "node:path";

export const MAIN = join(resolve(import.meta.dir, "../.."), "src/main.ts");

export function svcCommand(): string[] {
  const binary = process.env.SVC_TEST_BINARY;
  return binary ? [binary] : ["bun", MAIN];
}
