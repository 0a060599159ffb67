/**
 * Bodies from outside (an API request, a registry's or a notification service's answer) are read
 * through a cap: a peer that sends more than svc needs must not take its memory (docs/security.md).
 */
import type { ZodType } from "zod";

/**
 * The most of one container label svc reads (docs/security.md): a label may be an image's, so
 * anyone's, and every parser it feeds is bounded by this before it runs.
 */
export const MAX_LABEL_CHARS = 4096;

export interface BoundedBody {
  bytes: Uint8Array<ArrayBuffer>;
  /** more than `cap` bytes were sent or announced (the rest is not read, and `bytes` is empty) */
  overCap: boolean;
}

/** Reads at most cap + 1 bytes of a request's or a response's body: enough to tell "empty", "fits" and "too large" apart. */
export async function readBounded(source: Pick<Request, "headers" | "body">, cap: number): Promise<BoundedBody> {
  const declared = Number(source.headers.get("content-length") ?? Number.NaN);
  if (source.body === null || declared === 0) return { bytes: new Uint8Array(0), overCap: false };
  if (declared > cap) {
    // nothing lost: the answer is refused as over its cap; cancelling only frees the connection
    await source.body.cancel().catch(() => {});
    return { bytes: new Uint8Array(0), overCap: true };
  }
  const reader = source.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      size += value.byteLength;
      if (size > cap) {
        // nothing lost: the answer is refused as over its cap; cancelling only frees the connection
        await reader.cancel().catch(() => {});
        return { bytes: new Uint8Array(0), overCap: true };
      }
    }
  } finally {
    reader.releaseLock();
  }
  return { bytes: Buffer.concat(chunks), overCap: false };
}

/** Why a capped JSON read gave no value; each caller says it in its own words. */
export type JsonReadError =
  | { error: "over_cap" }
  | { error: "empty" }
  | { error: "not_json" }
  /** the JSON is not of the schema's shape: its first issue */
  | { error: "not_shape"; path: readonly PropertyKey[]; message: string };

/** A body read through the cap as JSON (of `schema`'s shape when one is given), or why not. */
export async function readBoundedJson<T = unknown>(
  source: Pick<Request, "headers" | "body">,
  cap: number,
  schema?: ZodType<T>,
): Promise<{ value: T } | JsonReadError> {
  const { bytes, overCap } = await readBounded(source, cap);
  return overCap ? { error: "over_cap" } : parseJsonBytes(bytes, schema);
}

/** `bytes` (UTF-8) as JSON of `schema`'s shape, or why not: for a body already read whole. */
export function parseJsonBytes<T = unknown>(bytes: Uint8Array, schema?: ZodType<T>): { value: T } | JsonReadError {
  if (bytes.byteLength === 0) return { error: "empty" };
  return parseJsonText(new TextDecoder().decode(bytes), schema);
}

/** `text` as JSON of `schema`'s shape, or why not: a value svc kept itself (its state file's entries). */
export function parseJsonText<T = unknown>(text: string, schema?: ZodType<T>): { value: T } | JsonReadError {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return { error: "not_json" };
  }
  if (!schema) return { value: json as T };
  const parsed = schema.safeParse(json);
  if (parsed.success) return { value: parsed.data };
  const issue = parsed.error.issues[0]!;
  return { error: "not_shape", path: issue.path, message: issue.message };
}
