import { describe, expect, test } from "bun:test";
import { parseTagPolicy, type TagPolicy } from "../../../src/config/index.ts";
import { naturalCompare, newerTags, parseVersionTag } from "../../../src/updater/check/tags.ts";

function policy(text: string): TagPolicy {
  const parsed = parseTagPolicy(text);
  if (!("policy" in parsed) || parsed.policy === null) throw new Error(`not a policy: ${text}`);
  return parsed.policy;
}

const TAGS = [
  "latest",
  "alpine",
  "1",
  "1.2",
  "1.3",
  "2.0",
  "1.2.3",
  "1.2.4",
  "1.2.10",
  "1.3.0",
  "1.3.1-rc.1",
  "1.4.0-beta2",
  "2.0.0",
  "2.1.0-rc1",
  "v1.2.5",
  "1.2.4-alpine",
  "1.2.11-alpine",
  "1.3.0-alpine",
  "1.2.11-bookworm",
  "1.2.3.4",
  "1.2.99-1",
];

describe("parseTagPolicy", () => {
  test("off and empty mean no policy; semver levels, +pre; regex with an order", () => {
    expect(parseTagPolicy("off")).toEqual({ policy: null });
    expect(parseTagPolicy(" ")).toEqual({ policy: null });
    expect(parseTagPolicy("semver:minor")).toEqual({
      policy: { kind: "semver", level: "minor", prereleases: false, text: "semver:minor" },
    });
    expect(parseTagPolicy("semver:patch+pre")).toMatchObject({ policy: { level: "patch", prereleases: true } });
    expect(parseTagPolicy("regex(lexical):2024-.*")).toMatchObject({ policy: { kind: "regex", order: "lexical" } });
    expect(parseTagPolicy("regex:\\d+")).toMatchObject({ policy: { kind: "regex", order: "natural" } });
  });

  test("bad text names the problem", () => {
    expect(parseTagPolicy("semver:minr")).toEqual({
      problem: expect.stringContaining("is not a tag policy (examples: "),
    });
    expect(parseTagPolicy("regex(random):x")).toEqual({
      problem: 'orders tags by "random"; the orders are natural, lexical, semver',
    });
    expect(parseTagPolicy("regex:(")).toEqual({
      problem: expect.stringMatching(
        /^has a pattern that is not a regular expression svc can match in linear time \(RE2 syntax: no backreferences or lookaround\): /,
      ),
    });
    // what only a backtracking engine runs is refused, naming the construct
    expect(parseTagPolicy("regex:(\\d+)-\\1")).toEqual({
      problem: expect.stringContaining("invalid escape sequence: `\\1`"),
    });
    expect(parseTagPolicy("regex:(?=1)\\d+")).toEqual({ problem: expect.stringContaining("`(?=`") });
    expect(parseTagPolicy("regex:")).toEqual({ problem: "has an empty pattern" });
  });

  test("a pattern matches whole tags only", () => {
    const p = policy("regex:\\d+");
    expect(newerTags(p, "1", ["2", "3a", "a4"])).toEqual(["2"]);
  });
});

describe("parseVersionTag", () => {
  test("versions, pre-releases and variants", () => {
    expect(parseVersionTag("v1.2.3")).toEqual({ prefix: "v", parts: [1, 2, 3], pre: null, variant: "" });
    expect(parseVersionTag("1.27-alpine")).toEqual({ prefix: "", parts: [1, 27], pre: null, variant: "alpine" });
    expect(parseVersionTag("2.0.0-rc.1")).toEqual({ prefix: "", parts: [2, 0, 0], pre: "rc.1", variant: "" });
    expect(parseVersionTag("2.0.0-beta2-alpine")).toEqual({
      prefix: "",
      parts: [2, 0, 0],
      pre: "beta2",
      variant: "alpine",
    });
    expect(parseVersionTag("4.1.2-ls45")).toMatchObject({ pre: null, variant: "ls45" });
    for (const notVersion of ["latest", "alpine", "1.2.3.4", "release-1.2", "1.2.3-", "sha-abc"])
      expect(parseVersionTag(notVersion)).toBeNull();
  });

  test("natural order compares digit runs as numbers", () => {
    expect(naturalCompare("rc9", "rc10")).toBeLessThan(0);
    expect(naturalCompare("1.10", "1.9")).toBeGreaterThan(0);
    expect(naturalCompare("a", "a")).toBe(0);
  });
});

