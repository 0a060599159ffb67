/** How the page words times, versions and policies. Pure: everything here returns text. */

import { fromNow as momentFromNow } from "../../core/moments.ts";
import { type Bucket, inBucket } from "../summary.ts";
import type { ContainerOverview, QueuedRequest, RateLimitView, RunningCycle } from "./api.ts";

/** "3 h ago", "in 2 d": the one wording of moments svc uses everywhere (core/moments.ts). */
export function fromNow(iso: string, now = Date.now()): string {
  const at = Date.parse(iso);
  return Number.isFinite(at) ? momentFromNow(at, now) : iso;
}

export function localTime(iso: string): string {
  return new Date(iso).toLocaleString();
}

/** The policy as a few short phrases. */
export function policyWords(c: ContainerOverview): string[] {
  const words = [c.policy.monitor_only ? "monitor only" : "automatic"];
  if (c.policy.tag_policy) words.push(`tags: ${c.policy.tag_policy}`);
  if (c.policy.min_image_age) words.push(`min age ${c.policy.min_image_age}`);
  if (c.policy.no_pull) words.push("no pull");
  if (c.policy.update_window) words.push(`window: ${c.policy.update_window}`);
  if (c.policy.hooks.length) words.push(`hooks: ${c.policy.hooks.join(", ")}`);
  // a service's hook labels: Swarm runs its tasks, svc runs no hook in them
  if (c.policy.ignored_hooks?.length)
    words.push(`hooks not applied to a service: ${c.policy.ignored_hooks.join(", ")}`);
  return words;
}

/** When the newer image was seen and when it may be applied. */
export function ageWords(c: ContainerOverview, now = Date.now()): string | null {
  const parts: string[] = [];
  if (c.created_at) parts.push(`built ${fromNow(c.created_at, now)}`);
  else if (c.first_seen_at) parts.push(`seen ${fromNow(c.first_seen_at, now)}`);
  if (c.eligible_at)
    parts.push(Date.parse(c.eligible_at) > now ? `eligible ${fromNow(c.eligible_at, now)}` : "eligible now");
  return parts.length ? parts.join(", ") : null;
}

/** "An update cycle is running (api): web: pull, since 3 seconds ago." for the step under way. */
export function progressWords(running: RunningCycle, now = Date.now()): string {
  const trigger = running.trigger ? ` (${running.trigger})` : "";
  if (!running.current) return `svc is listing containers for a cycle or a check${trigger}.`;
  // a check (a dry run, or a cycle before it updates anything) only ever checks
  const what = running.containers.every((step) => step.step === "check")
    ? "svc is checking for newer images"
    : "An update cycle is running";
  return `${what}${trigger}: ${running.current.container}: ${running.current.step}, since ${fromNow(running.current.at, now)}.`;
}

/** "Queued: an update of web, db (asked 5 seconds ago); it runs once the cycle under way ends." */
export function queuedWords(queued: QueuedRequest, now = Date.now()): string {
  const names = [...queued.filter.container, ...(queued.filter.stack ?? [])];
  const images = queued.filter.image.map((prefix) => `the images ${prefix}`);
  const what = [...names, ...images];
  return `Queued: an update of ${what.length ? what.join(", ") : "everything stale"} (asked ${fromNow(queued.asked_at, now)}); it runs once the cycle under way ends.`;
}

/** Whether a container matches the search and the filters. */
export interface Filters {
  search: string;
  state: string;
  host: string;
  onlyUpdates: boolean;
  /** a count of the summary bar, pressed: only the rows it counted */
  bucket: Bucket | "";
}

export function matches(c: ContainerOverview & { host: string }, filters: Filters): boolean {
  if (filters.search && !c.name.toLowerCase().includes(filters.search.toLowerCase())) return false;
  if (filters.state && c.state !== filters.state) return false;
  if (filters.host && c.host !== filters.host) return false;
  if (filters.onlyUpdates && c.available_version === null) return false;
  if (filters.bucket && !inBucket(c, filters.bucket)) return false;
  return true;
}

// ---- registry rate limits ----

const REGISTRY_NAMES: Record<string, string> = { "docker.io": "Docker Hub" };

