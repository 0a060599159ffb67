/**
 * The data guard (docs/data-guard.md): a container's guarded mounts copied in the engine, by a
 * helper container, while it is stopped for its update, and put back when the update is rolled back. Between the
 * engine and the updater: it knows the engine port, the configuration's values and the disk; the
 * updater decides when.
 */

export { type CopyOutcome, type CopyRequest, measureMounts } from "./copy.ts";
export {
  CopyList,
  type CopyView,
  copyListOf,
  DataGuard,
  type DataGuardOptions,
  dataGuardOptions,
  GUARD_LABEL,
  type Preparation,
  type RestoreResult,
  versionOf,
} from "./guard.ts";
export { copyInEngine, prepareCopier, prepareRestorer, restoreInEngine } from "./inengine.ts";
export { archiveParent, type GuardedMount, type GuardMode, guardedMounts, guardModeOf } from "./mounts.ts";
export { type CopiedMount, type Copy, CopyStore, type Manifest, RESERVE_MAX_BYTES } from "./store.ts";
