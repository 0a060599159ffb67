/**
 * What every engine action of the updater is done with (the container protocol, hooks, crash
 * recovery, a Swarm update): the engine, the audit log, the trigger and session it belongs to, and
 * the watch timing. A leaf of the updater room: the modules that act import it, it imports none of them.
 */
import type { Config } from "../../config/index.ts";
import type { DataGuard } from "../../dataguard/index.ts";
import type { Engine } from "../../engine/port.ts";
import type { AuditLog, Logger } from "../../log/index.ts";
import type { ProgressListener } from "./progress.ts";

export interface ProtocolContext {
  engine: Engine;
  config: Config;
  log: Logger;
  audit: AuditLog;
  trigger: string;
  sessionId?: string;
  timing: WatchTiming;
  /** told of each step as it starts (cycle/progress.ts) */
  progress?: ProgressListener;
  /** copies of guarded mounts with each update (docs/data-guard.md); absent: none */
  guard?: DataGuard;
}

export interface WatchTiming {
  /** how often the new container is inspected while watched */
  pollMs: number;
  /**
   * Without a healthcheck, how long the new container must keep running to pass (capped by
   * startup_timeout): a crash in the first seconds is the common failure, and waiting the whole
   * startup_timeout for every container would make updates slow.
   */
  stableMs: number;
}

export const DEFAULT_TIMING: WatchTiming = { pollMs: 250, stableMs: 3000 };
