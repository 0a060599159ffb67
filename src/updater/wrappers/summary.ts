/**
 * What a person (or a log reader) is told of a cycle: one line per container ("web: updated
 * app:1.2.0 -> 1.3.0 (sha256:8b54f3a1c2d4 -> 8367aa01bc3e)", "db: failed: <reason>"), the steps of
 * an update as they happen, and a summary at the level of the worst outcome. In json and logfmt
 * each container's line carries its structured entry; on a terminal (pretty) the line says it all.
 * The SessionReport itself (docs/api.md) is untouched: this only tells it.
 */
import { formatSize } from "../../config/values.ts";
import { shortId } from "../../core/digests.ts";
import type { LevelName, Logger } from "../../log/index.ts";
import { diffSummary } from "../../vulns/index.ts";
import type { ProgressListener, Step } from "../cycle/progress.ts";
import type { Updater } from "../port.ts";
import { type ContainerReport, DRY_RUN_REASON, type RollbackResult, type SessionReport } from "../types.ts";

const wouldUpdate = (c: ContainerReport): boolean => c.state === "stale" && c.reason === DRY_RUN_REASON;

/** `app:1.2` from `registry.example/team/app:1.2` (the part a person recognises). */
function shortImage(reference: string): string {
  return reference.slice(reference.lastIndexOf("/") + 1);
}

/** `app:1.2.0 -> 1.3.0` for a tag move, `app:1.2.0` for a new digest under the same tag. */
function imageChange(c: ContainerReport): string {
  if (c.new_image === null || c.new_image === c.image) return shortImage(c.image);
  const to = shortImage(c.new_image);
  const [fromRepo] = shortImage(c.image).split(":");
  return to.startsWith(`${fromRepo}:`)
    ? `${shortImage(c.image)} -> ${to.slice(fromRepo!.length + 1)}`
    : `${shortImage(c.image)} -> ${to}`;
}

/** `(sha256:8b54f3a1c2d4 -> 8367aa01bc3e)`, or nothing when the digests are unknown. */
function digestChange(from: string | null, to: string | null): string {
  if (!from && !to) return "";
  return ` (sha256:${shortId(from) || "?"} -> ${shortId(to) || "?"})`;
}

/** `3 releases, 1 breaking`: what the update brings, when svc read any (docs/release-notes.md); "" otherwise. */
export function releaseWords(c: Pick<ContainerReport, "releases">): string {
  const r = c.releases;
  if (!r || r.count === 0) return "";
  return `${r.count} release${r.count === 1 ? "" : "s"}${r.breaking > 0 ? `, ${r.breaking} breaking` : ""}`;
}

/**
 * `vulnerabilities: fixes 3, 1 high; brings in 1, 1 critical`: what the update fixes and brings in,
 * when vulnerabilities are on and there is something to say (docs/vulnerabilities.md); "" otherwise.
 */
export function vulnerabilityWords(c: Pick<ContainerReport, "vulnerabilities">): string {
  const diff = c.vulnerabilities;
  if (!diff) return "";
  if (diff.problem !== null) return "vulnerabilities unknown";
  if (diff.counts.fixed === 0 && diff.counts.introduced === 0) return "";
  return `vulnerabilities: ${diffSummary(diff)}`;
}

/**
 * `signed by <identity (issuer)>` or `signed by key SHA256:...` for a verified new image,
 * `signature not verified: <why>` for one a `warn` policy let through (docs/verification.md); ""
 * otherwise: an unsigned image says nothing, and a hold says its reason where reasons are said.
 */
export function signatureWords(c: Pick<ContainerReport, "signature">): string {
  const s = c.signature;
  if (s?.status === "verified" && s.signer) return `signed by ${s.signer}`;
  if (s?.status === "unverified") return `signature not verified${s.reason ? `: ${s.reason}` : ""}`;
  return "";
}

