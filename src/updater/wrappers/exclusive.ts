/**
 * The updater of a service that shares its state file with other processes (`svc rollback`):
 * each cycle, rollback and crash recovery first takes the state file's lease (src/state/owner.ts),
 * and is skipped like a cycle asked for while another runs (null) when another process holds it.
 */
import type { Logger } from "../../log/index.ts";
import { describeProcess, tryLease } from "../../state/owner.ts";
import type { Updater } from "../port.ts";

export function exclusiveOn(stateFile: string, updater: Updater, log: Logger): Updater {
  let held = false;
  // While this process holds the lease, a request for a cycle or a rollback goes to the updater,
  // which answers it as busy and counts the skip (svc_scans_skipped); recovery never runs beside one.
  const leased = async <T>(work: () => Promise<T | null>, what = "cycle skipped", whileHeld: "ask" | "skip" = "ask"): Promise<T | null> => {
    if (held) return whileHeld === "ask" ? work() : null;
    const lease = tryLease(stateFile, "a cycle of svc");
    if ("holder" in lease) {
      log.child("updater").info(`${what}: ${describeProcess(lease.holder)} is acting on the containers of this state_dir`);
      return null;
    }
    held = true;
    try {
      return await work();
    } finally {
      held = false;
      lease.release();
    }
  };
  return {
    ...updater,
    run: (trigger, filter, options) => leased(() => updater.run(trigger, filter, options)),
    rollback: (container, trigger, options) => leased(() => updater.rollback(container, trigger, options)),
    // leftovers another process is working on are not ours to repair: the next cycle looks again
    recover: async () => void (await leased(async () => (await updater.recover(), true), "crash recovery postponed to the next cycle", "skip")),
    get busy() {
      return held || updater.busy;
    },
  };
}
