/**
 * Which containers a cycle looks at, and how each one is to be treated.
 *
 * One `listContainers` call gives every container; the filters below run in memory and
 * compose (Watchtower's `Filter` idea). A container excluded here is absent from the report.
 */
import { COMPOSE_LABELS, inheritedLabels } from "../../compose/project.ts";
import {
  type Config,
  type LabelKey,
  labelName,
  labelOf,
  parseBoolean,
  parseTagPolicy,
  readAsOption,
  type TagPolicy,
} from "../../config/index.ts";
import { neverOpen, parseWindows, type WindowPolicy } from "../../config/window.ts";
import { spend } from "../../config/work.ts";
import { MAX_LABEL_CHARS } from "../../core/bounded.ts";
import type { ContainerSummary } from "../../engine/port.ts";
import { taskServiceOf } from "../../engine/swarm.ts";
import { matchesImagePrefix, parseReference } from "../../registry/reference.ts";
import type { UpdateFilter } from "../types.ts";
import { isOldName, parseHandoverName } from "./names.ts";

/**
 * The labels a container's policy is read from (src/config/labels.ts names them). Watchtower's
 * label of the same meaning is read too (docs/migrating-from-watchtower.md); svc's own wins when
 * both are set. Watchtower's per-hook timeouts (in minutes) are not read: svc.hooks.timeout is.
 */
const POLICY_LABELS = [
  "enable",
  "monitor_only",
  "no_pull",
  "stop_signal",
  "stop_timeout",
  "depends_on",
  "scope",
  "min_image_age",
  "tag_policy",
  "tag_policy.compose",
  "hooks.pre_check",
  "hooks.pre_update",
  "hooks.post_update",
  "hooks.post_check",
  "hook_timeout",
  "update_window",
  "hold_breaking",
  "release_notes",
] as const satisfies readonly LabelKey[];

export type LabelName = (typeof POLICY_LABELS)[number];

/** The names of the policy's labels, svc's own then Watchtower's: each past MAX_LABEL_CHARS skips its container. */
export const POLICY_LABEL_NAMES: readonly string[] = [
  ...POLICY_LABELS.map(labelName),
  ...POLICY_LABELS.flatMap((key) => labelOf(key).watchtower ?? []),
];

// A label longer than MAX_LABEL_CHARS is not read: its container is skipped with a reason naming it (`policyFor`).
export { MAX_LABEL_CHARS };

/** A container's value for one of svc's labels: its own, else its Watchtower twin's; unset past MAX_LABEL_CHARS. */
export function labelValue(labels: Readonly<Record<string, string>>, name: LabelName): string | undefined {
  const label = labelOf(name);
  const own = labels[label.name];
  if (own !== undefined) return own.length > MAX_LABEL_CHARS ? undefined : own;
  const alias = label.watchtower;
  const written = alias === undefined ? undefined : labels[alias];
  const value = written !== undefined && written.length > MAX_LABEL_CHARS ? undefined : written;
  // Watchtower's scope "none" is its name for "no scope"
  return name === "scope" && value === "none" ? undefined : value;
}

export type Filter = (container: ContainerSummary) => boolean;

export function allOf(filters: readonly Filter[]): Filter {
  return (container) => filters.every((filter) => filter(container));
}

/** Which states are candidates: running always; created/exited with revive_stopped; restarting with include_restarting. */
export function stateFilter(config: Pick<Config, "revive_stopped" | "include_restarting">): Filter {
  return ({ state }) => {
    if (state === "running") return true;
    if (state === "created" || state === "exited") return config.revive_stopped;
    if (state === "restarting") return config.include_restarting;
    return false;
  };
}

/** `svc.enable=false` always excludes; with `label_enable`, only `svc.enable=true` is included. */
export function enableLabelFilter(labelEnable: boolean): Filter {
  return ({ labels }) => {
    const value = parseBool(labelValue(labels, "enable"));
    if (value === false) return false;
    return labelEnable ? value === true : true;
  };
}

export function notDisabledFilter(disabled: readonly string[]): Filter {
  const names = new Set(disabled.map(bareName));
  return ({ name }) => !names.has(name);
}

/**
 * The names a person writes (`svc --run-once NAME`, the `containers` option, the API's container
 * filter) select by `namedBy`; an empty list means "no restriction".
 */
export function namesFilter(names: readonly string[] | undefined, imageLabels?: ImageLabels): Filter {
  if (!names || names.length === 0) return () => true;
  return (target) => names.some((name) => namedBy(name, target, imageLabels));
}

