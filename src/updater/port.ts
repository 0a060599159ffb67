/**
 * The updater port: what the service, the API and the scheduler hold of the updater (index.ts
 * builds it; wrappers/exclusive.ts, wrappers/summary.ts and wrappers/pending.ts wrap it without importing the builder).
 */

import type { ContainerActions, CycleRunner } from "./types.ts";
import type { DashboardActions } from "./views/overview.ts";

export interface Updater extends CycleRunner, ContainerActions, DashboardActions {
  /** startup crash recovery: finishes or undoes interrupted updates; run before the first cycle */
  recover(): Promise<void>;
  /** graceful stop: the running cycle finishes the containers it started on and starts no others */
  drain(): Promise<void>;
}
