import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { isSvcError } from "../../../src/core/errors.ts";
import { HomeAssistantDiscovery } from "../../../src/notify/channels/homeassistant.ts";
import { PUSHOVER_MESSAGE_MAX, PUSHOVER_TITLE_MAX, pushoverForm } from "../../../src/notify/channels/pushover.ts";
import {
  buildView,
  CHAT_TEMPLATE,
  createRenderer,
  DEFAULT_TEMPLATE,
  loadBodyRenderer,
  loadRenderer,
  subjectOf,
  truncate,
} from "../../../src/notify/render.ts";
import { sampleReport } from "./fixtures.ts";

const dir = mkdtempSync(join(tmpdir(), "svc-notify-render-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error("expected a rejection");
}

describe("template rendering", () => {
  test("the subject names the host and counts; rolled back counts as failed", () => {
    const report = sampleReport();
    expect(subjectOf(report, "pi")).toBe("svc on pi: 1 updated, 1 failed");
    report.counts.rolled_back = 2;
    expect(subjectOf(report, "pi")).toBe("svc on pi: 1 updated, 3 failed");
  });

  test("the view has the report's fields, host, lists by state, short IDs, summary", () => {
    const report = sampleReport();
    const view = buildView(report, "nas");
    expect(view.id).toBe(report.id);
    expect(view.counts).toEqual(report.counts);
    expect(view.host).toBe("nas");
    expect(view.updated.map((c) => c.name)).toEqual(["web"]);
    expect(view.failed.map((c) => c.name)).toEqual(["db"]);
    expect(view.fresh.map((c) => c.name)).toEqual(["cache"]);
    expect(view.stale).toEqual([]);
    expect(view.has_updated).toBe(true);
    expect(view.has_stale).toBe(false);
    expect(view.updated[0]!.old_image_short).toBe("111111111111");
    expect(view.updated[0]!.new_image_short).toBe("222222222222");
    expect(view.summary).toBe("3 scanned, 1 updated, 1 failed, 0 rolled back, 0 stale, 0 skipped, 1 fresh");
    expect(view.subject).toBe("svc on nas: 1 updated, 1 failed");
  });

  test("the default template lists each state's containers and leaves out empty sections", () => {
    const { text } = createRenderer(DEFAULT_TEMPLATE, "nas")(sampleReport());
    expect(text).toContain("3 scanned, 1 updated, 1 failed");
    expect(text).toContain("Updated:\n- web (127.0.0.1:5000/web:latest): 111111111111 -> 222222222222\n");
    expect(text).toContain("Failed:\n- db (127.0.0.1:5000/db:16): pull failed: manifest unknown\n");
    expect(text).not.toContain("Rolled back:");
    expect(text).not.toContain("Skipped:");
    expect(text).not.toContain("cache");
  });

  test("values are not HTML-escaped in text, and escaped in the HTML part", () => {
    const report = sampleReport();
    report.containers[1]!.reason = `exit code 1: <"boom"> & 'bust'`;
    const rendered = createRenderer("{{#failed}}{{reason}}{{/failed}}", "h")(report);
    expect(rendered.text).toBe(`exit code 1: <"boom"> & 'bust'`);
    expect(rendered.html).toContain("exit code 1: &lt;&quot;boom&quot;&gt; &amp; &#39;bust&#39;");
    expect(rendered.html).not.toContain('<"boom">');
  });

  test("a template file is loaded and used", async () => {
    const path = join(dir, "ok.mustache");
    writeFileSync(path, "{{host}} {{trigger}} {{#stale}}{{name}}{{/stale}}{{^has_stale}}none stale{{/has_stale}}");
    const render = await loadRenderer(path, "box");
    expect(render(sampleReport()).text).toBe("box schedule none stale");
  });

  test("an unclosed tag is a startup error naming the option", async () => {
    const path = join(dir, "broken.mustache");
    writeFileSync(path, "{{#updated}} {{name}}");
    const error = await rejection(loadRenderer(path, "box"));
    expect(isSvcError(error) && error.kind).toBe("startup");
    expect(String((error as Error).message)).toContain("notifications.template");
  });

  test("a template file that does not exist is a startup error", async () => {
    const error = await rejection(loadRenderer(join(dir, "missing.mustache"), "box"));
    expect(isSvcError(error) && error.kind).toBe("startup");
  });
});

describe("the chat summary", () => {
  test("a line per updated, rolled-back, failed and stale container, old -> new; the title tagged", () => {
    const report = sampleReport();
    report.containers.push(
      { ...report.containers[0]!, name: "api", image: "api:1.2", new_image: "api:1.3", state: "updated" },
      { ...report.containers[0]!, name: "proxy", state: "rolled_back", reason: "unhealthy after start" },
      { ...report.containers[0]!, name: "queue", image: "queue:5", state: "stale" },
    );
    const { subject, text } = createRenderer(CHAT_TEMPLATE, "nas", "prod")(report);
    expect(subject).toBe("[prod] svc on nas: 1 updated, 1 failed");
    expect(text.split("\n")).toEqual([
      "updated web: 127.0.0.1:5000/web:latest (111111111111 -> 222222222222)",
      "updated api: api:1.2 -> api:1.3 (111111111111 -> 222222222222)",
      "rolled back proxy (127.0.0.1:5000/web:latest): unhealthy after start",
      "failed db (127.0.0.1:5000/db:16): pull failed: manifest unknown",
      "newer image for queue: queue:5 (333333333333 -> 444444444444)",
      "",
    ]);
  });
});

describe("truncation for Pushover", () => {
  test("short text is left alone", () => {
    expect(truncate("hello", 10)).toBe("hello");
    expect(truncate("x".repeat(10), 10)).toBe("x".repeat(10));
  });

  test("long text ends with an ellipsis within the limit, at a line end when one is near", () => {
    const lines = Array.from({ length: 100 }, (_, i) => `- container-${i} updated`).join("\n");
    const cut = truncate(lines, 200);
    expect(Array.from(cut).length).toBeLessThanOrEqual(200);
    expect(cut.endsWith("updated…")).toBe(true);
  });

  test("counts characters, not UTF-16 units, and never splits a surrogate pair", () => {
    const cut = truncate("🐳".repeat(50), 10);
    expect(Array.from(cut)).toHaveLength(10);
    expect(cut).toBe("🐳".repeat(9) + "…");
  });

  test("the Pushover form respects the title and message limits", () => {
    const form = pushoverForm({ token: "t", user_key: "u" }, "T".repeat(400), "m".repeat(5000));
    expect(Array.from(form.get("title")!).length).toBe(PUSHOVER_TITLE_MAX);
    expect(Array.from(form.get("message")!).length).toBe(PUSHOVER_MESSAGE_MAX);
    expect(form.get("priority")).toBe("0");
  });

  test("an empty rendered message falls back to the title", () => {
    expect(pushoverForm({ token: "t", user_key: "u" }, "title", "  \n").get("message")).toBe("title");
  });
});

test("docs/notifications.md shows the built-in template as it is", async () => {
  const docs = await Bun.file(join(import.meta.dir, "../../../docs/notifications.md")).text();
  expect(docs).toContain("### The built-in template\n\n```mustache\n" + DEFAULT_TEMPLATE + "```");
});

test("the example template of the docs renders", async () => {
  const docs = await Bun.file(join(import.meta.dir, "../../../docs/notifications.md")).text();
  const example = /### Example\n\n```mustache\n([\s\S]*?)```/.exec(docs)![1]!;
  const { text } = createRenderer(example, "pi")(sampleReport());
  expect(text).toBe(
    "svc on pi: 1 updated, 1 failed\nupdated web: 111111111111 -> 222222222222\nFAILED:\n  db: pull failed: manifest unknown\n",
  );
});

describe("webhook body templates", () => {
  const write = (text: string) => {
    const file = join(mkdtempSync(join(dir, "body-")), "body.mustache");
    writeFileSync(file, text);
    return file;
  };

  test("with a JSON content type every value is escaped for a JSON string", async () => {
    const render = await loadBodyRenderer(
      write('{"text": "{{#failed}}{{reason}}{{/failed}}"}'),
      "application/json; charset=utf-8",
      "nas",
    );
    const report = sampleReport();
    report.containers[1]!.reason = 'a "quoted"\\ reason\nwith a newline';
    expect(JSON.parse(render(report)).text).toBe('a "quoted"\\ reason\nwith a newline');
  });

  test("any other content type gets the text as it is", async () => {
    const render = await loadBodyRenderer(write("{{#failed}}{{reason}}{{/failed}}"), "text/plain", "nas");
    const report = sampleReport();
    report.containers[1]!.reason = 'say "hi"\n';
    expect(render(report)).toBe('say "hi"\n');
  });

  test("a template that does not parse, or gives no JSON for a JSON type, is a startup error naming the option", async () => {
    for (const [text, type] of [
      ["{{#updated}} never closed", "text/plain"],
      ['{"text": {{summary}}}', "application/json"],
      ["not json", "application/vnd.api+json"],
    ] as const) {
      const error = await loadBodyRenderer(write(text), type, "nas").catch((e) => e);
      expect(error.kind).toBe("startup");
      expect(error.message).toStartWith("notifications.webhook.template: ");
    }
    const missing = await loadBodyRenderer("/nonexistent/body.mustache", "application/json", "nas").catch((e) => e);
    expect(missing.message).toBe("notifications.webhook.template: cannot read /nonexistent/body.mustache: ENOENT");
  });
});

describe("what an update brings (docs/release-notes.md)", () => {
  const releases = {
    source: "https://github.com/acme/web",
    from_version: "1.0.0",
    to_version: "2.0.0",
    count: 3,
    breaking: 1,
    newest_url: "https://github.com/acme/web/releases/tag/v2.0.0",
    problem: null,
  };

  test("each updated, stale or held line says how many releases, whether one breaks, and the newest's page; held ones are listed", () => {
    const report = sampleReport();
    report.containers[0] = { ...report.containers[0]!, releases };
    report.containers.push({
      ...report.containers[0]!,
      name: "api",
      state: "held",
      reason: "release 2.0.0 (2.0.0) breaks: held by hold_breaking",
    });
    report.counts.held = 1;
    const { text } = createRenderer(DEFAULT_TEMPLATE, "nas")(report);
    expect(text).toContain("; 3 releases, 1 breaking: https://github.com/acme/web/releases/tag/v2.0.0");
    expect(text).toContain("Held (hold_breaking, hold_if_introduces: update by name to apply):\n- api (");
    expect(buildView(report, "nas").summary).toEndWith(", 1 held");
    const chat = createRenderer(CHAT_TEMPLATE, "nas")(report).text;
    expect(chat).toContain("updated web: ");
    expect(chat).toContain("held api: ");
    expect(chat.match(/3 releases, 1 breaking/g)).toHaveLength(2);
  });

  test("Home Assistant's update entity: the releases as its summary, the newest release's page as its release_url", () => {
    const discovery = new HomeAssistantDiscovery({
      prefix: "homeassistant",
      reportTopic: "svc/reports",
      hostname: "nas",
    });
    const report = sampleReport();
    report.containers[0] = { ...report.containers[0]!, releases };
    const state = discovery.messages(report).find((m) => m.topic.endsWith("/state") && m.topic.includes("web"))!;
    expect(JSON.parse(state.payload)).toMatchObject({
      release_summary: "3 releases, 1 breaking",
      release_url: releases.newest_url,
    });
  });
});

describe("what an update fixes and brings in (docs/vulnerabilities.md)", () => {
  const entry = (id: string, severity: "critical" | "high" | "low") => ({
    id,
    aliases: [],
    summary: null,
    severity,
    score: null,
    package: "openssl",
    version: "3.0.20-1",
    fixed_version: null,
  });
  const vulnerabilities = {
    fixed: [entry("DSA-1", "high"), entry("DSA-2", "low"), entry("DSA-3", "low")],
    introduced: [entry("DEBIAN-CVE-9", "critical")],
    still_open: [],
    counts: { fixed: 3, introduced: 1, still_open: 0 },
    problem: null,
  };

  test("the e-mail, the chat line and the run's summary say it beside the releases", () => {
    const report = sampleReport();
    report.containers[0] = { ...report.containers[0]!, vulnerabilities };
    const { text } = createRenderer(DEFAULT_TEMPLATE, "nas")(report);
    expect(text).toContain("; vulnerabilities: fixes 3, 1 high; brings in 1, 1 critical");
    expect(createRenderer(CHAT_TEMPLATE, "nas")(report).text).toContain(
      "; vulnerabilities: fixes 3, 1 high; brings in 1, 1 critical",
    );
  });

  test("a held update's line says what it brings in (hold_if_introduces)", () => {
    const report = sampleReport();
    report.containers[0] = { ...report.containers[0]!, state: "held", vulnerabilities };
    expect(createRenderer(DEFAULT_TEMPLATE, "nas")(report).text).toContain(
      "Held (hold_breaking, hold_if_introduces: update by name to apply):",
    );
    for (const template of [DEFAULT_TEMPLATE, CHAT_TEMPLATE])
      expect(createRenderer(template, "nas")(report).text).toContain(
        "; vulnerabilities: fixes 3, 1 high; brings in 1, 1 critical",
      );
  });

  test("a container waiting for its window says it too, after when it applies", () => {
    const report = sampleReport();
    report.containers[0] = {
      ...report.containers[0]!,
      state: "pending",
      applies_at: "2026-01-03T02:00:00.000Z",
      vulnerabilities,
    };
    for (const template of [DEFAULT_TEMPLATE, CHAT_TEMPLATE])
      expect(createRenderer(template, "nas")(report).text).toContain(
        "applies 2026-01-03T02:00:00.000Z; vulnerabilities: fixes 3, 1 high; brings in 1, 1 critical",
      );
  });

  test("a failed lookup says the vulnerabilities are unknown; nothing to say is said with nothing", () => {
    const report = sampleReport();
    report.containers[0] = { ...report.containers[0]!, vulnerabilities: { ...vulnerabilities, problem: "OSV down" } };
    expect(createRenderer(CHAT_TEMPLATE, "nas")(report).text).toContain("; vulnerabilities unknown");
    const none = { ...vulnerabilities, fixed: [], introduced: [], counts: { fixed: 0, introduced: 0, still_open: 2 } };
    report.containers[0] = { ...report.containers[0]!, vulnerabilities: none };
    expect(createRenderer(CHAT_TEMPLATE, "nas")(report).text).not.toContain("vulnerabilities");
  });

  test("Home Assistant's release summary", () => {
    const discovery = new HomeAssistantDiscovery({
      prefix: "homeassistant",
      reportTopic: "svc/reports",
      hostname: "nas",
    });
    const report = sampleReport();
    report.containers[0] = { ...report.containers[0]!, vulnerabilities };
    const state = discovery.messages(report).find((m) => m.topic.endsWith("/state") && m.topic.includes("web"))!;
    expect(JSON.parse(state.payload).release_summary).toStartWith(
      "vulnerabilities: fixes 3, 1 high; brings in 1, 1 critical",
    );
  });
});
