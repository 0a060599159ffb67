/**
 * Imports point one way (docs/architecture.md): each room of src/, and each folder of the updater,
 * imports only from the layers below its own; so does each file of ui/ and of the page in ui/page/.
 * A new room, folder or page file is placed in LAYERS on purpose. Inside a unit, files import one
 * another freely, but never in a circle.
 */
import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

const SRC = resolve(import.meta.dir, "../../src");

/** Lowest first; units on one line may not import each other either. */
const LAYERS: readonly (readonly string[])[] = [
  ["core"],
  ["log"],
  ["shoutrrr"],
  ["config"],
  ["state", "metrics"],
  ["engine"],
  ["registry", "releases", "compose", "vulns"],
  ["dataguard", "git", "verify"],
  ["updater/types.ts"],
  ["updater/selection", "updater/check"],
  ["updater/cycle"],
  ["updater/containers", "updater/swarm"],
  ["updater/recovery"],
  ["updater/views"],
  ["updater/port.ts"],
  ["updater/requests"],
  ["updater/wrappers"],
  ["updater/index.ts"],
  ["notify", "scheduler"],
  // the dashboard (src/ui/page/README.md): each file of the page is a unit of its own
  ["ui/summary.ts", "ui/budget.ts"],
  ["ui/page/dom.ts", "ui/page/api.ts"],
  ["ui/page/format.ts", "ui/page/release-notes.ts", "ui/page/dialogs.ts"],
  ["ui/page/store.ts"],
  ["ui/page/data.ts"],
  ["ui/page/polling.ts"],
  ["ui/page/actions.ts", "ui/page/details.ts"],
  ["ui/page/deep-link.ts"],
  [
    "ui/page/status.ts",
    "ui/page/glance.ts",
    "ui/page/filters.ts",
    "ui/page/bulk.ts",
    "ui/page/excluded.ts",
    "ui/page/history.ts",
    "ui/page/copies.ts",
    "ui/page/row-menu.ts",
    "ui/page/signin.ts",
  ],
  ["ui/page/row.ts"],
  ["ui/page/table.ts"],
  ["ui/page/dashboard.ts"],
  ["ui/page/main.ts"],
  ["ui/page/index.html"],
  ["ui/assets.ts"],
  ["api"],
  ["service"],
  ["commands"],
  ["main.ts"],
];

/**
 * The unit a file belongs to: its room, a folder of the updater, or the file itself at the top;
 * in ui/, each file (the page's among them) is a unit.
 */
function unitOf(file: string): string {
  const parts = relative(SRC, file).split("/");
  if (parts.length === 1) return parts[0]!;
  if (parts[0] === "updater") return `updater/${parts[1]}`;
  if (parts[0] === "ui") return parts.slice(0, parts[1] === "page" ? 3 : 2).join("/");
  return parts[0]!;
}

function sourceFiles(dir: string, out: string[] = []): string[] {
  for (const entry of readdirSync(dir)) {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) sourceFiles(path, out);
    else if (entry.endsWith(".ts")) out.push(path);
  }
  return out;
}

