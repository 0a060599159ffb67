/**
 * One container's replacement as the update protocol (containers/protocol.ts) carries it from step
 * to step: what it started from, and how far it got, for undoing.
 */
import type { Copy, Preparation } from "../../dataguard/index.ts";
import type { ContainerInspect, ImageInspect } from "../../engine/port.ts";
import type { DataGuardReport } from "../types.ts";

export interface Replacement {
  name: string;
  old: ContainerInspect;
  oldImage: ImageInspect | null;
  /** the reference the new container is created from: the old Config.Image, or where a tag policy moves it */
  image: string;
  wasRunning: boolean;
  /** start the new container (running before, or revived by revive_stopped) */
  startAfter: boolean;
  stopSignal?: string;
  stopTimeoutMs: number;
  /** svc's own container: parked without a stop, never removed by this process */
  self: boolean;
  /** labels the new container carries over the old one's (compose's config hash once svc wrote its files) */
  labels?: Record<string, string>;
  /** progress, for undoing */
  parkedAs?: string;
  stopped: boolean;
  newId?: string;
  /** the new container's start was asked for, or a copy was put back: undoing puts the present data's copy back */
  dataTouched?: boolean;
  /** the data guard's decision (containers/guard.ts), its copy, and what the report says of it */
  guardPlan?: Extract<Preparation, { kind: "copy" }>;
  copy?: Copy;
  /** a copy the update must not remove (svc rollback --with-data restores it) */
  keepCopy?: Copy;
  dataGuard?: DataGuardReport;
}
