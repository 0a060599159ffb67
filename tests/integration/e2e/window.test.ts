/**
 * `svc --run-once NAME` with an update window (docs/windows.md), as a user runs it: the container
 * it names is updated at once (a person asking is the decision); the same run without the name,
 * over a scope, leaves it pending.
 */
import { afterAll, expect, test } from "bun:test";
import { serviceTimeZone, wallClock } from "../../../src/config/window.ts";
import { inspect } from "../../harness.ts";
import { baseFlags, Fixture, reportsIn, runSvc, stopAll } from "./support.ts";

const fx = new Fixture("e2e-window");
afterAll(async () => {
  await stopAll();
  fx.cleanup();
}, 120_000);

const hhmm = (at: number) => {
  const { minute } = wallClock(at, serviceTimeZone());
  return `${String(Math.floor(minute / 60)).padStart(2, "0")}:${String(minute % 60).padStart(2, "0")}`;
};

test("run once over a scope: pending; run once naming the container: updated at once", async () => {
  const closed = `${hhmm(Date.now() + 3_600_000)}-${hhmm(Date.now() + 7_200_000)}`;
  const scope = fx.prefix;
  const name = fx.run("app", fx.image("app").ref, { labels: { "svc.scope": scope } });
  const newer = fx.image("app");
  const flags = [...baseFlags(), "--run-once", "--update-window", closed, "--scope", scope];

  const scheduled = await runSvc(flags);
  expect(scheduled.code, scheduled.svc.describe()).toBe(0);
  const waiting = reportsIn(scheduled.svc.output)
    .at(-1)
    ?.containers.find((c: any) => c.name === name);
  expect(waiting?.state, scheduled.svc.describe()).toBe("pending");
  expect(inspect(name).Image).not.toBe(newer.id);

  const asked = await runSvc([...flags, name]);
  expect(asked.code, asked.svc.describe()).toBe(0);
  expect(
    reportsIn(asked.svc.output)
      .at(-1)
      ?.containers.find((c: any) => c.name === name)?.state,
    asked.svc.describe(),
  ).toBe("updated");
  expect(inspect(name).Image).toBe(newer.id);
}, 120_000);
