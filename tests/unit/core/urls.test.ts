import { expect, test } from "bun:test";
import { decodePercent, httpUrl } from "../../../src/core/urls.ts";

test("httpUrl: only http(s), and not too long", () => {
  expect(httpUrl("https://example.com/notes")).toBe("https://example.com/notes");
  expect(httpUrl("http://example.com")).toBe("http://example.com/");
  expect(httpUrl("javascript:alert(1)")).toBeNull();
  expect(httpUrl("not a url")).toBeNull();
  expect(httpUrl(null)).toBeNull();
  expect(httpUrl(`https://example.com/${"a".repeat(2048)}`)).toBeNull();
});

test("decodePercent: text that does not decode stays as it is", () => {
  expect(decodePercent("p%40ss%2Fword")).toBe("p@ss/word");
  expect(decodePercent("100%")).toBe("100%");
});
