/**
 * What GET /v1/containers answers (docs/api.md), as a schema: a peer's answer is read with it
 * (peers.ts), so what reaches the page from another host has the shape the page renders this
 * host's with. The types below are checked against the page's own (src/ui/page/api.ts) both
 * ways: a field added to one and not the other fails the typecheck.
 *
 * Each entry is parsed on its own: one that does not fit is dropped and named, the others stay
 * (docs/security.md). Fields an older svc did not send take the value the page gives them then.
 * Unknown fields are left out; every text is bounded, so no single row can take the page's memory.
 */
import { z } from "zod";
import type { ContainersAnswer } from "../ui/page/api.ts";
import { OUTCOMES } from "../updater/types.ts";

/** A name, an image reference, a digest, a version, a time: far below this. */
const text = z.string().max(1024);
/** What a person wrote or an engine said (a reason, a tag policy, a link): longer, still bounded. */
const prose = z.string().max(8192);
/** A time as svc writes it (toISOString): the page computes with it. */
const time = z.iso.datetime();
const states = z.enum(OUTCOMES);
const hooks = z.array(z.enum(["pre_check", "pre_update", "post_update", "post_check"])).max(4);

const policy = z.object({
  monitor_only: z.boolean().default(false),
  no_pull: z.boolean().default(false),
  tag_policy: prose.nullable().default(null),
  min_image_age: text.nullable().default(null),
  hooks: hooks.default([]),
  ignored_hooks: hooks.default([]),
  // an older svc has no update windows (docs/windows.md)
  update_window: prose.nullable().default(null),
});

/** What an update brings (docs/release-notes.md), within the caps the releases room keeps. */
const release = z.object({
  version: text,
  title: prose,
  published_at: time.nullable(),
  url: prose.nullable(),
  breaking: z.boolean(),
  notes: z.string().max(16 * 1024),
  notes_cut: z.boolean(),
});
const releaseNotes = z.object({
  source: prose.nullable(),
  source_from: text.nullable(),
  from_version: text.nullable(),
  to_version: text.nullable(),
  releases: z.array(release).max(50),
  more: z.number().int().min(0),
  breaking: z.number().int().min(0),
  problem: prose.nullable(),
});

/** What an update fixes and brings in (docs/vulnerabilities.md), within the caps the vulns room keeps. */
const vulnerability = z.object({
  id: text,
  aliases: z.array(text).max(5),
  summary: prose.nullable(),
  severity: z.enum(["critical", "high", "medium", "low", "unknown"]),
  score: z.number().min(0).max(10).nullable(),
  package: text,
  version: text,
  fixed_version: text.nullable(),
});
const vulnerabilityList = z.array(vulnerability).max(100);
const vulnerabilities = z.object({
  fixed: vulnerabilityList,
  introduced: vulnerabilityList,
  still_open: vulnerabilityList,
  counts: z.object({
    fixed: z.number().int().min(0),
    introduced: z.number().int().min(0),
    still_open: z.number().int().min(0),
  }),
  problem: prose.nullable(),
  passed_min_age: z.boolean().optional(),
  read_from: z.enum(["sbom", "package database"]).optional(),
});

const signature = z.object({
  status: z.enum(["verified", "unsigned", "unverified", "held"]),
  signer: prose.nullable(),
  format: z.enum(["bundle", "simple"]).nullable(),
  found_in: text.nullable(),
  digest: text.nullable().default(null),
  policy: z.enum(["enforce", "warn", "pinned"]),
  reason: prose.nullable(),
});

