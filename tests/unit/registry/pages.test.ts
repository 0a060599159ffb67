import { expect, test } from "bun:test";
import { nextPage } from "../../../src/registry/check.ts";

test("nextPage: the next link's path and query, relative or absolute, among other links; none otherwise", () => {
  expect(nextPage('</v2/app/tags/list?n=100&last=1.2.3>; rel="next"')).toBe("/v2/app/tags/list?n=100&last=1.2.3");
  expect(nextPage("<https://ghcr.io/v2/acme/app/tags/list?last=v9&n=1000>; rel=next")).toBe(
    "/v2/acme/app/tags/list?last=v9&n=1000",
  );
  expect(nextPage('</v2/app/tags/list?n=1>; rel="prev", </v2/app/tags/list?n=1&last=b>; rel="next"')).toBe(
    "/v2/app/tags/list?n=1&last=b",
  );
  expect(nextPage('</v2/app/tags/list?n=1>; rel="prev"')).toBeNull();
  expect(nextPage(null)).toBeNull();
  expect(nextPage("garbage")).toBeNull();
  // a hostile header: linear time (quadratic, this took seconds)
  expect(nextPage("<".repeat(200_000))).toBeNull();
});
