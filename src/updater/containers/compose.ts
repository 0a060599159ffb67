/**
 * A compose container's tag move written into its project's files (the compose room,
 * docs/compose.md): where its version is written, found before the check (a hold gives the
 * reason a newer tag is only reported); the move planned once decided (a dry run shows it); the
 * files of a stack written once, after the pulls and before anything stops, with compose's
 * config hash of each service for its replacement; the edits of a container that did not stay
 * updated written back once its group is done; then the git step.
 */
import {
  COMPOSE_LABELS,
  type ComposeFiles,
  type ComposeMove,
  changesOf,
  type FileChange,
  projectOf,
  type Written,
} from "../../compose/index.ts";
import { labelName } from "../../config/index.ts";
import { toSvcError } from "../../core/errors.ts";
import type { Engine, ImageSummary } from "../../engine/port.ts";
import type { ComposeChange as GitChange, GitOutcome, GitStep, Move } from "../../git/index.ts";
import type { ProtocolContext } from "../cycle/context.ts";
import { type Decision, decision, finish } from "../cycle/target.ts";
import type { CycleOptions } from "../types.ts";
import type { ContainerEntry } from "./entry.ts";
import { park, planReplacement, replace } from "./protocol.ts";

/** `report` keeps a compose container's newer tags reported only (src/config/labels.ts). */
const REPORT_LABEL = labelName("tag_policy.compose");

/**
 * Where each compose container's version is written (one with a tag policy, or a rollback across
 * tags). Its image's labels come from the cycle's one image list; an image listed without them
 * is inspected (the image is local), for the compose labels a container has from its image.
 */
export async function locateCompose(
  compose: ComposeFiles | undefined,
  engine: Pick<Engine, "inspectImage">,
  images: readonly ImageSummary[],
  entries: Iterable<ContainerEntry>,
  options: CycleOptions,
): Promise<void> {
  if (!compose) return;
  const listed = new Map(images.map((image) => [image.id, image.labels]));
  const labelsOf = async (imageId: string) =>
    listed.get(imageId) ??
    (await engine.inspectImage(imageId).then(
      (image) => (image ? (image.Config?.Labels ?? {}) : null),
      () => null,
    ));
  for (const entry of entries) {
    const { labels, image, imageId } = entry.summary;
    if ((!entry.policy.tagPolicy && !options.toLocalTag) || labels[REPORT_LABEL]?.trim() === "report") continue;
    if (!projectOf(labels)) continue;
    entry.composeSite = compose.where(labels, image, await labelsOf(imageId)) ?? undefined;
  }
}

