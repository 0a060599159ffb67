/**
 * What the page says after an automatic rollback, in Chromium at 1280 px (docs/dashboard.md): the
 * row says it was rolled back from that version (not "not checked"), the headline does not say
 * "Everything is up to date" beside a failure, image references and words wrap only between their
 * tokens, and the page has a favicon.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Page } from "playwright-core";
import { FAILING_CMD } from "../e2e/support.ts";
import { type Dashboard, rowOf, startDashboard } from "./support.ts";

let ui: Dashboard;

beforeAll(async () => {
  ui = await startDashboard("records");
}, 120_000);

afterAll(async () => {
  await ui?.close();
}, 120_000);

/** The texts inside `selector` that the browser broke across lines (each <wbr>-separated token, each word). */
function brokenTokens(page: Page, selector: string): Promise<string[]> {
  return page.evaluate<string[]>(`(() => {
    const broken = [];
    for (const element of document.querySelectorAll(${JSON.stringify(selector)})) {
      const walker = document.createTreeWalker(element, NodeFilter.SHOW_TEXT);
      for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        for (const match of (node.textContent ?? "").matchAll(/\\S+/g)) {
          const range = document.createRange();
          range.setStart(node, match.index);
          range.setEnd(node, match.index + match[0].length);
          const lines = new Set([...range.getClientRects()].map((rect) => Math.round(rect.top)));
          if (lines.size > 1) broken.push(match[0]);
        }
      }
    }
    return broken;
  })()`);
}

describe("after an automatic rollback", () => {
  test("the row says rolled back, the headline does not say everything is up to date, nothing breaks mid-token, a favicon", async () => {
    const v1 = ui.fx.image("a-container-with-a-rather-long-image-name-that-fills-its-column");
    const name = ui.run("a-container-with-a-rather-long-image-name-that-fills-its-column", v1.ref);
    ui.fx.image("a-container-with-a-rather-long-image-name-that-fills-its-column", { changes: [FAILING_CMD] });
    const update = await fetch(`${ui.url}v1/update?container=${name}`, {
      method: "POST",
      headers: { authorization: `Bearer ${ui.token}` },
    });
    const report = (await update.json()) as { containers: { state: string }[] };
    expect(report.containers[0]?.state, JSON.stringify(report)).toBe("rolled_back");

    const page = await ui.open();
    const row = await rowOf(page, name);
    await row.locator(".state", { hasText: "rolled back from this version" }).waitFor();
    expect(await row.textContent()).not.toContain("not checked");
    const summary = page.getByRole("region", { name: "At a glance" });
    expect(await summary.locator("button[data-bucket=failed]").textContent()).toBe("1 failed or rolled back");
    expect(await summary.locator(".total").textContent()).toBe("No update available.");

    expect(await page.evaluate<number>("window.innerWidth")).toBe(1280);
    expect(await brokenTokens(page, "tr[data-container] .image")).toEqual([]);
    expect(await brokenTokens(page, "tr[data-container] td")).toEqual([]);

    const icon = await page.locator('link[rel="icon"]').getAttribute("href");
    expect(icon).toBeTruthy();
    const answer = await page.request.get(new URL(icon!, ui.url).href);
    expect(answer.status()).toBe(200);
    expect(answer.headers()["content-type"]).toBe("image/svg+xml");
    await page.close();
  }, 240_000);
});
