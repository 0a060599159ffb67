/**
 * A channel's digest (docs/windows.md): instead of a message per cycle, one message per period
 * ("daily 08:00", "weekly Mon 08:00", time zone from TZ) with what was applied, what failed or
 * rolled back, and what is pending or stale and when it lands. A failure or a rollback is still
 * told at once (`immediate_on_failure`). The channel itself is unchanged: a digest is one more
 * SessionReport, built from the cycles of the period, that the channel renders as any other.
 */

import { z } from "zod";
import { CHANNEL_TITLES, type ChannelName, type Config } from "../config/index.ts";
import { nextStart, parseDigestPeriod, serviceTimeZone, type Window } from "../config/window.ts";
import { parseJsonText } from "../core/bounded.ts";
import { timerDelay } from "../core/timers.ts";
import type { Logger } from "../log/index.ts";
import type { Remembered } from "../state/index.ts";
import { countOutcomes } from "../updater/cycle/report.ts";
import { type ContainerOutcome, type ContainerReport, OUTCOMES, type SessionReport } from "../updater/types.ts";

export interface DigestSettings {
  moments: Window[];
  immediateOnFailure: boolean;
}

/** The digest a channel asks for, if any: a channel's table says it; every notification URL follows urls_digest. */
export function digestSettingsOf(config: Config["notifications"], channel: string): DigestSettings | undefined {
  const table = Object.hasOwn(CHANNEL_TITLES, channel)
    ? config[channel as ChannelName]
    : { digest: config.urls_digest, immediate_on_failure: config.urls_immediate_on_failure };
  if (table?.digest === undefined) return undefined;
  const parsed = parseDigestPeriod(table.digest);
  // checked at load (config/schema.ts): a value that got here parses
  if ("problem" in parsed) return undefined;
  return { moments: parsed.moments, immediateOnFailure: table.immediate_on_failure ?? true };
}

export interface Digest {
  /** Takes a finished cycle's report: kept for the period's message, and told at once when it holds a failure (with immediate_on_failure). */
  add(report: SessionReport): void;
  /** The period's message now, if it has anything to tell (then it starts again; kept for a later try when it cannot be sent). */
  sendNow(): Promise<void>;
  /** Stops the timer; what the period holds of updates, failures and rollbacks is sent first (kept on disk when it cannot be). */
  close(): Promise<void>;
}

export interface DigestOptions {
  settings: DigestSettings;
  /** hands a report to the channel (with the dispatcher's retries); never throws; false: it could not be sent */
  send(report: SessionReport): Promise<boolean | undefined>;
  log: Logger;
  now?: () => number;
  timeZone?: string;
  /** where the period is kept between restarts (the state file's `digests` section), under `key` */
  store?: Remembered;
  key?: string;
  /** the wait before the first try again of a digest that could not be sent, doubled each time up to DIGEST_RETRY_CAP_MS */
  retryMs?: number;
}

/** A digest that could not be sent is tried again after 1 min, 2, 4... and at most every hour. */
export const DIGEST_RETRY_MS = 60_000;
export const DIGEST_RETRY_CAP_MS = 3_600_000;

const EVENTS: readonly ContainerOutcome[] = ["updated", "failed", "rolled_back"];
const WAITING: readonly ContainerOutcome[] = ["pending", "stale", "held"];

/**
 * What a period holds: per target its latest entry and its latest update, failure or rollback,
 * and counts; never the cycles' reports themselves, so its size is that of the targets, however
 * many cycles the period has.
 */
export interface DigestPeriod {
  from: number;
  cycles: number;
  trigger: SessionReport["trigger"];
  targets: Map<string, { latest: ContainerReport; event?: ContainerReport }>;
  /** tries of this period's message that failed (the next waits longer) */
  failedSends: number;
  /** when a message that could not be sent is tried again */
  retryAt?: number;
}

function emptyPeriod(from: number): DigestPeriod {
  return { from, cycles: 0, trigger: "schedule", targets: new Map(), failedSends: 0 };
}

/** Adds one cycle's report to the period. */
export function foldReport(period: DigestPeriod, report: SessionReport): void {
  period.cycles += 1;
  period.trigger = report.trigger;
  for (const entry of report.containers) {
    const key = `${entry.kind ?? "container"}:${entry.name}`;
    const event = EVENTS.includes(entry.state) ? entry : period.targets.get(key)?.event;
    period.targets.set(key, event ? { latest: entry, event } : { latest: entry });
  }
}

/**
 * A period's message could not be sent: what it held goes back into the period under way, the
 * newer entries winning, its older events kept, and the period counted from the older start.
 */
function foldBack(period: DigestPeriod, unsent: DigestPeriod): void {
  for (const [key, held] of unsent.targets) {
    const now = period.targets.get(key);
    if (!now) period.targets.set(key, held);
    else if (!now.event && held.event) now.event = held.event;
  }
  period.from = Math.min(period.from, unsent.from);
  period.cycles += unsent.cycles;
  period.failedSends = unsent.failedSends + 1;
}

