/** `bun run build` in a clone where `bun install` was not run says what is missing and what to run. */
import { expect, test } from "bun:test";
import { cpSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { ROOT, run, tempDir } from "./helpers.ts";

test("without node_modules the build names the missing dependencies and `bun install`", () => {
  const clone = tempDir("clone");
  try {
    for (const part of ["build.ts", "package.json", "src"])
      cpSync(join(ROOT, part), join(clone, part), { recursive: true });
    const result = run([process.execPath, join(clone, "build.ts"), "--outdir", join(clone, "dist")], { cwd: clone });
    expect(result.code).toBe(2);
    // every runtime dependency named, in package.json's order
    expect(result.stderr).toContain("the dependencies are not installed (");
    const { dependencies } = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as {
      dependencies: Record<string, string>;
    };
    expect(result.stderr).toContain(`(${Object.keys(dependencies).join(", ")} missing)`);
    expect(result.stderr).toContain("run `bun install`");
  } finally {
    rmSync(clone, { recursive: true, force: true });
  }
});
