import { expect, test } from "bun:test";
import {
  buildGraph,
  composeServices,
  connectedGroups,
  dependentsOf,
  findCycles,
  type NodeInput,
  topologicalOrder,
} from "../../../src/updater/containers/graph.ts";
import { countOutcomes, metricCounts } from "../../../src/updater/cycle/report.ts";
import type { ContainerReport } from "../../../src/updater/types.ts";

function node(name: string, extra: Partial<NodeInput> = {}): NodeInput {
  return { name, id: `${name}`.padEnd(64, "0"), labels: {}, dependsOn: [], ...extra };
}

test("edges from links, network_mode (by id or name), svc.depends_on and compose depends_on", () => {
  const db = node("db", { labels: { "com.docker.compose.project": "p", "com.docker.compose.service": "database" } });
  const graph = buildGraph([
    db,
    node("web", { links: ["/db:/web/db"] }),
    node("sidecar", { networkMode: `container:${db.id}` }),
    node("short", { networkMode: `container:${db.id.slice(0, 12)}` }),
    node("worker", { dependsOn: ["web"] }),
    node("api", {
      labels: {
        "com.docker.compose.project": "p",
        "com.docker.compose.depends_on": "database:service_healthy:false,missing:service_started:true",
      },
    }),
    node("other", {
      labels: { "com.docker.compose.project": "q", "com.docker.compose.depends_on": "database:service_started:false" },
    }),
  ]);
  expect([...graph.get("web")!]).toEqual(["db"]);
  expect([...graph.get("sidecar")!]).toEqual(["db"]);
  expect([...graph.get("short")!]).toEqual(["db"]);
  expect([...graph.get("worker")!]).toEqual(["web"]);
  expect([...graph.get("api")!]).toEqual(["db"]);
  expect([...graph.get("other")!]).toEqual([]);
  expect(composeServices("a:service_started:true, b")).toEqual(["a", "b"]);
});

test("order: dependencies first; dependents found transitively; independent groups apart", () => {
  const graph = buildGraph([
    node("db"),
    node("web", { dependsOn: ["db"] }),
    node("proxy", { dependsOn: ["web"] }),
    node("solo"),
  ]);
  expect(topologicalOrder(graph, ["proxy", "web", "db", "solo"])).toEqual(["db", "solo", "web", "proxy"]);
  expect([...dependentsOf(graph, ["db"])].sort()).toEqual(["proxy", "web"]);
  expect(connectedGroups(graph, ["db", "web", "proxy", "solo"])).toEqual([["db", "proxy", "web"], ["solo"]]);
});

test("cycles are found and named as a path; self-dependency counts", () => {
  const graph = buildGraph([
    node("a", { dependsOn: ["b"] }),
    node("b", { dependsOn: ["c"] }),
    node("c", { dependsOn: ["a"] }),
    node("d", { dependsOn: ["a"] }),
    node("e", { dependsOn: ["e"] }),
  ]);
  expect(findCycles(graph)).toEqual([
    ["a", "b", "c", "a"],
    ["e", "e"],
  ]);
});

test("report counts every state; the failed gauge counts rolled back too", () => {
  const states = ["fresh", "fresh", "stale", "updated", "failed", "rolled_back", "skipped"] as const;
  const containers = states.map((state, i) => ({ name: `c${i}`, state }) as ContainerReport);
  const counts = countOutcomes(containers);
  expect(counts).toEqual({
    scanned: 7,
    updated: 1,
    failed: 1,
    skipped: 1,
    fresh: 2,
    stale: 1,
    pending: 0,
    rolled_back: 1,
    held: 0,
  });
  expect(metricCounts(counts)).toEqual({ scanned: 7, updated: 1, failed: 2, pending: 0 });
});
