/**
 * What the history says (docs/api.md, GET /v1/history): the kept session reports listed with
 * their outcome, one container's timeline, and for the dashboard each container's last outcome
 * and last update. Pure: the reports come from the state room's history.
 */

import { shortDigest } from "../../core/digests.ts";
import { parseReference } from "../../registry/reference.ts";
import type { ContainerReport, SessionReport } from "../types.ts";

/** A session in the list: everything but its fresh containers, which would only repeat "nothing newer". */
export function sessionSummary(report: SessionReport) {
  return {
    id: report.id,
    trigger: report.trigger,
    started_at: report.started_at,
    finished_at: report.finished_at,
    duration_ms: report.duration_ms,
    counts: report.counts,
    containers: report.containers.filter((c) => c.state !== "fresh"),
  };
}

export interface TimelineEntry {
  session_id: string;
  at: string;
  trigger: string;
  state: ContainerReport["state"];
  reason: string | null;
  /** what it ran and what it was moved to (or would be), as versions where the references say them */
  from_version: string;
  to_version: string | null;
  old_image_id: string;
  new_image_id: string | null;
}

/** A reference's tag, else the digest it names, short. */
function versionOf(reference: string | null, digest: string | null): string | null {
  if (reference) {
    try {
      const tag = parseReference(reference).tag;
      if (tag && tag !== "latest") return tag;
    } catch {
      // an odd reference: fall back to the digest
    }
  }
  return digest ? shortDigest(digest) : null;
}

/** One container's entries, newest first: every outcome but "fresh" (nothing happened then). */
export function timelineOf(reports: readonly SessionReport[], name: string): TimelineEntry[] {
  const entries: TimelineEntry[] = [];
  for (let i = reports.length - 1; i >= 0; i--) {
    const report = reports[i]!;
    const c = report.containers.find((entry) => entry.name === name);
    if (!c || c.state === "fresh") continue;
    entries.push({
      session_id: report.id,
      at: report.finished_at,
      trigger: report.trigger,
      state: c.state,
      reason: c.reason,
      from_version: versionOf(c.image, c.old_digest) ?? shortDigest(c.old_image_id),
      to_version: versionOf(c.new_image ?? (c.new_digest ? c.image : null), c.new_digest),
      old_image_id: c.old_image_id,
      new_image_id: c.new_image_id,
    });
  }
  return entries;
}

export interface LastOutcome {
  /** the state after the last cycle that checked it, and why */
  last_cycle: { at: string; state: ContainerReport["state"]; reason: string | null } | null;
  /** svc's last update of it: when, and from which version to which */
  last_update: { at: string; from_version: string; to_version: string | null } | null;
}

/** Per container name, what the kept reports say last (newest report wins). */
export function lastOutcomes(reports: readonly SessionReport[]): Map<string, LastOutcome> {
  const out = new Map<string, LastOutcome>();
  for (let i = reports.length - 1; i >= 0; i--) {
    const report = reports[i]!;
    for (const c of report.containers) {
      let known = out.get(c.name);
      if (!known)
        out.set(
          c.name,
          (known = { last_cycle: { at: report.finished_at, state: c.state, reason: c.reason }, last_update: null }),
        );
      if (known.last_update === null && c.state === "updated") {
        known.last_update = {
          at: report.finished_at,
          from_version: versionOf(c.image, c.old_digest) ?? shortDigest(c.old_image_id),
          to_version: versionOf(c.new_image ?? c.image, c.new_digest),
        };
      }
    }
  }
  return out;
}
