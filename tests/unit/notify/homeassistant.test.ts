/**
 * Home Assistant's entities as svc announces them (docs/home-assistant.md). The oracle is Home
 * Assistant's MQTT `update` and `button` platforms (home-assistant/core,
 * homeassistant/components/mqtt/update.py and button.py, tests/components/mqtt/test_update.py):
 * each row names the test or the code of theirs it follows.
 */
import { describe, expect, test } from "bun:test";
import { retryDelay, topicMatches } from "../../../src/notify/channels/broker.ts";
import {
  HomeAssistantDiscovery,
  MAX_SUMMARY,
  PAYLOAD_PRESS,
  plainText,
  stateOf,
  summaryOf,
  Topics,
  versions,
} from "../../../src/notify/channels/homeassistant.ts";
import { inMemory } from "../../../src/state/index.ts";
import type { ContainerReport } from "../../../src/updater/types.ts";
import { sampleReport } from "./fixtures.ts";

const D = (n: number) => `sha256:${String(n).repeat(64)}`;

function target(overrides: Partial<ContainerReport>): ContainerReport {
  return {
    id: "c1",
    name: "web",
    image: "reg/web:latest",
    new_image: null,
    old_image_id: D(1),
    new_image_id: D(2),
    old_digest: D(3),
    new_digest: D(4),
    state: "stale",
    reason: null,
    duration_ms: 1,
    ...overrides,
  };
}

const releases = {
  source: "https://github.com/acme/web",
  from_version: "1.2.0",
  to_version: "1.3.0",
  count: 2,
  breaking: 0,
  newest_url: "https://github.com/acme/web/releases/tag/v1.3.0",
  problem: null,
};

describe("versions: what installed_version and latest_version read", () => {
  // update.py: an update is on when latest_version differs from installed_version (test_run_update_setup: 1.9.0 / 2.0.0 is on)
  test("the version label the release notes read, for a stale target", () => {
    expect(versions(target({ releases }))).toEqual({ installed: "1.2.0", latest: "1.3.0" });
  });
  test("the tag when it reads as a version; a tag policy's move shows the new tag", () => {
    expect(versions(target({ image: "reg/web:1.2", new_image: "reg/web:1.3" }))).toEqual({
      installed: "1.2",
      latest: "1.3",
    });
  });
  test("the same tag with a newer digest: each side carries its digest prefix, so the update shows (test_run_update_setup: equal versions are off)", () => {
    expect(versions(target({ image: "reg/web:16" }))).toEqual({
      installed: "16 (333333333333)",
      latest: "16 (444444444444)",
    });
  });
  test("a digest prefix only when no tag or label reads as a version", () => {
    expect(versions(target({}))).toEqual({ installed: "333333333333", latest: "444444444444" });
  });
  test("updated: both read the new version (test_json_state_message: 1.9.0 / 1.9.0 is off)", () => {
    expect(versions(target({ state: "updated", releases }))).toEqual({ installed: "1.3.0", latest: "1.3.0" });
  });
  test("rolled back: the old version stays installed, the newer one still offered", () => {
    expect(versions(target({ state: "rolled_back", releases }))).toEqual({ installed: "1.2.0", latest: "1.3.0" });
  });
  test("fresh: the running image's version label, when the container carries one", () => {
    expect(versions(target({ state: "fresh", image: "reg/web:latest", new_digest: D(3), version: "1.4.2" }))).toEqual({
      installed: "1.4.2",
      latest: "1.4.2",
    });
  });
  test("fresh: one version", () => {
    expect(versions(target({ state: "fresh", image: "reg/db:16.4", new_digest: D(3) }))).toEqual({
      installed: "16.4",
      latest: "16.4",
    });
  });
});

