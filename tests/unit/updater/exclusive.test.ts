/**
 * A scheduled cycle is never dropped for the state file's lease (docs/api.md): while another
 * process (`svc rollback`) holds it, the scheduled cycle waits and runs once it is free, as does a
 * queued update; any other request is skipped as before, and a stop ends the wait.
 */
import { expect, test } from "bun:test";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { silentLogger } from "../../../src/log/index.ts";
import type { Updater } from "../../../src/updater/port.ts";
import type { QueuedRequest, SessionReport, Trigger } from "../../../src/updater/types.ts";
import { exclusiveOn } from "../../../src/updater/wrappers/exclusive.ts";
import { tempDir } from "../../temp.ts";

function fakeUpdater(): Updater & { runs: Trigger[] } {
  const runs: Trigger[] = [];
  return {
    runs,
    run: async (trigger) => (runs.push(trigger), { trigger } as SessionReport),
    recover: async () => {},
    drain: async () => {},
    rollback: async () => null,
    skip: async () => ({}) as never,
    overview: async () => null,
    snooze: async (container) => ({ container, until: null }),
    acceptSigner: async (container) => ({ container, repository: "", signer: "" }),
    busy: false,
    queuedRequests: () => [],
  };
}

/** The lease as another live process on this host writes it (the parent of this test). */
function otherProcessHolds(file: string): () => void {
  mkdirSync(join(file, ".."), { recursive: true });
  writeFileSync(`${file}.busy`, JSON.stringify({ pid: process.ppid, host: hostname(), what: "svc rollback" }));
  return () => rmSync(`${file}.busy`, { force: true });
}

test("another process holds the lease: the scheduled cycle waits and runs once it is free; a request and a later fire are skipped", async () => {
  const file = join(tempDir("exclusive-"), "svc", "state.json");
  const release = otherProcessHolds(file);
  const updater = fakeUpdater();
  const exclusive = exclusiveOn(file, updater, silentLogger);
  const scheduled = exclusive.run("schedule");
  expect(await exclusive.run("api")).toBeNull();
  expect(await exclusive.run("schedule")).toBeNull();
  expect(updater.runs).toEqual([]);
  release();
  expect((await scheduled)?.trigger).toBe("schedule");
  expect(updater.runs).toEqual(["schedule"]);
});

test("a stop ends a scheduled cycle's wait for the lease", async () => {
  const file = join(tempDir("exclusive-"), "svc", "state.json");
  otherProcessHolds(file);
  const updater = fakeUpdater();
  const exclusive = exclusiveOn(file, updater, silentLogger);
  const scheduled = exclusive.run("schedule");
  await exclusive.drain();
  expect(await scheduled).toBeNull();
  expect(updater.runs).toEqual([]);
});

test("another process holds the lease: a queued update is told queued, listed, and runs once it is free", async () => {
  const file = join(tempDir("exclusive-"), "svc", "state.json");
  const release = otherProcessHolds(file);
  const updater = fakeUpdater();
  const exclusive = exclusiveOn(file, updater, silentLogger);
  const told: QueuedRequest[] = [];
  const queued = exclusive.run("api", { container: ["web"] }, { queue: true, onQueued: (q) => void told.push(q) });
  expect(told).toEqual([expect.objectContaining({ trigger: "api", filter: { container: ["web"], image: [] } })]);
  expect(exclusive.queuedRequests()).toEqual(told);
  expect(updater.runs).toEqual([]);
  release();
  expect((await queued)?.trigger).toBe("api");
  expect(updater.runs).toEqual(["api"]);
  expect(exclusive.queuedRequests()).toEqual([]);
});
