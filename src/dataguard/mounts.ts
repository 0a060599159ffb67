/**
 * Which of a container's mounts the data guard copies (docs/data-guard.md): with `volumes` the
 * named and anonymous volumes it mounts read-write, with `all` its read-write bind mounts too.
 * Read-only mounts, tmpfs and every other kind are never copied.
 */
import { spend } from "../config/work.ts";
import { MAX_LABEL_CHARS } from "../core/bounded.ts";
import type { ContainerInspect } from "../engine/port.ts";

export type GuardMode = "off" | "volumes" | "all";

export interface GuardedMount {
  /** where the container sees it: the path copied and restored through the engine */
  destination: string;
  type: "volume" | "bind";
  /** a volume's name (an anonymous volume's is its 64-hex id) */
  name?: string;
  /** the engine's host path, for the report only: svc never reads it */
  source: string;
}

interface InspectMount {
  Type?: string;
  Name?: string;
  Source?: string;
  Destination?: string;
  RW?: boolean;
}

/**
 * The mounts to copy, or why the container cannot be guarded: a mount nested inside a guarded
 * one would be copied with it and emptied by its restore, whatever its own mode.
 */
export function guardedMounts(
  inspect: Pick<ContainerInspect, "Mounts">,
  mode: GuardMode,
): { mounts: GuardedMount[] } | { problem: string } {
  if (mode === "off") return { mounts: [] };
  const all = ((inspect.Mounts ?? []) as InspectMount[]).filter(
    (m) => typeof m.Destination === "string" && m.Destination.startsWith("/"),
  );
  const guarded: GuardedMount[] = [];
  for (const m of all) {
    const wanted = m.Type === "volume" || (mode === "all" && m.Type === "bind");
    if (!wanted || m.RW !== true) continue;
    guarded.push({
      destination: normalize(m.Destination!),
      type: m.Type as "volume" | "bind",
      ...(m.Name ? { name: m.Name } : {}),
      source: m.Source ?? "",
    });
  }
  for (const g of guarded) {
    if (g.destination === "/") return { problem: "a guarded mount is the container's root" };
    const nested = all.find(
      (m) => normalize(m.Destination!) !== g.destination && normalize(m.Destination!).startsWith(`${g.destination}/`),
    );
    if (nested)
      return {
        problem: `mount ${nested.Destination} lies inside the guarded mount ${g.destination}; its restore would empty both`,
      };
  }
  return { mounts: guarded.sort((a, b) => a.destination.localeCompare(b.destination)) };
}

/** The guard a container's label asks for (`svc.data_guard`), else the option; undefined when the label says nothing svc knows. */
export function guardModeOf(label: string | undefined, option: GuardMode): GuardMode | undefined {
  if (label === undefined) return option;
  // longer than svc reads of a label: not a mode (the container's update is held or goes without a copy, as for any)
  if (label.length > MAX_LABEL_CHARS) return undefined;
  spend(label.length);
  if (label.trim() === "") return option;
  const text = label.trim().toLowerCase();
  if (text === "off" || text === "volumes" || text === "all") return text;
  if (text === "false") return "off";
  if (text === "true") return option === "off" ? "volumes" : option;
  return undefined;
}

function normalize(path: string): string {
  const trimmed = path.replace(/\/+/g, "/").replace(/\/$/, "");
  return trimmed === "" ? "/" : trimmed;
}

/** An archive of DEST names its entries under DEST's last part, as the engine's archive of it does (copier.ts writes and reads them so). */
export function archiveParent(destination: string): { parent: string; base: string } {
  const at = destination.lastIndexOf("/");
  return { parent: at <= 0 ? "/" : destination.slice(0, at), base: destination.slice(at + 1) };
}
