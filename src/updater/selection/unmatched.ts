/**
 * The containers and image prefixes a cycle was asked for (`svc --run-once web`, `containers`,
 * the API's filters) that matched nothing: each is named, with the reason a container of that
 * name was left out, or a close name ("did you mean"). A typo otherwise looks like "nothing to do".
 */
import { type Config, suggest } from "../../config/index.ts";
import type { ContainerSummary } from "../../engine/port.ts";
import type { UpdateFilter } from "../types.ts";
import {
  bareName,
  enableLabelFilter,
  type Filter,
  imagePrefixFilter,
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
  const names = candidates.map((c) => c.name);
  const problems: string[] = [];
  for (const wanted of new Set([...config.containers, ...(filter.container ?? [])])) {
    if (answeredNames.has(bareName(wanted))) continue;
    const found = candidates.find((c) => c.name === bareName(wanted));
    if (!found) {
      problems.push(`no container is named ${wanted}${suggest(bareName(wanted), names)}`);
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
