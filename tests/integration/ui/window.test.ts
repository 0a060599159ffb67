/**
 * An update window on the dashboard (docs/windows.md), in Chromium against svc on the sandbox: a
 * stale container outside its window says when it applies and shows the window among its policy;
 * its Update button applies it at once (a person asking is the decision).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { serviceTimeZone, wallClock } from "../../../src/config/window.ts";
import { inspect } from "../../harness.ts";
import { confirm, type Dashboard, noticeSaying, rowOf, startDashboard } from "./support.ts";

const hhmm = (at: number) => {
  const { minute } = wallClock(at, serviceTimeZone());
  return `${String(Math.floor(minute / 60)).padStart(2, "0")}:${String(minute % 60).padStart(2, "0")}`;
};
// closed now: it opens in an hour, for an hour
const HOUR = 3_600_000;
const opens = Math.floor((Date.now() + HOUR) / 60_000) * 60_000;
const window = `${hhmm(opens)}-${hhmm(opens + HOUR)}`;

let ui: Dashboard;
beforeAll(async () => {
  ui = await startDashboard("uiwin", ["--update-window", window]);
}, 120_000);
afterAll(async () => {
  await ui?.close();
}, 120_000);

test("a pending row says when it applies and its window; Update applies it now", async () => {
  const v1 = ui.fx.image("win");
  const name = ui.run("win", v1.ref);
  const v2 = ui.fx.image("win");
  const page = await ui.open();
  const row = await rowOf(page, name);
  // its state, in words: when its window opens
  await row
    .locator("td[data-label=State]")
    .filter({ hasText: new RegExp(`applies \\w{3} ${hhmm(opens)} \\(in (59 min|1 h)\\)`) })
    .waitFor();
  expect(await row.textContent()).toContain(`window: ${window}`);
  expect(inspect(name).Image).toBe(v1.id);

  await row.getByRole("button", { name: `Update ${name}` }).click();
  await confirm(page, "Update");
  await noticeSaying(page, `${name}: updated`, 60_000);
  expect(inspect(name).Image).toBe(v2.id);
  await page.close();
}, 120_000);