/** What the check is told of a compose container: whether a newer tag may be applied, and why not. */
export function composeCheckInput(entry: ContainerEntry): {
  reportTagOnly: boolean;
  tagHeldBecause?: string;
  movesPinned: boolean;
} {
  const isCompose = entry.summary.labels[COMPOSE_LABELS.project] !== undefined;
  if (isCompose && entry.summary.labels[REPORT_LABEL]?.trim() === "report")
    return { reportTagOnly: true, tagHeldBecause: `label ${REPORT_LABEL}=report`, movesPinned: false };
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
 * move cannot be planned stays stale with it. Returns the containers it holds back.
 */
export function planCompose(
  compose: ComposeFiles | undefined,
  entries: Iterable<ContainerEntry>,
  toUpdate: ReadonlySet<string>,
  options: CycleOptions,
): Decision[] {
  if (!compose) return [];
  const all = [...entries];
  const held: Decision[] = [];
  for (const entry of all) {
    const name = entry.summary.name;
    if (!toUpdate.has(name) || entry.newImage === null) continue;
    const site = entry.composeSite;
    if (!site) continue;
    if (!site.ok) {
      if (options.toLocalTag && !site.optedOut)
        held.push(
          decision(name, "skipped", `not rolled back: its compose file cannot be written back (${site.reason})`),
        );
      continue;
    }
    const move = compose.plan(
      name,
      site.site,
      entry.newImage,
      entry.newDigest,
      entry.summary.labels[COMPOSE_LABELS.configHash],
    );
    if (typeof move === "string") {
      held.push(decision(name, options.toLocalTag ? "skipped" : "stale", `its compose file is not changed: ${move}`));
      continue;
    }
    entry.composeMove = options.toLocalTag ? { ...move, back: true } : move;
    entry.compose = { changes: move.changes, written: false, recreates: null };
  }
  const heldNames = new Set(held.map((d) => d.name));
  return [...held, ...holdShared(all, new Set([...toUpdate].filter((name) => !heldNames.has(name))))];
}

/**
 * A run of text shared by several services (an anchor, a variable) moves only when every one of
 * them moves to the same version in this cycle; otherwise none does, and each says why (the
 * containers held back, out of `going`).
 */
function holdShared(entries: ContainerEntry[], going: Set<string>): Decision[] {
  const held: Decision[] = [];
  const byService = new Map<string, ContainerEntry>();
  const keyOf = (project: { workingDir: string; name: string }, service: string) =>
    `${project.workingDir}\0${project.name}\0${service}`;
  for (const entry of entries) {
    const site = entry.composeSite;
    if (site?.ok) byService.set(keyOf(site.site.project, site.site.project.service), entry);
  }
  // holding one may leave another alone on the shared text: until nothing changes
  for (let changed = true; changed; ) {
    changed = false;
    for (const entry of entries) {
      const move = entry.composeMove;
      if (!move || move.site.sharedWith.length === 0 || !going.has(entry.summary.name)) continue;
      const stuck = move.site.sharedWith.filter((service) => {
        const other = byService.get(keyOf(move.site.project, service));
        return !other?.composeMove || !going.has(other.summary.name) || !sameEdits(other.composeMove.edits, move.edits);
      });
      if (stuck.length === 0) continue;
      const to = move.edits[0]?.new ?? "";
      const what = move.site.variable ?? "its image line";
      held.push(
        decision(
          entry.summary.name,
          "stale",
          `newer tag ${to} available; the compose file names ${move.site.tag.text} (${what} is shared with ${stuck.join(", ")}, which does not move to ${to} in this cycle)`,
        ),
      );
      going.delete(entry.summary.name);
      entry.compose = undefined;
      changed = true;
    }
  }
  return held;
}

function sameEdits(
  a: readonly { file: string; offset: number; new: string }[],
  b: readonly { file: string; offset: number; new: string }[],
): boolean {
  const shared = a.filter((x) => b.some((y) => y.file === x.file && y.offset === x.offset));
  return shared.every((x) => b.some((y) => y.file === x.file && y.offset === x.offset && y.new === x.new));
}

/** One stack's files written for the moves of a group. */
export interface StackWrite {
  written: Written;
  moves: ComposeMove[];
  /** why Git would refuse this change (asked before the write), or null */
  gitRefused: string | null;
}

/**
 * Writes the files of the moves among `updating`, one stack at a time (each file once). A stack
 * whose files cannot be written (changed since read, read-only) is not updated: its containers
 * are skipped with the reason, before anything is stopped.
 */
export async function writeCompose(
  compose: ComposeFiles | undefined,
  git: GitStep | undefined,
  ctx: ProtocolContext,
  entries: Map<string, ContainerEntry>,
  updating: Set<string>,
): Promise<StackWrite[]> {
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
    const gitRefused = gitOn(ctx) && git ? await git.check(gitChange(entries, moves, changesOf(moves))) : null;
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
      entry.compose = {
        changes: move.changes,
        written: true,
        recreates: written.recreates.get(move.container) ?? null,
      };
      audit(ctx, "compose_write", move, move.changes.join("; "));
    }
    writes.push({ written, moves, gitRefused });
  }
  return writes;
}

/**
 * Once a group is done: the edits of every container that does not run its new version are
 * written back (each file once more); the rest go to the git step.
 */
