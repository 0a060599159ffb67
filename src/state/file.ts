/**
 * The one way the state room keeps a file (state.json, history.json): written atomically through
 * the safe writer (src/core/files.ts: an unpredictable temporary file, never through a symlink); a folder that cannot be written is one warning, and
 * svc goes on in memory; a file that cannot be used is kept aside with a warning and svc starts
 * fresh, never a crash.
 */
import { existsSync, mkdirSync, readFileSync, renameSync, statSync } from "node:fs";
import { writeFileAtomically } from "../core/files.ts";
import type { Logger } from "../log/index.ts";

/** A writer of `file`; after a failure it warns once (`what` names what is then kept in memory) and writes no more. */
export function atomicWriter(
  dir: string | undefined,
  file: string | undefined,
  log: Logger,
  what: string,
): (text: string) => void {
  let writable = dir !== undefined && file !== undefined;
  return (text) => {
    if (!writable || file === undefined || dir === undefined) return;
    try {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      writeFileAtomically(file, text);
    } catch (error) {
      writable = false;
      log.warn(`cannot write the ${what} file: kept in memory until svc restarts`, {
        file,
        error: (error as Error).message,
      });
    }
  };
}

/** `<name>.json`, or `<name>-<scope>.json` for a scoped instance (characters unsafe in a file name as `_`). */
export function scopedFileName(name: string, scope: string | undefined): string {
  return scope === undefined ? `${name}.json` : `${name}-${scope.replace(/[^A-Za-z0-9._-]/g, "_")}.json`;
}

/** Files larger than this are not read: 10 000 reports of a few hundred containers stay well under it. */
export const MAX_FILE_BYTES = 256 * 1024 * 1024;

/** `parse` of the file's text; `fresh()` when there is no file, or when it cannot be used (then kept aside). */
export function readOrSetAside<T>(
  file: string,
  parse: (text: string) => T,
  fresh: () => T,
  log: Logger,
  what: string,
): T {
  if (!existsSync(file)) {
    log.info(`no ${what} file yet: starting fresh`, { file });
    return fresh();
  }
  try {
    if (statSync(file).size > MAX_FILE_BYTES) throw new Error(`larger than ${MAX_FILE_BYTES / 1024 / 1024} MiB`);
    return parse(readFileSync(file, "utf8"));
  } catch (error) {
    const aside = `${file}.unreadable-${Date.now()}`;
    try {
      renameSync(file, aside);
    } catch {
      // kept where it is; the next save replaces it
    }
    log.warn(`the ${what} file cannot be used: starting fresh (the file is kept aside)`, {
      file,
      kept_as: aside,
      error: (error as Error).message,
    });
    return fresh();
  }
}
