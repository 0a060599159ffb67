/** The PAX records the copier writes (copier.ts): each record's length counts itself, and reads back. */
import { describe, expect, test } from "bun:test";
import { paxRecord, paxRecords } from "../../../src/dataguard/tar.ts";

describe("PAX records", () => {
  test("the length counts itself, across a change in its digits", () => {
    for (const size of [0, 1, 80, 88, 89, 90, 985, 986, 995, 996, 9990]) {
      const record = paxRecord("SCHILY.xattr.user.x", new Uint8Array(size).fill(0x61));
      expect(Number(new TextDecoder().decode(record).split(" ")[0])).toBe(record.length);
      expect(paxRecords(record).map(([k, v]) => [k, v.length])).toEqual([["SCHILY.xattr.user.x", size]]);
    }
  });
});
