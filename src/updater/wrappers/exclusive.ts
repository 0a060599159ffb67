/**
 * The updater of a service that shares its state file with other processes (`svc rollback`):
 * each cycle, rollback and crash recovery first takes the state file's lease (src/state/owner.ts),
 * and is skipped like a cycle asked for while another runs (null) when another process holds it.
 * A scheduled cycle is never dropped for the lease: behind this process's own cycle it waits in
 * the runner (cycle/runner.ts), the lease held until it has run; behind another process it tries
 * again after 1 s, 2, 4... at most every 30 s, until it runs or svc stops (one waits; a later
 * fire joins it). A queued request (an Install in Home Assistant, an update asked of the API) waits
 * for the other process as a scheduled cycle does, and is shown queued meanwhile.
 */
import type { Logger } from "../../log/index.ts";
import { describeProcess, tryLease } from "../../state/owner.ts";
import { queuedRequest } from "../cycle/runner.ts";
import type { Updater } from "../port.ts";
import type { QueuedRequest } from "../types.ts";

const RETRY_FIRST_MS = 1_000;
const RETRY_CAP_MS = 30_000;

export function exclusiveOn(stateFile: string, updater: Updater, log: Logger): Updater {
  let held = false;
  let stopping = false;
  /** a scheduled cycle waiting for another process's lease; `wake` ends its wait early (svc stops) */
  let waitingForOther = false;
  let wake = (): void => {};
  /** a scheduled cycle the runner holds back until the cycle under the lease ends */
  let follower: Promise<unknown> | undefined;
  /** the queued request waiting for another process's lease */
  let queuedBehindOther: QueuedRequest | undefined;
  const release = (lease: { release(): void }): void => {
    const next = follower;
    follower = undefined;
    // nothing lost: the follower's caller gets its error; the lease is released either way
    if (next) void next.catch(() => {}).finally(() => release(lease));
    else {
      held = false;
      lease.release();
    }
  };
  // While this process holds the lease, a request for a cycle or a rollback goes to the updater,
  // which answers it as busy and counts the skip (svc_scans_skipped); recovery never runs beside one.
  const leased = async <T>(
    work: () => Promise<T | null>,
    what = "cycle skipped",
    whileHeld: "ask" | "skip" = "ask",
    scheduled = false,
    queued?: { entry: QueuedRequest; onQueued?: (request: QueuedRequest) => void },
  ): Promise<T | null> => {
    if (held) {
      if (whileHeld === "skip") return null;
      const asked = work();
      if (scheduled) follower ??= asked;
      return asked;
    }
    const lease = tryLease(stateFile, "a cycle of svc");
    if ("holder" in lease) {
      if (!scheduled || waitingForOther) {
        log
          .child("updater")
          .info(`${what}: ${describeProcess(lease.holder)} is acting on the containers of this state_dir`);
        return null;
      }
      log
        .child("updater")
        .info(
          `${queued ? "queued request" : "scheduled cycle"} waits: ${describeProcess(lease.holder)} is acting on the containers of this state_dir`,
        );
      if (!queued) return afterOther(work);
      queuedBehindOther = queued.entry;
      queued.onQueued?.(structuredClone(queued.entry));
      return afterOther(work).finally(() => {
        queuedBehindOther = undefined;
      });
    }
    return underLease(lease, work);
  };

  const underLease = async <T>(lease: { release(): void }, work: () => Promise<T | null>): Promise<T | null> => {
    held = true;
    try {
      return await work();
    } finally {
      release(lease);
    }
  };
  /** Tries the lease again, backing off, until it is free (then runs `work` as any scheduled cycle) or svc stops. */
  const afterOther = async <T>(work: () => Promise<T | null>): Promise<T | null> => {
    waitingForOther = true;
    try {
      for (let wait = RETRY_FIRST_MS; !stopping; wait = Math.min(wait * 2, RETRY_CAP_MS)) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, wait);
          wake = () => (clearTimeout(timer), resolve());
        });
        if (stopping) break;
        if (held) {
          // this process took the lease meanwhile: the runner holds this cycle next, under it
          const asked = work();
          follower ??= asked;
          return asked;
        }
        const lease = tryLease(stateFile, "a cycle of svc");
        if (!("holder" in lease)) return underLease(lease, work);
      }
      return null;
    } finally {
      waitingForOther = false;
    }
  };

  return {
    ...updater,
    run: (trigger, filter, options) =>
      leased(
        () => updater.run(trigger, filter, options),
        undefined,
        "ask",
        // a queued request is kept as a scheduled cycle is: never dropped for the lease
        trigger === "schedule" || trigger === "startup" || options?.queue === true,
        options?.queue ? { entry: queuedRequest(trigger, filter), onQueued: options.onQueued } : undefined,
      ),
    rollback: (container, trigger, options) => leased(() => updater.rollback(container, trigger, options)),
    // leftovers another process is working on are not ours to repair: the next cycle looks again
    recover: async () =>
      void (await leased(
        async () => (await updater.recover(), true),
        "crash recovery postponed to the next cycle",
        "skip",
      )),
    drain: async () => {
      stopping = true;
      wake();
      await updater.drain();
    },
    get busy() {
      return held || updater.busy;
    },
    queuedRequests: () => [
      ...(queuedBehindOther ? [structuredClone(queuedBehindOther)] : []),
      ...updater.queuedRequests(),
    ],
  };
}
