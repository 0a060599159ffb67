/**
 * A target of a cycle, whatever its kind (a container, a Swarm service): what is done with it is
 * the same for every kind: it is selected through its selection view (a ContainerSummary: name,
 * image, labels), its policy comes from those labels, the check gives a verdict, the verdict and
 * the policy decide its state, and it ends as one report entry. How a target is replaced is its
 * kind's business (cycle.ts: the container protocol; services.ts: Swarm's rolling update).
 */
import type { ContainerSummary } from "../engine/port.ts";
import type { Verdict } from "./check.ts";
import type { ProtocolContext } from "./context.ts";
import type { ContainerPolicy } from "./selection.ts";
import type { ContainerOutcome, ContainerReport, CycleSightings, RollbackResult, UpdateFilter } from "./types.ts";

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

/**
 * A kind of target beside containers (services.ts: Swarm services): the cycle, `svc rollback` and
 * `POST /v1/skip` go through it without knowing which kind it is.
 */
export interface TargetKind {
  /** This kind's targets a cycle selects, checked, decided and (unless a dry run) replaced: their report entries. */
  run(ctx: ProtocolContext, all: readonly ContainerSummary[], filter: UpdateFilter, options: { dryRun: boolean; toLocalTag?: boolean; seen?: CycleSightings }): Promise<ContainerReport[]>;
  /** `svc rollback NAME` for a target of this kind. undefined: none of this kind has that name. */
  rollback(ctx: ProtocolContext, name: string): Promise<RollbackResult | undefined>;
  /** The reference a target of this kind follows (`repo:tag`, as a container's Config.Image); undefined: none has that name. */
  reference(name: string): Promise<string | undefined>;
}

/** The first answer of the kinds, asked one after the other (undefined: none knows the name). */
export async function firstOfKinds<T>(kinds: readonly TargetKind[], ask: (kind: TargetKind) => Promise<T | undefined>): Promise<T | undefined> {
  for (const kind of kinds) {
    const answer = await ask(kind);
    if (answer !== undefined) return answer;
  }
  return undefined;
}
