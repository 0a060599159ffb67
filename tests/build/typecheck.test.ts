/**
 * The type checker over the whole project (src, tests, bench, scripts): the Config inferred from
 * the schema, the engine client's types and every room's use of them must agree. A type error
 * anywhere fails the suite, not only a developer's editor.
 */
import { expect, test } from "bun:test";
import { ROOT } from "./helpers.ts";

test("tsc --noEmit finds no type error", () => {
  const tsc = Bun.spawnSync(["bun", "run", "typecheck"], { cwd: ROOT, stdout: "pipe", stderr: "pipe" });
  const output = `${tsc.stdout.toString()}${tsc.stderr.toString()}`;
  expect(output).not.toContain("error TS");
  expect(tsc.exitCode).toBe(0);
}, 120_000);
