/**
 * What GET /v1/containers says of each watched container (docs/api.md, docs/dashboard.md): the
 * dry run's verdict, plus what a person deciding about an update wants beside it: the running
 * and the available version and how big a step it is, when the newer image becomes eligible,
 * the container's policy, a snooze or a skip, svc's last update of it, and where its release
 * notes are. Built from the dry run's report and the lists that run made (no second walk of the
 * engine) and from what svc remembers; pure, so the rules are tested without an engine.
 */
import { type Config, formatDuration, labelName, type TagPolicy } from "../../config/index.ts";
import { describeMoment, describeWindows, serviceTimeZone } from "../../config/window.ts";
import { shortDigest } from "../../core/digests.ts";
import { httpUrl } from "../../core/urls.ts";
import type { ContainerSummary, ImageSummary } from "../../engine/port.ts";
import { parseReference } from "../../registry/reference.ts";
import type { ReleaseNotes } from "../../releases/index.ts";
import type { Remembered } from "../../state/index.ts";
import type { SignatureReport } from "../../verify/index.ts";
import type { VulnerabilityDiff } from "../../vulns/index.ts";

export type { VulnerabilityDiff, VulnerabilityEntry } from "../../vulns/index.ts";

import { snoozedUntil } from "../check/snooze.ts";
import { parseVersionTag } from "../check/tags.ts";
import { type HookName, hookFor } from "../containers/hooks.ts";
import { SOURCE_LABEL, VERSION_LABEL } from "../cycle/notes.ts";
import type { TargetGroup } from "../selection/selection.ts";
import {
  enableLabelFilter,
  groupOf,
  namesFilter,
  notDisabledFilter,
  notLeftoverFilter,
  policyFor,
  scopeFilter,
  stateFilter,
} from "../selection/selection.ts";
import { serviceAsContainer, unpinned } from "../swarm/kind.ts";
import {
  type ContainerOutcome,
  type ContainerReport,
  type CycleSightings,
  DRY_RUN_REASON,
  type SessionReport,
  type UpdateFilter,
} from "../types.ts";

/** How big the step to the available image is: a new digest of the same tag, or a tag policy's move. */
export type UpdateKind = "digest" | "patch" | "minor" | "major" | "tag";

export interface ContainerPolicyView {
  monitor_only: boolean;
  no_pull: boolean;
  /** as written (label or option), null: the container follows its own tag */
  tag_policy: string | null;
  /** e.g. "2d", null when 0 */
  min_image_age: string | null;
  /** the lifecycle hooks its labels set */
  hooks: HookName[];
  /** when it may be updated (docs/windows.md): the host's update_window, and its label's within it; null: any time */
  update_window: string | null;
  /** hook labels a Swarm service carries, which do not apply to it (Swarm runs the tasks); [] for a container */
  ignored_hooks: HookName[];
}

export interface ContainerOverview {
  /** a container, or a Swarm service (docs/swarm.md) */
  kind: "container" | "service";
  name: string;
  image: string;
  state: ContainerOutcome;
  would_update: boolean;
  current_digest: string | null;
  available_digest: string | null;
  available_image: string | null;
  reason: string | null;
  /** the image's org.opencontainers.image.version label, else its tag, else a short digest */
  version: string;
  /** the newer tag, else a short digest of the newer image; null when nothing newer was found */
  available_version: string | null;
  update_kind: UpdateKind | null;
  /** when svc first saw the newer image, and its creation time (asked of the registry under min_image_age only) */
  first_seen_at: string | null;
  created_at: string | null;
  /** when min_image_age lets the newer image be applied; null without min_image_age */
  eligible_at: string | null;
  /** pending: when its update window opens (ISO 8601), and as a person reads it ("Sat 02:00 (in 9 h)", time zone from TZ) */
  applies_at: string | null;
  applies: string | null;
  policy: ContainerPolicyView;
  snoozed_until: string | null;
  /** what svc skipped for it on request (a digest or a reference) */
  skipped: string | null;
  /**
   * What POST /v1/rollback goes back to: the image svc's last update replaced; for a service, the
   * digest of the previous spec Swarm keeps (null: none)
   */
  previous_image_id: string | null;
  /** where its release notes are: the svc.link label's template, else the image's source */
  link: string | null;
  /** the compose project or Swarm stack it belongs to (its labels say), null: standalone */
  group: TargetGroup | null;
  /** for a stale target: what the update brings, read from its source repository (docs/release-notes.md); null otherwise */
  release_notes: ReleaseNotes | null;
  /** a compose container whose update moves its tag: what svc writes into its files ("compose.yaml line 12: 2.3.1 -> 2.4.0"; docs/compose.md); null otherwise */
  compose_change: string[] | null;
  /** a service compose builds: the images it is built from (docs/compose.md, "Built services"); null otherwise */
  built_from: string[] | null;
  /** for a container with a newer image (stale, monitor-only, held or pending) when vulnerabilities are on: what the update fixes and brings in (docs/vulnerabilities.md); null otherwise */
  vulnerabilities: VulnerabilityDiff | null;
  /** for a target with a newer image: who signed it, or why it is held for its signature (docs/verification.md); null otherwise */
  signature: SignatureReport | null;
}

