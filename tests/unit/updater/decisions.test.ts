/**
 * The phases before a replacement return their decisions (cycle/target.ts); the caller applies them
 * in one place: a decided target leaves those to replace, its entry takes the state, the reason and
 * the moment of the decision, and the first decision on a target stands.
 */
import { expect, test } from "bun:test";
import { defaultConfig } from "../../../src/config/index.ts";
import { applyDecisions, type Decision, newTarget } from "../../../src/updater/cycle/target.ts";
import { policyFor } from "../../../src/updater/selection/selection.ts";

const config = defaultConfig();
const target = (name: string) => {
  const summary = { id: name, name, image: `r/${name}:1`, imageId: "sha256:a", state: "running" as const, labels: {} };
  return { ...newTarget(summary, policyFor(summary, config), 1_000), state: "stale" as const };
};

test("a decision finishes its target at the moment it was taken and takes it out of those to replace", () => {
  const entries = new Map([
    ["web", target("web")],
    ["db", target("db")],
  ]);
  const going = new Set(["web", "db"]);
  applyDecisions(entries, going, [{ name: "web", state: "skipped", reason: "pre_update hook failed", at: 4_000 }]);
  expect([...going]).toEqual(["db"]);
  expect(entries.get("web")).toMatchObject({ state: "skipped", reason: "pre_update hook failed", finishedAt: 4_000 });
  expect(entries.get("db")!.finishedAt).toBeUndefined();
});

test("the first decision on a target stands; a target not to be replaced is left as it is", () => {
  const entries = new Map([
    ["web", target("web")],
    ["sidecar", target("sidecar")],
  ]);
  const going = new Set(["web"]);
  const decisions: Decision[] = [
    { name: "web", state: "skipped", reason: "dependency cycle: web -> db -> web", at: 2_000 },
    { name: "web", state: "skipped", reason: "dependency cycle: web -> cache -> web", at: 2_000 },
    { name: "sidecar", state: "skipped", reason: "the container disappeared during the cycle", at: 2_000 },
    { name: "unknown", state: "skipped", reason: "not selected", at: 2_000 },
  ];
  applyDecisions(entries, going, decisions);
  expect(entries.get("web")!.reason).toBe("dependency cycle: web -> db -> web");
  expect(entries.get("sidecar")).toMatchObject({ state: "stale", reason: null });
  expect(entries.get("sidecar")!.finishedAt).toBeUndefined();
  expect(going.size).toBe(0);
});
