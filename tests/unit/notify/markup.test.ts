/**
 * Each markup's escaper (src/core/markup.ts): what a service would read as a mention, a link or
 * an image in text from outside is shown as text, and a plain URL stays a plain URL. The forms come
 * from each service's documentation: Discord's Markdown and mentions (`<@id>`, `<@&role>`,
 * `@everyone`), Slack's "Formatting text" (`<url|text>`, `<!channel>`, `&amp;` `&lt;` `&gt;`),
 * Mattermost's and Rocket.Chat's Markdown with Slack's links, Google Chat's "Format messages"
 * (`<url|text>`, `<users/all>`).
 */
import { describe, expect, test } from "bun:test";
import { breakMentions, ESCAPE } from "../../../src/core/markup.ts";
import { CHAT_TEMPLATE, createRenderer } from "../../../src/notify/render.ts";
import { sampleReport } from "./fixtures.ts";

const ZWSP = "\u200b";

describe("mentions", () => {
  test("an @ that starts a word no longer mentions; an e-mail address's @ stays", () => {
    expect(breakMentions("@everyone @here (@channel) @all @room @alice")).toBe(
      `@${ZWSP}everyone @${ZWSP}here (@${ZWSP}channel) @${ZWSP}all @${ZWSP}room @${ZWSP}alice`,
    );
    expect(breakMentions("mail ops@example.org, or @ alone")).toBe("mail ops@example.org, or @ alone");
  });
});

describe("each markup", () => {
  const link =
    "[x](https://evil.example) ![](https://evil.example/p.png) <https://evil.example|docs> <@&1> <!channel> <users/all> https://plain.example/a_b?c=1&d=2";
  test("markdown: brackets and < escaped with a backslash", () => {
    expect(ESCAPE.markdown(link)).toBe(
      `\\[x\\](https://evil.example) !\\[\\](https://evil.example/p.png) \\<https://evil.example|docs> \\<@&1> \\<!channel> \\<users/all> https://plain.example/a_b?c=1&d=2`,
    );
  });
  test("slack: &, < and > as entities", () => {
    expect(ESCAPE.slack(link)).toBe(
      "[x](https://evil.example) ![](https://evil.example/p.png) &lt;https://evil.example|docs&gt; &lt;@&amp;1&gt; &lt;!channel&gt; &lt;users/all&gt; https://plain.example/a_b?c=1&amp;d=2",
    );
  });
  test("mattermost: Slack's entities and Markdown's brackets", () => {
    expect(ESCAPE.mattermost("[x](https://e) <https://e|t> @all")).toBe(
      `\\[x\\](https://e) &lt;https://e|t&gt; @${ZWSP}all`,
    );
  });
  test("googlechat: no escape exists, so < and ]( are parted by a zero-width space", () => {
    expect(ESCAPE.googlechat("<users/all> <https://e|t> [x](https://e)")).toBe(
      `<${ZWSP}users/all> <${ZWSP}https://e|t> [x]${ZWSP}(https://e)`,
    );
  });
  test("plain: as it is", () => {
    expect(ESCAPE.plain(link)).toBe(link);
  });
});

test("a template's values are escaped for the markup, its own text is the operator's", () => {
  const report = sampleReport();
  report.containers[1] = { ...report.containers[1]!, reason: "[x](https://evil.example) @here" };
  const render = createRenderer(`[svc](https://svc.example) @ops\n${CHAT_TEMPLATE}`, "nas");
  const text = render(report, "markdown").text;
  expect(text).toStartWith("[svc](https://svc.example) @ops\n");
  expect(text).toContain(`failed db (127.0.0.1:5000/db:16): \\[x\\](https://evil.example) @${ZWSP}here`);
  expect(render(report).text).toContain("failed db (127.0.0.1:5000/db:16): [x](https://evil.example) @here");
});
