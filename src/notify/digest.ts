/**
 * A channel's digest (docs/windows.md): instead of a message per cycle, one message per period
 * ("daily 08:00", "weekly Mon 08:00", time zone from TZ) with what was applied, what failed or
 * rolled back, and what is pending or stale and when it lands. A failure or a rollback is still
 * told at once (`immediate_on_failure`). The channel itself is unchanged: a digest is one more
 * SessionReport, built from the cycles of the period, that the channel renders as any other.
 */
import type { ChannelName, Config } from "../config/index.ts";
import { nextStart, parseDigestPeriod, serviceTimeZone, type Window } from "../config/window.ts";
import type { Logger } from "../log/index.ts";
import { timerDelay } from "../core/timers.ts";
import type { ContainerOutcome, ContainerReport, ReportCounts, SessionReport } from "../updater/types.ts";

export interface DigestSettings {
  moments: Window[];
  immediateOnFailure: boolean;
}

const TABLE_CHANNELS: readonly string[] = ["webhook", "email", "mqtt", "pushover"] satisfies ChannelName[];

/** The digest a channel asks for, if any: a channel's table says it; every notification URL follows urls_digest. */
export function digestSettingsOf(config: Config["notifications"], channel: string): DigestSettings | undefined {
  const table = TABLE_CHANNELS.includes(channel)
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
  /** The period's message now, if it has anything to tell (then it starts again). */
  sendNow(): Promise<void>;
  /** Stops the timer; what the period holds of updates, failures and rollbacks is sent first. */
  close(): Promise<void>;
}

export interface DigestOptions {
  settings: DigestSettings;
  /** hands a report to the channel (with the dispatcher's retries); never throws */
  send(report: SessionReport): Promise<void>;
  log: Logger;
  now?: () => number;
  timeZone?: string;
}

const EVENTS: readonly ContainerOutcome[] = ["updated", "failed", "rolled_back"];
const WAITING: readonly ContainerOutcome[] = ["pending", "stale", "held"];

export function createDigest(options: DigestOptions): Digest {
  const now = options.now ?? Date.now;
  const timeZone = options.timeZone ?? serviceTimeZone();
  let reports: SessionReport[] = [];
  let periodStart = now();
  let timer: ReturnType<typeof setTimeout> | undefined;
  let closed = false;

  const arm = () => {
    if (closed) return;
    const due = nextStart(options.settings.moments, now(), timeZone);
    // a wait longer than a timer holds is chained: the timer fires early and arms again
    timer = setTimeout(() => (now() >= due ? void sendNow().finally(arm) : arm()), timerDelay(due - now()));
    timer.unref?.();
  };

  const sendNow = async (): Promise<void> => {
    const held = reports;
    const from = periodStart;
    reports = [];
    periodStart = now();
    const digest = digestOf(held, from, now());
    if (digest === null) {
      options.log.debug("nothing to tell in this digest", { cycles: held.length });
      return;
    }
    await options.send(digest);
  };

  arm();
  return {
    add(report) {
      reports.push(report);
      if (!options.settings.immediateOnFailure) return;
      const failures = report.containers.filter((c) => c.state === "failed" || c.state === "rolled_back");
      if (failures.length > 0) void options.send(withContainers(report, failures, report.started_at, report.finished_at, report.id));
    },
    sendNow,
    async close() {
      closed = true;
      clearTimeout(timer);
      // what a restart would lose: the updates, failures and rollbacks not told yet
      if (reports.some((r) => r.containers.some((c) => EVENTS.includes(c.state)))) await sendNow();
    },
  };
}

/**
 * The period's reports as one: each target once, as its latest update, failure or rollback left
 * it, else as the latest cycle saw it; null when nothing was applied, failed, rolled back or waits.
 */
export function digestOf(reports: readonly SessionReport[], from: number, to: number): SessionReport | null {
  const latest = new Map<string, ContainerReport>();
  const events = new Map<string, ContainerReport>();
  for (const report of reports) {
    for (const entry of report.containers) {
      const key = `${entry.kind ?? "container"}:${entry.name}`;
      latest.set(key, entry);
      if (EVENTS.includes(entry.state)) events.set(key, entry);
    }
  }
  const containers = [...latest].map(([key, entry]) => (EVENTS.includes(entry.state) ? entry : (events.get(key) ?? entry)));
  if (!containers.some((c) => EVENTS.includes(c.state) || WAITING.includes(c.state))) return null;
  containers.sort((a, b) => a.name.localeCompare(b.name));
  return withContainers(reports[0]!, containers, new Date(from).toISOString(), new Date(to).toISOString(), crypto.randomUUID());
}

function withContainers(base: SessionReport, containers: ContainerReport[], startedAt: string, finishedAt: string, id: string): SessionReport {
  return {
    id,
    trigger: base.trigger,
    started_at: startedAt,
    finished_at: finishedAt,
    duration_ms: Math.max(0, Date.parse(finishedAt) - Date.parse(startedAt)),
    filter: { container: [], image: [] },
    counts: countsOf(containers),
    containers,
  };
}

function countsOf(containers: readonly ContainerReport[]): ReportCounts {
  const counts: ReportCounts = { scanned: containers.length, updated: 0, failed: 0, skipped: 0, fresh: 0, stale: 0, pending: 0, rolled_back: 0, held: 0 };
  for (const container of containers) counts[container.state] += 1;
  return counts;
}
