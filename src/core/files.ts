/**
 * Files svc reads from users (a compose project's files, a Git repository's): regular files only,
 * checked without blocking. Files svc writes that may hold secrets or decisions (the state file, --generate-config,
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
  fstatSync,
  fsyncSync,
  linkSync,
  openSync,
  readSync,
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
/**
 * Gives the written file `temporary` the name `path` unless a file has that name already (made by
 * another process meanwhile: it stays, never replaced), then removes `temporary`. A hard link, not
 * a rename: a rename would replace what is there.
 */
export function linkUnlessPresent(temporary: string, path: string): void {
  try {
    linkSync(temporary, path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
  } finally {
    rmSync(temporary, { force: true });
  }
}

export function randomHex(bytes: number): string {
  return Array.from(crypto.getRandomValues(new Uint8Array(bytes)), (b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * Opens a user's file for reading, and answers its descriptor only when it is a regular file:
 * opened with O_NONBLOCK (a FIFO's open for reading then returns at once, where a blocking one
 * waits for a writer forever and svc's API, health and schedule with it), then looked at through
 * the descriptor itself (fstat: what was opened, not what the name points to by then). A FIFO, a
 * device, a socket or a folder is refused with `${shown} is not a regular file`.
 */
export function openRegularFile(path: string, shown = path): number {
  const fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    if (!fstatSync(fd).isFile()) throw new SvcError("bad_request", `${shown} is not a regular file`);
    return fd;
  } catch (error) {
    closeSync(fd);
    throw error;
  }
}

/** A user's regular file's bytes (openRegularFile), at most `cap` of them: a longer one is refused. */
export function readRegularFile(path: string, cap: number, shown = path): Uint8Array {
  const fd = openRegularFile(path, shown);
  try {
    const size = fstatSync(fd).size;
    if (size > cap) throw new SvcError("bad_request", `${shown} is larger than ${cap} bytes`);
    const bytes = new Uint8Array(size + 1);
    let read = 0;
    for (;;) {
      const n = readSync(fd, bytes, read, bytes.length - read, null);
      if (n === 0) break;
      read += n;
      if (read > size) throw new SvcError("bad_request", `${shown} grew while svc read it`);
    }
    return bytes.subarray(0, read);
  } finally {
    closeSync(fd);
  }
}
