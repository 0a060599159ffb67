import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { clockTime, duration, fromNow } from "../../../src/core/moments.ts";

test("a duration: tenths below ten seconds, then seconds, then the two largest of d, h, min", () => {
  expect(duration(300)).toBe("0.3 s");
  expect(duration(1_000)).toBe("1 s");
  expect(duration(1_500)).toBe("1.5 s");
  expect(duration(40_000)).toBe("40 s");
  expect(duration(59_600)).toBe("1 min");
  expect(duration(3 * 60_000)).toBe("3 min");
  expect(duration((5 * 60 + 12) * 60_000)).toBe("5 h 12 min");
  expect(duration(9 * 3_600_000)).toBe("9 h");
  expect(duration((53 * 60 + 10) * 60_000)).toBe("2 d 5 h");
  expect(duration(7 * 86_400_000)).toBe("7 d");
  expect(duration(-5_000)).toBe("0 s");
});

test("how far off a moment is: ahead, now, or past", () => {
  const now = Date.UTC(2026, 10, 27, 17, 0);
  expect(fromNow(now + 9 * 3_600_000, now)).toBe("in 9 h");
  expect(fromNow(now + 25 * 60_000, now)).toBe("in 25 min");
  expect(fromNow(now + 400, now)).toBe("now");
  expect(fromNow(now - 3 * 60_000, now)).toBe("3 min ago");
});

test("a moment on the clock, with its date when a day or more away", () => {
  const now = new Date(2026, 10, 25, 22, 48);
  expect(clockTime(new Date(2026, 10, 26, 4, 0), now)).toBe("04:00");
  expect(clockTime(new Date(2026, 10, 28, 4, 0), now)).toBe("2026-11-28 04:00");
});

test("the wording helpers import nothing, so the browser page can import them", () => {
  for (const file of ["moments.ts", "digests.ts", "urls.ts"]) {
    const text = readFileSync(join(import.meta.dir, "../../../src/core", file), "utf8");
    expect({ file, imports: text.match(/^\s*import\b.*$/gm) ?? [] }).toEqual({ file, imports: [] });
  }
});