export function createDigest(options: DigestOptions): Digest {
  const now = options.now ?? Date.now;
  const timeZone = options.timeZone ?? serviceTimeZone();
  const key = options.key ?? "digest";
  const retryMs = options.retryMs ?? DIGEST_RETRY_MS;
  let period = load(options.store, key, now(), options.log) ?? emptyPeriod(now());
  let timer: ReturnType<typeof setTimeout> | undefined;
  let closed = false;
  let sending: Promise<void> | undefined;

  const save = (): void => {
    if (!options.store) return;
    try {
      if (period.targets.size === 0 && period.cycles === 0) options.store.delete(key);
      else options.store.set(key, serialize(period));
    } catch (error) {
      options.log.warn("the digest cannot be kept on disk", { channel: key, error: (error as Error).message });
    }
  };

  const arm = (): void => {
    if (closed) return;
    clearTimeout(timer);
    // a period that a restart carried past its moment is due at once
    // (one that could not be sent is tried again at its time: its moment has come already)
    const due = period.retryAt ?? nextStart(options.settings.moments, Math.min(now(), period.from), timeZone);
    // a wait longer than a timer holds is chained: the timer fires early and arms again
    timer = setTimeout(() => (now() >= due ? void sendNow() : arm()), timerDelay(due - now()));
    timer.unref?.();
  };

  const sendOnce = async (): Promise<void> => {
    const held = period;
    period = emptyPeriod(now());
    const digest = render(held, now());
    if (digest === null) {
      options.log.debug("nothing to tell in this digest", { cycles: held.cycles });
      save();
      return;
    }
    save();
    if ((await options.send(digest)) !== false) return;
    foldBack(period, held);
    const wait = Math.min(retryMs * 2 ** (period.failedSends - 1), DIGEST_RETRY_CAP_MS);
    period.retryAt = now() + wait;
    options.log.warn("the digest could not be sent: kept, and tried again", {
      channel: key,
      failed_tries: period.failedSends,
      retry_at: new Date(period.retryAt).toISOString(),
    });
    save();
  };

  /** One send at a time: a moment that comes during a send waits for it. */
  const sendNow = async (): Promise<void> => {
    while (sending) await sending;
    sending = sendOnce().finally(() => (sending = undefined));
    await sending;
    arm();
  };

  arm();
  return {
    add(report) {
      foldReport(period, report);
      save();
      if (!options.settings.immediateOnFailure) return;
      const failures = report.containers.filter((c) => c.state === "failed" || c.state === "rolled_back");
      if (failures.length > 0)
        void options.send(withContainers(report, failures, report.started_at, report.finished_at, report.id));
    },
    sendNow,
    async close() {
      closed = true;
      clearTimeout(timer);
      // what a restart would lose: the updates, failures and rollbacks not told yet (kept on disk if this fails)
      if ([...period.targets.values()].some((t) => t.event)) await sendNow();
    },
  };
}

/**
 * The period's reports as one: each target once, as its latest update, failure or rollback left
 * it, else as the latest cycle saw it; null when nothing was applied, failed, rolled back or waits.
 */
export function digestOf(reports: readonly SessionReport[], from: number, to: number): SessionReport | null {
  const period = emptyPeriod(from);
  for (const report of reports) foldReport(period, report);
  return render(period, to);
}

function render(period: DigestPeriod, to: number): SessionReport | null {
  const containers = [...period.targets.values()].map(({ latest, event }) =>
    EVENTS.includes(latest.state) ? latest : (event ?? latest),
  );
  if (!containers.some((c) => EVENTS.includes(c.state) || WAITING.includes(c.state))) return null;
  containers.sort((a, b) => a.name.localeCompare(b.name));
  return withContainers(
    period,
    containers,
    new Date(period.from).toISOString(),
    new Date(to).toISOString(),
    crypto.randomUUID(),
  );
}

// ---- kept on disk ----

const ENTRY = z.looseObject({
  name: z.string().max(1024),
  state: z.enum(OUTCOMES),
});
const STORED = z.object({
  from: z.number().finite(),
  cycles: z.number().int().nonnegative(),
  trigger: z.enum(["api", "schedule", "startup", "run_once"]),
  failed_sends: z.number().int().nonnegative(),
  retry_at: z.number().finite().optional(),
  targets: z.array(z.tuple([z.string().max(2048), ENTRY, ENTRY.nullable()])).max(100_000),
});

function serialize(period: DigestPeriod): string {
  return JSON.stringify({
    from: period.from,
    cycles: period.cycles,
    trigger: period.trigger,
    failed_sends: period.failedSends,
    retry_at: period.retryAt,
    targets: [...period.targets].map(([key, { latest, event }]) => [key, latest, event ?? null]),
  });
}

/** The period a restart left, if any and readable (else a warning and a new period). */
function load(store: Remembered | undefined, key: string, now: number, log: Logger): DigestPeriod | undefined {
  const text = store?.get(key);
  if (text === undefined) return undefined;
  const parsed = parseJsonText(text, STORED);
  if (!("value" in parsed)) {
    log.warn("the digest kept on disk cannot be read: a new period starts", { channel: key });
    return undefined;
  }
  const stored = parsed.value;
  const targets = new Map(
    stored.targets.map(([target, latest, event]) => [
      target,
      event
        ? { latest: latest as unknown as ContainerReport, event: event as unknown as ContainerReport }
        : { latest: latest as unknown as ContainerReport },
    ]),
  );
  return {
    from: Math.min(stored.from, now),
    cycles: stored.cycles,
    trigger: stored.trigger,
    failedSends: stored.failed_sends,
    retryAt: stored.retry_at,
    targets,
  };
}

function withContainers(
  base: Pick<SessionReport, "trigger">,
  containers: ContainerReport[],
  startedAt: string,
  finishedAt: string,
  id: string,
): SessionReport {
  return {
    id,
    trigger: base.trigger,
    started_at: startedAt,
    finished_at: finishedAt,
    duration_ms: Math.max(0, Date.parse(finishedAt) - Date.parse(startedAt)),
    filter: { container: [], image: [] },
    counts: countOutcomes(containers),
    containers,
  };
}
