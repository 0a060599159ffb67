/**
 * Files svc writes that may hold secrets or decisions (the state file, --generate-config,
 * svc migrate --output): created under an unpredictable name, exclusively (never through a file
 * or symlink someone placed there), readable by svc's user only, then renamed over the target,
 * which replaces the target itself (a symlink there is replaced, not followed) in one step
 * (docs/security.md).
 */
import {
  closeSync,
  constants,
  existsSync,
  fchmodSync,
  fsyncSync,
  openSync,
  renameSync,
  rmSync,
  writeSync,
} from "node:fs";
import { basename, dirname, join } from "node:path";
import { SvcError } from "./errors.ts";

export const PRIVATE_MODE = 0o600;

export function writeFileAtomically(path: string, text: string, mode = PRIVATE_MODE): void {
  const temporary = join(dirname(path), `.${basename(path)}.${randomHex(8)}.tmp`);
  const fd = openSync(
    temporary,
    constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY | constants.O_NOFOLLOW,
    mode,
  );
  try {
    try {
      fchmodSync(fd, mode); // the umask may have widened nothing, but may have narrowed: be exact
      writeSync(fd, text);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(temporary, path);
  } catch (error) {
    rmSync(temporary, { force: true });
    throw error;
  }
}

/**
 * A file a command writes where the user said (--generate-config FILE, svc migrate --output FILE):
 * one already there only with --force. `shown`: the file as the message names it.
 */
export function writeRequestedFile(path: string, text: string, force: boolean, shown = path): void {
  if (existsSync(path) && !force) throw new SvcError("usage", `${shown} already exists; add --force to overwrite it`);
  writeFileAtomically(path, text);
}

/** `bytes` random bytes in hex, from the global Web Crypto (node:crypto costs a compiled svc ~4 MiB to load). */
export function randomHex(bytes: number): string {
  return Array.from(crypto.getRandomValues(new Uint8Array(bytes)), (b) => b.toString(16).padStart(2, "0")).join("");
}