describe("release_summary: text only, at most 255 characters", () => {
  test("links keep their words, addresses, mentions and markup go (Home Assistant renders the summary as Markdown)", () => {
    const text = plainText(
      '**Breaking**: see [the notes](https://evil.example/x) by @mallory <img src="x"> ![pic](http://x/y.png) www.evil.example `code` # title',
    );
    expect(text).toBe("Breaking: see the notes by mallory pic code title");
    expect(text).not.toMatch(/https?:|@|<|\[|\*|`/);
  });
  test("the count of releases, the breaking ones and what happened; a rollback says so", () => {
    expect(summaryOf(target({ releases: { ...releases, breaking: 1 } }))).toBe("2 releases, 1 breaking");
    expect(summaryOf(target({ state: "rolled_back", reason: "not healthy within 30s", releases }))).toBe(
      "2 releases; rolled back: not healthy within 30s",
    );
    expect(summaryOf(target({ state: "fresh" }))).toBe("fresh");
  });
  test("who signed the new image, or the signer change that holds it", () => {
    const verified = {
      status: "verified",
      signer: "key SHA256:aaa",
      format: "bundle",
      found_in: "referrers tag",
      digest: null,
      policy: "enforce",
      reason: null,
    } as const;
    expect(summaryOf(target({ releases, signature: verified }))).toBe("2 releases; signed by key SHA256:aaa");
    const reason = "signer changed: key SHA256:aaa -> key SHA256:bbb; accept by name to update";
    const held = { ...verified, status: "held", signer: null, policy: "pinned", reason } as const;
    expect(summaryOf(target({ state: "held", reason, signature: held }))).toBe(
      "signer changed: key SHA256:aaa → key SHA256:bbb; accept by name to update",
    );
  });
  test("a built service: the bases that moved and what svc did, without the build's command line", () => {
    const built = (moved: string[], rebuilt = false) => ({ bases: [], moved, rebuilt, command: null });
    expect(
      summaryOf(
        target({
          reason:
            "base caddy:2.8 moved sha256:1111111 -> sha256:2222222; rebuilt with docker compose -p web build --pull app",
          built: built(["caddy:2.8"]),
        }),
      ),
    ).toBe("base caddy:2.8 moved; rebuilt once applied");
    expect(
      summaryOf(
        target({
          reason: "base caddy:2.8 moved sha256:1111111 -> sha256:2222222; not rebuilt: no compose CLI here",
          built: built(["caddy:2.8"]),
        }),
      ),
    ).toBe("base caddy:2.8 moved; not rebuilt: no compose CLI here");
    expect(
      summaryOf(target({ state: "updated", reason: "rebuilt: ...", built: built(["caddy:2.8", "alpine:3"], true) })),
    ).toBe("bases caddy:2.8, alpine:3 moved; rebuilt");
    expect(
      summaryOf(
        target({ state: "failed", reason: "rebuild failed: compose build exited with 1", built: built(["caddy:2.8"]) }),
      ),
    ).toBe("base caddy:2.8 moved; rebuild failed: compose build exited with 1");
    expect(summaryOf(target({ state: "fresh", built: built([]) }))).toBe("fresh");
  });
  test(`cut to ${MAX_SUMMARY} characters (update entity's release_summary limit)`, () => {
    const summary = summaryOf(target({ reason: "x".repeat(400) }));
    expect(summary.length).toBe(MAX_SUMMARY);
    expect(summary.endsWith("…")).toBe(true);
  });
});

describe("state and discovery payloads", () => {
  test("the JSON state's keys (test_json_state_message), not in progress: in_progress false, update_percentage null", () => {
    expect(stateOf(target({ releases }), "nas")).toEqual({
      installed_version: "1.2.0",
      latest_version: "1.3.0",
      title: "web on nas",
      release_summary: "2 releases",
      release_url: releases.newest_url,
      in_progress: false,
      update_percentage: null,
    });
  });
  test("a release_url that is not http(s) is left out", () => {
    expect(stateOf(target({ releases: { ...releases, newest_url: "javascript:alert(1)" } }), "nas")).not.toHaveProperty(
      "release_url",
    );
  });

  const discovery = new HomeAssistantDiscovery({
    prefix: "homeassistant",
    reportTopic: "svc/reports",
    hostname: "nas",
    commandUser: "homeassistant",
  });
  const report = sampleReport({ containers: [target({ name: "web" }), target({ name: "api", kind: "service" })] });
  const messages = discovery.messages(report);
  const config = (topic: string) => JSON.parse(messages.find((m) => m.topic === topic)!.payload);

  test("with commands: the update entity has command_topic and payload_install (test_run_install_service), and svc's availability", () => {
    expect(config("homeassistant/update/svc_nas_web/config")).toMatchObject({
      command_topic: "svc/reports/command/homeassistant/svc_nas/container/web/install",
      payload_install: "install",
      availability_topic: "svc/reports/svc_nas/availability",
      payload_available: "online",
      payload_not_available: "offline",
      state_topic: "svc/reports/update/svc_nas_web/state",
    });
  });
  test("a Swarm service is an entity of its own, apart from a container of the same name", () => {
    expect(config("homeassistant/update/svc_nas_service_api/config")).toMatchObject({
      name: "api",
      command_topic: "svc/reports/command/homeassistant/svc_nas/service/api/install",
    });
  });
  test("buttons: command_topic and PRESS, button.py's default payload_press; Check now for the host, Roll back per target", () => {
    expect(PAYLOAD_PRESS).toBe("PRESS");
    expect(config("homeassistant/button/svc_nas_check/config")).toMatchObject({
      name: "Check now",
      command_topic: "svc/reports/command/homeassistant/svc_nas/host/-/check",
      payload_press: "PRESS",
    });
    expect(config("homeassistant/button/svc_nas_web_rollback/config")).toMatchObject({
      command_topic: "svc/reports/command/homeassistant/svc_nas/container/web/rollback",
      payload_press: "PRESS",
    });
  });
  test("without commands: no command topic, no button (update.py: no command_topic, no INSTALL feature)", () => {
    const readOnly = new HomeAssistantDiscovery({
      prefix: "homeassistant",
      reportTopic: "svc/reports",
      hostname: "nas",
    }).messages(report);
    expect(readOnly.some((m) => m.topic.includes("/button/"))).toBe(false);
    expect(readOnly.some((m) => m.payload.includes("command_topic"))).toBe(false);
  });
});

describe("what was announced, kept between restarts", () => {
  const settings = { prefix: "homeassistant", reportTopic: "svc/reports", hostname: "nas" };
  const full = (...names: string[]) => sampleReport({ containers: names.map((name) => target({ name })) });
  const cleared = (messages: { topic: string; payload: string }[]) =>
    messages.filter((m) => m.payload === "").map((m) => m.topic);

  test("a target removed while svc was stopped: the next svc's first full cycle clears its entity and state", () => {
    const kept = inMemory();
    const before = new HomeAssistantDiscovery({ ...settings, announced: kept });
    before.published(full("web", "db"));
    const after = new HomeAssistantDiscovery({ ...settings, announced: kept });
    // a filtered cycle says nothing of who is gone
    expect(
      cleared(
        after.messages(
          sampleReport({ filter: { container: ["web"], image: [] }, containers: [target({ name: "web" })] }),
        ),
      ),
    ).toEqual([]);
    expect(cleared(after.messages(full("web")))).toEqual([
      "homeassistant/update/svc_nas_db/config",
      "svc/reports/update/svc_nas_db/state",
    ]);
    after.published(full("web"));
    expect(kept.entries().map(([id]) => id)).toEqual(["svc_nas_web"]);
    expect(cleared(after.messages(full("web")))).toEqual([]);
  });

  test("homeassistant_install turned off: its buttons are cleared, the update entities stay", () => {
    const kept = inMemory();
    new HomeAssistantDiscovery({ ...settings, commandUser: "homeassistant", announced: kept }).published(full("web"));
    const readOnly = new HomeAssistantDiscovery({ ...settings, announced: kept });
    expect(cleared(readOnly.messages(full("web"))).sort()).toEqual([
      "homeassistant/button/svc_nas_check/config",
      "homeassistant/button/svc_nas_web_rollback/config",
    ]);
  });

  test("another host name: the former one's entities are cleared", () => {
    const kept = inMemory();
    new HomeAssistantDiscovery({ ...settings, announced: kept }).published(full("web"));
    const renamed = new HomeAssistantDiscovery({ ...settings, hostname: "nas2", announced: kept });
    expect(cleared(renamed.messages(full("web")))).toEqual([
      "homeassistant/update/svc_nas_web/config",
      "svc/reports/update/svc_nas_web/state",
    ]);
  });

  test("an entry that is not a list of topics (a hand-edited state file) is passed over, then replaced", () => {
    const kept = inMemory();
    kept.set("svc_nas_db", "not json");
    kept.set("svc_nas_x", JSON.stringify([1, 2]));
    const discovery = new HomeAssistantDiscovery({ ...settings, announced: kept });
    expect(cleared(discovery.messages(full("web")))).toEqual([]);
    discovery.published(full("web"));
    expect(kept.entries().map(([id]) => id)).toEqual(["svc_nas_web"]);
  });
});

describe("command topics", () => {
  const topics = new Topics({ prefix: "homeassistant", reportTopic: "svc/reports", hostname: "nas" });
  test("read back: user, kind, name, action", () => {
    expect(topics.parseCommand(topics.command("homeassistant", "container", "web", "install"))).toEqual({
      user: "homeassistant",
      kind: "container",
      name: "web",
      action: "install",
    });
    expect(topics.parseCommand("svc/reports/command/homeassistant/svc_other/container/web/install")).toBeUndefined();
    expect(topics.parseCommand("svc/reports/command/homeassistant/svc_nas/volume/web/install")).toBeUndefined();
    expect(topicMatches(topics.commandFilter, "svc/reports/command/intruder/svc_nas/container/web/install")).toBe(true);
    expect(topicMatches(topics.commandFilter, "svc/reports/update/x/state")).toBe(false);
  });
  test("reconnection waits double from 1 s and stop at a minute", () => {
    expect([1, 2, 3, 7, 8, 50].map(retryDelay)).toEqual([1000, 2000, 4000, 60_000, 60_000, 60_000]);
  });
});
