/**
 * What a cycle learns about each selected container, kept in one value per container (beside what
 * every target has: cycle/target.ts). The phases of containers/kind.ts read and fill it.
 */
import type { BuildSpec, ComposeMove, Located } from "../../compose/index.ts";
import type { Copy } from "../../dataguard/index.ts";
import type { ContainerInspect } from "../../engine/port.ts";
import type { ImageRef } from "../../registry/port.ts";
import type { BaseInput } from "../check/bases.ts";
import type { TargetEntry } from "../cycle/target.ts";
import type { ComposeChange, DataGuardReport } from "../types.ts";
import type { UnitMove } from "./unitmove.ts";

/** Per selected container, everything the cycle learns about it (beside what every target has: cycle/target.ts). */
export interface ContainerEntry extends TargetEntry {
  /** only when something is to be updated in this cycle */
  inspect?: ContainerInspect;
  ref?: ImageRef;
  id: string;
  newImageId: string | null;
  oldDigest: string | null;
  newDigest: string | null;
  /** the reference the container moves to (tag policy, rollback across tags); null: its own */
  newImage: string | null;
  /** a compose container: where its version is written, or why svc leaves its files alone (containers/compose.ts) */
  composeSite?: Located;
  /** its move in its compose files, once decided */
  composeMove?: ComposeMove;
  /** labels its replacement carries (compose's config hash over the files svc wrote) */
  composeLabels?: Record<string, string>;
  /** what the report says of its files */
  compose?: ComposeChange;
  /** what the data guard did (docs/data-guard.md) */
  dataGuard?: DataGuardReport;
  /** a copy this update must keep (svc rollback --with-data restores it) */
  keepCopy?: Copy;
  /** a container systemd runs: its move to another tag in its unit's file (containers/unitmove.ts) */
  unitMove?: UnitMove;
  /** a service compose builds: its build and bases (containers/built.ts) */
  built?: BuiltTarget;
  /** rebuilt in this cycle: the image it ran before (its compose tag goes back to it if the replacement does not stand) */
  rebuiltFrom?: string;
  /** a built service's running image was named `<repository>:svc-previous` before its build (containers/rebuild.ts) */
  previousTagged?: boolean;
}

/** A built service's container: its build as the files say it, and its bases. */
export interface BuiltTarget {
  /** null: named by the label or the image's annotations alone, with no build svc can read (not rebuilt) */
  spec: BuildSpec | null;
  /** where its bases were read: the Dockerfile (and compose's build), the label, the image's annotations */
  namedBy?: "label" | "annotation";
  bases: BaseInput[] | null;
  /** why its bases are unknown */
  problem: string | null;
  /** the build svc runs for it, as a person would type it (set once a cycle, when svc rebuilds here) */
  command?: string | null;
  /** why svc does not rebuild it here though it rebuilds others (what the engine's classic builder cannot build) */
  held?: string | null;
}
