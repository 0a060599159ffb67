/**
 * The little of tar the data guard writes itself: one empty regular file (the request that
 * empties a mount, restore.ts), and reading the type of an archive's first entry (a mount that is
 * a file, not a folder, is not guarded). Everything else is the engine's own tar, kept as it comes.
 */
const BLOCK = 512;

/** A ustar archive holding one empty regular file named `name` (a single path part). */
export function emptyFileArchive(name: string, mtimeSeconds: number): Uint8Array<ArrayBuffer> {
  const bytes = new Uint8Array(BLOCK * 3); // the header, then the two zero blocks that end an archive
  const put = (text: string, at: number, length: number) =>
    bytes.set(new TextEncoder().encode(text).subarray(0, length), at);
  const octal = (value: number, length: number) => `${value.toString(8).padStart(length - 1, "0")}\0`;
  put(name, 0, 100);
  put(octal(0o600, 8), 100, 8);
  put(octal(0, 8), 108, 8);
  put(octal(0, 8), 116, 8);
  put(octal(0, 12), 124, 12);
  put(octal(mtimeSeconds, 12), 136, 12);
  put("        ", 148, 8); // the checksum counts its own field as spaces
  put("0", 156, 1);
  put("ustar\0", 257, 6);
  put("00", 263, 2);
  let sum = 0;
  for (let i = 0; i < BLOCK; i++) sum += bytes[i]!;
  put(`${sum.toString(8).padStart(6, "0")}\0 `, 148, 8);
  return bytes;
}

/** The type flag of the first entry of an archive whose first block is `header`: "5" a folder, "0" a file... */
export function firstEntryType(header: Uint8Array): string {
  if (header.length < BLOCK) return "";
  const flag = header[156]!;
  return flag === 0 ? "0" : String.fromCharCode(flag);
}

/** Whether an archive starting with this type is a folder (a PAX or GNU long-name header comes before one). */
export function startsWithFolder(type: string): boolean {
  return type === "5" || type === "x" || type === "L";
}
