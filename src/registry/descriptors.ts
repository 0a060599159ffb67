/**
 * The shapes of what is attached to an image (docs/verification.md): OCI descriptors, manifests and
 * indexes as much as an attachment needs, and the caps of what reading them may cost.
 */
import { z } from "zod";
import { DIGEST } from "./answers.ts";

/** The caps of what an image's attachments may cost, each named in the error that passes it. */
export const ARTIFACT_LIMITS = {
  /** a referrer's manifest, a referrers index */
  manifestBytes: 256 * 1024,
  /** a signature's layer: a Sigstore bundle or a simple-signing payload */
  blobBytes: 256 * 1024,
  /** referrers read for one digest, every page together */
  referrers: 100,
  /** pages of a referrers answer followed */
  pages: 5,
} as const;

const digest = z.string().regex(DIGEST, { error: "is not a digest" });
const text = z.string().max(512);
const annotations = z.record(z.string().max(256), z.string().max(64 * 1024)).optional();

export const descriptorSchema = z.object({
  mediaType: text.optional(),
  artifactType: text.optional(),
  digest,
  size: z.number().int().nonnegative().optional(),
  annotations,
  /** an index entry's platform (the one an engine pulls is picked by it) */
  platform: z.object({ os: text.optional(), architecture: text.optional(), variant: text.optional() }).optional(),
});
export type Descriptor = z.infer<typeof descriptorSchema>;

/** An OCI manifest or index, as much of it as an attachment needs. */
export const artifactManifestSchema = z.object({
  mediaType: text.optional(),
  artifactType: text.optional(),
  config: descriptorSchema.optional(),
  layers: z.array(descriptorSchema).max(ARTIFACT_LIMITS.referrers).optional(),
  manifests: z.array(descriptorSchema).max(ARTIFACT_LIMITS.referrers).optional(),
  subject: descriptorSchema.optional(),
  annotations,
});
export type ArtifactManifest = z.infer<typeof artifactManifestSchema>;