export async function settleCompose(
  compose: ComposeFiles | undefined,
  git: GitStep | undefined,
  ctx: ProtocolContext,
  entries: Map<string, ContainerEntry>,
  writes: readonly StackWrite[],
): Promise<void> {
  if (!compose) return;
  for (const { written, moves, gitRefused } of writes) {
    let standing = moves.filter((move) => entries.get(move.container)!.state === "updated");
    if (standing.length > 0 && standing.length < moves.length) {
      // a stack moves as a unit: one service failed, so the others go back with it
      const failed = moves
        .filter((m) => ["failed", "rolled_back"].includes(entries.get(m.container)!.state))
        .map((m) => m.site.project.service);
      standing = await rollBackWithStack(ctx, entries, standing, failed);
    }
    if (standing.length < moves.length) {
      const problems = compose.keepOnly(written, standing);
      for (const move of moves.filter((m) => !standing.includes(m))) {
        const entry = entries.get(move.container)!;
        entry.compose = { changes: move.changes, written: false, recreates: null };
        if (problems.length > 0) entry.reason = [entry.reason, ...problems].filter(Boolean).join("; ");
        audit(ctx, "compose_revert", move, move.changes.join("; "), problems.join("; ") || undefined);
      }
    }
    // the git step, once a whole stack's change stands (one commit for a stack moved together)
    if (git && gitOn(ctx) && standing.length > 0 && standing.length === moves.length) {
      const done: GitOutcome = gitRefused
        ? {
            mode: ctx.config.compose.git,
            done: "nothing",
            commit: null,
            branch: null,
            pull_request: null,
            problem: gitRefused,
          }
        : await git.record(gitChange(entries, standing, written.files));
      for (const move of standing) tellGit(entries.get(move.container)!, done);
    }
  }
}

/**
 * With `[compose] git = "pull_request"` svc applies nothing itself: each service's move goes into
 * a pull request (one per service and version, updated when one is open), and the container stays
 * stale, its reason naming the request (docs/compose.md, "Git"). Returns the containers it keeps
 * stale so.
 */
export async function proposeCompose(
  git: GitStep | undefined,
  ctx: ProtocolContext,
  entries: Map<string, ContainerEntry>,
  toUpdate: ReadonlySet<string>,
): Promise<Decision[]> {
  if (!git || ctx.config.compose.git !== "pull_request") return [];
  const proposed: Decision[] = [];
  for (const name of toUpdate) {
    const entry = entries.get(name)!;
    const move = entry.composeMove;
    if (!move) continue;
    const done = await git.record(gitChange(entries, [move], changesOf([move])));
    tellGit(entry, done);
    const to = move.edits[0]?.new ?? entry.newImage ?? "";
    proposed.push(
      decision(
        name,
        "stale",
        done.pull_request
          ? `newer tag ${to} proposed in a pull request: ${done.pull_request.url}`
          : `newer tag ${to} available; the compose file names ${move.site.tag.text} (pull request not made: ${done.problem ?? "nothing to propose"})`,
      ),
    );
  }
  return proposed;
}

function gitOn(ctx: ProtocolContext): boolean {
  return ctx.config.compose.git !== "off";
}

/** The git room's view of a stack's change: its folder, each service's move and notes, each file before and after. */
function gitChange(
  entries: Map<string, ContainerEntry>,
  moves: readonly ComposeMove[],
  files: readonly FileChange[],
): GitChange {
  const gitMoves: Move[] = moves.map((move) => {
    const entry = entries.get(move.container)!;
    const releases = entry.releases;
    return {
      service: move.site.project.service,
      from: move.from ?? entry.summary.image,
      to: move.to ?? entry.newImage ?? entry.summary.image,
      notes: releases
        ? { link: releases.newest_url, source: releases.source, count: releases.count, breaking: releases.breaking }
        : null,
    };
  });
  const back = moves.some((move) => move.back);
  return {
    project: moves[0]!.site.project.workingDir,
    moves: gitMoves,
    ...(back ? { note: "Rolled back on request (svc rollback)" } : {}),
    files: files.map((f) => ({ path: f.file, before: f.before, after: f.after })),
  };
}

function tellGit(entry: ContainerEntry, done: GitOutcome): void {
  if (!entry.compose) return;
  entry.compose.git = {
    done: done.done,
    commit: done.commit,
    pull_request: done.pull_request?.url ?? null,
    problem: done.problem,
  };
}