/** What svc writes (a dry run) or wrote into a compose project's files, and whether compose will recreate the container all the same. */
function composeNote(c: ContainerReport): string {
  if (!c.compose || (c.state !== "updated" && !wouldUpdate(c))) return "";
  const verb = c.compose.written ? "wrote" : "writes";
  const recreates = c.compose.recreates ? `; ${c.compose.recreates}` : "";
  return `; ${verb} ${c.compose.changes.join(", ")}${recreates}`;
}

/** A compose change Git did not record (a refused commit, a failed push): said on the container's line, never only in the JSON. */
export function gitProblem(c: Pick<ContainerReport, "compose">): string | null {
  return c.compose?.written ? (c.compose.git?.problem ?? null) : null;
}

function gitNote(c: ContainerReport): string {
  const problem = gitProblem(c);
  if (!problem) return "";
  return c.compose?.git?.done === "nothing" ? `; not committed to Git: ${problem}` : `; Git: ${problem}`;
}

function releasesNote(c: ContainerReport): string {
  const words = [releaseWords(c), vulnerabilityWords(c), signatureWords(c)].filter(Boolean).join("; ");
  return words ? ` (${words})` : "";
}

/** One container's outcome in a sentence. */
export function containerLine(c: ContainerReport): string {
  const why = c.reason ? `: ${c.reason}` : "";
  const brings = releasesNote(c) + composeNote(c) + gitNote(c);
  switch (c.state) {
    case "updated":
      return `${c.name}: updated ${imageChange(c)}${digestChange(c.old_digest ?? c.old_image_id, c.new_digest ?? c.new_image_id)}${brings}`;
    case "held":
      return `${c.name}: held ${imageChange(c)}${digestChange(c.old_digest, c.new_digest)}${brings}${why}`;
    case "failed":
      return `${c.name}: failed${why}`;
    case "rolled_back":
      // a rollback asked for (svc rollback, POST /v1/rollback) is no failure of the new image
      if (c.reason?.startsWith("rolled back on request"))
        return `${c.name}: ${c.reason}${digestChange(c.old_digest ?? c.old_image_id, c.new_digest ?? c.new_image_id)}`;
      return `${c.name}: rolled back to ${shortImage(c.image)}, the new image failed${why}`;
    case "stale":
      if (wouldUpdate(c))
        return `${c.name}: would update ${imageChange(c)}${digestChange(c.old_digest, c.new_digest)}${brings}`;
      return `${c.name}: newer image not applied ${imageChange(c)}${digestChange(c.old_digest, c.new_digest)}${brings}${why}`;
    case "pending":
      return `${c.name}: pending ${imageChange(c)}${digestChange(c.old_digest, c.new_digest)}${why}`;
    case "skipped":
      return `${c.name}: skipped${why}`;
    case "fresh":
      return `${c.name}: up to date (${shortImage(c.image)})`;
  }
}

/** `cycle finished: 1 updated, 1 failed, 3 up to date`; a dry run's would-be updates are not "stale". */
export function summaryLine(report: SessionReport): string {
  const c = report.counts;
  const would = report.containers.filter(wouldUpdate).length;
  const parts: [number, string][] = [
    [would, "would be updated"],
    [c.updated, "updated"],
    [c.rolled_back, "rolled back"],
    [c.failed, "failed"],
    [c.stale - would, "newer image not applied"],
    [c.pending, "pending (update window)"],
    [c.held, "held (breaking)"],
    [c.skipped, "skipped"],
    [c.fresh, "up to date"],
    [report.containers.filter((each) => gitProblem(each) !== null).length, "with a Git problem"],
  ];
  const said = parts.filter(([n]) => n > 0).map(([n, what]) => `${n} ${what}`);
  return `${report.dry_run ? "dry run finished" : "cycle finished"}: ${said.length > 0 ? said.join(", ") : "no container selected"}`;
}

/** error when a container failed, warn when one was rolled back or its compose change not recorded in Git, else info. */
export function reportLevel(report: SessionReport): LevelName {
  if (report.counts.failed > 0) return "error";
  return report.counts.rolled_back > 0 || report.containers.some((c) => gitProblem(c) !== null) ? "warn" : "info";
}

