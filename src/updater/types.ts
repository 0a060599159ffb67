/** The SessionReport (docs/api.md), and what the API and scheduler ask of the updater. */
import type { Copy } from "../dataguard/index.ts";
import type { ContainerSummary, ImageSummary } from "../engine/port.ts";
import type { ServiceSummary } from "../engine/swarm.ts";
import type { ReleaseNotes } from "../releases/index.ts";
import type { SignatureReport } from "../verify/index.ts";
import type { VulnerabilityDiff } from "../vulns/index.ts";

export type Trigger = "api" | "schedule" | "startup" | "run_once";

/**
 * Every state a report entry can be in, in the order a report counts them: the one list the type,
 * the counts and every schema that reads a report back (the API's answers, the digest on disk,
 * `svc rollback`'s answer) are made from. `pending`: stale, and to be applied when its update
 * window opens (docs/windows.md); `held`: stale, and kept back by hold_breaking until asked for by
 * name (docs/release-notes.md)
 */
export const OUTCOMES = ["updated", "failed", "skipped", "fresh", "stale", "pending", "rolled_back", "held"] as const;

export type ContainerOutcome = (typeof OUTCOMES)[number];

/** What an update brings, in a report entry (docs/api.md; the whole notes are in GET /v1/containers). */
export interface ReleaseSummary {
  /** the source repository's web address; null: none known */
  source: string | null;
  from_version: string | null;
  to_version: string | null;
  /** releases between the two versions (shown and not) */
  count: number;
  /** how many of them break */
  breaking: number;
  /** the newest release's page */
  newest_url: string | null;
  /** why the releases are missing or may be out of date */
  problem: string | null;
}

export interface UpdateFilter {
  container?: string[];
  image?: string[];
  /** only the targets of these compose projects or Swarm stacks (selection/selection.ts, groupOf) */
  stack?: string[];
}

export interface ContainerReport {
  /** present for a Swarm service (docs/swarm.md): one entry however many tasks it has; absent: a container */
  kind?: "service";
  id: string;
  name: string;
  image: string;
  /** the reference the container was moved to (a tag policy, a rollback across tags); null: it stays on \`image\` */
  new_image: string | null;
  old_image_id: string;
  new_image_id: string | null;
  old_digest: string | null;
  new_digest: string | null;
  state: ContainerOutcome;
  reason: string | null;
  duration_ms: number;
  /** pending: when its update window next opens (ISO 8601); null when it never does */
  applies_at?: string | null;
  /** present for a target that was stale (updated, stale, held...): what the update brings */
  releases?: ReleaseSummary;
  /** present for a target an update was to replace: who signed the new image, or why it did not verify (docs/verification.md) */
  signature?: SignatureReport;
  /** present for a stale container when vulnerabilities are on: what the update fixes and brings in (docs/vulnerabilities.md) */
  vulnerabilities?: VulnerabilityDiff;
  /** a compose container moved to another tag: what svc writes (a dry run) or wrote into its files (docs/compose.md) */
  compose?: ComposeChange;
  /** a service compose builds: its bases, those that moved, and whether it was rebuilt (docs/compose.md, "Built services") */
  built?: BuiltReport;
  /** the version label (org.opencontainers.image.version) of the image it ran when the cycle began, when it has one */
  version?: string;
  /** in notifications only, with http_api.public_url: the target's row on the page (docs/notifications.md) */
  page_url?: string;
  /** present when the data guard copied (or was asked to copy) the container's data (docs/data-guard.md) */
  data_guard?: DataGuardReport;
}

/** What the data guard did in one container's update. */
export interface DataGuardReport {
  /** the copy's size (the engine's archives of the guarded mounts); 0 when none was made */
  bytes: number;
  /** the time the copy (and a restore) added to the container's downtime */
  duration_ms: number;
  /** the data was put back as the copy holds it (the update was rolled back) */
  restored: boolean;
  /** why no copy was made (data_guard_over = skip), or why the restore failed */
  problem?: string;
}

export interface ComposeChange {
  /** "compose.yaml line 12: 2.3.1 -> 2.4.0", ".env line 3 (APP_TAG): 2.3.1 -> 2.4.0" */
  changes: string[];
  /** true once written and kept (the container runs the new version); false: planned, or written back */
  written: boolean;
  /** why compose's next `docker compose up -d` recreates the container all the same; null: it recreates nothing */
  recreates: string | null;
  /** with `[compose] git`: what Git got (a commit, a push, a pull request and its address) or why not (docs/compose.md, "Git"); absent: git off */
  git?: {
    done: "nothing" | "committed" | "pushed" | "pull_request";
    commit: string | null;
    pull_request: string | null;
    problem: string | null;
  };
}

/** How many targets a report scanned, and how many are in each state (`pending`: waiting for their update window). */
export type ReportCounts = { scanned: number } & Record<ContainerOutcome, number>;

export interface SessionReport {
  id: string;
  trigger: Trigger;
  started_at: string;
  finished_at: string;
  duration_ms: number;
  /** `stack` only when the request named one */
  filter: { container: string[]; image: string[]; stack?: string[] };
  counts: ReportCounts;
  containers: ContainerReport[];
  /** present (true) only for a dry run: everything decided, nothing changed */
  dry_run?: true;
}

/** What a dry run says of a container it would update. */
export const DRY_RUN_REASON = "would be updated (dry run)";

