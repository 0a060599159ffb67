import { expect, test } from "bun:test";
import { MAX_TIMER_MS, timerDelay } from "../../../src/core/timers.ts";

const DAY = 86_400_000;

test("a delay past what setTimeout holds is clamped to it, never let overflow into firing at once", async () => {
  expect([
    timerDelay(25 * DAY),
    timerDelay(Number.POSITIVE_INFINITY),
    timerDelay(Number.NaN),
    timerDelay(-5),
    timerDelay(1500),
  ]).toEqual([MAX_TIMER_MS, MAX_TIMER_MS, MAX_TIMER_MS, 0, 1500]);
  const fired: string[] = [];
  const clamped = setTimeout(() => fired.push("clamped"), timerDelay(25 * DAY));
  await new Promise((resolve) => setTimeout(resolve, 20));
  clearTimeout(clamped);
  expect(fired).toEqual([]);
});
