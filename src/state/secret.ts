/**
 * The state folder's secret: 32 random bytes svc makes once, in a file only svc's user may read
 * (`secret.key`, 0600, in a folder checkStateDir passed), and keys its seals with. A key is never
 * the secret itself: each use derives its own (`derivedKey`), so a seal of one kind cannot pass
 * for another. The data guard seals each copy's manifest with one (dataguard/store.ts), so that a
 * copy is restored only when svc wrote it (docs/security.md).
 *
 * Made as the state file is (core/files.ts): written under an unpredictable name, exclusively,
 * never through a link; then linked to its name, which fails when another process made it first
 * (both then use the first one's). Read without following a link, and refused unless it is a
 * file of svc's user's that nobody else may read.
 */
import { closeSync, constants, fstatSync, openSync, readSync } from "node:fs";
import { join } from "node:path";
import { SvcError } from "../core/errors.ts";
import { linkUnlessPresent, PRIVATE_MODE, randomHex, writeFileAtomically } from "../core/files.ts";

export const SECRET_FILE = "secret.key";
const SECRET_HEX = 64;

/** The secret of the folder `dir` (made now when it has none). Throws SvcError("startup") naming the fault. */
export function stateSecret(dir: string): Uint8Array {
  const file = join(dir, SECRET_FILE);
  const read = readSecret(file);
  if (read) return read;
  const temporary = join(dir, `.${SECRET_FILE}.${randomHex(8)}.new`);
  // the temporary name is only ever made here, exclusively; rename is not used: it would replace a secret another process just made
  writeFileAtomically(temporary, `${randomHex(SECRET_HEX / 2)}\n`);
  linkUnlessPresent(temporary, file);
  const made = readSecret(file);
  if (!made) throw new SvcError("startup", `${file} could not be made`);
  return made;
}

/** The key of one use of the secret: HMAC-SHA256 of the use's name under the secret. */
export function derivedKey(secret: Uint8Array, use: string): Uint8Array {
  return new Uint8Array(new Bun.CryptoHasher("sha256", secret).update(`svc ${use}`).digest());
}

/** The secret, or null when there is no file yet; throws when the file is not one svc made. */
function readSecret(file: string): Uint8Array | null {
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return null;
    throw new SvcError("startup", `${file} cannot be read (${code === "ELOOP" ? "it is a link" : code})`);
  }
  try {
    const stat = fstatSync(fd);
    const own = process.getuid?.();
    if (!stat.isFile()) throw new SvcError("startup", `${file} is not a file`);
    if (own !== undefined && stat.uid !== own)
      throw new SvcError("startup", `${file} belongs to another user (uid ${stat.uid})`);
    if ((stat.mode & 0o077) !== 0 || (stat.mode & 0o777 & ~PRIVATE_MODE) !== 0)
      throw new SvcError("startup", `${file} can be read by other users (mode ${(stat.mode & 0o777).toString(8)})`);
    const buffer = Buffer.alloc(SECRET_HEX + 2);
    const length = readSync(fd, buffer, 0, buffer.length, 0);
    const text = buffer.subarray(0, length).toString("latin1").trim();
    if (!/^[0-9a-f]{64}$/.test(text)) throw new SvcError("startup", `${file} is not a secret svc made`);
    return new Uint8Array(Buffer.from(text, "hex"));
  } finally {
    closeSync(fd);
  }
}