export interface OverviewMemory {
  firstSeen?: Remembered;
  skipped?: Remembered;
  snoozed?: Remembered;
  previous?: Remembered;
}

export { VERSION_LABEL };

const SOURCE_LABELS = [SOURCE_LABEL, "org.opencontainers.image.url"];
export const LINK_LABEL = labelName("link");
const HOOKS: HookName[] = ["pre_check", "pre_update", "post_update", "post_check"];

export function containerOverviews(
  report: SessionReport,
  seen: CycleSightings,
  config: Config,
  memory: OverviewMemory,
  now = Date.now(),
): ContainerOverview[] {
  const containers = new Map((seen.containers ?? []).map((c) => [c.name, c]));
  const services = new Map((seen.services ?? []).map((s) => [s.name, s]));
  const images = imageFinder(seen.images ?? []);
  const factsOf = (entry: ContainerReport): TargetFacts => {
    if (entry.kind !== "service")
      return {
        labels: containers.get(entry.name)?.labels ?? {},
        previous: memory.previous?.get(entry.name)?.split(" ")[0] ?? null,
      };
    const previous = services.get(entry.name)?.previousImage;
    // a previous spec not pinned by digest is named by its image
    return {
      labels: services.get(entry.name)?.labels ?? {},
      previous: previous ? unpinned(previous).digest || previous : null,
      service: true,
    };
  };
  return report.containers.map((entry) => ({
    ...describe(entry, factsOf(entry), images(entry.old_image_id), config, memory, now),
    release_notes: seen.releaseNotes?.get(entry.name) ?? null,
  }));
}

/**
 * What the overview knows of a target besides its report entry: a container's labels and svc's
 * last update of it; a service's spec labels and the previous spec Swarm keeps (docs/swarm.md).
 */
interface TargetFacts {
  labels: Readonly<Record<string, string>>;
  /** the image (or, for a service, the digest) a rollback goes back to */
  previous: string | null;
  service?: boolean;
}

/**
 * The engine's image a target runs: a container's by its id; a service's by the digest it is
 * pinned to, which the engine lists among an image's repo digests (or as its id, with the
 * containerd store) when a task of it runs, or ran, on this node. Undefined elsewhere.
 */
function imageFinder(images: readonly ImageSummary[]): (idOrDigest: string) => ImageSummary | undefined {
  const byId = new Map(images.map((i) => [i.id, i]));
  const byDigest = new Map(images.flatMap((i) => i.repoDigests.map((d) => [d.slice(d.indexOf("@") + 1), i] as const)));
  return (idOrDigest) => byId.get(idOrDigest) ?? byDigest.get(idOrDigest);
}