/**
 * The one rule for a name a person writes, for the command line and the API alike: a target's
 * own name (`notes-app-1`), the name of the compose project or Swarm stack it belongs to
 * (`notes`: every target of it), or `project/service` (`shop/app`: the targets of one service of
 * a project or stack). A project's name comes from its labels as the stack filter reads them
 * (`groupOf`: a label the image brings names no project).
 */
export function namedBy(
  wanted: string,
  target: Pick<ContainerSummary, "name" | "labels" | "imageId">,
  imageLabels: ImageLabels = () => undefined,
): boolean {
  const name = bareName(wanted);
  if (target.name === name) return true;
  const group = groupOf(target.labels, imageLabels(target.imageId));
  if (group === null) return false;
  if (group.name === name) return true;
  const slash = name.indexOf("/");
  return slash > 0 && group.name === name.slice(0, slash) && serviceOf(target, group) === name.slice(slash + 1);
}

/** A target's service in its group: compose's service label; a Swarm stack's service is `<stack>_<service>`. */
function serviceOf(target: Pick<ContainerSummary, "name" | "labels">, group: TargetGroup): string | undefined {
  if (group.kind === "compose") return target.labels[COMPOSE_LABELS.service];
  const service = target.labels["com.docker.swarm.service.name"] ?? target.name;
  return service.startsWith(`${group.name}_`) ? service.slice(group.name.length + 1) : undefined;
}

/** A compose project (com.docker.compose.project) or a Swarm stack (com.docker.stack.namespace). */
export interface TargetGroup {
  kind: "compose" | "stack";
  name: string;
}

const STACK_LABEL = "com.docker.stack.namespace";
const GROUP_LABELS: [TargetGroup["kind"], string][] = [
  ["stack", STACK_LABEL],
  ["compose", COMPOSE_LABELS.project],
];

/** A container's image's labels by the image's id; undefined: not known (the labels are then taken as the container's). */
export type ImageLabels = (imageId: string) => Readonly<Record<string, string>> | undefined;

/**
 * The group a target's labels name; a stack's task containers carry both labels: the stack wins.
 * A label the container has from its image (`imageLabels`) names no group: an image from any
 * registry could put itself in a project of the host's, and so into its "Update stack" and the
 * API's stack filter (compose's own labels are told apart as for its files: compose/project.ts).
 */
export function groupOf(
  labels: Readonly<Record<string, string>>,
  imageLabels?: Readonly<Record<string, string>>,
): TargetGroup | null {
  const inherited = new Set<string>(imageLabels ? inheritedLabels(labels, imageLabels) : []);
  for (const [kind, label] of GROUP_LABELS) {
    if (inherited.has(label) || (imageLabels && label === STACK_LABEL && imageLabels[label] === labels[label]))
      continue;
    const name = labels[label]?.slice(0, MAX_LABEL_CHARS).trim();
    if (name) return { kind, name: name.slice(0, 128) };
  }
  return null;
}

/** The API's stack filter: targets of these compose projects or Swarm stacks; empty: no restriction. */
export function stackFilter(names: readonly string[] | undefined, imageLabels: ImageLabels = () => undefined): Filter {
  if (!names || names.length === 0) return () => true;
  const wanted = new Set(names);
  return ({ labels, imageId }) => {
    const group = groupOf(labels, imageLabels(imageId));
    return group !== null && wanted.has(group.name);
  };
}

/** The API's image filter: prefixes of the reference as written or of its normalised form. */
export function imagePrefixFilter(
  prefixes: readonly string[] | undefined,
): (target: Pick<ContainerSummary, "image">) => boolean {
  if (!prefixes || prefixes.length === 0) return () => true;
  return ({ image }) => {
    try {
      const ref = parseReference(image);
      return prefixes.some((prefix) => matchesImagePrefix(ref, prefix));
    } catch {
      return prefixes.some((prefix) => image.startsWith(prefix));
    }
  };
}

/**
 * Scopes let several svc instances share one engine (as Watchtower's scopes do): with `scope`
 * set, only containers labelled `svc.scope=<scope>`; without it, only containers that carry no
 * scope label, so a scoped instance's containers are never touched by an unscoped one.
 */
export function scopeFilter(scope: string | undefined): Filter {
  return ({ labels }) => {
    const label = labelValue(labels, "scope");
    if (scope === undefined || scope === "") return label === undefined || label === "";
    return label === scope;
  };
}

