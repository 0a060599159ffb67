/** What a person is told of a cycle: a line per container, a summary at the level of the worst outcome. */
import { describe, expect, test } from "bun:test";
import { buildReport } from "../../../src/updater/cycle/report.ts";
import { type ContainerReport, DRY_RUN_REASON } from "../../../src/updater/types.ts";
import { containerLine, logReport, logRollback, summaryLine } from "../../../src/updater/wrappers/summary.ts";
import type { SignatureReport } from "../../../src/verify/index.ts";
import { type RecordedLine, recordingLogger } from "../../support/logger.ts";

const OLD = `sha256:8b54f3a1c2d4${"0".repeat(52)}`;
const NEW = `sha256:8367aa01bc3e${"1".repeat(52)}`;

function entry(name: string, state: ContainerReport["state"], more: Partial<ContainerReport> = {}): ContainerReport {
  return {
    id: name,
    name,
    image: "ghcr.io/acme/app:1.2.0",
    new_image: null,
    old_image_id: OLD,
    new_image_id: NEW,
    old_digest: OLD,
    new_digest: NEW,
    state,
    reason: null,
    duration_ms: 5,
    ...more,
  };
}

function report(containers: ContainerReport[], dryRun = false) {
  const built = buildReport({
    id: "s1",
    trigger: "run_once",
    startedAt: new Date(),
    finishedAt: new Date(),
    filter: {},
    containers,
  });
  if (dryRun) built.dry_run = true;
  return built;
}

describe("records that say what happened", () => {
  test("a rollback on request says so, never that the new image failed", () => {
    expect(
      containerLine(
        entry("web", "rolled_back", {
          reason: "rolled back on request (svc rollback)",
          old_digest: NEW,
          new_digest: OLD,
        }),
      ),
    ).toBe("web: rolled back on request (svc rollback) (sha256:8367aa01bc3e -> 8b54f3a1c2d4)");
  });

  test("a refused Git commit is said on the container's line and in the summary, at warn", () => {
    const refused = entry("app", "updated", {
      compose: {
        changes: [".env line 1 (TAG): 1.0.0 -> 1.1.0"],
        written: true,
        recreates: null,
        git: {
          done: "nothing",
          commit: null,
          pull_request: null,
          problem: ".env had changes not committed before svc's",
        },
      },
    });
    expect(containerLine(refused)).toEndWith(
      "; wrote .env line 1 (TAG): 1.0.0 -> 1.1.0; not committed to Git: .env had changes not committed before svc's",
    );
    expect(summaryLine(report([refused]))).toBe("cycle finished: 1 updated, 1 with a Git problem");
    const lines: RecordedLine[] = [];
    logReport(recordingLogger(lines), report([refused]), true);
    expect(lines.map((line) => line.level)).toEqual(["warn", "warn"]);
  });
});

describe("containerLine", () => {
  test("each outcome in a sentence, naming the image and the digests", () => {
    expect(containerLine(entry("web", "updated", { new_image: "ghcr.io/acme/app:1.3.0" }))).toBe(
      "web: updated app:1.2.0 -> 1.3.0 (sha256:8b54f3a1c2d4 -> 8367aa01bc3e)",
    );
    expect(containerLine(entry("web", "updated"))).toBe("web: updated app:1.2.0 (sha256:8b54f3a1c2d4 -> 8367aa01bc3e)");
    expect(containerLine(entry("db", "failed", { reason: "pull failed: 500" }))).toBe("db: failed: pull failed: 500");
    expect(containerLine(entry("db", "rolled_back", { reason: "exited with code 3" }))).toBe(
      "db: rolled back to app:1.2.0, the new image failed: exited with code 3",
    );
    expect(containerLine(entry("api", "stale", { reason: DRY_RUN_REASON }))).toBe(
      "api: would update app:1.2.0 (sha256:8b54f3a1c2d4 -> 8367aa01bc3e)",
    );
    expect(containerLine(entry("api", "fresh", { new_digest: null }))).toBe("api: up to date (app:1.2.0)");
    expect(containerLine(entry("api", "skipped", { reason: "pinned by digest" }))).toBe(
      "api: skipped: pinned by digest",
    );
  });
});

