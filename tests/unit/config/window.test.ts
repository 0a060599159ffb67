/** Update windows against an injected clock: across midnight, DST changes and weekday lists (docs/windows.md). */
import { describe, expect, test } from "bun:test";
import {
  describeMoment,
  isOpen,
  neverOpen,
  nextOpening,
  nextStart,
  parseDigestPeriod,
  parseWindows,
  type Window,
  type WindowPolicy,
} from "../../../src/config/window.ts";

function windows(text: string): Window[] {
  const parsed = parseWindows(text);
  if ("problem" in parsed) throw new Error(parsed.problem);
  return parsed.windows;
}
const policy = (...texts: string[]): WindowPolicy => texts.map(windows);
const at = (iso: string) => Date.parse(iso);
const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

describe("parsing", () => {
  test("days are optional, lists and ranges of days, several windows, 24:00", () => {
    expect([...windows("02:00-05:00")[0]!.days]).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect([...windows("Sat,Sun 02:00-05:00")[0]!.days].sort()).toEqual([0, 6]);
    expect([...windows("fri-mon 22:00-24:00")[0]!.days].sort()).toEqual([0, 1, 5, 6]);
    expect(windows("Sat 02:00-05:00; Wed 22:00-23:00")).toHaveLength(2);
    expect(isOpen(policy("00:00-24:00"), at("2026-11-25T23:59:00Z"), "UTC")).toBe(true);
  });

  test("a window that cannot be read, never opens or overlaps another is refused, naming it", () => {
    expect(parseWindows("Sat 2-5")).toEqual({ problem: expect.stringContaining('"Sat 2-5"') });
    expect(parseWindows("Caturday 02:00-05:00")).toEqual({ problem: expect.stringContaining('"Caturday"') });
    expect(parseWindows("25:00-26:00")).toEqual({ problem: expect.stringContaining("HH:MM-HH:MM") });
    expect(parseWindows("02:00-02:00")).toEqual({ problem: expect.stringContaining("never opens") });
    expect(parseWindows("Sat 02:00-05:00; 04:00-06:00")).toEqual({
      problem: expect.stringMatching(/"Sat 02:00-05:00" and "04:00-06:00" overlap/),
    });
    // Saturday 23:00 to Sunday 01:00 meets Sunday 00:30
    expect(parseWindows("Sat 23:00-01:00; Sun 00:30-02:00")).toEqual({ problem: expect.stringContaining("overlap") });
    expect(parseWindows("Sat 23:00-01:00; Sun 01:00-02:00")).toHaveProperty("windows");
    expect(parseWindows(" ; ")).toEqual({ problem: expect.stringContaining("no window") });
    // read at most 4,096 characters: a longer list is refused unread
    expect(parseWindows(`${"Sat 02:00-03:00; ".repeat(300)}`)).toEqual({
      problem: expect.stringMatching(/is 5100 characters long; svc reads at most 4096/),
    });
  });

  test("a label that shares no minute with the host's window never opens", () => {
    expect(neverOpen(policy("Sat,Sun 02:00-05:00", "Mon 03:00-04:00"))).toBe(true);
    expect(neverOpen(policy("Sat,Sun 02:00-05:00", "04:30-06:00"))).toBe(false);
    expect(neverOpen([])).toBe(false);
  });
});

describe("open, and when it next opens (UTC)", () => {
  const tz = "UTC";

  test("a weekday list: closed on Friday, opens Saturday 02:00", () => {
    const p = policy("Sat,Sun 02:00-05:00");
    expect(isOpen(p, at("2026-11-27T12:00:00Z"), tz)).toBe(false); // Friday
    expect(iso(nextOpening(p, at("2026-11-27T17:00:00Z"), tz))).toBe("2026-11-28T02:00:00.000Z");
    expect(isOpen(p, at("2026-11-28T04:59:00Z"), tz)).toBe(true);
    expect(isOpen(p, at("2026-11-28T05:00:00Z"), tz)).toBe(false);
    // Sunday after its window: next Saturday
    expect(iso(nextOpening(p, at("2026-11-29T06:00:00Z"), tz))).toBe("2026-12-05T02:00:00.000Z");
  });

  test("across midnight: open from the start day's evening into the next morning", () => {
    const p = policy("Fri 23:00-01:00");
    expect(isOpen(p, at("2026-11-27T23:30:00Z"), tz)).toBe(true); // Friday night
    expect(isOpen(p, at("2026-11-28T00:59:00Z"), tz)).toBe(true); // Saturday morning
    expect(isOpen(p, at("2026-11-28T01:00:00Z"), tz)).toBe(false);
    expect(isOpen(p, at("2026-11-27T00:30:00Z"), tz)).toBe(false); // Friday morning belongs to Thursday
    expect(iso(nextOpening(p, at("2026-11-28T01:00:00Z"), tz))).toBe("2026-12-04T23:00:00.000Z");
  });

  test("open now: the answer is now", () => {
    const now = at("2026-11-25T03:00:00Z");
    expect(nextOpening(policy("02:00-05:00"), now, tz)).toBe(now);
  });

  test("a label narrows the host's window: both must be open", () => {
    const p = policy("Sat,Sun 02:00-05:00", "04:00-06:00");
    expect(isOpen(p, at("2026-11-28T03:00:00Z"), tz)).toBe(false);
    expect(isOpen(p, at("2026-11-28T05:30:00Z"), tz)).toBe(false);
    expect(iso(nextOpening(p, at("2026-11-27T12:00:00Z"), tz))).toBe("2026-11-28T04:00:00.000Z");
    expect(nextOpening(policy("Sat 02:00-05:00", "Mon 02:00-05:00"), at("2026-11-27T12:00:00Z"), tz)).toBeNull();
  });

  test("said as a person reads it", () => {
    expect(describeMoment(at("2026-11-28T02:00:00Z"), at("2026-11-27T17:00:00Z"), tz)).toBe("Sat 02:00 (in 9 h)");
    expect(describeMoment(at("2026-11-28T02:00:00Z"), at("2026-11-28T01:35:00Z"), tz)).toBe("Sat 02:00 (in 25 min)");
    expect(describeMoment(at("2026-12-05T02:00:00Z"), at("2026-11-28T02:00:00Z"), tz)).toBe("Sat 02:00 (in 7 d)");
  });
});

