/**
 * What the page says after an automatic rollback, in Chromium at 1280 px and on a phone, in
 * docs/dashboard.md's own words, with a screenshot of each: the
 * row says it was rolled back from that version (not "not checked"), the headline does not say
 * "Everything is up to date" beside a failure, image references and words wrap only between their
 * tokens, and the page has a favicon.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { tempDir } from "../../temp.ts";
import { FAILING_CMD } from "../e2e/support.ts";
import { type Dashboard, DESKTOP, PHONE, rowOf, startDashboard } from "./support.ts";

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

/** docs/dashboard.md, where the page's words are written for users. */
const DOCS = readFileSync(join(import.meta.dir, "../../../docs/dashboard.md"), "utf8");
/** What the page says of a version that failed its checks and was rolled back (docs/dashboard.md's table). */
const ROLLED_BACK_WORDS = /\| `skipped`, `\.\.\. was rolled back before` [^|]*\| ([^|]+) \|/.exec(DOCS)?.[1]?.trim();

/** A PNG's width and height, from its header. */
function pngSize(file: string): { width: number; height: number } {
  const bytes = readFileSync(file);
  expect(bytes.subarray(1, 4).toString("latin1")).toBe("PNG");
  return { width: bytes.readUInt32BE(16), height: bytes.readUInt32BE(20) };
}

describe("after an automatic rollback", () => {
  test("the row says rolled back, the headline does not say everything is up to date, nothing breaks mid-token, a favicon; screenshots at 1280 px and on a phone", async () => {
    // the words checked are docs/dashboard.md's own
    expect(ROLLED_BACK_WORDS).toBe("rolled back from this version, it failed its checks; waiting for a newer one");
    expect(DOCS).toContain('else "No update available." beside the');
    expect(DOCS).toContain("at 1280 px and on a phone");

    const v1 = ui.fx.image("a-container-with-a-rather-long-image-name-that-fills-its-column");
    const name = ui.run("a-container-with-a-rather-long-image-name-that-fills-its-column", v1.ref);
    ui.fx.image("a-container-with-a-rather-long-image-name-that-fills-its-column", { changes: [FAILING_CMD] });
    const update = await fetch(`${ui.url}v1/update?container=${name}`, {
      method: "POST",
      headers: { authorization: `Bearer ${ui.token}` },
    });
    const report = (await update.json()) as { containers: { state: string }[] };
    expect(report.containers[0]?.state, JSON.stringify(report)).toBe("rolled_back");

    const shots = tempDir("svc-ui-shots-");
    for (const viewport of [DESKTOP, PHONE]) {
      const page = await ui.open({ viewport });
      const row = await rowOf(page, name);
      await row.locator(".state", { hasText: "rolled back from this version" }).waitFor();
      // the state, then its detail beside it
      const said = (await row.textContent())?.replace(/\s+/g, " ") ?? "";
      for (const part of ROLLED_BACK_WORDS!.split(/[,;] /)) expect(said).toContain(part);
      expect(await row.textContent()).not.toContain("not checked");
      const summary = page.getByRole("region", { name: "At a glance" });
      expect(await summary.locator("button[data-bucket=failed]").textContent()).toBe("1 failed or rolled back");
      expect(await summary.locator(".total").textContent()).toBe("No update available.");
      expect(await page.locator("body").textContent()).not.toContain("Everything is up to date");

      expect(await page.evaluate<number>("window.innerWidth")).toBe(viewport.width);
      expect(await brokenTokens(page, "tr[data-container] .image")).toEqual([]);
      expect(await brokenTokens(page, "tr[data-container] td")).toEqual([]);
      expect(await brokenTokens(page, ".summary")).toEqual([]);

      // what a person sees, the whole page: no wider than the screen
      const file = join(shots, `rolled-back-${viewport.width}.png`);
      await page.screenshot({ path: file, fullPage: true });
      expect(pngSize(file).width).toBe(viewport.width);

      const icon = await page.locator('link[rel="icon"]').getAttribute("href");
      expect(icon).toBeTruthy();
      const answer = await page.request.get(new URL(icon!, ui.url).href);
      expect(answer.status()).toBe(200);
      expect(answer.headers()["content-type"]).toBe("image/svg+xml");
      await page.close();
    }
  }, 240_000);
});
