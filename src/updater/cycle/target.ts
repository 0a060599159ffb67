/**
 * A target of a cycle, whatever its kind (a container, a Swarm service): what is done with it is
 * the same for every kind: it is selected through its selection view (a ContainerSummary: name,
 * image, labels), its policy comes from those labels, the check gives a verdict, the verdict and
 * the policy decide its state, and it ends as one report entry. How a target is replaced is its
 * kind's business (containers/kind.ts: the container protocol; swarm/kind.ts: Swarm's rolling update).
 */
import type { Config } from "../../config/index.ts";
import { describeMoment, describeWindows, isOpen, nextOpening, serviceTimeZone } from "../../config/window.ts";
import type { ContainerSummary, Engine } from "../../engine/port.ts";
import type { Logger } from "../../log/index.ts";
import type { Registry } from "../../registry/port.ts";
import type { ReleasesSession } from "../../releases/index.ts";
import type { Remembered } from "../../state/index.ts";
import type { SignatureCheck, SignatureReport } from "../../verify/index.ts";
import type { VulnerabilityDiff } from "../../vulns/index.ts";
import type { Checker, CheckInput, Verdict } from "../check/check.ts";
import { type ContainerPolicy, namedBy } from "../selection/selection.ts";
import type {
  ContainerOutcome,
  ContainerReport,
  CycleOptions,
  ReleaseSummary,
  RollbackOptions,
  RollbackResult,
  Trigger,
  UpdateFilter,
} from "../types.ts";
import type { ProtocolContext } from "./context.ts";
import { announce } from "./progress.ts";

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
  /** pending: when its update window next opens (null: never) */
  appliesAt?: number | null;
  /** what the update brings (cycle/notes.ts), for a stale target */
  releases?: ReleaseSummary;
  /** who signed the image it would run (cycle/signatures.ts), for a target to be replaced */
  signature?: SignatureReport;
  /** what the update fixes and brings in (docs/vulnerabilities.md), for a stale container when vulnerabilities are on */
  vulnerabilities?: VulnerabilityDiff;
}

export function newTarget(summary: ContainerSummary, policy: ContainerPolicy, startedAt = Date.now()): TargetEntry {
  return { summary, policy, state: "fresh", reason: null, startedAt };
}

export function finish(entry: TargetEntry, state: ContainerOutcome, reason: string | null, at = Date.now()): void {
  entry.state = state;
  entry.reason = reason;
  entry.finishedAt = at;
}

/**
 * A phase's word on a target it stops before its replacement: the state it ends in, why, and when
 * it was decided (the target's duration ends there). A phase returns its decisions and shares no
 * set with the others; its caller applies them in one place (applyDecisions).
 */
export interface Decision {
  name: string;
  state: ContainerOutcome;
  reason: string | null;
  at: number;
}

export function decision(name: string, state: ContainerOutcome, reason: string | null): Decision {
  return { name, state, reason, at: Date.now() };
}

/**
 * Each decision into its target's entry, and the target out of those still to replace (`going`).
 * A target no longer going was decided already: the first decision stands.
 */
export function applyDecisions(
  entries: ReadonlyMap<string, TargetEntry>,
  going: Set<string>,
  decisions: readonly Decision[],
): void {
  for (const { name, state, reason, at } of decisions) {
    const entry = entries.get(name);
    if (entry === undefined || !going.delete(name)) continue;
    finish(entry, state, reason, at);
  }
}

/**
 * The verdict into the entry's state: a stale target is to be replaced (provisional: the
 * replacement decides), unless monitor-only or held (min_image_age), which stay stale with the reason,
 * or outside its update window, which is pending.
 */
export function decide(entry: TargetEntry, verdict: Verdict, now = Date.now(), timeZone = serviceTimeZone()): void {
  entry.verdict = verdict;
  if (verdict.state === "stale" && !entry.policy.monitorOnly && !verdict.held) {
    entry.state = "stale";
    heldByWindow(entry, now, timeZone);
    return;
  }
  finish(entry, verdict.state, verdict.reason);
}

/**
 * Outside its update window a target to replace is pending, with when the window opens (docs/windows.md).
 * Asked when deciding and again at the moment of acting (a window that closed meanwhile applies nothing new).
 */
export function heldByWindow(entry: TargetEntry, now = Date.now(), timeZone = serviceTimeZone()): boolean {
  const { window } = entry.policy;
  if (window.length === 0 || isOpen(window, now, timeZone)) return false;
  const opens = nextOpening(window, now, timeZone);
  finish(
    entry,
    "pending",
    `outside its update window (${describeWindows(window)}); ${opens === null ? "the window never opens" : `applies ${describeMoment(opens, now, timeZone)}`}`,
  );
  entry.appliesAt = opens;
  return true;
}

/** A target a person named (POST /v1/update, the page's Update, `svc --run-once NAME`) is not held by a window: asking is the decision. */
export function unlessAsked(
  policy: ContainerPolicy,
  filter: UpdateFilter,
  target: Pick<ContainerSummary, "name" | "labels" | "imageId">,
): ContainerPolicy {
  return filter.container?.some((asked) => namedBy(asked, target)) ? { ...policy, window: [] } : policy;
}

