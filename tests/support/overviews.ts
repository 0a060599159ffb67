/**
 * Random GET /v1/containers answers for the fuzz tests of what peers answer and what the page
 * renders: entries as svc writes them, with hostile but valid text (markup, scripts, bidi marks,
 * long words), and entries broken on purpose. Each entry says whether it must be kept (what svc
 * answers, unknown fields aside) or dropped (what svc never answers): the oracle is the
 * generator's, not the schema under test.
 */
import type { ContainerOverview } from "../../src/ui/page/api.ts";
import type { Random } from "./random.ts";

export interface RandomEntry {
  entry: unknown;
  /** the entry's name when it must be kept; null when it must be dropped */
  kept: string | null;
}

const STATES = ["fresh", "stale", "updated", "failed", "skipped", "rolled_back", "held"] as const;
const HOOKS = ["pre_check", "pre_update", "post_update", "post_check"] as const;

/** Text svc may well answer: what engines and registries hand on (labels, reasons, tags). */
function hostileText(rng: Random): string {
  return rng.pick([
    "<img src=x onerror=window.__pwned=1>",
    "<script>window.__pwned=1</script>",
    '"><svg onload=window.__pwned=1>',
    "javascript:window.__pwned=1",
    "\u202eevil\u202c",
    "{{constructor.constructor('window.__pwned=1')()}}",
    "${window.__pwned=1}",
    "a".repeat(rng.int(900)),
    rng.text(rng.int(60)),
    "",
  ]);
}

const digest = (rng: Random) => `sha256:${Array.from({ length: 64 }, () => "0123456789abcdef"[rng.int(16)]).join("")}`;
const time = (rng: Random) => new Date(Date.UTC(2026, 0, 1) + rng.int(365 * 86_400_000)).toISOString();
const maybe = <T>(rng: Random, value: () => T): T | null => (rng.chance(0.5) ? value() : null);

/** One entry as svc answers it, every field of the right type, the text anything. */
export function validEntry(rng: Random, index: number): ContainerOverview {
  const state = rng.pick(STATES);
  const name = `${rng.chance(0.3) ? hostileText(rng).slice(0, 200) : "app"}-${index}`;
  return {
    kind: rng.pick(["container", "service"] as const),
    group: rng.chance(0.5)
      ? { kind: rng.pick(["compose", "stack"] as const), name: hostileText(rng).slice(0, 100) }
      : null,
    name,
    image: rng.chance(0.2) ? hostileText(rng) : `r.example/app${index}:1.${rng.int(9)}.0`,
    state,
    would_update: rng.chance(0.5),
    current_digest: maybe(rng, () => digest(rng)),
    available_digest: maybe(rng, () => digest(rng)),
    available_image: maybe(rng, () => hostileText(rng)),
    compose_change: maybe(rng, () => [hostileText(rng).slice(0, 200)]),
    built_from: maybe(rng, () => [hostileText(rng).slice(0, 200)]),
    vulnerabilities: maybe(rng, () => {
      const entry = () => ({
        id: hostileText(rng).slice(0, 100),
        aliases: [hostileText(rng).slice(0, 100)],
        summary: maybe(rng, () => hostileText(rng)),
        severity: rng.pick(["critical", "high", "medium", "low", "unknown"] as const),
        score: maybe(rng, () => rng.int(100) / 10),
        package: hostileText(rng).slice(0, 100),
        version: hostileText(rng).slice(0, 100),
        fixed_version: maybe(rng, () => hostileText(rng).slice(0, 100)),
      });
      return {
        fixed: [entry()],
        introduced: rng.chance(0.5) ? [entry()] : [],
        still_open: [],
        counts: { fixed: 1, introduced: rng.int(3), still_open: 0 },
        problem: maybe(rng, () => hostileText(rng)),
      };
    }),
    reason: maybe(rng, () => hostileText(rng)),
    version: hostileText(rng).slice(0, 128),
    available_version: maybe(rng, () => hostileText(rng).slice(0, 128)),
    update_kind: rng.pick(["digest", "patch", "minor", "major", "tag", null] as const),
    first_seen_at: maybe(rng, () => time(rng)),
    created_at: maybe(rng, () => time(rng)),
    eligible_at: maybe(rng, () => time(rng)),
    applies_at: maybe(rng, () => time(rng)),
    applies: maybe(rng, () => hostileText(rng).slice(0, 128)),
    policy: {
      monitor_only: rng.chance(0.5),
      no_pull: rng.chance(0.5),
      tag_policy: maybe(rng, () => hostileText(rng)),
      min_image_age: maybe(rng, () => "2d"),
      hooks: HOOKS.filter(() => rng.chance(0.3)),
      ignored_hooks: HOOKS.filter(() => rng.chance(0.1)),
      update_window: maybe(rng, () => hostileText(rng)),
    },
    snoozed_until: maybe(rng, () => time(rng)),
    skipped: maybe(rng, () => hostileText(rng)),
    previous_image_id: maybe(rng, () => digest(rng)),
    link: maybe(rng, () =>
      rng.pick(["https://github.com/o/r/releases/tag/v1", "javascript:window.__pwned=1", hostileText(rng)]),
    ),
    last_cycle: maybe(rng, () => ({
      at: time(rng),
      state: rng.pick(STATES),
      reason: maybe(rng, () => hostileText(rng)),
    })),
    last_update: maybe(rng, () => ({
      at: time(rng),
      from_version: hostileText(rng).slice(0, 64),
      to_version: maybe(rng, () => "2.0.0"),
    })),
    release_notes: maybe(rng, () => releaseNotes(rng)),
    // a signer's identity is anyone's text: a certificate's SAN, a registry's answer
    signature: maybe(rng, () => ({
      status: rng.pick(["verified", "unsigned", "unverified", "held"] as const),
      signer: maybe(rng, () => hostileText(rng).slice(0, 300)),
      format: rng.pick(["bundle", "simple", null] as const),
      found_in: rng.pick(["referrers API", "referrers tag", "legacy tag", null] as const),
      digest: maybe(rng, () => digest(rng)),
      policy: rng.pick(["enforce", "warn", "pinned"] as const),
      reason: maybe(rng, () => hostileText(rng)),
    })),
  };
}