const container = z.object({
  kind: z.enum(["container", "service"]).default("container"),
  group: z
    .object({ kind: z.enum(["compose", "stack"]), name: text })
    .nullable()
    .default(null),
  name: text,
  image: text,
  state: states,
  would_update: z.boolean(),
  current_digest: text.nullable(),
  available_digest: text.nullable(),
  available_image: text.nullable(),
  reason: prose.nullable(),
  version: text.default(""),
  available_version: text.nullable().default(null),
  update_kind: z.enum(["digest", "patch", "minor", "major", "tag"]).nullable().default(null),
  first_seen_at: time.nullable(),
  created_at: time.nullable(),
  eligible_at: time.nullable(),
  applies_at: time.nullable().default(null),
  applies: text.nullable().default(null),
  policy: policy.default(() => policy.parse({})),
  snoozed_until: time.nullable(),
  skipped: prose.nullable(),
  previous_image_id: text.nullable(),
  link: prose.nullable(),
  last_cycle: z.object({ at: time, state: states, reason: prose.nullable() }).nullable().default(null),
  last_update: z.object({ at: time, from_version: text, to_version: text.nullable() }).nullable().default(null),
  release_notes: releaseNotes.nullable().default(null),
  compose_change: z.array(text).nullable().default(null),
  built_from: z.array(text).nullable().default(null),
  // an older svc reads no vulnerabilities
  vulnerabilities: vulnerabilities.nullable().default(null),
  // an older svc reads no signatures
  signature: signature.nullable().default(null),
});

const excluded = z.object({
  kind: z.enum(["container", "service"]).optional(),
  name: text,
  image: text,
  state: text,
  reason: prose,
});

const count = z.number().int().min(0);
const rateLimit = z.object({
  registry: text,
  remaining: count,
  limit: count.nullable(),
  window_seconds: count.nullable(),
  at: time,
  needed: count,
});

/** The answer around the entries: what it must have for any entry to mean something. */
const frame = z.object({
  checked_at: time,
  host: text,
  update: z.boolean(),
  containers: z.array(z.unknown()),
  excluded: z.array(z.unknown()).optional(),
  rate_limits: z.array(z.unknown()).optional(),
});

type Parsed = Omit<z.infer<typeof frame>, "containers" | "excluded" | "rate_limits"> & {
  containers: z.infer<typeof container>[];
  excluded?: z.infer<typeof excluded>[];
  rate_limits?: z.infer<typeof rateLimit>[];
};
// the page's type and the schema's describe the same answer, optional fields included (a
// mismatch is a type error here)
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type Entry = ContainersAnswer["containers"][number];
const sameShape: [
  Same<Parsed, ContainersAnswer>,
  Same<keyof Parsed, keyof ContainersAnswer>,
  Same<keyof z.infer<typeof container>, keyof Entry>,
] = [true, true, true];
void sameShape;

/** An answer read: the entries that fit, and what was left out (each named, with why). */
export interface ReadAnswer {
  answer: ContainersAnswer;
  dropped: string[];
}

/** undefined: not an answer of svc's GET /v1/containers at all. */
export function readContainersAnswer(raw: unknown): ReadAnswer | undefined {
  const outer = frame.safeParse(raw);
  if (!outer.success) return undefined;
  const dropped: string[] = [];
  const keep = <T>(schema: z.ZodType<T>, entries: unknown[], what: string): T[] =>
    entries.flatMap((entry, index) => {
      const parsed = schema.safeParse(entry);
      if (parsed.success) return [parsed.data];
      dropped.push(`${what} ${nameOf(entry, index)}: ${issueOf(parsed.error)}`);
      return [];
    });
  const { excluded: left, rate_limits: limits, containers, ...rest } = outer.data;
  const answer: ContainersAnswer = { ...rest, containers: keep(container, containers, "container") };
  if (left) answer.excluded = keep(excluded, left, "left-alone container");
  if (limits) answer.rate_limits = keep(rateLimit, limits, "rate limit");
  return {
    answer,
    dropped:
      dropped.length > MAX_NAMED ? [...dropped.slice(0, MAX_NAMED), `and ${dropped.length - MAX_NAMED} more`] : dropped,
  };
}

/** Dropped entries named one by one; past these, counted (an answer of junk must not make a list as long). */
const MAX_NAMED = 10;

/** How an entry is named when it is dropped: its name if it has a short one, else its place. */
function nameOf(entry: unknown, index: number): string {
  const name = (entry as { name?: unknown } | null)?.name;
  return typeof name === "string" && /^[\w.-]{1,64}$/.test(name) ? name : `#${index + 1}`;
}

function issueOf(error: z.ZodError): string {
  const issue = error.issues[0];
  return issue ? `${issue.path.join(".") || "entry"}: ${issue.message}` : "not an entry";
}
