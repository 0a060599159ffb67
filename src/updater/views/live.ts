/**
 * The running cycle as GET /v1/progress tells it (docs/api.md): a progress listener
 * (cycle/progress.ts) that keeps, for the cycle under way, the step each container is at and the
 * latest step of all. A new session starts a new record; once no cycle runs, there is none.
 */
import type { ProgressEvent, ProgressListener, Step } from "../cycle/progress.ts";

export interface StepView {
  container: string;
  step: Step;
  /** when the step began */
  at: string;
}

export interface RunningCycle {
  /** null until the cycle's first step is told */
  session_id: string | null;
  trigger: string | null;
  /** when its first step began */
  started_at: string | null;
  /** the latest step of all */
  current: StepView | null;
  /** each container's latest step, in the order they were first told */
  containers: StepView[];
}

/** More containers than any host runs: a bound on what one cycle's record may hold. */
const MAX_CONTAINERS = 5_000;

export interface LiveProgress {
  listen: ProgressListener;
  /** the cycle under way, or null when `busy` says none runs */
  running(busy: boolean): RunningCycle | null;
}

export function liveProgress(): LiveProgress {
  let record:
    | {
        session: string | undefined;
        trigger: string;
        startedAt: Date;
        current: ProgressEvent;
        steps: Map<string, ProgressEvent>;
      }
    | undefined;
  const view = (event: ProgressEvent): StepView => ({
    container: event.container,
    step: event.step,
    at: event.at.toISOString(),
  });
  return {
    listen(event) {
      if (!record || record.session !== event.session_id) {
        record = {
          session: event.session_id,
          trigger: event.trigger,
          startedAt: event.at,
          current: event,
          steps: new Map(),
        };
      }
      record.current = event;
      if (record.steps.has(event.container) || record.steps.size < MAX_CONTAINERS)
        record.steps.set(event.container, event);
    },
    running(busy) {
      if (!busy) {
        record = undefined;
        return null;
      }
      if (!record) return { session_id: null, trigger: null, started_at: null, current: null, containers: [] };
      return {
        session_id: record.session ?? null,
        trigger: record.trigger,
        started_at: record.startedAt.toISOString(),
        current: view(record.current),
        containers: [...record.steps.values()].map(view),
      };
    },
  };
}
