/**
 * The dashboard as a person uses it, in Chromium, against svc on the sandbox engine and registry:
 * sign in, see what is newer, check, update, skip, snooze and roll back from the page, follow a
 * running cycle, see a built service marked with its bases and why a moved one is not rebuilt, and
 * read hostile labels as plain text; on a phone, nothing wider than the screen.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { inspect } from "../../harness.ts";
import type { RunOptions } from "../../support/fixture.ts";
import {
  confirm,
  type Dashboard,
  menuAction,
  noticeSaying,
  PHONE,
  rowOf,
  signInWith,
  startDashboard,
} from "./support.ts";

let ui: Dashboard;

beforeAll(async () => {
  ui = await startDashboard("ui");
}, 120_000);

afterAll(async () => {
  await ui?.close();
}, 120_000);

const staleContainer = (what: string, options: RunOptions = {}) => ui.staleContainer(what, options);
/**
 * The longest a cycle the page started may take to say it ended: a hang limit, not a speed (a
 * cycle of a few seconds alone took over a minute at the load of the test run's legs).
 */
const HANG_WAIT_MS = 100_000;

describe("the dashboard in a browser", () => {
  test("sign-in: a wrong token is said plainly and shows nothing; the right one, typed and sent with Enter, shows the containers", async () => {
    const page = await ui.open({ signIn: false });
    // the policy allows all the page does: nothing of it is refused
    const refused: string[] = [];
    page.on(
      "console",
      (message) => void (/Content Security Policy/i.test(message.text()) && refused.push(message.text())),
    );
    await signInWith(page, "not-the-token");
    await page.getByRole("alert").filter({ hasText: "Wrong token" }).waitFor();
    expect(await page.locator("table").count()).toBe(0);
    // the keyboard alone: the field has the focus again, Enter sends
    await page.keyboard.press("ControlOrMeta+A");
    await page.keyboard.type(ui.token);
    await page.keyboard.press("Enter");
    await page.getByRole("table").waitFor();
    // kept for this tab only, and never as a cookie
    expect(await page.evaluate(() => sessionStorage.getItem("svc.token"))).toBe(ui.token);
    expect(await ui.browser.cookies()).toEqual([]);
    expect(refused).toEqual([]);
    await page.close();
  }, 60_000);

  test("a stale container shows its newer version as a badge; checking one finds an image pushed since", async () => {
    const stale = staleContainer("stale");
    const v1 = ui.fx.image("later");
    const later = ui.run("later", v1.ref);
    const ignored = ui.run("ignored", v1.ref, { labels: { "svc.enable": "false" } });
    const page = await ui.open();
    const row = await rowOf(page, stale.name);
    const badge = row.locator(".badge.kind-digest");
    await badge.waitFor();
    expect(await badge.textContent()).toMatch(/^sha256:[0-9a-f]{12} digest$/);
    expect(await row.locator(".state").textContent()).toBe("update available");

    // a container svc leaves alone is listed apart, with why
    expect(await page.locator(`.excluded li[data-container="${ignored}"]`).textContent()).toContain(
      "label svc.enable=false",
    );
    expect(await page.locator(`tr[data-container="${ignored}"]`).count()).toBe(0);

    const laterRow = await rowOf(page, later);
    expect(await laterRow.locator(".badge").count()).toBe(0);
    ui.fx.image("later");
    await page.getByRole("button", { name: `Check ${later}` }).click();
    await laterRow.locator(".badge.kind-digest").waitFor();
    await page.close();
  }, 90_000);

  test("update from the page: it asks first, shows the cycle's steps while it runs, then docker inspect shows the new image; roll back puts the old one back", async () => {
    // a pre_update hook that takes a moment: the step the page shows while the cycle runs
    const c = staleContainer("update", { labels: { "svc.hooks.pre_update": "sleep 2" } });
    const page = await ui.open();
    const other = await ui.open();
    await rowOf(page, c.name);
    await rowOf(other, c.name);
    await page.getByRole("button", { name: `Update ${c.name}` }).click();
    // Cancel changes nothing
    await page.getByRole("dialog").getByRole("button", { name: "Cancel" }).click();
    expect(inspect(c.name).Image).toBe(c.oldId);

    await page.getByRole("button", { name: `Update ${c.name}` }).click();
    await confirm(page, "Update");
    const progress = page.locator(".progress");
    // the pre_update hook, the pull, the restart and the watch: the step under way, named
    await progress.filter({ hasText: `An update cycle is running (api): ${c.name}: ` }).waitFor();
    expect(await progress.locator(".steps li").allTextContents()).toContainEqual(
      expect.stringMatching(new RegExp(`^${c.name}: (pre_update|pull|rename|stop|create|start|watch)$`)),
    );
    // another tab asking meanwhile is refused (409), and told what runs
    await other.getByRole("button", { name: "Check now" }).click();
    await other.locator(".notice.error").filter({ hasText: "Refused: An update cycle is running (api)" }).waitFor();
    await other.close();
    await noticeSaying(page, `${c.name}: updated`, HANG_WAIT_MS);
    expect(inspect(c.name).Image).toBe(c.newId);

    await rowOf(page, c.name);
    await menuAction(page, c.name, "Roll back");
    await confirm(page, "Roll back");
    await noticeSaying(page, `${c.name}: back on its earlier image`, HANG_WAIT_MS);
    expect(inspect(c.name).Image).toBe(c.oldId);

    // its timeline, newest first: the rollback asked for on the page (a rollback, not an update),
    // then the update
    await menuAction(page, c.name, "History of");
    const timeline = page.getByRole("dialog").locator(".timeline > li");
    await timeline.first().waitFor();
    expect(await timeline.count()).toBe(2);
    expect(await timeline.allTextContents()).toEqual([
      expect.stringContaining("rolled back on request (POST /v1/rollback)"),
      expect.stringContaining("updated"),
    ]);
    await page.getByRole("dialog").getByRole("button", { name: "Close" }).click();
    // and the sessions list names it
    await page.locator(".history").filter({ hasText: c.name }).waitFor();
    await page.close();
  }, 240_000);

  test("an update asked in another tab while a cycle runs is queued: said, shown pending, then run and the row loaded again", async () => {
    // a pre_update hook that takes a moment: the first update is still running when the second is asked for
    const first = staleContainer("first", { labels: { "svc.hooks.pre_update": "sleep 3" } });
    const second = staleContainer("queued");
    const page = await ui.open();
    const other = await ui.open();
    await rowOf(page, first.name);
    await rowOf(other, second.name);
    await page.getByRole("button", { name: `Update ${first.name}` }).click();
    await confirm(page, "Update");
    await page
      .locator(".progress")
      .filter({ hasText: `An update cycle is running (api): ${first.name}: ` })
      .waitFor();

    await other.getByRole("button", { name: `Update ${second.name}` }).click();
    await confirm(other, "Update");
    // queued, not refused: said at once, and pending above the table until it starts
    await noticeSaying(other, `${second.name}: queued, updated once the cycle under way ends`, HANG_WAIT_MS);
    expect(await other.locator(".notice.error").count()).toBe(0);
    const pending = other
      .locator(".progress .queued")
      .filter({ hasText: `Queued: an update of ${second.name} (asked ` });
    await pending.waitFor();
    expect(await pending.textContent()).toEndWith("it runs once the cycle under way ends.");
    // the first tab sees it waiting too (GET /v1/progress)
    await page
      .locator(".progress .queued")
      .filter({ hasText: `Queued: an update of ${second.name}` })
      .waitFor();

    await noticeSaying(page, `${first.name}: updated`, HANG_WAIT_MS);
    // once it has run, the pending line goes and the row shows the new image as current
    await pending.waitFor({ state: "detached", timeout: HANG_WAIT_MS });
    await (await rowOf(other, second.name)).locator(".badge").waitFor({ state: "detached", timeout: HANG_WAIT_MS });
    expect(inspect(first.name).Image).toBe(first.newId);
    expect(inspect(second.name).Image).toBe(second.newId);
    await other.close();
    await page.close();
  }, 240_000);

  test("update the selected containers: both run their new image, the one left unselected does not", async () => {
    const [a, b, left] = [staleContainer("sel-a"), staleContainer("sel-b"), staleContainer("sel-left")];
    const page = await ui.open();
    await rowOf(page, left.name);
    await page.getByRole("checkbox", { name: `Select ${a.name}` }).check();
    await page.getByRole("checkbox", { name: `Select ${b.name}` }).check();
    await page.getByRole("button", { name: "Update selected (2)" }).click();
    await confirm(page, "Update");
    await noticeSaying(page, [`${a.name}: updated`, `${b.name}: updated`], 60_000);
    expect([inspect(a.name).Image, inspect(b.name).Image, inspect(left.name).Image]).toEqual([
      a.newId,
      b.newId,
      left.oldId,
    ]);
    await page.close();
  }, 120_000);

  test("skip this version, and snooze: the row says so and nothing is applied", async () => {
    const skipped = staleContainer("skip");
    const snoozed = staleContainer("snooze");
    const page = await ui.open();
    await rowOf(page, skipped.name);
    await menuAction(page, skipped.name, "Skip this version of");
    const skippedRow = await rowOf(page, skipped.name);
    await skippedRow.locator(".state").filter({ hasText: "this version skipped" }).waitFor();
    expect(await skippedRow.locator(".reason").textContent()).toBe("waiting for a newer one");
    // the exact reason on hover
    expect(await skippedRow.locator(".state").getAttribute("title")).toContain("was skipped on request");

    await menuAction(page, snoozed.name, "Snooze updates of");
    await page.getByRole("dialog").getByLabel("Snooze for").selectOption("7d");
    await confirm(page, "Snooze");
    const snoozedRow = await rowOf(page, snoozed.name);
    await snoozedRow
      .locator(".state")
      .filter({ hasText: /^held: snoozed until .+ \(in (7 d|6 d 23 h)\)$/ })
      .waitFor();
    expect(await snoozedRow.locator(".note").first().textContent()).toStartWith("snoozed until");

    // a real cycle over both applies neither
    const response = await fetch(`${ui.url}v1/update`, {
      method: "POST",
      headers: { authorization: `Bearer ${ui.token}` },
    });
    const report = (await response.json()) as { containers: { name: string; state: string }[] };
    expect(
      report.containers.filter((c) => c.name === skipped.name || c.name === snoozed.name).map((c) => c.state),
    ).toEqual(["skipped", "stale"]);
    expect(inspect(skipped.name).Image).toBe(skipped.oldId);
    expect(inspect(snoozed.name).Image).toBe(snoozed.oldId);
    await page.close();
  }, 120_000);

  test('a built service shows "built here" and its bases; a base moved, why it is not rebuilt', async () => {
    const base = ui.fx.image("bbase");
    const image = ui.fx.image("built");
    const name = ui.run("built", image.ref, { labels: { "svc.build.base": base.ref } });
    const page = await ui.open();
    const row = await rowOf(page, name);
    const marker = row.locator(".marker", { hasText: "built here" });
    await marker.waitFor();
    expect(await marker.getAttribute("title")).toBe(
      `built here, from ${base.ref}: rebuilt when one of them moves (only reported where svc reads no compose build of it)`,
    );
    ui.fx.image("bbase");
    await page.getByRole("button", { name: `Check ${name}` }).click();
    const reason = row.locator(".reason", { hasText: `base ${base.ref} moved` });
    await reason.waitFor();
    expect(await reason.textContent()).toContain(
      "not rebuilt: svc reads no compose build of it (its bases are named by label): rebuild it yourself",
    );
    expect(inspect(name).Image).toBe(image.id);
    await page.close();
  }, 90_000);

  test("a label holding markup is shown as those characters, never run", async () => {
    const hostile = `<img src=x onerror="window.__svcPwned=1">`;
    const v1 = ui.fx.image("hostile");
    const name = ui.run("hostile", v1.ref, { labels: { "svc.min_image_age": hostile } });
    const page = await ui.open();
    const row = await rowOf(page, name);
    await row.locator(".reason").waitFor();
    expect(await row.locator(".reason").textContent()).toContain(JSON.stringify(hostile));
    expect(await page.locator("table img").count()).toBe(0);
    expect(await page.evaluate(() => (globalThis as { __svcPwned?: number }).__svcPwned)).toBeUndefined();
    await page.close();
  }, 60_000);

  test("light or dark as the system says", async () => {
    const page = await ui.open();
    await page.getByRole("table").waitFor();
    const background = () => page.evaluate<string>("getComputedStyle(document.body).backgroundColor");
    await page.emulateMedia({ colorScheme: "light" });
    const light = await background();
    await page.emulateMedia({ colorScheme: "dark" });
    expect(await background()).not.toBe(light);
    await page.close();
  }, 60_000);

  test("on a phone: every container is a card and nothing scrolls sideways", async () => {
    const page = await ui.open({ viewport: PHONE });
    await page.locator("tbody tr").first().waitFor();
    // page code as text: the tests are typed without the DOM's types
    const widths = await page.evaluate<{ scroll: number; client: number }>(
      "({ scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth })",
    );
    expect(widths.scroll).toBeLessThanOrEqual(widths.client);
    // the column headings give way to a label on each field
    expect(await page.getByRole("table", { name: "Containers svc watches" }).locator("thead").isVisible()).toBe(false);
    await page.close();
  }, 60_000);
});