/** The service of `name`'s stack that failed in this cycle (the others are then not started), or null. */
export function failedInStack(entries: Map<string, ContainerEntry>, name: string): string | null {
  const move = entries.get(name)?.composeMove;
  if (!move) return null;
  for (const other of entries.values()) {
    const theirs = other.composeMove;
    if (
      !theirs ||
      other === entries.get(name) ||
      theirs.site.project.name !== move.site.project.name ||
      theirs.site.project.workingDir !== move.site.project.workingDir
    )
      continue;
    if (other.state === "failed" || other.state === "rolled_back") return theirs.site.project.service;
  }
  return null;
}

/**
 * Puts the updated services of a stack back on the image and reference they ran before (their
 * new containers replaced by the update protocol, watched as any update), because another service
 * of the stack failed. Answers the moves that still stand (a service that could not be put back).
 */
async function rollBackWithStack(
  ctx: ProtocolContext,
  entries: Map<string, ContainerEntry>,
  standing: ComposeMove[],
  failed: string[],
): Promise<ComposeMove[]> {
  const still: ComposeMove[] = [];
  for (const move of [...standing].reverse()) {
    const entry = entries.get(move.container)!;
    const why = `rolled back with its stack: ${failed.join(", ")} failed`;
    try {
      const current = await ctx.engine.inspectContainer(entry.id);
      // null on 404 only (the image gone); an engine error fails this rollback, said below, rather than take no defaults
      const oldImage = await ctx.engine.inspectImage(entry.summary.imageId);
      const labels = move.runningHash ? { [COMPOSE_LABELS.configHash]: move.runningHash } : undefined;
      const r = planReplacement(current, oldImage, {
        image: entry.summary.image,
        stopSignal: entry.policy.stopSignal,
        stopTimeoutMs: entry.policy.stopTimeoutMs,
        revive: false,
        self: false,
        labels,
      });
      ctx.log.warn("rolling back with its stack", { container: move.container, reason: why });
      await park(ctx, r);
      const outcome = await replace(ctx, r);
      if (outcome.kind !== "replaced") throw new Error(outcome.reason);
      entry.id = outcome.newId;
      entry.newImageId = entry.summary.imageId;
      finish(entry, "rolled_back", why);
    } catch (error) {
      ctx.log.error("could not roll back with its stack", {
        container: move.container,
        error: toSvcError(error).message,
      });
      entry.reason = `${failed.join(", ")} failed, and svc could not put this service back: ${toSvcError(error).message}`;
      still.push(move);
    }
  }
  return still;
}

function audit(
  ctx: ProtocolContext,
  action: "compose_write" | "compose_revert",
  move: ComposeMove,
  change: string,
  error?: string,
): void {
  const files = [...new Set(move.edits.map((e) => e.file))].join(",");
  ctx.audit.record({
    action,
    container: move.container,
    file: files,
    change,
    trigger: ctx.trigger,
    session_id: ctx.sessionId,
    ...(error ? { error } : {}),
  });
}

/**
 * Groups of containers replaced together, merged so that the moves of one compose project are in
 * one group: its files are then written once, and its services replaced in dependency order.
 */
export function mergeStacks(groups: string[][], entries: Map<string, ContainerEntry>): string[][] {
  const stackOf = (name: string) => {
    const move = entries.get(name)?.composeMove;
    return move ? `${move.site.project.workingDir}\0${move.site.project.name}` : undefined;
  };
  const merged: string[][] = [];
  const byStack = new Map<string, string[]>();
  for (const group of groups) {
    const stacks = [...new Set(group.map(stackOf).filter((s): s is string => s !== undefined))];
    const into = stacks.map((s) => byStack.get(s)).find((g) => g !== undefined);
    if (!into) {
      merged.push(group);
      for (const s of stacks) byStack.set(s, group);
      continue;
    }
    into.push(...group);
    for (const s of stacks) {
      const other = byStack.get(s);
      if (other && other !== into) {
        into.push(...other);
        merged.splice(merged.indexOf(other), 1);
        for (const [key, g] of byStack) if (g === other) byStack.set(key, into);
      }
      byStack.set(s, into);
    }
  }
  return merged;
}
