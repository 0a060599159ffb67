/**
 * A digest keeps what it holds (docs/windows.md): one that cannot be sent is kept and tried again
 * (failures included without immediate_on_failure), a restart mid-period finds it in state_dir,
 * and what it keeps grows with the targets, never with the cycles.
 */
import { afterAll, expect, test } from "bun:test";
import { defaultConfig } from "../../../src/config/index.ts";
import { parseDigestPeriod, serviceTimeZone, wallClock } from "../../../src/config/window.ts";
import { createDigest } from "../../../src/notify/digest.ts";
import { createNotifications } from "../../../src/notify/index.ts";
import { inMemory, openState } from "../../../src/state/index.ts";
import type { ContainerOutcome, ContainerReport, SessionReport } from "../../../src/updater/types.ts";
import { waitUntil } from "../../harness.ts";
import { recordingLogger } from "../../support/logger.ts";
import { tempDir } from "../../temp.ts";
import { entry, sampleReport } from "./fixtures.ts";

const cycle = (...containers: ContainerReport[]) => sampleReport({ containers });
/** A digest moment twelve hours from now: never reached while the test runs. */
function farMoment(): string {
  const { minute } = wallClock(Date.now() + 12 * 3_600_000, serviceTimeZone());
  return `daily ${String(Math.floor(minute / 60)).padStart(2, "0")}:${String(minute % 60).padStart(2, "0")}`;
}
const moments = () => {
  const parsed = parseDigestPeriod(farMoment());
  if ("problem" in parsed) throw new Error(parsed.problem);
  return parsed.moments;
};
const told = (reports: SessionReport[]) =>
  reports.map((r) => r.containers.map((c) => `${c.name} ${c.state}`).join(", "));

let failing = true;
const received: SessionReport[] = [];
const webhook = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  fetch: async (request) => {
    const body = (await request.json()) as SessionReport;
    if (failing) return new Response("down", { status: 503 });
    received.push(body);
    return new Response("ok");
  },
});
afterAll(() => webhook.stop(true));

test("a webhook that fails at shutdown: the digest (its failure too, immediate_on_failure off) is kept in state_dir, and sent once it answers after a restart", async () => {
  const dir = `${tempDir("svc-digest-")}/state`;
  const config = defaultConfig({
    state_dir: dir,
    notifications: {
      webhook: { url: `http://127.0.0.1:${webhook.port}/hook`, digest: farMoment(), immediate_on_failure: false },
    },
  });
  const start = () =>
    createNotifications(config, recordingLogger(), {
      hostname: "nas",
      retryDelayMs: 1,
      digestRetryMs: 20,
      digests: openState(dir, recordingLogger()).section("digests"),
    });

  const first = await start();
  first.publish(cycle(entry("db", "failed"), entry("web", "updated")));
  first.publish(cycle(entry("db", "fresh"), entry("web", "fresh"), entry("cache", "pending")));
  await first.close();
  expect(received).toHaveLength(0);

  failing = false;
  const second = await start();
  await waitUntil(() => received.length > 0, 10_000, "the kept digest");
  expect(told(received)).toEqual(["cache pending, db failed, web updated"]);
  await second.close();
  // told once: nothing is kept any more, and a third start sends nothing
  const third = await start();
  await Bun.sleep(100);
  await third.close();
  expect(received).toHaveLength(1);
});

test("a digest whose send fails is tried again (backing off) until it goes, with what came meanwhile", async () => {
  const sent: SessionReport[] = [];
  const answers = [false, false];
  const log = recordingLogger();
  const digest = createDigest({
    settings: { moments: moments(), immediateOnFailure: false },
    log,
    retryMs: 10,
    send: async (r) => (answers.length > 0 ? answers.shift()! : (sent.push(r), true)),
  });
  digest.add(cycle(entry("db", "rolled_back")));
  await digest.sendNow();
  digest.add(cycle(entry("web", "updated"), entry("db", "fresh")));
  await waitUntil(() => sent.length > 0, 10_000, "the digest tried again");
  expect(told(sent)).toEqual(["db rolled_back, web updated"]);
  await digest.close();
  expect(sent).toHaveLength(1);
});

test("svc restarted mid-period: the period's targets are in state_dir and the next digest tells them", async () => {
  const dir = `${tempDir("svc-digest-")}/state`;
  const settings = { moments: moments(), immediateOnFailure: true };
  const before = createDigest({
    settings,
    log: recordingLogger(),
    key: "webhook",
    store: openState(dir, recordingLogger()).section("digests"),
    send: async () => true,
  });
  before.add(cycle(entry("web", "updated"), entry("db", "pending")));
  // the process ends without a close (killed, or the host went down)
  const sent: SessionReport[] = [];
  const after = createDigest({
    settings,
    log: recordingLogger(),
    key: "webhook",
    store: openState(dir, recordingLogger()).section("digests"),
    send: async (r) => (sent.push(r), true),
  });
  await after.sendNow();
  expect(told(sent)).toEqual(["db pending, web updated"]);
  await before.close();
  await after.close();
});

test("what a digest keeps is bounded by its targets: 2,000 cycles over 50 targets keep 50 entries", async () => {
  const store = inMemory();
  const digest = createDigest({
    settings: { moments: moments(), immediateOnFailure: false },
    log: recordingLogger(),
    key: "webhook",
    store,
    send: async () => true,
  });
  const states: ContainerOutcome[] = ["fresh", "stale", "updated", "failed", "pending"];
  for (let i = 0; i < 2_000; i++)
    digest.add(cycle(...Array.from({ length: 50 }, (_, t) => entry(`t${t}`, states[(i + t) % states.length]!))));
  const kept = JSON.parse(store.get("webhook")!) as { cycles: number; targets: unknown[] };
  expect(kept.cycles).toBe(2_000);
  expect(kept.targets).toHaveLength(50);
  expect(store.get("webhook")!.length).toBeLessThan(50 * 1_000);
  await digest.close();
});
