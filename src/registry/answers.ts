/**
 * What svc reads from a registry, bounded and checked (docs/security.md): every body is read
 * through a size cap, and every JSON answer is parsed with a schema, so that a registry answering
 * too much or the wrong shape fails one container with a clear reason instead of taking svc's
 * memory or crashing further on.
 */
import { z } from "zod";
import { type JsonReadError, parseJsonBytes, readBounded, readBoundedJson } from "../core/bounded.ts";
import { SvcError } from "../core/errors.ts";

const KiB = 1024;
const MiB = 1024 * KiB;

/** The caps, each named in the error of an answer that passes it. */
export const REGISTRY_LIMITS = {
  /** manifests, indexes and image configs: the engine's own manifest limit */
  manifestBytes: 4 * MiB,
  /** a token service's answer */
  tokenBytes: 64 * KiB,
  /** one page of a tags listing */
  tagsPageBytes: 8 * MiB,
  /** tags of one repository, all pages together */
  tagsPerRepository: 100_000,
  /** an error answer (only its first error code is read) */
  errorBytes: 64 * KiB,
} as const;

export function formatBytes(bytes: number): string {
  return bytes >= MiB ? `${bytes / MiB} MiB` : `${bytes / KiB} KiB`;
}

/**
 * The body of `response`, at most `cap` bytes: a larger body (by its Content-Length, or as it
 * streams in) is cancelled and becomes a registry error naming `what` and the cap.
 */
export async function readCapped(response: Response, cap: number, what: string): Promise<Uint8Array> {
  const { bytes, overCap } = await readBounded(response, cap);
  if (overCap) throw tooLarge(what, cap);
  return bytes;
}

/** The body of `response`, at most `cap` bytes, as JSON of `schema`'s shape; anything else is a registry error naming `what`. */
export async function readAnswer<T>(response: Response, cap: number, schema: z.ZodType<T>, what: string): Promise<T> {
  return answerOrThrow(await readBoundedJson(response, cap, schema), cap, what);
}

/** `bytes` as JSON of `schema`'s shape; anything else is a registry error naming `what`. */
export function parseAnswer<T>(bytes: Uint8Array, schema: z.ZodType<T>, what: string): T {
  return answerOrThrow(parseJsonBytes(bytes, schema), bytes.byteLength, what);
}

function answerOrThrow<T>(read: { value: T } | JsonReadError, cap: number, what: string): T {
  if ("value" in read) return read.value;
  if (read.error === "over_cap") throw tooLarge(what, cap);
  if (read.error !== "not_shape") throw new SvcError("registry", `${what} is not JSON`);
  const where = read.path.length > 0 ? ` at ${read.path.join(".")}` : "";
  throw new SvcError("registry", `${what} is not what a registry answers${where}: ${read.message}`);
}

const tooLarge = (what: string, cap: number) =>
  new SvcError("registry", `${what} is larger than ${formatBytes(cap)}, the most svc reads of it`);

/** `algorithm:hex`, as the distribution spec writes digests (they go into request paths). */
export const DIGEST = /^[a-z0-9]+(?:[+._-][a-z0-9]+)*:[a-zA-Z0-9=_-]{32,256}$/;
const digest = z.string().regex(DIGEST, { error: "is not a digest" });
const text = z.string().max(256);

const indexEntry = z.object({
  digest,
  mediaType: text.optional(),
  platform: z.object({ os: text.optional(), architecture: text.optional(), variant: text.optional() }).optional(),
});

export const manifestSchema = z.object({
  mediaType: text.optional(),
  manifests: z.array(indexEntry).optional(),
  config: z.object({ digest }).optional(),
});
export type ManifestBody = z.infer<typeof manifestSchema>;
export type IndexEntry = z.infer<typeof indexEntry>;

export const imageConfigSchema = z.object({
  created: z.unknown().optional(),
  os: text.optional(),
  architecture: text.optional(),
  variant: text.optional(),
  /** the image's labels (the release notes read its OCI source and version); an odd value is dropped */
  config: z
    .looseObject({ Labels: z.record(z.string().max(512), z.unknown()).nullish() })
    .nullish()
    .catch(null),
});
export type ImageConfig = z.infer<typeof imageConfigSchema>;

/** distribution answers `"tags": null` for a repository without tags */
export const tagsPageSchema = z.object({ tags: z.array(z.string()).nullish() });

export const tokenSchema = z.object({
  token: z.string().optional(),
  access_token: z.string().optional(),
  expires_in: z.number().optional(),
  issued_at: z.string().optional(),
});

export const errorsSchema = z.object({ errors: z.array(z.object({ code: z.unknown() })).optional() });
