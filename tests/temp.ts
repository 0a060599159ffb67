/**
 * Temporary folders of the tests, removed when the whole run ends: helpers that make one per call
 * (a configuration loaded from an empty folder, a CLI run, a notification peer) cannot know when
 * the test that asked for it is done, and each run used to leave hundreds in /tmp.
 *
 * Preloaded (bunfig.toml), so that the afterAll below is the run's own, not one test file's; bun
 * test fires no process "exit" event to hang this on.
 */
import { afterAll } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const made: string[] = [];

afterAll(() => {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A new empty folder `<tmp>/<prefix>XXXXXX`, removed when the test run ends. */
export function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  made.push(dir);
  return dir;
}