describe("newerTags: semver", () => {
  test("patch stays within major.minor, with the same shape; best first", () => {
    expect(newerTags(policy("semver:patch"), "1.2.3", TAGS)).toEqual(["1.2.10", "1.2.4"]);
  });

  test("minor stays within the major; major goes anywhere; pre-releases excluded unless asked", () => {
    expect(newerTags(policy("semver:minor"), "1.2.3", TAGS)).toEqual(["1.3.0", "1.2.10", "1.2.4"]);
    expect(newerTags(policy("semver:major"), "1.2.3", TAGS)).toEqual(["2.0.0", "1.3.0", "1.2.10", "1.2.4"]);
    expect(newerTags(policy("semver:major+pre"), "1.2.3", TAGS)).toEqual([
      "2.1.0-rc1",
      "2.0.0",
      "1.4.0-beta2",
      "1.3.1-rc.1",
      "1.3.0",
      "1.2.10",
      "1.2.4",
    ]);
  });

  test("a moving minor tag follows minor tags, never a full version", () => {
    expect(newerTags(policy("semver:major"), "1.2", TAGS)).toEqual(["2.0", "1.3"]);
    expect(newerTags(policy("semver:patch"), "1.2", TAGS)).toEqual([]);
    expect(newerTags(policy("semver:major"), "1", TAGS)).toEqual([]);
  });

  test("the v prefix and the variant are kept; a variant's numbers may rise", () => {
    expect(newerTags(policy("semver:patch"), "v1.2.3", TAGS)).toEqual(["v1.2.5"]);
    expect(newerTags(policy("semver:minor"), "1.2.4-alpine", TAGS)).toEqual(["1.3.0-alpine", "1.2.11-alpine"]);
    expect(newerTags(policy("semver:patch"), "1.2.10-1", TAGS)).toEqual(["1.2.99-1"]);
    expect(
      newerTags(policy("semver:patch"), "4.1.2-ls45", ["4.1.2-ls46", "4.1.3-ls44", "4.1.3", "4.1.2-ls44"]),
    ).toEqual(["4.1.3-ls44", "4.1.2-ls46"]);
  });

  test("a running pre-release moves to later pre-releases of its version and to the release", () => {
    expect(
      newerTags(policy("semver:patch"), "2.0.0-rc.1", ["2.0.0-rc.2", "2.0.0-rc.10", "2.0.0", "2.0.1-rc.1", "1.9.9"]),
    ).toEqual(["2.0.0", "2.0.0-rc.10", "2.0.0-rc.2"]);
  });

  test("a tag that is not a version is not covered (null): the container follows its own tag", () => {
    expect(newerTags(policy("semver:major"), "latest", TAGS)).toBeNull();
    expect(newerTags(policy("semver:major"), "alpine", TAGS)).toBeNull();
  });
});

describe("newerTags: regex", () => {
  test("natural order of capture groups", () => {
    const p = policy("regex:(\\d+)\\.(\\d+)-alpine");
    expect(
      newerTags(p, "1.2-alpine", ["1.10-alpine", "1.9-alpine", "1.2-alpine", "2.0-bookworm", "1.1-alpine"]),
    ).toEqual(["1.10-alpine", "1.9-alpine"]);
  });

  test("lexical order of the whole tag (date stamps); a running tag the pattern misses is not covered", () => {
    const p = policy("regex(lexical):\\d{4}-\\d{2}-\\d{2}");
    expect(newerTags(p, "2024-05-01", ["2024-04-30", "2024-06-01", "2025-01-01", "latest"])).toEqual([
      "2025-01-01",
      "2024-06-01",
    ]);
    expect(newerTags(p, "latest", ["2025-01-01"])).toBeNull();
  });

  test("semver order of the captured version", () => {
    const p = policy("regex(semver):release-(.+)");
    expect(newerTags(p, "release-1.9.0", ["release-1.10.0", "release-1.9.1", "release-1.8.0", "release-next"])).toEqual(
      ["release-1.10.0", "release-1.9.1"],
    );
  });
});

describe("hostile tags", () => {
  // Each of these held the event loop for seconds to hours with a backtracking engine.
  const digits = "1".repeat(40);

  test("a catastrophic pattern against long digit runs is matched in linear time", () => {
    const tags = Array.from({ length: 10 }, (_, i) => `${digits}${i}x`);
    expect(newerTags(policy("regex:(\\d+\\.?)+"), "1", [...tags, "2"])).toEqual(["2"]);
  });

  test("a pre-release made of a long digit run is parsed in linear time", () => {
    expect(parseVersionTag(`1.0.0-rc${digits}x`)).toMatchObject({ pre: null, variant: `rc${digits}x` });
    expect(newerTags(policy("semver:patch+pre"), "1.0.0", [`1.0.1-rc${digits}x`, "1.0.1-rc.1"])).toEqual([
      "1.0.1-rc.1",
    ]);
  });

  test("tags longer than 128 characters, or outside the registry's tag grammar, are never candidates, nor covered when running", () => {
    const long = `1.${"9".repeat(130)}`;
    expect(newerTags(policy("regex:\\d+\\.\\d+"), "1.0", [long, "1.1"])).toEqual(["1.1"]);
    expect(newerTags(policy("regex:.*"), long, ["1.1"])).toBeNull();
    expect(newerTags(policy("regex:.*"), "1.0", ["2.0/../../x", "2 0", "-2", ".2", "1.1"])).toEqual(["1.1"]);
  });
});

test("an alternation matches whole tags only, each side", () => {
  expect(newerTags(policy("regex:1|2x"), "1", ["2", "2x", "2xy", "12x"])).toEqual(["2x"]);
});
