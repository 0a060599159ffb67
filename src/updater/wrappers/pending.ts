import { SvcError, toSvcError } from "../../core/errors.ts";
import type { Updater } from "../port.ts";
import type { ContainerActions, CycleRunner, RollbackOptions, RunOptions, Trigger, UpdateFilter } from "../types.ts";
import type { DashboardActions, OverviewOptions } from "../views/overview.ts";

/**
 * The API's runner until startup is done: a cycle asked for during recovery waits for it
 * (recovery runs before the API accepts updates), then runs as usual; if startup
 * fails, it fails with the same error.
 */
export function pendingRunner(): {
  runner: CycleRunner & ContainerActions & DashboardActions;
  ready(updater: Updater): void;
  failed(error: unknown): void;
} {
  let resolve: (updater: Updater) => void = () => {};
  let reject: (error: unknown) => void = () => {};
  const started = new Promise<Updater>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  started.catch(() => {}); // nobody may be waiting
  let updater: Updater | undefined;
  return {
    runner: {
      async run(trigger: Trigger, filter?: UpdateFilter, options?: RunOptions) {
        return (updater ?? (await started)).run(trigger, filter, options);
      },
      get busy() {
        return updater?.busy ?? false;
      },
      queuedRequests: () => updater?.queuedRequests() ?? [],
      async skip(container: string, what?: { digest?: string; tag?: string }) {
        return (updater ?? (await started)).skip(container, what);
      },
      async rollback(container: string, trigger?: Trigger, options?: RollbackOptions) {
        return (updater ?? (await started)).rollback(container, trigger, options);
      },
      async overview(filter?: UpdateFilter, options?: OverviewOptions) {
        return (updater ?? (await started)).overview(filter, options);
      },
      async snooze(container: string, ms: number) {
        return (updater ?? (await started)).snooze(container, ms);
      },
      async acceptSigner(container: string, trigger?: Trigger) {
        return (updater ?? (await started)).acceptSigner(container, trigger);
      },
    },
    ready(value) {
      updater = value;
      resolve(value);
    },
    failed(error) {
      reject(
        error instanceof SvcError
          ? error
          : new SvcError("startup", `svc could not start: ${toSvcError(error).message}`, { cause: error }),
      );
    },
  };
}
