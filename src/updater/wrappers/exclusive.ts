/**
 * The updater of a service that shares its state file with other processes (`svc rollback`):
 * each cycle, rollback and crash recovery first takes the state file's lease (src/state/owner.ts),
 * and is skipped like a cycle asked for while another runs (null) when another process holds it.
 * A scheduled cycle that waits behind this process's own cycle (cycle/runner.ts) keeps the lease
 * held until it has run.
 */
import type { Logger } from "../../log/index.ts";
import { describeProcess, tryLease } from "../../state/owner.ts";
import type { Updater } from "../port.ts";

export function exclusiveOn(stateFile: string, updater: Updater, log: Logger): Updater {
  let held = false;
  /** a scheduled cycle the runner holds back until the cycle under the lease ends */
  let follower: Promise<unknown> | undefined;
  const release = (lease: { release(): void }): void => {
    const next = follower;
    follower = undefined;
    if (next) void next.catch(() => {}).finally(() => release(lease));
    else {
      held = false;
      lease.release();
    }
  };
  // While this process holds the lease, a request for a cycle or a rollback goes to the updater,
  // which answers it as busy and counts the skip (svc_scans_skipped); recovery never runs beside one.
  const leased = async <T>(work: () => Promise<T | null>, what = "cycle skipped", whileHeld: "ask" | "skip" = "ask", scheduled = false): Promise<T | null> => {
    if (held) {
      if (whileHeld === "skip") return null;
      const asked = work();
      if (scheduled) follower ??= asked;
      return asked;
    }
    const lease = tryLease(stateFile, "a cycle of svc");
    if ("holder" in lease) {
      log.child("updater").info(`${what}: ${describeProcess(lease.holder)} is acting on the containers of this state_dir`);
      return null;
    }
    held = true;
    try {
      return await work();
    } finally {
      release(lease);
    }
  };
  return {
    ...updater,
    run: (trigger, filter, options) => leased(() => updater.run(trigger, filter, options), undefined, "ask", trigger === "schedule" || trigger === "startup"),
    rollback: (container, trigger) => leased(() => updater.rollback(container, trigger)),
    // leftovers another process is working on are not ours to repair: the next cycle looks again
    recover: async () => void (await leased(async () => (await updater.recover(), true), "crash recovery postponed to the next cycle", "skip")),
    get busy() {
      return held || updater.busy;
    },
  };
}
