/**
 * A notification's link to a row (docs/notifications.md, "Links to the page"), opened in Chromium:
 * the page asks for sign-in as always (the link carries no token), then shows that row's Details;
 * the fragment is gone from the address once the row is open.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { rowUrl } from "../../../src/notify/links.ts";
import { type Dashboard, signInWith, startDashboard } from "./support.ts";

let ui: Dashboard;

beforeAll(async () => {
  ui = await startDashboard("ui-link");
}, 120_000);

afterAll(async () => {
  await ui?.close();
}, 120_000);

test("the link of a stale container: sign-in first, then that row's Details", async () => {
  const stale = ui.staleContainer("linked");
  ui.staleContainer("other");
  const page = await ui.browser.newPage();
  // the address a notification carries with http_api.public_url = the page's address
  await page.goto(rowUrl(ui.url, { name: stale.name }));
  await page.getByLabel("API token").waitFor();
  expect(await page.locator("table").count()).toBe(0);
  expect(await page.getByRole("dialog").filter({ hasText: "Details of" }).count()).toBe(0);

  await signInWith(page, ui.token);
  const details = page.getByRole("dialog").filter({ hasText: `Details of ${stale.name}` });
  await details.waitFor();
  expect(await details.textContent()).toContain("Available digest");
  expect(await page.getByRole("dialog").filter({ hasText: "Details of" }).count()).toBe(1);
  expect(new URL(page.url()).hash).toBe("");
  await page.close();
}, 90_000);

test("a link to a row svc does not show opens nothing, and the page works as always", async () => {
  const page = await ui.browser.newPage();
  await page.goto(rowUrl(ui.url, { name: "no-such-container" }));
  await signInWith(page, ui.token);
  await page.getByRole("table").waitFor();
  expect(await page.getByRole("dialog").filter({ hasText: "Details of" }).count()).toBe(0);
  await page.close();
}, 90_000);
