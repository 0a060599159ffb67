/**
 * A target of a cycle, whatever its kind (a container, a Swarm service): what is done with it is
 * the same for every kind: it is selected through its selection view (a ContainerSummary: name,
 * image, labels), its policy comes from those labels, the check gives a verdict, the verdict and
 * the policy decide its state, and it ends as one report entry. How a target is replaced is its
 * kind's business (cycle.ts: the container protocol; services.ts: Swarm's rolling update).
 */
import type { ContainerSummary } from "../engine/port.ts";
import type { Verdict } from "./check.ts";
import type { ContainerPolicy } from "./selection.ts";
import type { ContainerOutcome } from "./types.ts";

export interface TargetEntry {
  /** the target as the selection and the check see it (a service: its spec's labels, the digest it is pinned to) */
  summary: ContainerSummary;
  policy: ContainerPolicy;
  /** what the check found; absent when the target was not checked (a policy problem, a job) */
  verdict?: Verdict;
  state: ContainerOutcome;
  reason: string | null;
  startedAt: number;
  /** set once the state is final; a stale target without it is still to be replaced */
  finishedAt?: number;
}

export function newTarget(summary: ContainerSummary, policy: ContainerPolicy, startedAt = Date.now()): TargetEntry {
  return { summary, policy, state: "fresh", reason: null, startedAt };
}

export function finish(entry: TargetEntry, state: ContainerOutcome, reason: string | null): void {
  entry.state = state;
  entry.reason = reason;
  entry.finishedAt = Date.now();
}

/**
 * The verdict into the entry's state: a stale target is to be replaced (provisional: the
 * replacement decides), unless monitor-only or held (min_image_age), which stay stale with the reason.
 */
export function decide(entry: TargetEntry, verdict: Verdict): void {
  entry.verdict = verdict;
  if (verdict.state === "stale" && !entry.policy.monitorOnly && !verdict.held) {
    entry.state = "stale";
    return;
  }
  finish(entry, verdict.state, verdict.reason);
}

/** Stale targets still to be replaced (not finished by a policy, a hook or an earlier step). */
export function toReplace<E extends TargetEntry>(entries: Iterable<E>): E[] {
  return [...entries].filter((e) => e.state === "stale" && e.finishedAt === undefined);
}

/** How long the target took, up to now when it is not finished. */
export function durationOf(entry: TargetEntry, now = Date.now()): number {
  return Math.max(0, (entry.finishedAt ?? now) - entry.startedAt);
}