describe("who signed the new image", () => {
  const RELEASE = "https://github.com/acme/app/.github/workflows/release.yml@refs/tags/v1";
  const signature = (more: Partial<SignatureReport>): SignatureReport => ({
    status: "verified",
    signer: `${RELEASE} (https://token.actions.githubusercontent.com)`,
    format: "bundle",
    found_in: "referrers API",
    digest: NEW,
    policy: "pinned",
    reason: null,
    ...more,
  });

  test("an update says who signed it; a warn policy's unverified image says so; unsigned says nothing", () => {
    expect(containerLine(entry("web", "updated", { signature: signature({}) }))).toBe(
      `web: updated app:1.2.0 (sha256:8b54f3a1c2d4 -> 8367aa01bc3e) (signed by ${RELEASE} (https://token.actions.githubusercontent.com))`,
    );
    const unverified = signature({ status: "unverified", signer: null, policy: "warn", reason: "no signature found" });
    expect(containerLine(entry("web", "updated", { signature: unverified }))).toEndWith(
      "(signature not verified: no signature found)",
    );
    const unsigned = signature({ status: "unsigned", signer: null, format: null, found_in: null, digest: null });
    expect(containerLine(entry("web", "updated", { signature: unsigned }))).toBe(
      "web: updated app:1.2.0 (sha256:8b54f3a1c2d4 -> 8367aa01bc3e)",
    );
  });

  test("a signer change is held, its reason naming both signers once", () => {
    const reason = "signer changed: key SHA256:aaa -> key SHA256:bbb; accept by name to update";
    const held = entry("web", "held", { reason, signature: signature({ status: "held", signer: null, reason }) });
    expect(containerLine(held)).toBe(`web: held app:1.2.0 (sha256:8b54f3a1c2d4 -> 8367aa01bc3e): ${reason}`);
  });
});

describe("summaryLine and logReport", () => {
  test("a dry run's would-be updates are not counted as stale", () => {
    const dry = report(
      [
        entry("a", "stale", { reason: DRY_RUN_REASON }),
        entry("b", "stale", { reason: "monitor only" }),
        entry("c", "fresh"),
      ],
      true,
    );
    expect(summaryLine(dry)).toBe("dry run finished: 1 would be updated, 1 newer image not applied, 1 up to date");
    const log = recordingLogger();
    logReport(log, dry, false);
    // the report itself still counts them as stale (docs/api.md); the log line tells them apart
    expect(dry.counts.stale).toBe(2);
    expect(log.lines.at(-1)).toMatchObject({
      level: "info",
      message: "dry run finished",
      fields: { stale: 1, would_update: 1 },
    });
  });

  test("a failure puts the summary at error, a rollback at warn; json keeps a structured entry per container", () => {
    const log = recordingLogger();
    logReport(log, report([entry("web", "updated"), entry("db", "failed", { reason: "boom" })]), false);
    expect(log.lines.map((l) => [l.level, l.message])).toEqual([
      ["info", "web: updated app:1.2.0 (sha256:8b54f3a1c2d4 -> 8367aa01bc3e)"],
      ["error", "db: failed: boom"],
      ["error", "cycle finished"],
    ]);
    expect(log.lines[1]!.fields).toMatchObject({
      container: "db",
      state: "failed",
      reason: "boom",
      image: "ghcr.io/acme/app:1.2.0",
    });
    const pretty = recordingLogger();
    logReport(pretty, report([entry("db", "rolled_back", { reason: "unhealthy" })]), true);
    expect(pretty.lines.at(-1)).toEqual({
      level: "warn",
      target: "svc",
      message: "cycle finished: 1 rolled back",
      fields: {},
    });
  });

  test("a rollback on request is told as a rollback", () => {
    const log = recordingLogger();
    logRollback(log, { container: "web", from_image_id: NEW, to_image_id: OLD, state: "updated", reason: null }, true);
    expect(log.lines[0]!.message).toBe("web: rolled back to sha256:8b54f3a1c2d4 (was 8367aa01bc3e)");
  });
});
