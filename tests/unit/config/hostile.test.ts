/** Hostile option values are refused at load with a reason (docs/security.md). */
import { expect, test } from "bun:test";
import { formatBound } from "../../../src/config/builders.ts";
import { OPTIONS } from "../../../src/config/index.ts";
import { MAX_TIMER_MS } from "../../../src/core/timers.ts";
import { load, problems, RUNS } from "./helpers.ts";

test("a tag pattern only a backtracking engine can run is refused at load, naming the option", async () => {
  const found = await problems({ argv: [...RUNS, "--tag-policy", "regex:(\\d+)\\1"] });
  expect(found).toEqual([
    expect.stringMatching(
      /^--tag-policy: has a pattern that is not a regular expression svc can match in linear time .*`\\1`/,
    ),
  ]);
});

const DURATIONS = OPTIONS.filter((o) => o.meta.kind === "duration");

test("every duration option has an upper bound no timer overflows past, unless chained", () => {
  expect(DURATIONS.length).toBeGreaterThan(5);
  for (const option of DURATIONS) {
    expect(option.meta.max).toBeNumber();
    // only waits the scheduler chains, or times compared with the clock, may pass a timer's limit
    if (!["poll_interval", "cleanup_delay", "min_image_age", "data_guard_keep"].includes(option.key))
      expect(option.meta.max!).toBeLessThanOrEqual(MAX_TIMER_MS);
  }
});

test.each(DURATIONS.map((o) => [o.key, o] as const))(
  "%s: its bound is accepted, past it or overflowing is refused naming the option",
  async (_key, option) => {
    const max = option.meta.max!;
    const set = (value: string) => ({ argv: [...RUNS, option.flag, value] });
    const accepted = await load(set(`${max}ms`));
    expect(option.path.reduce((node: any, part) => node[part], accepted.config)).toBe(max);
    expect(await problems(set(`${max + 1}ms`))).toEqual([
      `${option.flag}: must be at most ${formatBound(max)} (got "${max + 1}ms")`,
    ]);
    expect(await problems(set(`${"9".repeat(400)}d`))).toEqual([
      expect.stringMatching(new RegExp(`^${option.flag}: must be at most `)),
    ]);
  },
);

test("http_api.address must be an IP address", async () => {
  expect(await problems({ argv: [...RUNS, "--http-api-address", "0.0.0.0; rm -rf /"] })).toEqual([
    '--http-api-address: must be an IP address such as "0.0.0.0", "127.0.0.1" or "::" (got "0.0.0.0; rm -rf /")',
  ]);
  expect((await load({ argv: [...RUNS, "--http-api-address", "::1"] })).config.http_api.address).toBe("::1");
});
