/** The history: the last N session reports, kept across a restart with state_dir; what it says of a container. */
import { describe, expect, test } from "bun:test";
import { existsSync, readdirSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { openHistory } from "../../../src/state/index.ts";
import type { ContainerReport, SessionReport } from "../../../src/updater/types.ts";
import { lastOutcomes, sessionSummary, timelineOf } from "../../../src/updater/views/timeline.ts";
import { type RecordedLine, recordingLogger } from "../../support/logger.ts";
import { emptyReport } from "../../support/report.ts";
import { tempDir } from "../../temp.ts";

const D1 = `sha256:${"1".repeat(64)}`;
const D2 = `sha256:${"2".repeat(64)}`;

function container(fields: Partial<ContainerReport>): ContainerReport {
  return {
    id: "c",
    name: "web",
    image: "r/web:latest",
    new_image: null,
    old_image_id: "sha256:old",
    new_image_id: null,
    old_digest: D1,
    new_digest: null,
    state: "fresh",
    reason: null,
    duration_ms: 1,
    ...fields,
  };
}

function report(at: string, containers: ContainerReport[]): SessionReport {
  return emptyReport("schedule", {}, { finished_at: at, containers });
}

describe("openHistory", () => {
  test("keeps the last N reports, and the next svc on the same folder knows them", () => {
    const dir = tempDir("svc-history-");
    const first = openHistory<SessionReport>(dir, 2, recordingLogger());
    for (const at of ["2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z", "2026-01-03T00:00:00Z"])
      first.add(report(at, []));
    expect(first.list().map((r) => r.finished_at)).toEqual(["2026-01-02T00:00:00Z", "2026-01-03T00:00:00Z"]);
    const again = openHistory<SessionReport>(dir, 2, recordingLogger());
    expect(again.list()).toEqual(first.list());
    // a smaller size after a restart keeps the newest
    expect(
      openHistory<SessionReport>(dir, 1, recordingLogger())
        .list()
        .map((r) => r.finished_at),
    ).toEqual(["2026-01-03T00:00:00Z"]);
  });

  test("a file that makes no sense is a warning and an empty history, the file kept aside; without state_dir nothing is written; size 0 keeps none", () => {
    const dir = tempDir("svc-history-");
    writeFileSync(join(dir, "history.json"), '{"version":1,"reports":[{"id":3}]}');
    const lines: RecordedLine[] = [];
    const history = openHistory<SessionReport>(dir, 10, recordingLogger(lines));
    expect(history.list()).toEqual([]);
    expect(lines.some((line) => line.level === "warn" && line.message.includes("history file cannot be used"))).toBe(
      true,
    );
    expect(readdirSync(dir).some((name) => name.startsWith("history.json.unreadable-"))).toBe(true);
    const memory = openHistory<SessionReport>(undefined, 10, recordingLogger());
    memory.add(report("2026-01-01T00:00:00Z", []));
    expect(memory.list()).toHaveLength(1);
    const none = openHistory<SessionReport>(dir, 0, recordingLogger(), "other");
    none.add(report("2026-01-01T00:00:00Z", []));
    expect(none.list()).toEqual([]);
    expect(existsSync(join(dir, "history-other.json"))).toBe(false);
  });
});

describe("what the history says", () => {
  const reports = [
    report("2026-01-01T00:00:00Z", [container({})]),
    report("2026-01-02T00:00:00Z", [container({ state: "updated", new_digest: D2, new_image_id: "sha256:new" })]),
    report("2026-01-03T00:00:00Z", [
      container({ state: "rolled_back", new_digest: D2, reason: "the new container exited (code 3)" }),
    ]),
    report("2026-01-04T00:00:00Z", [container({ old_digest: D2 })]),
  ];

  test("a container's timeline: newest first, old -> new version, outcome and reason; fresh checks left out", () => {
    expect(timelineOf(reports, "web").map((e) => [e.at, e.state, e.from_version, e.to_version, e.reason])).toEqual([
      [
        "2026-01-03T00:00:00Z",
        "rolled_back",
        "sha256:111111111111",
        "sha256:222222222222",
        "the new container exited (code 3)",
      ],
      ["2026-01-02T00:00:00Z", "updated", "sha256:111111111111", "sha256:222222222222", null],
    ]);
    expect(timelineOf(reports, "nobody")).toEqual([]);
  });

  test("each container's last cycle and last update; a session listed without its fresh containers", () => {
    expect(lastOutcomes(reports).get("web")).toEqual({
      last_cycle: { at: "2026-01-04T00:00:00Z", state: "fresh", reason: null },
      last_update: {
        at: "2026-01-02T00:00:00Z",
        from_version: "sha256:111111111111",
        to_version: "sha256:222222222222",
      },
    });
    expect(sessionSummary(reports[0]!).containers).toEqual([]);
    expect(sessionSummary(reports[2]!).containers.map((c) => c.state)).toEqual(["rolled_back"]);
  });
});

describe("several processes on one history file", () => {
  test("a run-once's report beside a running service is kept: the service's next report merges, never overwrites", () => {
    const dir = tempDir("svc-history-");
    const service = openHistory<SessionReport>(dir, 10, recordingLogger());
    service.add(report("2026-01-01T00:00:00Z", []));
    // `svc --run-once` beside it opens the same file, adds its report and exits
    const runOnce = openHistory<SessionReport>(dir, 10, recordingLogger());
    const fixed = report("2026-01-01T00:05:00Z", [container({ state: "updated" })]);
    runOnce.add(fixed);
    // the service's API shows it at once, and its next cycle keeps it
    expect(service.list().map((r) => r.id)).toContain(fixed.id);
    service.add(report("2026-01-01T01:00:00Z", []));
    const after = openHistory<SessionReport>(dir, 10, recordingLogger()).list();
    expect(after.map((r) => r.finished_at)).toEqual([
      "2026-01-01T00:00:00Z",
      "2026-01-01T00:05:00Z",
      "2026-01-01T01:00:00Z",
    ]);
    expect(after.find((r) => r.id === fixed.id)?.containers[0]?.state).toBe("updated");
    // the size still holds, newest kept; the lock is gone
    const small = openHistory<SessionReport>(dir, 2, recordingLogger());
    small.add(report("2026-01-01T02:00:00Z", []));
    expect(openHistory<SessionReport>(dir, 10, recordingLogger()).list()).toHaveLength(2);
    expect(readdirSync(dir).filter((f) => f.endsWith(".lock"))).toEqual([]);
  });

  test("a lock a dead process left is taken over once stale", () => {
    const dir = tempDir("svc-history-");
    const lock = join(dir, "history.json.lock");
    writeFileSync(lock, "");
    const old = new Date(Date.now() - 60_000);
    utimesSync(lock, old, old);
    openHistory<SessionReport>(dir, 10, recordingLogger()).add(report("2026-01-01T00:00:00Z", []));
    expect(openHistory<SessionReport>(dir, 10, recordingLogger()).list()).toHaveLength(1);
    expect(existsSync(lock)).toBe(false);
  });
});
