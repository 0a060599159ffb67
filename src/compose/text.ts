/**
 * Text read from a compose project's files, each character knowing where it came from: the image
 * compose resolves for a service is put together from YAML scalars, `.env` values and defaults,
 * and svc may change only characters that sit side by side in one file (docs/compose.md).
 */
import { SvcError } from "../core/errors.ts";
import { readRegularFile } from "../core/files.ts";

/** A compose file or an env file larger than this is not read (a stack's files are a few KB). */
export const MAX_FILE_BYTES = 1024 * 1024;

/** Where one character of a resolved value sits: a file and an offset into its text (UTF-16 units). */
export interface Origin {
  file: string;
  offset: number;
}

/** A value with the origin of each of its characters; null: not text svc can point at (escapes, the shell). */
export interface Traced {
  text: string;
  at: (Origin | null)[];
}

export function traced(text: string, origin: Origin | null): Traced {
  return { text, at: Array.from(text, (_, i) => (origin ? { file: origin.file, offset: origin.offset + i } : null)) };
}

export function untraced(text: string): Traced {
  return traced(text, null);
}

export function concat(parts: Traced[]): Traced {
  return { text: parts.map((p) => p.text).join(""), at: parts.flatMap((p) => p.at) };
}

export function slice(value: Traced, start: number, end = value.text.length): Traced {
  return { text: value.text.slice(start, end), at: value.at.slice(start, end) };
}

/** The one run of a file that holds value[start, end), or null when those characters come from several places or none. */
export function contiguous(value: Traced, start: number, end: number): Origin | null {
  const first = value.at[start];
  if (!first || end <= start) return null;
  for (let i = start + 1; i < end; i++) {
    const here = value.at[i];
    if (!here || here.file !== first.file || here.offset !== first.offset + (i - start)) return null;
  }
  return first;
}

/**
 * A file's text, read with a cap and decoded exactly (a BOM is kept as a character, so that what
 * svc writes back starts with it again); malformed UTF-8 is refused rather than changed.
 */
export function readText(path: string, cap = MAX_FILE_BYTES): string {
  return decode(readRegularFile(path, cap), path);
}

export function decode(bytes: Uint8Array, path: string): string {
  try {
    return new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    throw new SvcError("bad_request", `${path} is not UTF-8 text`);
  }
}

/** The 1-based line of an offset, for what svc says ("compose.yaml line 12"). */
export function lineOf(text: string, offset: number): number {
  let line = 1;
  for (let i = 0; i < offset && i < text.length; i++) if (text.charCodeAt(i) === 10) line++;
  return line;
}
