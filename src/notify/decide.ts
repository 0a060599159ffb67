/**
 * Whether a finished cycle is worth a notification. Changes (updated, failed, rolled back) always
 * are; a monitor-only user's stale containers (and those pending for their update window) are
 * told once per new digest, not every cycle.
 */
import { inMemory, type Remembered } from "../state/index.ts";
import type { SessionReport } from "../updater/types.ts";

export interface NotifyDecision {
  notify: boolean;
  /** why, for the debug log */
  reason: "changes" | "every_cycle" | "new_stale" | "nothing_new";
}

export class NotifyPolicy {
  /**
   * @param announcedStale container name -> the newer digest it was last reported stale for
   * (kept across restarts with `state_dir`)
   */
  constructor(
    private readonly everyCycle: boolean,
    private readonly announcedStale: Remembered = inMemory(),
  ) {}

  /** Decides for one report and remembers its stale digests (call once per report, in order). */
  decide(report: SessionReport): NotifyDecision {
    const newStale = this.#rememberStale(report);
    if (hasChanges(report)) return { notify: true, reason: "changes" };
    if (this.everyCycle) return { notify: true, reason: "every_cycle" };
    if (newStale) return { notify: true, reason: "new_stale" };
    return { notify: false, reason: "nothing_new" };
  }

  /** True when some container is stale for a digest not announced before. */
  #rememberStale(report: SessionReport): boolean {
    let fresh = false;
    for (const container of report.containers) {
      if (container.state === "stale" || container.state === "pending" || container.state === "held") {
        const digest = container.new_digest ?? container.new_image_id ?? "unknown";
        if (this.announcedStale.get(container.name) !== digest) {
          this.announcedStale.set(container.name, digest);
          fresh = true;
        }
      } else if (container.state === "fresh" || container.state === "updated") {
        // Caught up (by svc or by hand): a later stale digest is news again.
        this.announcedStale.delete(container.name);
      }
    }
    return fresh;
  }
}

export function hasChanges(report: SessionReport): boolean {
  const { updated, failed, rolled_back } = report.counts;
  if (updated + failed + rolled_back > 0) return true;
  return report.containers.some((c) => c.state === "updated" || c.state === "failed" || c.state === "rolled_back");
}
