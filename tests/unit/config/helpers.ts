/** Shared helpers of the config unit tests: temp dirs and a loader that returns problems. */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { type LoadResult, loadConfig } from "../../../src/config/index.ts";
import { isSvcError } from "../../../src/core/errors.ts";
import { tempDir as removedAtExit } from "../../temp.ts";

export function tempDir(): string {
  return removedAtExit("svc-config-test-");
}

export function writeFile(dir: string, name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

/** The minimum that makes a valid configuration: something that runs. */
export const RUNS = ["--poll-interval", "1h"];

export interface Attempt {
  argv?: string[];
  env?: Record<string, string>;
  toml?: string;
  cwd?: string;
}

export async function load({ argv = [], env = {}, toml, cwd }: Attempt): Promise<LoadResult> {
  const dir = cwd ?? tempDir();
  if (toml !== undefined) writeFile(dir, "svc.toml", toml);
  return loadConfig({ argv, env, cwd: dir });
}

/** The problems a configuration is rejected with (fails the test when it is accepted). */
export async function problems(attempt: Attempt): Promise<string[]> {
  try {
    await load(attempt);
  } catch (error) {
    if (isSvcError(error) && error.kind === "config") return [...error.details];
    throw error;
  }
  throw new Error("the configuration was accepted");
}
