/**
 * The data guard (docs/data-guard.md): a container's guarded mounts copied through the Engine API
 * while it is stopped for its update, and put back when the update is rolled back. Between the
 * engine and the updater: it knows the engine port, the configuration's values and the disk; the
 * updater decides when.
 */
export { guardedMounts, guardModeOf, archiveParent, type GuardMode, type GuardedMount } from "./mounts.ts";
export { CopyStore, RESERVE_MAX_BYTES, type Copy, type Manifest, type CopiedMount } from "./store.ts";
export { copyMounts, measureMounts, type CopyOutcome, type CopyRequest } from "./copy.ts";
export { restoreCopy, verifyCopy, type RestoreResult } from "./restore.ts";
export { emptyFileArchive } from "./tar.ts";
export { DataGuard, dataGuardOptions, versionOf, GUARD_LABEL, CopyList, copyListOf, type CopyView, type DataGuardOptions, type Preparation } from "./guard.ts";
