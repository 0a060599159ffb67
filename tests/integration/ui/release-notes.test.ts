/**
 * What an update brings, on the dashboard in Chromium, against svc on the sandbox engine and
 * registry and a loopback stand-in of GitHub's API (tests/support/release-hosts.ts): the count
 * and the breaking one beside the badge, hostile notes shown as text, and hold_breaking's held
 * update applied by the row's Update (docs/release-notes.md).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { inspect } from "../../harness.ts";
import { ReleaseHosts } from "../../support/release-hosts.ts";
import { confirm, type Dashboard, rowOf, startDashboard } from "./support.ts";

const hosts = new ReleaseHosts();
let ui: Dashboard;

beforeAll(async () => {
  hosts.set("github", "acme/app", [
    {
      tag: "v2.0.0",
      title: "Two <b>bold</b>",
      body: [
        "## Changes",
        "<script>window.pwned = 1</script>",
        '<img src=x onerror="window.pwned = 2">',
        "- see [the docs](https://example.com/docs) and `svc --help`",
        "- [click me](javascript:window.pwned=3)",
      ].join("\n"),
    },
    { tag: "v1.1.0", title: "1.1.0", body: "z".repeat(200_000) },
    { tag: "v1.0.0", title: "1.0.0" },
  ]);
  ui = await startDashboard("relui", [
    "--release-notes-github-api-url",
    hosts.apiUrls.github_api_url,
    "--hold-breaking",
  ]);
}, 120_000);

afterAll(async () => {
  await ui?.close();
  hosts.stop();
}, 120_000);

// the GitHub stand-in is a GitHub Enterprise server (github_api_url): its repositories are named on its own host
const labels = (version: string) => [
  'CMD ["/bin/sleep","3600"]',
  "LABEL org.opencontainers.image.source=http://127.0.0.1/acme/app",
  `LABEL org.opencontainers.image.version=${version}`,
];

test("a held breaking update: its releases beside the badge, the notes as text, and the row's Update applies it", async () => {
  const v1 = ui.fx.image("app", { changes: labels("1.0.0") });
  const name = ui.run("app", v1.ref);
  const v2 = ui.fx.image("app", { changes: labels("2.0.0") });
  const page = await ui.open();
  const row = await rowOf(page, name);
  await row.locator(".state", { hasText: "held" }).waitFor();
  expect(await row.locator(".reason").textContent()).toContain("release 2.0.0");
  const summary = row.locator(".release-notes summary");
  expect(await summary.textContent()).toBe("2 releases, 1 breaking");
  await summary.click();
  const panel = row.locator(".release-notes");
  // the title and the notes are text: no element of theirs, no script run
  expect(await panel.locator("h4").first().textContent()).toContain("2.0.0: Two <b>bold</b>");
  expect(await panel.locator("script, img, b").count()).toBe(0);
  expect(await panel.locator(".markdown").first().textContent()).toContain("<script>window.pwned = 1</script>");
  expect(await page.evaluate(() => (globalThis as { pwned?: number }).pwned)).toBeUndefined();
  // links only for http(s)
  expect(await panel.locator('a[href="https://example.com/docs"]').textContent()).toBe("the docs");
  expect(await panel.locator('a[href^="javascript"]').count()).toBe(0);
  expect(await panel.locator("li", { hasText: "click me" }).count()).toBe(1);
  expect(await panel.locator("code", { hasText: "svc --help" }).count()).toBe(1);
  // the huge notes are cut, and say so
  expect(await panel.getByText("(cut: the full notes are on the release's page)").count()).toBe(1);

  expect(inspect(name).Image).toBe(v1.id);
  await row.getByRole("button", { name: `Update ${name}` }).click();
  await confirm(page, "Update");
  await row.locator(".state", { hasText: "up to date" }).waitFor({ timeout: 60_000 });
  expect(inspect(name).Image).toBe(v2.id);
  await page.close();
}, 120_000);
