/**
 * What GET /v1/data-guard answers (docs/api.md), as a schema: a peer's copies are read with it
 * (peers.ts) before they reach the page, as its containers are (containers-answer.ts). The type
 * is checked against the one svc answers with (src/dataguard/guard.ts) both ways.
 *
 * Each copy is parsed on its own: one that does not fit is dropped (and named in the log), the
 * others stay. Unknown fields are left out; every text and list is bounded.
 */
import { z } from "zod";
import type { CopyView } from "../dataguard/index.ts";

/** A name, an id, a version, an image reference, a path: far below this. */
const text = z.string().max(1024);
const time = z.iso.datetime();
const count = z.number().int().min(0);

const copy = z.object({
  container: text,
  id: text,
  bytes: count,
  created_at: time,
  age_seconds: count,
  version: text.nullable(),
  image: text,
  image_id: text.nullable(),
  superseded_at: time.nullable(),
  expires_at: time.nullable(),
  restoring: z.boolean(),
  mounts: z
    .array(
      z.object({
        destination: text,
        type: z.enum(["volume", "bind"]),
        name: text.optional(),
        bytes: count,
      }),
    )
    .max(256),
});

/** A copy per container is kept (docs/data-guard.md); far more than any host has containers. */
const MAX_COPIES = 5000;
const frame = z.object({ copies: z.array(z.unknown()).max(MAX_COPIES) });

type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const sameShape: [Same<z.infer<typeof copy>, CopyView>, Same<keyof z.infer<typeof copy>, keyof CopyView>] = [
  true,
  true,
];
void sameShape;

/** Copies named one by one when dropped; past these, counted. */
const MAX_NAMED = 10;

/** undefined: not an answer of svc's GET /v1/data-guard at all. */
export function readCopiesAnswer(raw: unknown): { copies: CopyView[]; dropped: string[] } | undefined {
  const outer = frame.safeParse(raw);
  if (!outer.success) return undefined;
  const dropped: string[] = [];
  const copies = outer.data.copies.flatMap((entry, index) => {
    const parsed = copy.safeParse(entry);
    if (parsed.success) return [parsed.data];
    const issue = parsed.error.issues[0];
    dropped.push(
      `copy #${index + 1}: ${issue ? `${issue.path.join(".") || "entry"}: ${issue.message}` : "not a copy"}`,
    );
    return [];
  });
  return {
    copies,
    dropped:
      dropped.length > MAX_NAMED ? [...dropped.slice(0, MAX_NAMED), `and ${dropped.length - MAX_NAMED} more`] : dropped,
  };
}