/** "Docker Hub: 87 of 100 requests left (per 6 h)"; with fewer left than a check asks for, the warning. */
export function rateLimitWords(limit: RateLimitView): { text: string; low: boolean } {
  const name = REGISTRY_NAMES[limit.registry] ?? limit.registry;
  const of = limit.limit === null ? "" : ` of ${limit.limit}`;
  const window = limit.window_seconds ? ` (per ${durationWords(secondsWords(limit.window_seconds))})` : "";
  const low = limit.remaining < limit.needed;
  const text = `${name}: ${limit.remaining}${of} requests left${window}`;
  const images = limit.needed === 1 ? "1 image" : `${limit.needed} images`;
  return { text: low ? `${text}: a check asks for ${images} there and would run out` : text, low };
}

/** 21600 -> "6h", 90 -> "1m30s": a window as options write durations. */
function secondsWords(seconds: number): string {
  const parts: string[] = [];
  for (const [unit, size] of [
    ["d", 86_400],
    ["h", 3_600],
    ["m", 60],
    ["s", 1],
  ] as const) {
    const count = Math.floor(seconds / size);
    if (count > 0) parts.push(`${count}${unit}`);
    seconds -= count * size;
  }
  return parts.join("") || "0s";
}

// ---- words instead of raw values ----

const FULL_DIGEST = /sha256:([0-9a-f]{12})[0-9a-f]{52}/g;
// "at", "from", "until" before a time read wrong before "in 3 days" / "2 hours ago": dropped
const ISO_TIME = /(?:\b(?:at|from|until) )?\b(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:Z|[+-]\d{2}:\d{2}))/g;

/** A text from svc as a person reads it: digests short, times relative ("in 3 days"). */
export function plainText(text: string, now = Date.now()): string {
  return text.replace(FULL_DIGEST, "sha256:$1").replace(ISO_TIME, (_match, iso: string) => fromNow(iso, now));
}

/** "sha256:" and 12 hex digits; anything else as it is. */
export function shortDigest(digest: string): string {
  return digest.replace(FULL_DIGEST, "sha256:$1");
}

/** "72h" -> "72 h", "1h30m" -> "1 h 30 m": a duration as options write it, spaced for reading. */
export function durationWords(duration: string): string {
  return duration.replace(/(\d+)([a-z]+)/g, "$1 $2 ").trim();
}

/** "1.5 GiB": a size as svc says it everywhere (config/values.ts). */
export { formatSize as sizeWords } from "../../config/values.ts";

/** "Sat 02:00": a time within a week or so, as a person says it. */
export function dayTime(iso: string): string {
  return new Date(iso).toLocaleString(undefined, { weekday: "short", hour: "2-digit", minute: "2-digit" });
}

/** What the page says of a state: a few plain words, and (when there is one) the why beside them. */
export interface StateWords {
  text: string;
  detail: string | null;
  /** how it is coloured: an update to apply, one held back, fine, or gone wrong */
  tone: "update" | "held" | "ok" | "bad" | "muted";
  /** an address the words point at (the pull request a compose move went into), drawn as a link */
  link?: { href: string; text: string };
}

/** The pull request a compose move went into (`[compose] git = "pull_request"`, docs/compose.md): its address at the reason's end. */
const PROPOSED = /^newer tag (\S+) proposed in a pull request: (\S+)$/;

/** The fields of a row the words are made of (a peer's older svc may lack some). */
export type Worded = Pick<ContainerOverview, "state" | "reason" | "would_update" | "snoozed_until" | "eligible_at"> &
  Partial<Pick<ContainerOverview, "applies" | "compose_change">> & { policy?: Partial<ContainerOverview["policy"]> };

/**
 * A row's state in plain language ("update available", "held: min age 72 h, eligible in 3
 * days"). The page's own check is a dry run: its "would be updated (dry run)" is said as "update
 * available", never as if the person had asked for a dry run.
 */
