/** Hostile option values are refused at load with a reason (docs/security.md). */
import { expect, test } from "bun:test";
import { problems, RUNS } from "./helpers.ts";

test("a tag pattern only a backtracking engine can run is refused at load, naming the option", async () => {
  const found = await problems({ argv: [...RUNS, "--tag-policy", "regex:(\\d+)\\1"] });
  expect(found).toEqual([expect.stringMatching(/^--tag-policy: has a pattern that is not a regular expression svc can match in linear time .*`\\1`/)]);
});
