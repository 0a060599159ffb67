/**
 * The containers and image prefixes a cycle was asked for (`svc --run-once web`, `containers`,
 * the API's filters) that matched nothing: each is named, with the reason a container of that
 * name was left out, or a close name ("did you mean"). A typo otherwise looks like "nothing to do".
 */
import { type Config, nearest, suggest } from "../../config/index.ts";
import type { ContainerSummary } from "../../engine/port.ts";
import type { UpdateFilter } from "../types.ts";
import {
  bareName,
  enableLabelFilter,
  type Filter,
  groupOf,
  imagePrefixFilter,
  namedBy,
  notDisabledFilter,
  notLeftoverFilter,
  scopeFilter,
  stateFilter,
} from "./selection.ts";

/** Why a container named on purpose is still not selected, by the rule that leaves it out. */
function exclusions(config: Config): [Filter, string][] {
  return [
    [stateFilter(config), "it is not running (revive_stopped, include_restarting)"],
    [
      scopeFilter(config.scope),
      config.scope
        ? `it is not labelled svc.scope=${config.scope}`
        : "it belongs to a scope (svc.scope label) and this svc has none",
    ],
    [
      enableLabelFilter(config.label_enable),
      config.label_enable ? "it is not labelled svc.enable=true (label_enable)" : "it is labelled svc.enable=false",
    ],
    [notDisabledFilter(config.disable_containers), "it is listed in disable_containers"],
  ];
}

/**
 * One sentence per name or image prefix that selected no container. `answered`: the targets the
 * cycle did select (a Swarm service is named too, and is no typo).
 */
export function unmatchedFilters(
  all: readonly ContainerSummary[],
  config: Config,
  filter: UpdateFilter = {},
  answered: readonly Pick<ContainerSummary, "name" | "image">[] = [],
): string[] {
  const candidates = all.filter(notLeftoverFilter);
  const answeredNames = new Set(answered.map((t) => t.name));
  // what a name may be: a container's, a project's or stack's, or `project/service`
  const names = [...candidates.map((c) => c.name), ...groupNames(candidates)];
  const problems: string[] = [];
  for (const wanted of new Set([...config.containers, ...(filter.container ?? [])])) {
    if (answeredNames.has(bareName(wanted))) continue;
    const named = candidates.filter((c) => namedBy(wanted, c));
    if (named.some((c) => answeredNames.has(c.name))) continue;
    const found = named[0];
    if (!found) {
      problems.push(`no container or compose project is named ${wanted}${didYouMean(bareName(wanted), names)}`);
      continue;
    }
    const why = exclusions(config).find(([keep]) => !keep(found))?.[1];
    if (why) problems.push(`${wanted} is not updated: ${why}`);
  }
  // compared without their tags: a prefix is usually a repository
  const images = [...new Set(candidates.map((c) => c.image.replace(/:[^:/]*$/, "")))];
  for (const prefix of filter.image ?? []) {
    if (![...candidates, ...answered].some(imagePrefixFilter([prefix])))
      problems.push(`no container runs an image starting with ${prefix}${suggest(prefix, images)}`);
  }
  return problems;
}

/** The compose projects and Swarm stacks of the candidates, and each `project/service`. */
function groupNames(candidates: readonly ContainerSummary[]): string[] {
  const names = new Set<string>();
  for (const c of candidates) {
    const group = groupOf(c.labels);
    if (group === null) continue;
    names.add(group.name);
    const service = c.labels["com.docker.compose.service"];
    if (group.kind === "compose" && service) names.add(`${group.name}/${service}`);
  }
  return [...names];
}

/** " (did you mean a or b?)": the nearest names within an edit distance that grows with the name's length. */
function didYouMean(wanted: string, names: readonly string[]): string {
  const close = nearest(wanted, names);
  if (close.length === 0) return "";
  return ` (did you mean ${close.length === 1 ? close[0] : `${close.slice(0, -1).join(", ")} or ${close.at(-1)}`}?)`;
}
