/**
 * Follows svc's running cycle and the updates queued behind it (GET /v1/progress): every second
 * while a cycle runs, one waits or this page acts, every 10 s otherwise (a scheduled cycle). Loads again when a cycle this page did not start
 * ended, or when a check it was refused may now run.
 */
import { ApiError, api } from "./api.ts";
import { load } from "./data.ts";
import { notify, signedIn, state, subscribe } from "./store.ts";

let pollTimer: ReturnType<typeof setTimeout> | undefined;

export function schedulePoll(delayMs: number): void {
  stopPolling();
  pollTimer = setTimeout(() => void poll(), delayMs);
}

export function stopPolling(): void {
  if (pollTimer !== undefined) clearTimeout(pollTimer);
  pollTimer = undefined;
}

// a refused check is asked for again once the cycle that refused it has ended
subscribe(["waiting"], () => schedulePoll(1000));

/**
 * An update was seen queued since the list was last loaded: it may start and end between two
 * polls, or be seen running only while it checks, so once nothing runs or waits the list is loaded.
 */
let queuedSeen = false;

async function poll(): Promise<void> {
  // a cycle that changed something (not a check: a dry run, this page's own among them)
  const wasUpdating = state.running?.containers.some((step) => step.step !== "check") === true;
  if (state.queued.length > 0) queuedSeen = true;
  try {
    const answer = await api.progress();
    state.running = answer.running;
    state.queued = answer.queued ?? [];
    if (state.queued.length > 0) queuedSeen = true;
  } catch (failure) {
    if (failure instanceof ApiError && failure.status === 401) return;
    state.running = null;
    state.queued = [];
  }
  notify("running");
  // a cycle this page did not start ended: what it changed is worth seeing (a check ending is
  // not: reloading after it would be a check again, and again)
  const idle = !state.running && !state.acting && state.queued.length === 0;
  if (idle && state.checkWhenIdle) {
    state.checkWhenIdle = false;
    queuedSeen = false;
    void load();
  } else if (idle && (wasUpdating || queuedSeen)) {
    queuedSeen = false;
    void load(undefined, true);
  }
  if (signedIn()) schedulePoll(state.running || state.acting || state.queued.length ? 1000 : 10_000);
}
