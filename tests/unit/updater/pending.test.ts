/** The API's runner while svc starts: an update asked for during recovery waits for it. */
import { describe, expect, test } from "bun:test";
import type { Updater } from "../../../src/updater/index.ts";
import type { SessionReport } from "../../../src/updater/types.ts";
import { pendingRunner } from "../../../src/updater/wrappers/pending.ts";

function fakeUpdater(report: SessionReport | null): Updater & { calls: string[] } {
  const calls: string[] = [];
  return {
    calls,
    busy: false,
    queuedRequests: () => [],
    async run(trigger) {
      calls.push(trigger);
      return report;
    },
    async recover() {},
    async drain() {},
    async skip(container) {
      return { container, digest: "sha256:" };
    },
    async rollback() {
      return null;
    },
    async overview() {
      return null;
    },
    async snooze(container) {
      return { container, until: null };
    },
    async acceptSigner(container) {
      calls.push(`accept ${container}`);
      return { container, repository: "ghcr.io/acme/app", signer: "unsigned" };
    },
  };
}

describe("pendingRunner", () => {
  test("a cycle asked for before startup is done runs once the updater is ready, not before", async () => {
    const pending = pendingRunner();
    const updater = fakeUpdater(null);
    let answered = false;
    const answer = pending.runner.run("api").then((report) => {
      answered = true;
      return report;
    });
    await Bun.sleep(5);
    expect(answered).toBe(false);
    expect(updater.calls).toEqual([]);
    pending.ready(updater);
    expect(await answer).toBeNull();
    expect(updater.calls).toEqual(["api"]);
  });

  test("after startup, cycles go straight to the updater", async () => {
    const pending = pendingRunner();
    const updater = fakeUpdater(null);
    pending.ready(updater);
    await pending.runner.run("api");
    await pending.runner.run("api");
    expect(updater.calls).toEqual(["api", "api"]);
  });

  test("when startup fails, a waiting request fails with a startup error instead of hanging", async () => {
    const pending = pendingRunner();
    const answer = pending.runner.run("api");
    pending.failed(new Error("engine negotiation exploded"));
    const error = await answer.catch((e: unknown) => e);
    expect((error as { kind?: string }).kind).toBe("startup");
    expect((error as Error).message).toContain("engine negotiation exploded");
  });
});