function describe(
  entry: ContainerReport,
  target: TargetFacts,
  image: ImageSummary | undefined,
  config: Config,
  memory: OverviewMemory,
  now: number,
): Omit<ContainerOverview, "release_notes"> {
  const { labels } = target;
  const policy = policyFor({ labels }, config);
  // a service's hook labels are ignored whether lifecycle_hooks is on or not (swarm/kind.ts warns of them)
  const hookConfig = target.service ? { ...config, lifecycle_hooks: true } : config;
  const hooks = HOOKS.filter((name) => hookFor(labels, name, hookConfig) !== undefined);
  const version = runningVersion(entry, image);
  const available = availableVersion(entry);
  const seen = parseFirstSeen(memory.firstSeen?.get(entry.name), entry.new_digest);
  const since = seen ? Math.max(seen.seenAt, seen.createdAt ?? 0) : undefined;
  const until = snoozedUntil(memory.snoozed, entry.name, now);
  return {
    kind: entry.kind ?? "container",
    name: entry.name,
    image: entry.image,
    state: entry.state,
    would_update: entry.state === "stale" && entry.reason === DRY_RUN_REASON,
    current_digest: entry.old_digest,
    available_digest: entry.new_digest,
    available_image: entry.new_image,
    compose_change: entry.compose && !entry.compose.written && entry.state === "stale" ? entry.compose.changes : null,
    built_from: entry.built ? entry.built.bases.map((b) => b.reference) : null,
    reason: entry.reason,
    vulnerabilities: entry.vulnerabilities ?? null,
    signature: entry.signature ?? null,
    version,
    available_version: available,
    update_kind: available === null ? null : updateKind(entry, policy.tagPolicy),
    first_seen_at: seen ? iso(seen.seenAt) : null,
    created_at: seen?.createdAt ? iso(seen.createdAt) : null,
    eligible_at: since !== undefined && policy.minImageAgeMs > 0 ? iso(since + policy.minImageAgeMs) : null,
    ...appliesOf(entry, now),
    policy: {
      monitor_only: policy.monitorOnly,
      // the nodes pull a service's image: no_pull does not apply to it, nor do hooks
      no_pull: !target.service && policy.noPull,
      tag_policy: policy.tagPolicy ? policy.tagPolicy.text : null,
      min_image_age: policy.minImageAgeMs > 0 ? formatDuration(policy.minImageAgeMs) : null,
      hooks: target.service ? [] : hooks,
      ignored_hooks: target.service ? hooks : [],
      update_window: describeWindows(policy.window),
    },
    snoozed_until: until === undefined ? null : iso(until),
    // kept as "<digest or reference>[ rollback:<trigger>]" (check/check.ts): the page shows what is skipped
    skipped: memory.skipped?.get(entry.name)?.split(" ")[0] ?? null,
    previous_image_id: target.previous,
    link: releaseLink(
      labels,
      image?.labels ?? {},
      available !== null && !available.startsWith("sha256:") ? available : version,
    ),
    // a service's labels are its spec's, never its image's
    group: groupOf(labels, target.service ? undefined : image?.labels),
  };
}

const iso = (ms: number): string => new Date(ms).toISOString();

/** A pending target's next window, as the report gave it, and as a person reads it. */
function appliesOf(entry: ContainerReport, now: number): Pick<ContainerOverview, "applies_at" | "applies"> {
  const at = entry.state === "pending" && entry.applies_at ? Date.parse(entry.applies_at) : Number.NaN;
  if (Number.isNaN(at)) return { applies_at: null, applies: null };
  return { applies_at: iso(at), applies: describeMoment(at, now, serviceTimeZone()) };
}

function tagOf(reference: string | null): string | null {
  if (!reference) return null;
  try {
    return parseReference(reference).tag ?? null;
  } catch {
    return null;
  }
}

export function runningVersion(
  entry: Pick<ContainerReport, "image" | "old_digest" | "old_image_id">,
  image: Pick<ImageSummary, "labels"> | undefined,
): string {
  const label = image?.labels?.[VERSION_LABEL]?.trim();
  if (label) return label.slice(0, 128);
  return tagOf(entry.image) ?? shortDigest(entry.old_digest ?? entry.old_image_id);
}

function availableVersion(entry: ContainerReport): string | null {
  if (entry.new_image) return tagOf(entry.new_image) ?? entry.new_image;
  const newer = entry.new_digest ?? entry.new_image_id;
  if (!newer || entry.state === "fresh" || entry.state === "updated") return null;
  if (newer === entry.old_digest) return null;
  return shortDigest(newer);
}

/** A move between version tags says which part changed; any other tag move is "tag". */
export function updateKind(
  entry: Pick<ContainerReport, "image" | "new_image">,
  _tagPolicy?: TagPolicy | null,
): UpdateKind {
  if (!entry.new_image) return "digest";
  const from = parseVersionTag(tagOf(entry.image) ?? "");
  const to = parseVersionTag(tagOf(entry.new_image) ?? "");
  if (!from || !to) return "tag";
  const part = (tag: typeof from, index: number) => tag.parts[index] ?? 0;
  if (part(from, 0) !== part(to, 0)) return "major";
  if (part(from, 1) !== part(to, 1)) return "minor";
  return "patch";
}

