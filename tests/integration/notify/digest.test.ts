/**
 * A channel's digest (docs/windows.md) with real cycles on the sandbox's engine and a loopback
 * webhook receiver: three cycles give one message at the digest's minute (a minute or two ahead),
 * and a rollback among them is told at once.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import type { Server } from "bun";
import { defaultConfig } from "../../../src/config/index.ts";
import { serviceTimeZone, wallClock } from "../../../src/config/window.ts";
import { createNotifications } from "../../../src/notify/index.ts";
import type { SessionReport } from "../../../src/updater/types.ts";
import { waitUntil } from "../../harness.ts";
import { recordingLogger } from "../../support/logger.ts";
import { expectState, Fixture, makeUpdater } from "../updater/support.ts";

const fx = new Fixture();
const received: SessionReport[] = [];
let receiver: Server<undefined>;

beforeAll(() => {
  receiver = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: async (request) => (received.push((await request.json()) as SessionReport), new Response("ok")),
  });
});
afterAll(() => {
  receiver?.stop(true);
  fx.cleanup();
}, 120_000);

const MINUTE = 60_000;

test("three cycles, one digest; the rollback among them told at once", async () => {
  const v1 = fx.image("dig");
  const app = fx.run("dig", v1.ref);
  const bad1 = fx.image("bad");
  const broken = fx.run("bad", bad1.ref);
  fx.image("dig");

  const h = await makeUpdater({ containers: [app, broken], rollback: { startup_timeout: 20_000 } });
  const first = await h.updater.run("schedule");
  expectState(first, app, "updated");
  const second = await h.updater.run("schedule");
  expectState(second, app, "fresh");
  fx.image("bad", { changes: ['CMD ["/bin/sh","-c","echo broken; exit 3"]'] });
  const third = await h.updater.run("schedule");
  expectState(third, broken, "rolled_back");

  // the digest's minute: 60 to 120 s ahead, on the wall clock svc reads (TZ); each report handed
  // over as the service hands a finished cycle's
  const due = Math.floor((Date.now() + 2 * MINUTE) / MINUTE) * MINUTE;
  const { minute } = wallClock(due, serviceTimeZone());
  const digest = `daily ${String(Math.floor(minute / 60)).padStart(2, "0")}:${String(minute % 60).padStart(2, "0")}`;
  const config = defaultConfig({
    notifications: { webhook: { url: `http://127.0.0.1:${receiver.port}/digest`, digest } },
  });
  const dispatcher = await createNotifications(config, recordingLogger(), { hostname: "nas", retryDelayMs: 10 });
  for (const report of [first, second, third]) dispatcher.publish(report!);

  // the rollback at once, alone; nothing else before the digest's minute
  await dispatcher.flush();
  expect(received.map((r) => r.containers.map((c) => `${c.name} ${c.state}`))).toEqual([[`${broken} rolled_back`]]);
  expect(Date.now()).toBeLessThan(due);

  await waitUntil(() => received.length >= 2, 3 * MINUTE, "the digest");
  await Bun.sleep(1000);
  expect(received).toHaveLength(2);
  const told = received[1]!;
  expect(told.containers.map((c) => `${c.name} ${c.state}`).sort()).toEqual(
    [`${broken} rolled_back`, `${app} updated`].sort(),
  );
  expect(told.counts).toMatchObject({ updated: 1, rolled_back: 1 });
  await dispatcher.close();
  expect(received).toHaveLength(2);
}, 300_000);
