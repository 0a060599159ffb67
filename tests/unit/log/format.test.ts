import { describe, expect, test } from "bun:test";
import { formatJson, formatLogfmt, type LogRecord, logfmtValue } from "../../../src/log/format.ts";
import { parseLogfmt } from "./helpers.ts";

const at = new Date("2026-03-04T05:06:07.089Z");
const record = (message: string, fields: Record<string, unknown> = {}): LogRecord => ({
  timestamp: at,
  level: "info",
  target: "svc::updater",
  message,
  fields,
});

describe("json lines", () => {
  test("one object with timestamp (ISO 8601 UTC, ms), level, target, message, fields", () => {
    const line = formatJson(record("cycle done", { scanned: 3, names: ["a", "b"], nested: { ok: true } }));
    expect(line).not.toContain("\n");
    expect(JSON.parse(line)).toEqual({
      timestamp: "2026-03-04T05:06:07.089Z",
      level: "info",
      target: "svc::updater",
      message: "cycle done",
      fields: { scanned: 3, names: ["a", "b"], nested: { ok: true } },
    });
  });

  test("a multi-line message stays on one line and reads back unchanged", () => {
    const message = 'line one\nline "two"\ttabbed\r\n\u0000end';
    const line = formatJson(record(message));
    expect(line.split("\n")).toHaveLength(1);
    expect(JSON.parse(line).message).toBe(message);
  });
});

describe("logfmt", () => {
  test("fixed keys first, then fields, all read back", () => {
    const line = formatLogfmt(record("cycle done", { scanned: 3, ok: true, none: null }));
    expect(parseLogfmt(line)).toEqual({
      timestamp: "2026-03-04T05:06:07.089Z",
      level: "info",
      target: "svc::updater",
      message: "cycle done",
      scanned: "3",
      ok: "true",
      none: "null",
    });
  });

  test("values with spaces, quotes, equals, backslashes, newlines, or empty are quoted and read back exactly", () => {
    const tricky = [
      "two words",
      'say "hi"',
      "a=b",
      "back\\slash",
      "multi\nline",
      "",
      "tab\there",
      "ünïcødé ✓",
      "plain",
    ];
    const fields = Object.fromEntries(tricky.map((value, i) => [`f${i}`, value]));
    const parsed = parseLogfmt(formatLogfmt(record("m", fields)));
    for (const [i, value] of tricky.entries()) expect(parsed[`f${i}`]).toBe(value);
    expect(formatLogfmt(record("m", { f: "plain" }))).toEndWith(" f=plain");
  });

  test("nested objects become dotted keys, arrays JSON", () => {
    const parsed = parseLogfmt(
      formatLogfmt(record("m", { filter: { container: ["a", "b c"], image: [] }, counts: { updated: 1 } })),
    );
    expect(JSON.parse(parsed["filter.container"]!)).toEqual(["a", "b c"]);
    expect(parsed["filter.image"]).toBe("[]");
    expect(parsed["counts.updated"]).toBe("1");
  });

  test("keys with spaces or '=' are made safe", () => {
    const parsed = parseLogfmt(formatLogfmt(record("m", { "odd key=x": 1 })));
    expect(parsed.odd_key_x).toBe("1");
  });

  test("logfmtValue: bare when unambiguous", () => {
    expect(logfmtValue("abc")).toBe("abc");
    expect(logfmtValue(12)).toBe("12");
    expect(logfmtValue("")).toBe('""');
    expect(logfmtValue("a b")).toBe('"a b"');
  });
});
