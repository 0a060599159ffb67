/** Small fakes of our own ports for the scheduler tests: a cycle runner we hold and release. */
import type { CycleRunner, SessionReport, Trigger } from "../../../src/updater/types.ts";
import { emptyReport } from "../../support/report.ts";

export interface RunnerCall {
  trigger: Trigger;
  /** null when the runner answered "busy" */
  outcome: "ran" | "skipped";
  at: number;
}

/**
 * Behaves like the updater's runner as the scheduler sees it: one cycle at a time, a call while
 * busy resolves null at once and is counted. With `hold`, each cycle runs until release() is called.
 */
export class FakeRunner implements CycleRunner {
  readonly calls: RunnerCall[] = [];
  skipped = 0;
  /** end time (performance.now) of each finished cycle */
  readonly finished: number[] = [];
  private current: (() => void) | null = null;
  private externallyBusy = false;

  /** `report`: what each cycle answers, by its number (0 first); an empty report otherwise */
  constructor(
    private readonly options: {
      hold?: boolean;
      fail?: boolean;
      report?: (n: number, trigger: Trigger) => SessionReport;
    } = {},
  ) {}

  get busy(): boolean {
    return this.current !== null || this.externallyBusy;
  }

  queuedRequests() {
    return [];
  }

  /** Pretend another caller (the API) runs a cycle. */
  setExternallyBusy(value: boolean): void {
    this.externallyBusy = value;
  }

  get ran(): Trigger[] {
    return this.calls.filter((c) => c.outcome === "ran").map((c) => c.trigger);
  }

  run(trigger: Trigger): Promise<SessionReport | null> {
    if (this.busy) {
      this.skipped++;
      this.calls.push({ trigger, outcome: "skipped", at: performance.now() });
      return Promise.resolve(null);
    }
    this.calls.push({ trigger, outcome: "ran", at: performance.now() });
    const n = this.finished.length;
    return new Promise((resolve, reject) => {
      const finish = () => {
        this.current = null;
        this.finished.push(performance.now());
        if (this.options.fail) reject(new Error("cycle exploded"));
        else resolve(this.options.report?.(n, trigger) ?? emptyReport(trigger));
      };
      this.current = finish;
      if (!this.options.hold) queueMicrotask(finish);
    });
  }

  /** A held cycle is running. */
  get holding(): boolean {
    return this.current !== null;
  }

  /** Ends the running cycle (with hold). */
  release(): void {
    const finish = this.current;
    if (!finish) throw new Error("no cycle is running");
    finish();
  }
}

export async function waitFor(predicate: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(5);
  }
}
