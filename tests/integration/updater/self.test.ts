/**
 * Self-update, with a stand-in container playing svc's own: the updater is told that container
 * is the one it runs in. Exactly one instance must remain, on the new image.
 */
import { afterAll, expect, test } from "bun:test";
import { waitUntil } from "../../harness.ts";
import { containersByPrefix, docker, entryOf, expectState, Fixture, inspect, makeUpdater } from "./support.ts";

const fx = new Fixture();
afterAll(() => fx.cleanup(), 120_000);

test("svc's own container is updated last: replacement started and verified, old one stopped, then removed by the new instance", async () => {
  const v1 = fx.image("self");
  const other = fx.image("neighbour");
  const self = fx.run("self", v1.ref, { restart: "unless-stopped", env: { ROLE: "svc" } });
  const neighbour = fx.run("neighbour", other.ref);
  const oldId = inspect(self).Id as string;
  const v2 = fx.image("self");
  const v3 = fx.image("neighbour");

  const h = await makeUpdater({ containers: [self, neighbour] }, { selfContainerId: oldId });
  const report = await h.updater.run("schedule");
  const entry = entryOf(report, self);
  expect(entry.state).toBe("updated");
  expectState(report, neighbour, "updated");
  expect(inspect(neighbour).Image).toBe(v3.id);
  // updated last: its create comes after everything else's
  const creates = h.audit.entries.filter((e) => e.action === "create").map((e) => e.container);
  expect(creates.at(-1)).toBe(self);

  const replacement = inspect(self);
  expect(replacement.Id).toBe(entry.id);
  expect(replacement.Image).toBe(v2.id);
  expect(replacement.State.Running).toBe(true);
  expect(replacement.Config.Env).toContain("ROLE=svc");

  // the old instance stops its own container through the engine (so its restart policy stays quiet)
  await waitUntil(() => inspect(oldId).State.Running === false, 20_000, "old svc container stopped");
  expect(inspect(oldId).Name).toMatch(/\.svc-old-[0-9a-f]{12}-running$/);

  // the new instance's startup recovery removes it
  const next = await makeUpdater({ containers: [self, neighbour] }, { selfContainerId: replacement.Id });
  await next.updater.recover();
  await waitUntil(
    () => docker(["inspect", oldId], { allowFailure: true }).code !== 0,
    20_000,
    "old svc container removed",
  );
  expect(Object.keys(containersByPrefix(self))).toEqual([self]);
  expect(inspect(self).State.Running).toBe(true);
}, 90_000);

test("a failing replacement of svc's own container is rolled back and the old instance keeps running", async () => {
  const v1 = fx.image("selfbad");
  const self = fx.run("selfbad", v1.ref);
  const oldId = inspect(self).Id as string;
  fx.image("selfbad", { changes: ['CMD ["/bin/sh","-c","exit 2"]'] });
  const h = await makeUpdater({ containers: [self] }, { selfContainerId: oldId });
  const entry = entryOf(await h.updater.run("schedule"), self);
  expect(entry.state).toBe("rolled_back");
  await Bun.sleep(500); // a wrong self-stop would be under way by now
  const after = inspect(self);
  expect(after.Id).toBe(oldId);
  expect(after.State.Running).toBe(true);
  expect(Object.keys(containersByPrefix(self))).toEqual([self]);
}, 60_000);

test("self-update is skipped in run-once mode", async () => {
  const v1 = fx.image("selfonce");
  const self = fx.run("selfonce", v1.ref);
  const oldId = inspect(self).Id as string;
  fx.image("selfonce");
  const h = await makeUpdater({ containers: [self], run_once: true }, { selfContainerId: oldId });
  const entry = entryOf(await h.updater.run("run_once"), self);
  expect(entry.state).toBe("skipped");
  expect(entry.reason).toContain("run-once");
  expect(inspect(self).Id).toBe(oldId);
  expect(inspect(self).Image).toBe(v1.id);
}, 60_000);