/** A first-seen record of min_image_age ("<digest> <seen> <created or ->"), for this digest only. */
function parseFirstSeen(
  value: string | undefined,
  digest: string | null,
): { seenAt: number; createdAt: number | null } | undefined {
  const [recorded, seen, created] = value?.split(" ") ?? [];
  const seenAt = Date.parse(seen ?? "");
  if (!recorded || recorded !== digest || Number.isNaN(seenAt)) return undefined;
  const createdAt = Date.parse(created ?? "");
  return { seenAt, createdAt: Number.isNaN(createdAt) ? null : createdAt };
}

/**
 * The release notes: the container's `svc.link` label, a URL template where `{version}` is
 * replaced; else the image's source (`org.opencontainers.image.source`, else `.url`), and on
 * GitHub its release page for the version. Only http(s) addresses: a label may hold anything.
 */
export function releaseLink(
  containerLabels: Readonly<Record<string, string>>,
  imageLabels: Readonly<Record<string, string>>,
  version: string,
): string | null {
  const template = containerLabels[LINK_LABEL]?.trim();
  if (template) return httpUrl(template.replaceAll("{version}", encodeURIComponent(version)));
  const source = SOURCE_LABELS.map((name) => imageLabels[name]?.trim()).find(Boolean);
  if (!source) return null;
  const url = httpUrl(source);
  if (url === null) return null;
  const github = /^https:\/\/github\.com\/[^/]+\/[^/]+?(?:\.git)?\/?$/.exec(url);
  if (github && parseVersionTag(version))
    return `${url.replace(/(\.git)?\/?$/, "")}/releases/tag/${encodeURIComponent(version)}`;
  return url;
}

/** A container (or a Swarm service) svc sees on its engine and leaves alone, and why. */
export interface ExcludedContainer {
  /** absent from an older svc: a container */
  kind?: "container" | "service";
  name: string;
  image: string;
  /** the engine's state: running, exited... */
  state: string;
  reason: string;
}

/** What GET /v1/containers answers: the dry run's time, each container's overview, and what svc leaves alone. */
export interface Overview {
  checked_at: string;
  containers: ContainerOverview[];
  excluded: ExcludedContainer[];
}

/**
 * The containers of this instance's scope that the selection options leave out, each with the
 * first rule that does (another scope's containers belong to another instance: not listed; nor
 * svc's own leftovers of an update).
 */
export function excludedContainers(seen: CycleSightings, report: SessionReport, config: Config): ExcludedContainer[] {
  const checked = new Set(report.containers.map((c) => c.name));
  const rules: [(container: ContainerSummary) => boolean, (container: ContainerSummary) => string][] = [
    [enableLabelFilter(false), () => "label svc.enable=false"],
    [enableLabelFilter(config.label_enable), () => "label_enable is on and it has no svc.enable=true label"],
    [notDisabledFilter(config.disable_containers), () => "named in disable_containers"],
    [namesFilter(config.containers), () => "not named in containers"],
    [
      stateFilter(config),
      (c) =>
        `${c.state}: only running containers are updated${c.state === "restarting" ? " (include_restarting)" : " (revive_stopped)"}`,
    ],
  ];
  const inScope = scopeFilter(config.scope);
  const targets = [
    ...(seen.containers ?? []).map((c) => ({ kind: "container" as const, c })),
    ...(seen.services ?? []).map((s) => ({ kind: "service" as const, c: serviceAsContainer(s) })),
  ];
  return targets
    .filter(({ c }) => !checked.has(c.name) && inScope(c) && notLeftoverFilter(c))
    .flatMap(({ kind, c }) => {
      const failed = rules.find(([keeps]) => !keeps(c));
      return failed ? [{ kind, name: c.name, image: c.image, state: c.state, reason: failed[1](c) }] : [];
    })
    .sort((a, b) => a.name.localeCompare(b.name));
}

export interface OverviewOptions {
  /** a check asked for now (`Cache-Control: no-cache`): no recent overview is reused, one under way is shared */
  fresh?: boolean;
}

/** What the dashboard asks of the updater besides cycles, skips and rollbacks. */
export interface DashboardActions {
  /** a dry run over the filter, described (null: a cycle is running) */
  overview(filter?: UpdateFilter, options?: OverviewOptions): Promise<Overview | null>;
  /** holds back the container's updates for `ms` (0 lifts it); throws not_found for an unknown container */
  snooze(container: string, ms: number): Promise<{ container: string; until: string | null }>;
}
