/**
 * The five metrics (docs/api.md, GET /v1/metrics), the targets waiting for their update window
 * (`svc_containers_pending`, once a cycle has run), and the per-container gauge of pending updates
 * (`svc_update_available{container="..."}`, once a cycle has checked containers). The updater
 * writes them at the end of each cycle (and on a skipped request); the API only reads and renders them.
 */
export interface MetricValues {
  svc_scans_total: number;
  svc_scans_skipped: number;
  svc_containers_scanned: number;
  svc_containers_updated: number;
  svc_containers_failed: number;
}

interface MetricInfo {
  type: "counter" | "gauge";
  help: string;
}

const INFO: Record<keyof MetricValues, MetricInfo> = {
  svc_scans_total: { type: "counter", help: "Total update cycles run" },
  svc_scans_skipped: { type: "counter", help: "Cycles skipped because another update was running" },
  svc_containers_scanned: { type: "gauge", help: "Containers checked in the last cycle" },
  svc_containers_updated: { type: "gauge", help: "Containers updated in the last cycle" },
  svc_containers_failed: { type: "gauge", help: "Containers that failed to update in the last cycle" },
};

export const METRIC_NAMES = Object.keys(INFO) as (keyof MetricValues)[];

const AVAILABLE = "svc_update_available";
const AVAILABLE_HELP = "1 when the last cycle found a newer image for the container and did not apply it";

/** A label value in the text format: backslash, quote and newline escaped. */
function labelValue(text: string): string {
  return text.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
}

const PENDING = "svc_containers_pending";
const PENDING_HELP = "Targets of the last cycle with a newer image waiting for their update window (docs/windows.md)";

/** What a registry last said of its rate limit (Docker Hub's `ratelimit-remaining`, docs/api.md). */
export interface RateLimit {
  /** the lowest remaining count of the answers of the last minute (one check's requests) */
  remaining: number;
  limit: number | null;
  /** the window the counts are over, in seconds (Docker Hub: 21600, six hours) */
  window_seconds: number | null;
  at: string;
}

const RATE_LIMIT = "svc_registry_ratelimit_remaining";
const RATE_LIMIT_HELP =
  "Requests the registry says are left in its rate limit window (the lowest of its answers within a minute)";
/** Answers this close together are one check's: the lowest counts (they may arrive out of order). */
const SAME_CHECK_MS = 60_000;

const PEER_UP = "svc_peer_up";
const PEER_UP_HELP =
  "1 when the peer (another svc instance of peers) answered the dashboard's last request in time, else 0";

export class Metrics {
  private readonly available = new Map<string, number>();
  private readonly peers = new Map<string, number>();
  /** the last cycle's pending targets; undefined until a cycle tells it */
  private pending: number | undefined;
  private readonly rateLimits = new Map<string, RateLimit>();
  private values: MetricValues = {
    svc_scans_total: 0,
    svc_scans_skipped: 0,
    svc_containers_scanned: 0,
    svc_containers_updated: 0,
    svc_containers_failed: 0,
  };

  /** Records a finished cycle: one more scan, and the gauges of this cycle. */
  recordCycle(counts: { scanned: number; updated: number; failed: number; pending?: number }): void {
    if (counts.pending !== undefined) this.pending = counts.pending;
    this.values.svc_scans_total += 1;
    this.values.svc_containers_scanned = counts.scanned;
    this.values.svc_containers_updated = counts.updated;
    this.values.svc_containers_failed = counts.failed;
  }

  recordSkipped(): void {
    this.values.svc_scans_skipped += 1;
  }

  /**
   * Per container: 1 when the cycle found a newer image it did not apply (stale), else 0. A cycle
   * over every container replaces the set (a container gone is no longer reported); a filtered
   * cycle updates the containers it checked.
   */
  recordAvailability(containers: readonly { name: string; state: string }[], complete: boolean): void {
    if (complete) this.available.clear();
    for (const container of containers)
      this.available.set(
        container.name,
        container.state === "stale" || container.state === "pending" || container.state === "held" ? 1 : 0,
      );
  }

  /** container name -> 1 or 0 (see recordAvailability) */
  availability(): Record<string, number> {
    return Object.fromEntries([...this.available].sort(([a], [b]) => a.localeCompare(b)));
  }

  /** Whether a peer answered the last request in time (the dashboard's view of other svc instances). */
  recordPeer(name: string, up: boolean): void {
    this.peers.set(name, up ? 1 : 0);
  }

  /** A registry's answer carried its rate limit: kept per registry host. */
  recordRateLimit(registry: string, given: Omit<RateLimit, "at">, now = Date.now()): void {
    const previous = this.rateLimits.get(registry);
    const sameCheck = previous !== undefined && now - Date.parse(previous.at) < SAME_CHECK_MS;
    const remaining = sameCheck ? Math.min(previous.remaining, given.remaining) : given.remaining;
    this.rateLimits.set(registry, { ...given, remaining, at: new Date(now).toISOString() });
  }

  /** registry host -> its last known rate limit, by host */
  rateLimitsOf(): Record<string, RateLimit> {
    return Object.fromEntries([...this.rateLimits].sort(([a], [b]) => a.localeCompare(b)));
  }

  snapshot(): MetricValues {
    return { ...this.values };
  }

  /** Prometheus text exposition format 0.0.4. */
  toPrometheus(): string {
    let text = "";
    for (const name of METRIC_NAMES) {
      text += `# HELP ${name} ${INFO[name].help}\n# TYPE ${name} ${INFO[name].type}\n${name} ${this.values[name]}\n`;
    }
    if (this.pending !== undefined)
      text += `# HELP ${PENDING} ${PENDING_HELP}\n# TYPE ${PENDING} gauge\n${PENDING} ${this.pending}\n`;
    if (this.available.size > 0) {
      text += `# HELP ${AVAILABLE} ${AVAILABLE_HELP}\n# TYPE ${AVAILABLE} gauge\n`;
      for (const [name, value] of Object.entries(this.availability()))
        text += `${AVAILABLE}{container="${labelValue(name)}"} ${value}\n`;
    }
    if (this.rateLimits.size > 0) {
      text += `# HELP ${RATE_LIMIT} ${RATE_LIMIT_HELP}\n# TYPE ${RATE_LIMIT} gauge\n`;
      for (const [registry, limit] of Object.entries(this.rateLimitsOf()))
        text += `${RATE_LIMIT}{registry="${labelValue(registry)}"} ${limit.remaining}\n`;
    }
    if (this.peers.size > 0) {
      text += `# HELP ${PEER_UP} ${PEER_UP_HELP}\n# TYPE ${PEER_UP} gauge\n`;
      for (const [name, value] of [...this.peers].sort(([a], [b]) => a.localeCompare(b)))
        text += `${PEER_UP}{peer="${labelValue(name)}"} ${value}\n`;
    }
    return text;
  }
}

export const PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";