/** Old containers svc renamed during an update are never candidates (recovery handles them). */
export const notLeftoverFilter: Filter = ({ name }) => !isOldName(name) && parseHandoverName(name) === null;

export function selectionFilter(config: Config, filter: UpdateFilter = {}, imageLabels?: ImageLabels): Filter {
  return allOf([
    notLeftoverFilter,
    stateFilter(config),
    scopeFilter(config.scope),
    enableLabelFilter(config.label_enable),
    notDisabledFilter(config.disable_containers),
    namesFilter(config.containers, imageLabels),
    namesFilter(filter.container, imageLabels),
    imagePrefixFilter(filter.image),
    stackFilter(filter.stack, imageLabels),
  ]);
}

export function selectContainers(
  all: readonly ContainerSummary[],
  config: Config,
  filter: UpdateFilter = {},
  imageLabels?: ImageLabels,
): ContainerSummary[] {
  const keep = selectionFilter(config, filter, imageLabels);
  return all.filter(keep);
}

/** How one container is treated: its labels, unless `global_takes_precedence`. */
export interface ContainerPolicy {
  monitorOnly: boolean;
  noPull: boolean;
  /** from the label; the container's own Config.StopSignal is used when unset */
  stopSignal?: string;
  /** from the label or the global option; the container's own StopTimeout wins over it */
  stopTimeoutMs: number;
  /** container names from `svc.depends_on` */
  dependsOn: string[];
  /** a newer image waits until svc has known it this long (label or global option) */
  minImageAgeMs: number;
  /** which newer tags the container may move to (label or global option); null: it follows its own tag */
  tagPolicy: TagPolicy | null;
  /** a compose-managed container is moved off the tag its compose file names (label svc.tag_policy.compose=move) */
  moveCompose: boolean;
  /** when it may be updated (docs/windows.md): the host's update_window, narrowed by its label; [] always */
  window: WindowPolicy;
  /** with a window: its newer image is pulled when found (containers) */
  prePull: boolean;
  /** an update whose release notes say it breaks waits until asked for by name (docs/release-notes.md) */
  holdBreaking: boolean;
  /** a label whose value svc cannot read: the container is skipped with this reason */
  problem?: string;
}

export function policyFor(container: Pick<ContainerSummary, "labels">, config: Config): ContainerPolicy {
  const labels = container.labels;
  const useLabels = !config.global_takes_precedence;
  const labelBool = (name: LabelName): boolean | undefined =>
    useLabels ? parseBool(labelValue(labels, name)) : undefined;
  const problems: string[] = useLabels ? oversizeLabels(labels) : [];
  const labelDuration = (name: (typeof DURATION_OPTIONS)[number]): number | undefined => {
    if (!useLabels) return undefined;
    const read = durationLabel(labels, name);
    if (read && "problem" in read) problems.push(read.problem);
    return read && "ms" in read ? read.ms : undefined;
  };
  const signal = labelValue(labels, "stop_signal")?.trim();
  const policy: ContainerPolicy = {
    monitorOnly: labelBool("monitor_only") ?? config.monitor_only,
    noPull: labelBool("no_pull") ?? config.no_pull,
    stopSignal: signal ? signal : undefined,
    stopTimeoutMs: labelDuration("stop_timeout") ?? config.stop_timeout,
    dependsOn: splitNames(labelValue(labels, "depends_on")),
    minImageAgeMs: labelDuration("min_image_age") ?? config.min_image_age,
    tagPolicy: null,
    moveCompose: labelValue(labels, "tag_policy.compose")?.trim() === "move",
    window: [],
    prePull: config.pre_pull,
    holdBreaking: labelBool("hold_breaking") ?? config.hold_breaking,
  };
  const window = windowFor(labels, config, useLabels);
  if ("problem" in window) problems.push(window.problem);
  else policy.window = window.policy;
  if (config.lifecycle_hooks) labelDuration("hook_timeout");
  spend(policy.stopSignal?.length ?? 0);
  if (policy.stopSignal !== undefined && !SIGNAL.test(policy.stopSignal)) {
    problems.push(
      `label ${labelSet(labels, "stop_signal")}=${JSON.stringify(policy.stopSignal.slice(0, 64))} is not a signal (examples: "SIGTERM", "SIGQUIT", "9")`,
    );
  }
  const policyText = (useLabels ? labelValue(labels, "tag_policy") : undefined) ?? config.tag_policy;
  // compiled by re2js, in time linear in the pattern: counted as its length
  spend(policyText.length);
  const parsed = parseTagPolicy(policyText);
  if ("policy" in parsed) policy.tagPolicy = parsed.policy;
  else problems.push(`label ${labelName("tag_policy")}=${JSON.stringify(policyText)} ${parsed.problem}`);
  const compose = labelValue(labels, "tag_policy.compose");
  if (compose !== undefined && !["move", "report"].includes(compose.trim()))
    problems.push(`label ${labelName("tag_policy.compose")}=${JSON.stringify(compose)} is neither "move" nor "report"`);
  // Swarm's manager owns its tasks: a task is updated through its service (docs/swarm.md)
  const service = taskServiceOf(labels);
  if (service !== undefined) problems.unshift(`Swarm task of service ${service}`);
  if (problems.length > 0) policy.problem = problems.join("; ");
  return policy;
}

