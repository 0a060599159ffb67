/**
 * A compose container's tag move written into its project's files (the compose room,
 * docs/compose.md): where its version is written, found before the check (a hold gives the
 * reason a newer tag is only reported); the move planned once decided (a dry run shows it); the
 * files of a stack written once, after the pulls and before anything stops, with compose's
 * config hash of each service for its replacement; the edits of a container that did not stay
 * updated written back once its group is done; then the git step.
 */
import { COMPOSE_LABELS, type ComposeFiles, type ComposeMove, type Written } from "../../compose/index.ts";
import { toSvcError } from "../../errors.ts";
import type { ProtocolContext } from "../cycle/context.ts";
import { finish } from "../cycle/target.ts";
import type { CycleOptions } from "../types.ts";
import type { ContainerEntry } from "./replace.ts";

/** Where each compose container's version is written (one with a tag policy, or a rollback across tags). */
export function locateCompose(compose: ComposeFiles | undefined, entries: Iterable<ContainerEntry>, options: CycleOptions): void {
  if (!compose) return;
  for (const entry of entries) {
    if (!entry.policy.tagPolicy && !options.toLocalTag) continue;
    entry.composeSite = compose.where(entry.summary.labels, entry.summary.image) ?? undefined;
  }
}

/** What the check is told of a compose container: whether a newer tag may be applied, and why not. */
export function composeCheckInput(entry: ContainerEntry): { reportTagOnly: boolean; tagHeldBecause?: string; movesPinned: boolean } {
  const isCompose = entry.summary.labels[COMPOSE_LABELS.project] !== undefined;
  const site = entry.composeSite;
  return {
    reportTagOnly: isCompose && !entry.policy.moveCompose && site?.ok !== true,
    ...(site && !site.ok ? { tagHeldBecause: site.reason } : {}),
    movesPinned: site?.ok === true && site.site.digest !== null,
  };
}

/**
 * The move of each container to replace that goes to another tag: its edits and what svc says of
 * them. A rollback whose file cannot be written back is refused with the reason; an update whose
 * move cannot be planned stays stale with it.
 */
export function planCompose(compose: ComposeFiles | undefined, entries: Iterable<ContainerEntry>, toUpdate: Set<string>, options: CycleOptions): void {
  if (!compose) return;
  for (const entry of entries) {
    const name = entry.summary.name;
    if (!toUpdate.has(name) || entry.newImage === null) continue;
    const site = entry.composeSite;
    if (!site) continue;
    if (!site.ok) {
      if (options.toLocalTag && !site.optedOut) {
        finish(entry, "skipped", `not rolled back: its compose file cannot be written back (${site.reason})`);
        toUpdate.delete(name);
      }
      continue;
    }
    const move = compose.plan(name, site.site, entry.newImage, entry.newDigest, entry.summary.labels[COMPOSE_LABELS.configHash]);
    if (typeof move === "string") {
      finish(entry, options.toLocalTag ? "skipped" : "stale", `its compose file is not changed: ${move}`);
      toUpdate.delete(name);
      continue;
    }
    entry.composeMove = move;
    entry.compose = { changes: move.changes, written: false, recreates: null };
  }
}

/** One stack's files written for the moves of a group. */
export interface StackWrite {
  written: Written;
  moves: ComposeMove[];
}

/**
 * Writes the files of the moves among `updating`, one stack at a time (each file once). A stack
 * whose files cannot be written (changed since read, read-only) is not updated: its containers
 * are skipped with the reason, before anything is stopped.
 */
export async function writeCompose(compose: ComposeFiles | undefined, ctx: ProtocolContext, entries: Map<string, ContainerEntry>, updating: Set<string>): Promise<StackWrite[]> {
  if (!compose) return [];
  const stacks = new Map<string, ComposeMove[]>();
  for (const name of updating) {
    const move = entries.get(name)!.composeMove;
    if (!move) continue;
    const key = `${move.site.project.workingDir}\0${move.site.project.name}`;
    stacks.set(key, [...(stacks.get(key) ?? []), move]);
  }
  const writes: StackWrite[] = [];
  for (const moves of stacks.values()) {
    let written: Written;
    try {
      written = await compose.write(moves);
    } catch (error) {
      const reason = `its compose file was not written: ${toSvcError(error).message}`;
      for (const move of moves) {
        finish(entries.get(move.container)!, "skipped", reason);
        updating.delete(move.container);
        audit(ctx, "compose_write", move, move.changes.join("; "), reason);
      }
      continue;
    }
    for (const move of moves) {
      const entry = entries.get(move.container)!;
      const hash = written.hashes.get(move.container);
      entry.composeLabels = hash ? { [COMPOSE_LABELS.configHash]: hash } : undefined;
      entry.compose = { changes: move.changes, written: true, recreates: written.recreates.get(move.container) ?? null };
      audit(ctx, "compose_write", move, move.changes.join("; "));
    }
    writes.push({ written, moves });
  }
  return writes;
}

/**
 * Once a group is done: the edits of every container that does not run its new version are
 * written back (each file once more); the rest go to the git step.
 */
export async function settleCompose(compose: ComposeFiles | undefined, ctx: ProtocolContext, entries: Map<string, ContainerEntry>, writes: readonly StackWrite[]): Promise<void> {
  if (!compose) return;
  for (const { written, moves } of writes) {
    const standing = moves.filter((move) => entries.get(move.container)!.state === "updated");
    if (standing.length < moves.length) {
      const problems = compose.keepOnly(written, standing);
      for (const move of moves.filter((m) => !standing.includes(m))) {
        const entry = entries.get(move.container)!;
        entry.compose = { changes: move.changes, written: false, recreates: null };
        if (problems.length > 0) entry.reason = [entry.reason, ...problems].filter(Boolean).join("; ");
        audit(ctx, "compose_revert", move, move.changes.join("; "), problems.join("; ") || undefined);
      }
    }
    for (const move of standing) await commit(compose, ctx, entries.get(move.container)!, move);
  }
}

async function commit(compose: ComposeFiles, ctx: ProtocolContext, entry: ContainerEntry, move: ComposeMove): Promise<void> {
  const notes = entry.releases ? { link: entry.releases.newest_url, count: entry.releases.count, breaking: entry.releases.breaking } : null;
  try {
    await compose.git.committed({ files: [...new Set(move.edits.map((e) => e.file))], project: move.site.project, from: entry.summary.image, to: entry.newImage ?? entry.summary.image, notes });
  } catch (error) {
    ctx.log.warn("compose: the git step failed", { container: entry.summary.name, error: toSvcError(error).message });
  }
}

function audit(ctx: ProtocolContext, action: "compose_write" | "compose_revert", move: ComposeMove, change: string, error?: string): void {
  const files = [...new Set(move.edits.map((e) => e.file))].join(",");
  ctx.audit.record({ action, container: move.container, file: files, change, trigger: ctx.trigger, session_id: ctx.sessionId, ...(error ? { error } : {}) });
}
