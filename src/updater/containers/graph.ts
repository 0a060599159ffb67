/**
 * The dependency graph between containers: who must be stopped before and started after whom.
 * Edges come from legacy links, `network_mode: container:X`, `svc.depends_on` and compose's
 * `com.docker.compose.depends_on`. Pure functions over container names.
 */
import { spend } from "../../config/work.ts";
import type { ContainerInspect } from "../../engine/port.ts";
import { MAX_LABEL_CHARS } from "../selection/selection.ts";

/** name -> names of the containers it depends on */
export type DependencyGraph = Map<string, Set<string>>;

export const COMPOSE = {
  project: "com.docker.compose.project",
  service: "com.docker.compose.service",
  dependsOn: "com.docker.compose.depends_on",
} as const;

export interface NodeInput {
  name: string;
  id: string;
  labels: Record<string, string>;
  /** names from `svc.depends_on` (already resolved for global_takes_precedence) */
  dependsOn: string[];
  /** HostConfig.Links ("/db:/web/db") and the links of user-defined network endpoints ("db:alias") */
  links?: string[] | null;
  /** HostConfig.NetworkMode */
  networkMode?: string;
}

export function nodeFromInspect(inspect: ContainerInspect, dependsOn: string[]): NodeInput {
  const links = [...((inspect.HostConfig?.Links as string[] | null | undefined) ?? [])];
  for (const endpoint of Object.values(inspect.NetworkSettings?.Networks ?? {})) {
    for (const link of (endpoint?.Links as string[] | null | undefined) ?? []) links.push(link);
  }
  return {
    name: inspect.Name.replace(/^\//, ""),
    id: inspect.Id,
    labels: inspect.Config?.Labels ?? {},
    dependsOn,
    links,
    networkMode: inspect.HostConfig?.NetworkMode,
  };
}

/** The container a `container:<id or name>` network mode points at, or undefined. */
export function networkModeTarget(networkMode: string | undefined): string | undefined {
  if (!networkMode?.startsWith("container:")) return undefined;
  return networkMode.slice("container:".length);
}

/** "/db:/web/db" -> "db" */
export function linkTarget(link: string): string {
  return link.split(":")[0]!.replace(/^\//, "");
}

/** compose's "db:service_started:false,cache:service_healthy:true" -> ["db", "cache"] */
export function composeServices(value: string | undefined): string[] {
  // a label (an image can set it): past what svc reads of a label, it names no service
  if (!value || value.length > MAX_LABEL_CHARS) return [];
  spend(value.length);
  return value
    .split(",")
    .map((entry) => entry.trim().split(":")[0]!.trim())
    .filter((service) => service !== "");
}

export function buildGraph(nodes: readonly NodeInput[]): DependencyGraph {
  const byId = new Map<string, string>();
  const byService = new Map<string, string[]>();
  for (const node of nodes) {
    byId.set(node.id, node.name);
    const project = node.labels[COMPOSE.project];
    const service = node.labels[COMPOSE.service];
    if (project !== undefined && service !== undefined) {
      const key = `${project}/${service}`;
      byService.set(key, [...(byService.get(key) ?? []), node.name]);
    }
  }
  const resolve = (idOrName: string): string => {
    if (byId.has(idOrName)) return byId.get(idOrName)!;
    for (const [id, name] of byId) if (idOrName.length >= 12 && id.startsWith(idOrName)) return name;
    return idOrName.replace(/^\//, "");
  };

  const graph: DependencyGraph = new Map();
  for (const node of nodes) {
    const deps = new Set<string>();
    for (const link of node.links ?? []) deps.add(linkTarget(link));
    const target = networkModeTarget(node.networkMode);
    if (target !== undefined) deps.add(resolve(target));
    for (const name of node.dependsOn) deps.add(name);
    const project = node.labels[COMPOSE.project];
    for (const service of composeServices(node.labels[COMPOSE.dependsOn])) {
      for (const name of byService.get(`${project}/${service}`) ?? []) deps.add(name);
    }
    graph.set(node.name, deps);
  }
  return graph;
}

/**
 * Every dependency cycle, each as a path that returns to its start ("a", "b", "a").
 * Tarjan's strongly connected components; a self-dependency is a cycle of one.
 */
export function findCycles(graph: DependencyGraph): string[][] {
  let index = 0;
  const indices = new Map<string, number>();
  const lowlinks = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const components: string[][] = [];

  const visit = (name: string): void => {
    indices.set(name, index);
    lowlinks.set(name, index);
    index += 1;
    stack.push(name);
    onStack.add(name);
    for (const dep of graph.get(name) ?? []) {
      if (!graph.has(dep)) continue;
      if (!indices.has(dep)) {
        visit(dep);
        lowlinks.set(name, Math.min(lowlinks.get(name)!, lowlinks.get(dep)!));
      } else if (onStack.has(dep)) {
        lowlinks.set(name, Math.min(lowlinks.get(name)!, indices.get(dep)!));
      }
    }
    if (lowlinks.get(name) === indices.get(name)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== name);
      components.push(component);
    }
  };

  for (const name of [...graph.keys()].sort()) if (!indices.has(name)) visit(name);

  return components
    .filter((component) => component.length > 1 || graph.get(component[0]!)?.has(component[0]!))
    .map((component) => cyclePath(graph, new Set(component)));
}

/** A path through a strongly connected component from its smallest name back to it. */
function cyclePath(graph: DependencyGraph, members: Set<string>): string[] {
  const start = [...members].sort()[0]!;
  const path: string[] = [start];
  const seen = new Set<string>([start]);
  const walk = (name: string): boolean => {
    for (const dep of [...(graph.get(name) ?? [])].sort()) {
      if (dep === start) {
        path.push(start);
        return true;
      }
      if (!members.has(dep) || seen.has(dep)) continue;
      seen.add(dep);
      path.push(dep);
      if (walk(dep)) return true;
      path.pop();
    }
    return false;
  };
  walk(start);
  return path;
}

/** Names that depend, directly or transitively, on any of `names` (not including `names`). */
export function dependentsOf(graph: DependencyGraph, names: Iterable<string>): Set<string> {
  const reverse = reverseGraph(graph);
  const start = new Set(names);
  const found = new Set<string>();
  const queue = [...start];
  while (queue.length > 0) {
    const name = queue.shift()!;
    for (const dependent of reverse.get(name) ?? []) {
      if (start.has(dependent) || found.has(dependent)) continue;
      found.add(dependent);
      queue.push(dependent);
    }
  }
  return found;
}

function reverseGraph(graph: DependencyGraph): Map<string, Set<string>> {
  const reverse = new Map<string, Set<string>>();
  for (const [name, deps] of graph) {
    for (const dep of deps) {
      if (!reverse.has(dep)) reverse.set(dep, new Set());
      reverse.get(dep)!.add(name);
    }
  }
  return reverse;
}

/** `names` ordered dependencies first (Kahn; ties by name). Edges leaving `names` are ignored. Acyclic input. */
export function topologicalOrder(graph: DependencyGraph, names: Iterable<string>): string[] {
  const subset = new Set(names);
  const remaining = new Map<string, number>();
  for (const name of subset) {
    remaining.set(name, [...(graph.get(name) ?? [])].filter((dep) => subset.has(dep) && dep !== name).length);
  }
  const reverse = reverseGraph(graph);
  const order: string[] = [];
  let ready = [...subset].filter((name) => remaining.get(name) === 0).sort();
  while (ready.length > 0) {
    const name = ready.shift()!;
    order.push(name);
    for (const dependent of reverse.get(name) ?? []) {
      if (!subset.has(dependent) || dependent === name) continue;
      const left = remaining.get(dependent)! - 1;
      remaining.set(dependent, left);
      if (left === 0) ready = [...ready, dependent].sort();
    }
  }
  // members of a cycle never become ready: append them so nothing is silently dropped
  for (const name of [...subset].sort()) if (!order.includes(name)) order.push(name);
  return order;
}

/** Groups of `names` connected by dependencies in either direction (edges leaving `names` ignored). */
export function connectedGroups(graph: DependencyGraph, names: Iterable<string>): string[][] {
  const subset = new Set(names);
  const parent = new Map<string, string>();
  for (const name of subset) parent.set(name, name);
  const find = (name: string): string => {
    let root = name;
    while (parent.get(root) !== root) root = parent.get(root)!;
    parent.set(name, root);
    return root;
  };
  for (const name of subset) {
    for (const dep of graph.get(name) ?? []) {
      if (subset.has(dep)) parent.set(find(name), find(dep));
    }
  }
  const groups = new Map<string, string[]>();
  for (const name of [...subset].sort()) {
    const root = find(name);
    groups.set(root, [...(groups.get(root) ?? []), name]);
  }
  return [...groups.values()];
}