/** svc's and Watchtower's labels longer than svc reads, each as the reason it skips its container. */
function oversizeLabels(labels: Readonly<Record<string, string>>): string[] {
  return POLICY_LABEL_NAMES.filter((name) => (labels[name]?.length ?? 0) > MAX_LABEL_CHARS).map(
    (name) => `label ${name} is ${labels[name]!.length} characters, past the ${MAX_LABEL_CHARS} svc reads of a label`,
  );
}

/**
 * The host's update_window (checked at load), narrowed by the label svc.update_window: the label
 * can only narrow it (both must be open), so one that never meets the host's window is a problem.
 */
function windowFor(
  labels: Readonly<Record<string, string>>,
  config: Config,
  useLabels: boolean,
): { policy: WindowPolicy } | { problem: string } {
  const host = config.update_window === undefined ? undefined : parseWindows(config.update_window);
  const policy: WindowPolicy[number][] = host && "windows" in host ? [host.windows] : [];
  const text = useLabels ? labelValue(labels, "update_window") : undefined;
  if (text === undefined) return { policy };
  const label = `label ${labelName("update_window")}=${JSON.stringify(text.slice(0, 200))}`;
  const own = parseWindows(text);
  if ("problem" in own) return { problem: `${label}: ${own.problem}` };
  policy.push(own.windows);
  if (neverOpen(policy))
    return {
      problem: `${label} never meets the host's update_window ${JSON.stringify(config.update_window)} (a label narrows the host's window, never widens it)`,
    };
  return { policy };
}

/** A signal as the engine takes it: a name with or without SIG (SIGRTMIN+3 too), or a number. */
const SIGNAL = /^(?:(?:SIG)?[A-Z][A-Z0-9]{0,15}(?:[+-]\d{1,2})?|\d{1,2})$/i;

/** The option each duration label stands for: the label is read with that option's forms and bounds. */
const DURATION_OPTIONS = ["stop_timeout", "min_image_age", "hook_timeout"] as const satisfies readonly LabelName[];

/** A duration label: unset, its milliseconds, or the problem naming the label (the container is then skipped). */
export function durationLabel(
  labels: Readonly<Record<string, string>>,
  name: (typeof DURATION_OPTIONS)[number],
): { ms: number } | { problem: string } | undefined {
  const text = labelValue(labels, name);
  if (text === undefined) return undefined;
  // read by the option's schema: a linear pattern over the text
  spend(text.length);
  const read = readAsOption(name, text);
  return "value" in read
    ? { ms: read.value as number }
    : { problem: `label ${labelSet(labels, name)}=${JSON.stringify(text.slice(0, 64))} ${read.problem}` };
}

/** The name of the label that gave `name` its value: svc's own, else its Watchtower twin. */
function labelSet(labels: Readonly<Record<string, string>>, name: LabelName): string {
  const label = labelOf(name);
  return labels[label.name] === undefined ? (label.watchtower ?? label.name) : label.name;
}

export function splitNames(value: string | undefined): string[] {
  if (!value) return [];
  spend(value.length);
  return value
    .split(",")
    .map((part) => bareName(part.trim()))
    .filter((part) => part !== "");
}

export function bareName(name: string): string {
  return name.replace(/^\//, "");
}

/** Label booleans as the configuration reads them (true/false, 1/0, yes/no); anything else is unset. */
export function parseBool(value: string | undefined): boolean | undefined {
  return value === undefined ? undefined : parseBoolean(value);
}
