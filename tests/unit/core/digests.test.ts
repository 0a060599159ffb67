import { expect, test } from "bun:test";
import { shortDigest, shortId } from "../../../src/core/digests.ts";

const DIGEST = `sha256:0123456789abcdef${"0".repeat(48)}`;

test("shortId: the 12 hex digits docker images shows", () => {
  expect(shortId(DIGEST)).toBe("0123456789ab");
  expect(shortId("0123456789abcdef")).toBe("0123456789ab");
  expect(shortId(null)).toBe("");
});

test("shortDigest: with its algorithm; other text cut to 12 characters", () => {
  expect(shortDigest(DIGEST)).toBe("sha256:0123456789ab");
  expect(shortDigest("0123456789abcdef")).toBe("0123456789ab");
});
