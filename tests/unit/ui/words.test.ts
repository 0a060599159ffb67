/** The page's words (docs/dashboard.md, "Words"): states and reasons in plain language, times relative, digests short. */
import { describe, expect, test } from "bun:test";
import {
  durationWords,
  fromNow,
  outcomeWords,
  plainText,
  stateWords,
  type Worded,
} from "../../../src/ui/page/format.ts";
import { countRows, inBucket } from "../../../src/ui/summary.ts";

const NOW = Date.parse("2026-11-25T12:00:00.000Z");
const DIGEST = `sha256:${"dcf74e0123ab".padEnd(64, "9")}`;
const row = (over: Partial<Worded>): Worded => ({
  state: "stale",
  reason: null,
  would_update: false,
  snoozed_until: null,
  eligible_at: null,
  policy: {},
  ...over,
});

describe("relative times", () => {
  test("past and future, in the largest unit that fits", () => {
    expect(fromNow("2026-11-25T11:59:30.000Z", NOW)).toBe("30 s ago");
    expect(fromNow("2026-11-25T09:00:00.000Z", NOW)).toBe("3 h ago");
    expect(fromNow("2026-11-28T12:00:00.000Z", NOW)).toBe("in 3 d");
  });

  test("durations are spaced for reading", () => {
    expect(durationWords("72h")).toBe("72 h");
    expect(durationWords("1h30m")).toBe("1 h 30 m");
  });
});

describe("states in plain language", () => {
  test("the page's own dry run is 'update available', never 'would be updated (dry run)'", () => {
    const words = stateWords(row({ would_update: true, reason: "would be updated (dry run)" }), NOW);
    expect(words).toEqual({ text: "update available", detail: null, tone: "update" });
  });

  test("a move proposed in a pull request ([compose] git = pull_request): the request's address is the state's link", () => {
    const reason = "newer tag 2.4.0 proposed in a pull request: https://github.com/me/stacks/pull/7";
    expect(stateWords(row({ reason }), NOW)).toEqual({
      text: "2.4.0 proposed in a pull request",
      detail: null,
      tone: "held",
      link: { href: "https://github.com/me/stacks/pull/7", text: "Pull request" },
    });
    expect(outcomeWords({ state: "stale", reason })).toBe(
      "2.4.0 proposed in a pull request (https://github.com/me/stacks/pull/7)",
    );
  });

  test("update available for a compose container: the line svc writes, before it is written", () => {
    const words = stateWords(
      row({
        would_update: true,
        reason: "would be updated (dry run)",
        compose_change: ["compose.yaml line 12: 2.3.1 -> 2.4.0"],
      }),
      NOW,
    );
    expect(words).toEqual({
      text: "update available",
      detail: "writes compose.yaml line 12: 2.3.1 -> 2.4.0",
      tone: "update",
    });
  });

  test("held for a compose file svc cannot write: the reason as detail", () => {
    const reason =
      "newer tag 2.4.0 available; the compose file names 2.3.1 (web's tag comes from APP_TAG in the shell that ran compose: not in a file)";
    expect(stateWords(row({ reason }), NOW)).toEqual({
      text: "held: the compose file names its tag",
      detail: expect.stringContaining("APP_TAG in the shell"),
      tone: "held",
    });
  });

  test("held by min_image_age: the minimum age and when it becomes eligible, without the raw reason", () => {
    const reason = `newer image ${DIGEST} first seen 2026-11-25T11:45:15.491Z; applied once it is 72h old, from 2026-11-28T12:00:00.000Z (min_image_age)`;
    const words = stateWords(
      row({ reason, eligible_at: "2026-11-28T12:00:00.000Z", policy: { min_image_age: "72h" } }),
      NOW,
    );
    expect(words).toEqual({ text: "held: min age 72 h, eligible in 3 d", detail: null, tone: "held" });
  });

  test("held by monitor only, by a snooze; skipped on request and by a rollback", () => {
    expect(stateWords(row({ policy: { monitor_only: true } }), NOW).text).toBe("held: monitor only");
    expect(
      stateWords(
        row({
          reason:
            "newer tag 2.4.0 available; the compose file names 2.3.1 (label svc.tag_policy.compose=move to follow tags)",
        }),
        NOW,
      ).text,
    ).toBe("held: the compose file names its tag");
    expect(
      stateWords(
        row({
          snoozed_until: "2026-11-27T12:00:00.000Z",
          reason: "updates snoozed until 2026-11-27T12:00:00.000Z (POST /v1/snooze)",
        }),
        NOW,
      ).text,
    ).toMatch(/^held: snoozed until .+ \(in 2 d\)$/);
    expect(
      stateWords(
        row({
          state: "skipped",
          reason: `${DIGEST} was skipped on request (POST /v1/skip); waiting for a newer image`,
        }),
        NOW,
      ),
    ).toEqual({ text: "this version skipped", detail: "waiting for a newer one", tone: "muted" });
    expect(
      stateWords(
        row({
          state: "skipped",
          reason: `${DIGEST} was left by a rollback (POST /v1/rollback); waiting for a newer image`,
        }),
        NOW,
      ).text,
    ).toBe("rolled back from this version");
  });

  test("fresh, updated, failed and rolled back; an unknown reason is kept, its digests short and its times relative", () => {
    expect(stateWords(row({ state: "fresh" }), NOW).text).toBe("up to date");
    expect(stateWords(row({ state: "updated" }), NOW).text).toBe("updated");
    const failed = stateWords(
      row({ state: "failed", reason: `pull of ${DIGEST} failed at 2026-11-25T10:00:00.000Z` }),
      NOW,
    );
    expect(failed).toEqual({
      text: "update failed",
      detail: "pull of sha256:dcf74e0123ab failed 2 h ago",
      tone: "bad",
    });
    expect(stateWords(row({ state: "rolled_back", reason: "health check failed" }), NOW).text).toBe("rolled back");
  });

  test("plainText leaves text without digests or times as it is", () => {
    expect(plainText("dependency cycle: a -> b -> a", NOW)).toBe("dependency cycle: a -> b -> a");
  });
});

describe("the summary's counts and filters", () => {
  const rows = [
    { state: "stale", would_update: true, update_kind: "major" },
    { state: "stale", would_update: true, update_kind: "digest" },
    { state: "stale", would_update: false, update_kind: "patch" },
    { state: "fresh", last_cycle: { state: "rolled_back" } },
    { state: "fresh" },
  ];

  test("updates by kind, held, failed or rolled back (now or at the last cycle)", () => {
    expect(countRows(rows)).toEqual({
      containers: 5,
      updates: 3,
      by_kind: { major: 1, minor: 0, patch: 1, digest: 1, tag: 0 },
      held: 1,
      failed: 1,
    });
  });

  test("a row waiting for its update window (pending) or held back is an update, and held", () => {
    expect(
      countRows([
        { state: "pending", update_kind: "minor" },
        { state: "held", update_kind: "major" },
      ]),
    ).toEqual({
      containers: 2,
      updates: 2,
      by_kind: { major: 1, minor: 1, patch: 0, digest: 0, tag: 0 },
      held: 2,
      failed: 0,
    });
  });

  test("each count is a filter that keeps the rows it counted", () => {
    expect(rows.filter((r) => inBucket(r, "major")).length).toBe(1);
    expect(rows.filter((r) => inBucket(r, "held")).length).toBe(1);
    expect(rows.filter((r) => inBucket(r, "failed")).length).toBe(1);
  });
});