describe("in a time zone with DST (Europe/Berlin)", () => {
  const tz = "Europe/Berlin";

  test("local time: 02:00 in winter is 01:00 UTC, in summer 00:00 UTC", () => {
    expect(iso(nextOpening(policy("02:00-05:00"), at("2026-01-10T12:00:00Z"), tz))).toBe("2026-01-11T01:00:00.000Z");
    expect(iso(nextOpening(policy("02:00-05:00"), at("2026-07-10T12:00:00Z"), tz))).toBe("2026-07-11T00:00:00.000Z");
  });

  test("the night the clocks go forward (29 March 2026) skips 02:00-03:00: a window of that hour does not open", () => {
    const p = policy("02:00-03:00");
    // Saturday noon: the next opening is Monday 02:00 CEST, not the missing Sunday hour
    expect(iso(nextOpening(p, at("2026-03-28T12:00:00Z"), tz))).toBe("2026-03-30T00:00:00.000Z");
    // a longer window opens when the wall clock reaches a time inside it: 03:00 CEST
    expect(iso(nextOpening(policy("02:30-04:00"), at("2026-03-28T12:00:00Z"), tz))).toBe("2026-03-29T01:00:00.000Z");
  });

  test("the night the clocks go back (25 October 2026) repeats 02:00-03:00: the window is open for both", () => {
    const p = policy("Sun 02:00-03:00");
    expect(isOpen(p, at("2026-10-25T00:30:00Z"), tz)).toBe(true); // 02:30 CEST
    expect(isOpen(p, at("2026-10-25T01:30:00Z"), tz)).toBe(true); // 02:30 CET
    expect(isOpen(p, at("2026-10-25T02:00:00Z"), tz)).toBe(false); // 03:00 CET
    expect(iso(nextOpening(p, at("2026-10-24T12:00:00Z"), tz))).toBe("2026-10-25T00:00:00.000Z");
  });
});

describe("digest periods", () => {
  test("daily and weekly, the next moment strictly after", () => {
    const daily = parseDigestPeriod("daily 08:00");
    const weekly = parseDigestPeriod("weekly Mon 08:00");
    if ("problem" in daily || "problem" in weekly) throw new Error("unreadable");
    expect(iso(nextStart(daily.moments, at("2026-11-25T08:00:00Z"), "UTC"))).toBe("2026-11-26T08:00:00.000Z");
    expect(iso(nextStart(daily.moments, at("2026-11-25T07:59:00Z"), "UTC"))).toBe("2026-11-25T08:00:00.000Z");
    expect(iso(nextStart(weekly.moments, at("2026-11-25T12:00:00Z"), "UTC"))).toBe("2026-11-30T08:00:00.000Z");
    expect(parseDigestPeriod("hourly")).toEqual({ problem: expect.stringContaining("daily HH:MM") });
    expect(parseDigestPeriod("weekly Moon 08:00")).toEqual({ problem: expect.stringContaining('"Moon"') });
  });
});

describe("checked at load with the rest", () => {
  test("an unreadable, never-open or overlapping window, or an unreadable digest, stops the start naming the value", async () => {
    const { problems, RUNS } = await import("./helpers.ts");
    expect(await problems({ argv: [...RUNS, "--update-window", "Sat 02:00-02:00"] })).toEqual([
      expect.stringMatching(/^--update-window: "Sat 02:00-02:00": .*never opens/),
    ]);
    expect(await problems({ argv: [...RUNS, "--update-window", "02:00-05:00; Sat 04:00-06:00"] })).toEqual([
      expect.stringMatching(/^--update-window: .*"02:00-05:00" and "Sat 04:00-06:00" overlap/),
    ]);
    expect(await problems({ argv: [...RUNS, "--notifications-webhook-digest", "every morning"] })).toEqual([
      expect.stringMatching(/^--notifications-webhook-digest: "every morning": must be "daily HH:MM"/),
    ]);
  });
});