/** What an update brings, its notes and links as hostile as a release host may write them. */
function releaseNotes(rng: Random): NonNullable<ContainerOverview["release_notes"]> {
  const releases = Array.from({ length: rng.int(4) }, () => ({
    version: `1.${rng.int(9)}.0`,
    title: hostileText(rng),
    published_at: maybe(rng, () => time(rng)),
    url: maybe(rng, () =>
      rng.pick(["https://github.com/o/r/releases/tag/v1", "javascript:window.__pwned=1", hostileText(rng)]),
    ),
    breaking: rng.chance(0.3),
    notes: rng.pick([
      "# Breaking\n- [x](javascript:window.__pwned=1)",
      "`<script>window.__pwned=1</script>`",
      hostileText(rng),
    ]),
    notes_cut: rng.chance(0.1),
  }));
  return {
    source: maybe(rng, () => "https://github.com/o/r"),
    source_from: maybe(rng, () => "label"),
    from_version: maybe(rng, () => "1.0.0"),
    to_version: maybe(rng, () => "2.0.0"),
    releases,
    more: rng.int(3),
    breaking: releases.filter((release) => release.breaking).length,
    problem: maybe(rng, () => hostileText(rng)),
  };
}

/** Fields an entry must have, with no value svc would fill in for an older peer. */
const REQUIRED = [
  "name",
  "image",
  "state",
  "would_update",
  "current_digest",
  "available_digest",
  "available_image",
  "reason",
  "first_seen_at",
  "created_at",
  "eligible_at",
  "snoozed_until",
  "skipped",
  "previous_image_id",
  "link",
] as const;
/** Fields an older svc did not send: an entry without them is still kept. */
const DEFAULTED = [
  "kind",
  "group",
  "version",
  "available_version",
  "update_kind",
  "policy",
  "last_cycle",
  "last_update",
  "release_notes",
  "compose_change",
  "built_from",
] as const;
/** Of another type than any field svc answers with a string or null (would_update, a boolean, takes "yes"). */
const WRONG_VALUES: unknown[] = [42, -1.5, false, { nested: "<b>x</b>" }, ["a"]];

/** A changed entry, and whether svc must still keep it. */
function mutate(rng: Random, entry: ContainerOverview): RandomEntry {
  const copy: Record<string, any> = structuredClone(entry);
  switch (rng.int(12)) {
    case 0: // unknown fields, anywhere: left out, the entry kept
      copy[rng.pick(["onclick", "__proto__x", "innerHTML", "extra"])] = hostileText(rng);
      copy.policy.surplus = { deep: [1, 2, 3] };
      return { entry: copy, kept: entry.name };
    case 1: // a field an older svc did not send
      delete copy[rng.pick(DEFAULTED)];
      return { entry: copy, kept: entry.name };
    case 2: {
      const field = rng.pick(REQUIRED);
      copy[field] = field === "would_update" ? "yes" : rng.pick(WRONG_VALUES);
      return { entry: copy, kept: null };
    }
    case 3:
      delete copy[rng.pick(REQUIRED)];
      return { entry: copy, kept: null };
    case 4: // the hooks that are not a list (the table stopped rendering on it)
      copy.policy.hooks = rng.pick(["pre_update", 7, { 0: "pre_update" }, [1]]);
      return { entry: copy, kept: null };
    case 5:
      copy.state = rng.pick(["STALE", "exploded", "", hostileText(rng) || "x"]);
      return { entry: copy, kept: null };
    case 6: // past what any field of svc's answer holds
      copy[rng.pick(["reason", "link", "skipped"])] = "x".repeat(8193 + rng.int(50_000));
      return { entry: copy, kept: null };
    case 7:
      copy.image = "i".repeat(1025 + rng.int(5000));
      return { entry: copy, kept: null };
    case 8: // a time the page cannot compute with
      copy[rng.pick(["first_seen_at", "snoozed_until", "eligible_at"])] = rng.pick([
        "yesterday",
        "2026-13-45T99:00:00Z",
        "NaN",
        hostileText(rng) || "x",
      ]);
      return { entry: copy, kept: null };
    case 9:
      copy.last_cycle = rng.pick([{ at: "soon", state: "fresh", reason: null }, "fresh", { state: "fresh" }]);
      return { entry: copy, kept: null };
    case 10:
      copy.group = rng.pick([{ kind: "helm", name: "x" }, "stack", { kind: "stack" }]);
      return { entry: copy, kept: null };
    default: // not an entry at all
      return { entry: rng.pick([null, 0, "web", [entry], true]), kept: null };
  }
}

/** `count` entries, some changed; and whether the answer around them is whole. */
export function randomEntries(rng: Random, count: number, brokenShare = 0.4): RandomEntry[] {
  return Array.from({ length: count }, (_, i) => {
    const entry = validEntry(rng, i);
    return rng.chance(brokenShare) ? mutate(rng, entry) : { entry, kept: entry.name };
  });
}

/** A whole answer around `entries`, as svc's GET /v1/containers. */
export function answerOf(entries: RandomEntry[], host = "peer-host"): Record<string, unknown> {
  return {
    checked_at: new Date().toISOString(),
    host,
    update: true,
    containers: entries.map((e) => e.entry),
    excluded: [],
  };
}