/** What a report says of when a pending target lands. */
export function appliesAtOf(entry: TargetEntry): { applies_at?: string | null } {
  if (entry.state !== "pending") return {};
  return { applies_at: entry.appliesAt == null ? null : new Date(entry.appliesAt).toISOString() };
}

/** Stale targets still to be replaced (not finished by a policy, a hook or an earlier step). */
export function toReplace<E extends TargetEntry>(entries: Iterable<E>): E[] {
  return [...entries].filter((e) => e.state === "stale" && e.finishedAt === undefined);
}

/** How long the target took, up to now when it is not finished. */
export function durationOf(entry: TargetEntry, now = Date.now()): number {
  return Math.max(0, (entry.finishedAt ?? now) - entry.startedAt);
}

/** What every kind of target works with in a cycle: the rooms below, and what svc remembers per target name. */
export interface KindDeps {
  config: Config;
  engine: Engine;
  registry: Registry;
  log: Logger;
  /** digests rolled back (check/check.ts) */
  rolledBack: Remembered;
  /** when each target's newer digest was first seen (min_image_age) */
  firstSeen: Remembered;
  /** digests skipped on request (POST /v1/skip) or left by a rollback */
  skipped: Remembered;
  /** updates held back until a moment, by name (POST /v1/snooze; check/snooze.ts) */
  snoozed?: Remembered;
  /** targets (independent groups of containers, services) replaced at the same time */
  concurrency: number;
  /** the id of the container svc itself runs in, when it does */
  selfContainerId?: string;
  /** true once a graceful stop was asked for: no new replacement starts */
  draining: () => boolean;
  /** who signed a new image (docs/verification.md); absent: not asked */
  signatures?: SignatureCheck;
}

/** What a cycle hands each kind. */
export interface CycleScope {
  ctx: ProtocolContext;
  /** every container the engine lists (a task container names the service svc runs as) */
  all: readonly ContainerSummary[];
  filter: UpdateFilter;
  options: CycleOptions;
  /** this cycle's view of the source hosts (cycle/notes.ts); absent: no release notes */
  releases?: ReleasesSession;
}

/** One kind's part of a cycle, once its targets are replaced. */
export interface KindCycle {
  /** svc's own target was replaced: this instance stops once the cycle is told */
  selfReplaced: boolean;
  /** what follows every kind's replacements (image cleanup, post_check hooks): nothing in a dry run */
  settle(): Promise<void>;
  /** this kind's report entries, as they stand */
  report(): ContainerReport[];
}

/**
 * A kind of target (containers/kind.ts: containers; swarm/kind.ts: Swarm services). The cycle,
 * `svc rollback`, `POST /v1/skip` and `POST /v1/snooze` go through the kinds without knowing
 * which kind a target is; how a target is replaced is its kind's own business.
 */
export interface TargetKind {
  /** Before a real cycle: what an interrupted replacement left, repaired. true: the engine's list changed. */
  repair?(all: readonly ContainerSummary[], filter: UpdateFilter): Promise<boolean>;
  /** This kind's targets the cycle selects, checked, decided and (unless a dry run) replaced. */
  run(scope: CycleScope): Promise<KindCycle>;
  /**
   * `svc rollback NAME` for a target of this kind. undefined: none of this kind has that name;
   * null: a cycle was running.
   */
  rollback(
    ctx: ProtocolContext,
    name: string,
    trigger: Trigger,
    options?: RollbackOptions,
  ): Promise<RollbackResult | null | undefined>;
  /** The reference a target of this kind follows (`repo:tag`, as a container's Config.Image); undefined: none has that name. */
  reference(name: string): Promise<string | undefined>;
}

/** The first answer of the kinds, asked one after the other (undefined: none knows the name). */
export async function firstOfKinds<T>(
  kinds: readonly TargetKind[],
  ask: (kind: TargetKind) => Promise<T | undefined>,
): Promise<T | undefined> {
  for (const kind of kinds) {
    const answer = await ask(kind);
    if (answer !== undefined) return answer;
  }
  return undefined;
}

/**
 * The check of a kind's targets, all at once (the checker groups them: one registry request per
 * image): each gets its verdict, unless its policy has a problem or its kind says why it is not
 * checked (`inputOf` answers a reason). `apply` takes the verdict into the entry (default: decide).
 */
export async function checkTargets<E extends TargetEntry>(
  ctx: ProtocolContext,
  entries: Iterable<E>,
  checker: Checker,
  inputOf: (entry: E) => CheckInput | { notChecked: string },
  apply: (entry: E, verdict: Verdict) => void = decide,
): Promise<void> {
  await Promise.all(
    [...entries].map(async (entry) => {
      if (entry.policy.problem) return finish(entry, "skipped", entry.policy.problem);
      const input = inputOf(entry);
      if ("notChecked" in input) return finish(entry, "skipped", input.notChecked);
      announce(ctx.progress, ctx, entry.summary.name, "check");
      apply(entry, await checker.check(input));
    }),
  );
}