function containerLevel(c: ContainerReport, report: SessionReport): LevelName {
  if (c.state === "failed") return "error";
  if (c.state === "rolled_back" || gitProblem(c) !== null) return "warn";
  // a scheduled cycle every few hours over dozens of containers: the fresh ones only at debug
  return c.state === "fresh" && report.trigger === "schedule" ? "debug" : "info";
}

/** Logs a finished cycle: a line per container, then the summary (same message and counts as ever in json/logfmt). */
export function logReport(log: Logger, report: SessionReport, pretty: boolean): void {
  for (const c of report.containers) {
    const fields = {
      session_id: report.id,
      trigger: report.trigger,
      container: c.name,
      state: c.state,
      image: c.image,
      new_image: c.new_image,
      old_digest: c.old_digest,
      new_digest: c.new_digest,
      reason: c.reason,
      duration_ms: c.duration_ms,
      ...(c.releases ? { releases: c.releases } : {}),
    };
    log[containerLevel(c, report)](containerLine(c), pretty ? undefined : fields);
  }
  const would = report.containers.filter(wouldUpdate).length;
  const counts = report.dry_run
    ? { ...report.counts, stale: report.counts.stale - would, would_update: would }
    : report.counts;
  if (pretty) log[reportLevel(report)](summaryLine(report));
  else
    log[reportLevel(report)](report.dry_run ? "dry run finished" : "cycle finished", {
      session_id: report.id,
      trigger: report.trigger,
      ...counts,
    });
}

/** `svc rollback` / POST /v1/rollback, told as a rollback. */
export function logRollback(log: Logger, result: RollbackResult, pretty: boolean): void {
  const fields = pretty ? undefined : { ...result };
  const data = result.data_guard?.restored
    ? `, with its data as the copy holds it (the data before it copied: ${formatSize(result.data_guard.bytes)}, GET /v1/data-guard)`
    : "";
  if (result.state === "updated")
    log.info(
      `${result.container}: rolled back to sha256:${shortId(result.to_image_id)} (was ${shortId(result.from_image_id)})${data}`,
      fields,
    );
  else
    log.error(
      `${result.container}: rollback ${result.state === "skipped" ? "not done" : "failed"}${result.reason ? `: ${result.reason}` : ""}`,
      fields,
    );
}

const STEP_TEXT: Partial<Record<Step, string>> = {
  pull: "pulling the newer image",
  pre_update: "running its pre_update hook",
  stop: "stopping",
  create: "creating the new container",
  start: "starting the new container",
  watch: "watching the new container",
  post_update: "running its post_update hook",
  rollback: "rolling back",
  data_copy: "copying its data (data_guard)",
  data_restore: "putting its data back (data_guard)",
  unit_restart: "restarting its systemd unit",
  remove: "removing the old container",
  image_remove: "removing the old image",
};

/** The steps that put the old container back, said as what they do (the new one goes, the old one comes back). */
const UNDO_TEXT: Partial<Record<Step, string>> = {
  remove: "removing the new container",
  start: "starting the old container again",
  rename: "giving the old container its name back",
};

/** The steps of an update as they happen, for a person watching (checks and renames are left out). */
export function stepLogger(log: Logger): ProgressListener {
  return (event) => {
    const text = (event.undoing ? UNDO_TEXT : STEP_TEXT)[event.step];
    if (text) log.info(`${event.container}: ${text}`);
  };
}

/** The updater of a service, telling each finished cycle and rollback it runs (see logReport). */
export function narrated(updater: Updater, log: Logger, pretty: boolean): Updater {
  const out = log.child("updater");
  return {
    ...updater,
    run: async (trigger, filter, options) => {
      const report = await updater.run(trigger, filter, options);
      if (report) logReport(out, report, pretty);
      return report;
    },
    rollback: async (container, trigger, options) => {
      const result = await updater.rollback(container, trigger, options);
      if (result) logRollback(out, result, pretty);
      return result;
    },
    get busy() {
      return updater.busy;
    },
  };
}
