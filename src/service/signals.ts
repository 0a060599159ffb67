/** Signals: the first SIGTERM / SIGINT stops the service gently, a second one exits at once. */
import type { Logger } from "../log/index.ts";

export interface SignalOptions {
  /** the process to take signals from (tests may pass their own emitter) */
  signals?: Pick<NodeJS.Process, "on" | "off">;
  /** what a second signal does; default: exit at once (130 for SIGINT, 143 for SIGTERM) */
  exitNow?: (code: number) => void;
}

const SIGNAL_EXIT_CODES = { SIGINT: 130, SIGTERM: 143 } as const;
export type StopSignal = keyof typeof SIGNAL_EXIT_CODES;

/**
 * Resolves on the first SIGTERM / SIGINT. A second one exits at once: the next start repairs
 * whatever update was cut off (docs/decisions.md, "Updater").
 */
export function waitForSignal(options: SignalOptions, log: Logger): { promise: Promise<StopSignal>; remove(): void } {
  const signals = options.signals ?? process;
  const exitNow = options.exitNow ?? ((code: number) => process.exit(code));
  let stopping = false;
  let resolve: (signal: StopSignal) => void = () => {};
  const promise = new Promise<StopSignal>((r) => (resolve = r));
  const handler = (signal: StopSignal) => {
    if (stopping) {
      log.warn("second signal: exiting now", { signal });
      exitNow(SIGNAL_EXIT_CODES[signal]);
      return;
    }
    stopping = true;
    resolve(signal);
  };
  const names = Object.keys(SIGNAL_EXIT_CODES) as StopSignal[];
  for (const name of names) signals.on(name, handler);
  const remove = () => {
    for (const name of names) signals.off(name, handler);
  };
  return { promise, remove };
}