const IMPORT = /(?:\bfrom|\bimport)\s*\(?\s*["'](\.{1,2}\/[^"']+)["']/g;

function importsBetweenUnits(): { from: string; to: string; file: string; spec: string }[] {
  const edges = [];
  for (const file of sourceFiles(SRC)) {
    for (const [, spec] of readFileSync(file, "utf8").matchAll(IMPORT)) {
      const from = unitOf(file);
      const to = unitOf(resolve(dirname(file), spec!));
      if (from !== to) edges.push({ from, to, file: relative(SRC, file), spec: spec! });
    }
  }
  return edges;
}

/** Each source file with the source files it imports (a type-only import counts: see below). */
function importGraph(): Map<string, Set<string>> {
  const graph = new Map<string, Set<string>>();
  for (const file of sourceFiles(SRC)) {
    const targets = [...readFileSync(file, "utf8").matchAll(IMPORT)].map(([, spec]) =>
      relative(SRC, resolve(dirname(file), spec!)),
    );
    graph.set(relative(SRC, file), new Set(targets));
  }
  return graph;
}

/**
 * The import circles between files: each strongly connected part of the graph with more than one
 * file (or a file importing itself), found with Tarjan's algorithm, each as its files' edges.
 */
function importCircles(graph: Map<string, Set<string>>): string[][] {
  const order = new Map<string, number>();
  const lowest = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const circles: string[][] = [];
  const visit = (file: string) => {
    order.set(file, order.size);
    lowest.set(file, order.get(file)!);
    stack.push(file);
    onStack.add(file);
    for (const next of graph.get(file)!) {
      if (!graph.has(next)) continue;
      if (!order.has(next)) visit(next);
      if (onStack.has(next)) lowest.set(file, Math.min(lowest.get(file)!, lowest.get(next)!));
    }
    if (lowest.get(file) !== order.get(file)) return;
    const part = new Set<string>();
    for (let top = ""; top !== file; ) {
      top = stack.pop()!;
      onStack.delete(top);
      part.add(top);
    }
    if (part.size > 1 || graph.get(file)!.has(file))
      circles.push(
        [...part].flatMap((from) => [...graph.get(from)!].filter((to) => part.has(to)).map((to) => `${from} -> ${to}`)),
      );
  };
  for (const file of graph.keys()) if (!order.has(file)) visit(file);
  return circles;
}

/** Known to run against the flow, to be moved (each one named, so that no new one slips in). */
const KNOWN_UPWARD = new Set<string>([]);

const layerOf = new Map(LAYERS.flatMap((units, level) => units.map((unit) => [unit, level] as const)));

describe("the import direction", () => {
  const edges = importsBetweenUnits();

  test("every room and updater folder has its layer", () => {
    const units = new Set(sourceFiles(SRC).map(unitOf));
    expect([...units].filter((unit) => !layerOf.has(unit))).toEqual([]);
  });

  test("each import points to a lower layer", () => {
    const upward = edges
      .filter(({ from, to }) => layerOf.has(from) && layerOf.has(to) && layerOf.get(to)! >= layerOf.get(from)!)
      .filter(({ file, spec }) => !KNOWN_UPWARD.has(`${file} imports ${spec}`))
      .map(({ file, spec, from, to }) => `${file} imports ${spec} (${from} -> ${to})`);
    expect(upward).toEqual([]);
  });

  test("the check sees the imports it judges", () => {
    // a parser that found nothing would pass the test above without judging anything
    expect(edges.some(({ from, to }) => from === "updater/containers" && to === "updater/cycle")).toBe(true);
    expect(edges.some(({ from, to }) => from === "service" && to === "updater/index.ts")).toBe(true);
    expect(edges.some(({ from, to }) => from === "ui/page/table.ts" && to === "ui/page/store.ts")).toBe(true);
    expect(edges.some(({ from, to }) => from === "ui/assets.ts" && to === "ui/page/index.html")).toBe(true);
  });
});

describe("no import circle between files", () => {
  // A type-only import counts too: a circle of types is still two files that cannot be read (or
  // moved to another room) one without the other, and it is how a circle of values starts.
  const graph = importGraph();

  test("no file of src/ reaches itself through its imports", () => {
    expect(importCircles(graph)).toEqual([]);
  });

  test("the check finds a circle where there is one", () => {
    // a finder that saw nothing would pass the test above without judging anything
    const circled = new Map(graph);
    circled.set("core/errors.ts", new Set([...graph.get("core/errors.ts")!, "updater/index.ts"]));
    const circles = importCircles(circled);
    expect(circles).toHaveLength(1);
    expect(circles[0]).toContain("core/errors.ts -> updater/index.ts");
    expect(importCircles(new Map([["a.ts", new Set(["a.ts"])]]))).toEqual([["a.ts -> a.ts"]]);
  });

  test("the graph holds the imports a file makes, type-only and dynamic ones among them", () => {
    expect(graph.get("updater/containers/replace.ts")).toContain("updater/containers/entry.ts");
    expect(graph.get("registry/port.ts")).toContain("registry/descriptors.ts");
    expect(graph.get("api/dashboard.ts")).toContain("ui/assets.ts");
  });
});

describe("the docs name the rooms in the order the test holds", () => {
  // the rooms, lowest first: the updater's folders (and any room's inner units) count as their room
  const rooms = LAYERS.map((units) => [
    ...new Set(units.map((unit) => (unit.endsWith(".ts") && !unit.includes("/") ? unit : unit.split("/")[0]!))),
  ]).filter((row, i, rows) => i === 0 || row.join() !== rows[i - 1]!.join());
  const read = (file: string) => readFileSync(resolve(import.meta.dir, "../..", file), "utf8");

  test("docs/architecture.md's list, one line per layer", () => {
    const block = read("docs/architecture.md").split("```")[1]!;
    const listed = block
      .trim()
      .split("\n")
      .map((line) => line.split("(")[0]!.trim().split(/\s+/));
    expect(listed).toEqual(rooms);
  });

  test("docs/contributing.md's list, one line per layer", () => {
    const text = read("docs/contributing.md");
    const section = text.slice(text.indexOf("## Where each thing lives"), text.indexOf("\nTests mirror the rooms"));
    const listed = section
      .split("\n")
      .filter((line) => line.startsWith("- `"))
      .map((line) => [...line.split(":")[0]!.matchAll(/`([^`]+)`/g)].map(([, name]) => name!.replace(/^src\//, "")));
    expect(listed).toEqual(rooms);
  });
});
