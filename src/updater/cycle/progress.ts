import type { AuditEntry } from "../../log/index.ts";

/**
 * What a running cycle is doing right now, told as it happens: the step a container starts
 * (an engine action, a hook, or the watch of its replacement). The terminal output and the
 * API's live progress both listen here; nothing waits on a listener.
 */
export type Step = AuditEntry["action"] | "check" | "watch";

export interface ProgressEvent {
  session_id: string | undefined;
  trigger: string;
  container: string;
  step: Step;
  /** the step puts the old container back (a rollback or a failed update undone): the new one is removed, the old one started */
  undoing?: boolean;
  /** when the step began */
  at: Date;
}

export type ProgressListener = (event: ProgressEvent) => void;

/** Tells `listener` about a step; a listener that throws never disturbs the update. */
export function announce(
  listener: ProgressListener | undefined,
  context: { sessionId?: string; trigger: string },
  container: string | undefined,
  step: Step,
  undoing?: boolean,
): void {
  if (!listener || container === undefined) return;
  try {
    listener({
      session_id: context.sessionId,
      trigger: context.trigger,
      container,
      step,
      ...(undoing ? { undoing } : {}),
      at: new Date(),
    });
  } catch {
    // progress is for people watching; an update never fails because of it
  }
}

/** One listener that tells each of `listeners` (those given) in turn. */
export function toEvery(...listeners: Array<ProgressListener | undefined>): ProgressListener {
  const given = listeners.filter((listener): listener is ProgressListener => listener !== undefined);
  return (event) => {
    for (const listener of given) announceTo(listener, event);
  };
}

function announceTo(listener: ProgressListener, event: ProgressEvent): void {
  try {
    listener(event);
  } catch {
    // one listener failing does not keep the event from the others
  }
}
