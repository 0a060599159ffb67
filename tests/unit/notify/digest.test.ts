/** A channel's digest (docs/windows.md): one message per period, failures at once, against an injected clock. */
import { describe, expect, test } from "bun:test";
import { defaultConfig } from "../../../src/config/index.ts";
import { parseDigestPeriod } from "../../../src/config/window.ts";
import { createDigest, digestOf, digestSettingsOf } from "../../../src/notify/digest.ts";
import { createNotifications, type Notifier } from "../../../src/notify/index.ts";
import type { ContainerReport, SessionReport } from "../../../src/updater/types.ts";
import { recordingLogger } from "../../support/logger.ts";
import { entry, sampleReport } from "./fixtures.ts";

const cycle = (...containers: ContainerReport[]) => sampleReport({ containers });
const daily = () => {
  const parsed = parseDigestPeriod("daily 08:00");
  if ("problem" in parsed) throw new Error(parsed.problem);
  return parsed.moments;
};

describe("the period's reports as one", () => {
  test("each target once: its latest update, failure or rollback, else its latest state", () => {
    const reports = [
      cycle(
        entry("web", "pending", { applies_at: "2026-11-28T02:00:00.000Z" }),
        entry("db", "failed", { reason: "pull failed" }),
        entry("cache", "fresh"),
      ),
      cycle(entry("web", "pending"), entry("db", "fresh"), entry("cache", "fresh")),
      cycle(entry("web", "updated"), entry("db", "fresh"), entry("cache", "stale")),
    ];
    const digest = digestOf(reports, Date.parse("2026-11-25T08:00:00Z"), Date.parse("2026-11-26T08:00:00Z"))!;
    expect(digest.containers.map((c) => [c.name, c.state])).toEqual([
      ["cache", "stale"],
      ["db", "failed"],
      ["web", "updated"],
    ]);
    expect(digest.counts).toMatchObject({ scanned: 3, updated: 1, failed: 1, stale: 1 });
    expect(digest.started_at).toBe("2026-11-25T08:00:00.000Z");
  });

  test("nothing applied, failed or waiting: no message", () => {
    expect(digestOf([cycle(entry("web", "fresh"))], 0, 1)).toBeNull();
    expect(digestOf([], 0, 1)).toBeNull();
  });
});

describe("a digest", () => {
  test("keeps three cycles for one message; a failure is told at once, and again in the digest", async () => {
    const sent: SessionReport[] = [];
    const digest = createDigest({
      settings: { moments: daily(), immediateOnFailure: true },
      send: async (r) => void sent.push(r),
      log: recordingLogger(),
    });
    digest.add(cycle(entry("web", "pending")));
    digest.add(cycle(entry("web", "pending"), entry("db", "rolled_back", { reason: "unhealthy" })));
    digest.add(cycle(entry("web", "updated")));
    expect(sent.map((r) => r.containers.map((c) => `${c.name} ${c.state}`))).toEqual([["db rolled_back"]]);
    await digest.sendNow();
    expect(sent).toHaveLength(2);
    expect(sent[1]!.containers.map((c) => `${c.name} ${c.state}`)).toEqual(["db rolled_back", "web updated"]);
    await digest.sendNow();
    expect(sent).toHaveLength(2);
    await digest.close();
  });

  test("without immediate_on_failure a failure waits for the digest; close sends what was not told", async () => {
    const sent: SessionReport[] = [];
    const digest = createDigest({
      settings: { moments: daily(), immediateOnFailure: false },
      send: async (r) => void sent.push(r),
      log: recordingLogger(),
    });
    digest.add(cycle(entry("db", "failed")));
    expect(sent).toHaveLength(0);
    await digest.close();
    expect(sent.map((r) => r.counts.failed)).toEqual([1]);
  });

  test("the dispatcher sends a digest channel nothing per cycle, the others as before", async () => {
    const sent: Record<string, SessionReport[]> = { webhook: [], other: [] };
    const channel = (name: string): Notifier => ({ name, send: async (r) => void sent[name]!.push(r) });
    const config = defaultConfig({
      notifications: { webhook: { url: "http://127.0.0.1:1/x", digest: "daily 08:00", immediate_on_failure: false } },
    });
    expect(digestSettingsOf(config.notifications, "webhook")?.immediateOnFailure).toBe(false);
    expect(digestSettingsOf(config.notifications, "other")).toBeUndefined();
    // every notification URL follows urls_digest
    const urls = defaultConfig({ notifications: { urls_digest: "weekly Mon 08:00" } }).notifications;
    expect(digestSettingsOf(urls, "discord")?.immediateOnFailure).toBe(true);
    expect(digestSettingsOf(urls, "ntfy#2")!.moments[0]!.text).toBe("weekly Mon 08:00");
    expect(digestSettingsOf(urls, "webhook")).toBeUndefined();
    const dispatcher = await createNotifications(config, recordingLogger(), {
      notifiers: [channel("webhook"), channel("other")],
    });
    for (let i = 0; i < 3; i++) dispatcher.publish(sampleReport());
    await dispatcher.flush();
    expect(sent.webhook).toHaveLength(0);
    expect(sent.other).toHaveLength(3);
    await dispatcher.close();
    // at shutdown the period's updates and failures are told, once
    expect(sent.webhook).toHaveLength(1);
  });
});