export interface RunOptions {
  /** decide everything, change nothing (default: the `dry_run` option) */
  dryRun?: boolean;
  /**
   * asked for while a cycle runs: wait for it (and what waits before) and run next, never dropped
   * (a press in Home Assistant, which cannot ask again by itself: cycle/runner.ts)
   */
  queue?: boolean;
  /** with queue: told when the request waits its turn instead of starting now (the API answers it as queued) */
  onQueued?: (request: QueuedRequest) => void;
  /**
   * take each selected container to the local image its tag names, whatever its labels and the
   * global options say (no pull, not monitor-only, no minimum age): a rollback on request
   */
  toLocalTag?: boolean;
  /** with toLocalTag: the local reference a container goes to instead of its own tag (a rollback across tags) */
  localReferences?: ReadonlyMap<string, string>;
  /** with toLocalTag: the data guard's copy each container's mounts go back to, once their present data is copied (svc rollback --with-data) */
  restoreCopies?: ReadonlyMap<string, Copy>;
  /** filled by the cycle with what it listed, for callers that describe containers without listing again */
  seen?: CycleSightings;
}

/** How a cycle runs: see RunOptions; `dryRun` is resolved against the option by then. */
export interface CycleOptions extends Omit<RunOptions, "dryRun"> {
  dryRun: boolean;
}

/** The engine's lists as one cycle saw them (GET /v1/containers reads labels there). */
export interface CycleSightings {
  containers?: ContainerSummary[];
  images?: ImageSummary[];
  /** the Swarm services, as a manager listed them (swarm/kind.ts) */
  services?: ServiceSummary[];
  /** the release notes of each stale target, by name (GET /v1/containers shows them whole) */
  releaseNotes?: Map<string, ReleaseNotes>;
}

/** What `svc rollback` and POST /v1/rollback did. */
export interface RollbackResult {
  container: string;
  /** the image the container ran, and the one it was put back on */
  from_image_id: string;
  to_image_id: string;
  state: ContainerOutcome;
  reason: string | null;
  /** with --with-data: what the data guard did (the present data's copy, the restore) */
  data_guard?: DataGuardReport;
}

/** A request waiting for the cycle under way (RunOptions.queue), as GET /v1/progress shows it. */
export interface QueuedRequest {
  trigger: Trigger;
  /** what it selects: the names it was given (empty lists: everything) */
  filter: { container: string[]; image: string[]; stack?: string[] };
  /** when it was asked for (ISO 8601 UTC) */
  asked_at: string;
}

/** What routes and the scheduler call. Only one cycle runs at a time. */
export interface CycleRunner {
  /**
   * Runs one cycle and resolves with its report, or with null when another cycle was running
   * (the request is skipped and counted in svc_scans_skipped, unless it asked to be queued); a
   * scheduled one waits for it and runs next (cycle/runner.ts).
   */
  run(trigger: Trigger, filter?: UpdateFilter, options?: RunOptions): Promise<SessionReport | null>;
  readonly busy: boolean;
  /** the requests queued behind the cycle under way, oldest first */
  queuedRequests(): QueuedRequest[];
}

/** A digest (or a tag a tag policy would move to) marked as not to be applied to a container (POST /v1/skip). */
export interface SkipResult {
  container: string;
  /** the digest skipped, when one was */
  digest?: string;
  /** the reference skipped, when a tag was */
  image?: string;
}

/** What the API asks of the updater besides cycles. */
export interface ContainerActions {
  /**
   * Marks `digest`, or the container's reference with `tag` (default: the newer digest a dry run
   * finds for the container) as not to be applied to `container`; a newer one is. Resolves null
   * when a cycle is running (the dry run could not run); throws SvcError not_found / bad_request
   * when there is nothing to skip.
   */
  skip(container: string, what?: { digest?: string; tag?: string }): Promise<SkipResult | null>;
  /**
   * Puts the container back on the image it ran before svc's last update of it, through the
   * update protocol (keep-old-until-verified), and skips the digest it leaves. Resolves null when
   * a cycle is running; throws not_found / bad_request when there is nothing to go back to.
   * `trigger` is what its report and audit entries name: `api` for POST /v1/rollback,
   * `run_once` for the one-off `svc rollback NAME`.
   */
  rollback(container: string, trigger?: Trigger, options?: RollbackOptions): Promise<RollbackResult | null>;
  /**
   * Accepts the signer an update of `container` is held for (docs/verification.md: a signer
   * changed, or no longer signed): the repository's pin becomes it, and the next cycle updates.
   * Throws not_found for an unknown container, bad_request when nothing is held for its signer.
   * `trigger` is what its audit line names: `api`, or `run_once` for `svc accept-signer NAME`.
   */
  acceptSigner(container: string, trigger?: Trigger): Promise<AcceptedSigner>;
}

export interface AcceptedSigner {
  container: string;
  /** `registry/repository` whose pin changed */
  repository: string;
  /** the signer now pinned, or "unsigned" (the pin removed) */
  signer: string;
}

export interface RollbackOptions {
  /** the data too: the data guard's copy taken at the update being undone (docs/data-guard.md) */
  withData?: boolean;
}

/** What the updater hands each finished cycle to (the notifier). Never throws, never delays the next cycle. */
export interface ReportSink {
  publish(report: SessionReport): void;
}

/** A built service in the report: what it is built from, and what svc did with it. */
export interface BuiltReport {
  /** each base: its reference, `--platform` if any, the digest it was last built from and the one its reference names now */
  bases: { reference: string; platform: string | null; pinned: boolean; built_digest: string; digest: string }[];
  /** the references of the bases that moved since it was built */
  moved: string[];
  /** true once its new image was built and its container runs it */
  rebuilt: boolean;
  /** the build svc runs (or would run), as a person would type it; null: svc does not rebuild it here */
  command: string | null;
}