export function stateWords(c: Worded, now = Date.now()): StateWords {
  const reason = c.reason ? plainText(c.reason, now) : null;
  switch (c.state as string) {
    case "fresh":
      return { text: "up to date", detail: null, tone: "ok" };
    case "updated":
      return { text: "updated", detail: null, tone: "ok" };
    case "failed":
      return { text: "update failed", detail: reason, tone: "bad" };
    case "rolled_back":
      return { text: "rolled back", detail: reason, tone: "bad" };
    case "skipped":
      return skippedWords(c.reason ?? "", reason);
    case "stale":
      return staleWords(c, reason, now);
    case "pending":
      // held by its update window (docs/windows.md), said as svc reads the time (TZ)
      // (the reason's own "; applies ..." is the text already)
      return {
        text: c.applies ? `applies ${c.applies}` : "pending",
        detail: c.applies ? (reason?.replace(/; applies .*$/, "") ?? null) : reason,
        tone: "held",
      };
    case "held":
      return { text: "held", detail: reason, tone: "held" };
    default:
      return { text: c.state.replace("_", " "), detail: reason, tone: "muted" };
  }
}

function staleWords(c: Worded, reason: string | null, now: number): StateWords {
  if (c.would_update)
    return {
      text: "update available",
      detail: c.compose_change?.length ? `writes ${c.compose_change.join(", ")}` : null,
      tone: "update",
    };
  if (c.snoozed_until && Date.parse(c.snoozed_until) > now)
    return {
      text: `held: snoozed until ${dayTime(c.snoozed_until)} (${fromNow(c.snoozed_until, now)})`,
      detail: null,
      tone: "held",
    };
  if (c.policy?.monitor_only) return { text: "held: monitor only", detail: null, tone: "held" };
  if (c.eligible_at && c.policy?.min_image_age && /\(min_image_age\)/.test(c.reason ?? "")) {
    const when = Date.parse(c.eligible_at) > now ? `eligible ${fromNow(c.eligible_at, now)}` : "eligible now";
    return { text: `held: min age ${durationWords(c.policy.min_image_age)}, ${when}`, detail: null, tone: "held" };
  }
  const proposed = PROPOSED.exec(c.reason ?? "");
  if (proposed)
    return {
      text: `${proposed[1]} proposed in a pull request`,
      detail: null,
      tone: "held",
      link: { href: proposed[2]!, text: "Pull request" },
    };
  // a newer tag only reported: the compose file names the tag (svc.tag_policy.compose)
  if (/the compose file names/.test(c.reason ?? ""))
    return { text: "held: the compose file names its tag", detail: reason, tone: "held" };
  return { text: "update available, held", detail: reason, tone: "held" };
}

function skippedWords(raw: string, reason: string | null): StateWords {
  if (/skipped on request/.test(raw))
    return { text: "this version skipped", detail: "waiting for a newer one", tone: "muted" };
  if (/left by a rollback/.test(raw))
    return { text: "rolled back from this version", detail: "waiting for a newer one", tone: "muted" };
  // the automatic rollback's digest (check/check.ts): checked, and kept from coming back
  if (/was rolled back before/.test(raw))
    return {
      text: "rolled back from this version",
      detail: "it failed its checks; waiting for a newer one",
      tone: "muted",
    };
  if (/^pinned by digest$/.test(raw)) return { text: "pinned by digest", detail: "svc never moves it", tone: "muted" };
  return { text: "not checked", detail: reason, tone: "muted" };
}

/** A cycle's outcome for one container, in words ("updated", "update failed (pull of ... failed)"). */
export function outcomeWords(c: { state: string; reason: string | null }): string {
  const words = stateWords({
    state: c.state as ContainerOverview["state"],
    reason: c.reason,
    would_update: false,
    snoozed_until: null,
    eligible_at: null,
  });
  const detail = words.detail ?? words.link?.href;
  return detail ? `${words.text} (${detail})` : words.text;
}

export function messageOf(failure: unknown): string {
  return failure instanceof Error ? failure.message : String(failure);
}

/** A group of rows (a compose project, a Swarm stack), as its heading and Details name it. */
export const GROUP_WORDS: Record<"compose" | "stack" | "standalone", string> = {
  compose: "compose project",
  stack: "Swarm stack",
  standalone: "",
};
