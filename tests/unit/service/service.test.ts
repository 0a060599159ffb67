/** Pure parts of the composition root (src/service/). */
import { describe, expect, test } from "bun:test";
import { defaultConfig } from "../../../src/config/index.ts";
import { apiEnabled } from "../../../src/service/api-enabled.ts";
import { runOnceExitCode } from "../../../src/service/run-once.ts";
import type { ContainerOutcome } from "../../../src/updater/types.ts";
import { sampleReport } from "../api/fakes.ts";

describe("apiEnabled", () => {
  test("listens when update or metrics is on, never in run-once mode, not for health alone", () => {
    expect(apiEnabled(defaultConfig())).toBe(false);
    expect(apiEnabled(defaultConfig({ http_api: { update: true } }))).toBe(true);
    expect(apiEnabled(defaultConfig({ http_api: { metrics: true } }))).toBe(true);
    expect(apiEnabled(defaultConfig({ run_once: true, http_api: { update: true, metrics: true } }))).toBe(false);
  });
});

describe("runOnceExitCode", () => {
  const withStates = (...states: ContainerOutcome[]) => {
    const report = sampleReport("run_once");
    report.containers = states.map((state, i) => ({
      id: `id${i}`,
      name: `c${i}`,
      image: "x",
      new_image: null,
      old_image_id: "sha256:a",
      new_image_id: null,
      old_digest: null,
      new_digest: null,
      state,
      reason: null,
      duration_ms: 0,
    }));
    return report;
  };
  test("0 unless a container failed or was rolled back", () => {
    expect(runOnceExitCode(withStates())).toBe(0);
    expect(runOnceExitCode(withStates("updated", "fresh", "stale", "skipped"))).toBe(0);
    expect(runOnceExitCode(withStates("updated", "failed"))).toBe(1);
    expect(runOnceExitCode(withStates("rolled_back"))).toBe(1);
  });
  test("1 when a compose change was written but Git refused to commit it", () => {
    const refused = withStates("updated");
    refused.containers[0]!.compose = {
      changes: [".env line 1 (TAG): 1.0.0 -> 1.1.0"],
      written: true,
      recreates: null,
      git: { done: "nothing", commit: null, pull_request: null, problem: ".env had changes" },
    };
    expect(runOnceExitCode(refused)).toBe(1);
    refused.containers[0]!.compose.git = { done: "committed", commit: "abc", pull_request: null, problem: null };
    expect(runOnceExitCode(refused)).toBe(0);
  });
  test("1 when containers were named and none was found", () => {
    const none = withStates();
    none.counts.scanned = 0;
    expect(runOnceExitCode(none, true)).toBe(1);
    const one = withStates("fresh");
    one.counts.scanned = 1;
    expect(runOnceExitCode(one, true)).toBe(0);
  });
});
