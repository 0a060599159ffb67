/**
 * The page's roll-back dialog with the data guard (docs/data-guard.md), in Chromium: after an
 * update whose new version rewrote its data, "Roll back" offers the image only or the image and
 * its data, says what will be lost, and the image and its data put v1 back on its own data. The
 * Data copies section lists the copies as GET /v1/data-guard does, and deletes one.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { formatSize } from "../../../src/config/values.ts";
import type { CopyView } from "../../../src/dataguard/index.ts";
import { docker, inspect } from "../../harness.ts";
import { MIGRATE_V2, WRITE_V1 } from "../updater/data-guard-support.ts";
import { confirm, type Dashboard, menuAction, noticeSaying, rowOf, startDashboard } from "./support.ts";

let ui: Dashboard;
const copies = mkdtempSync(join(tmpdir(), "svc-ui-dg-"));

beforeAll(async () => {
  ui = await startDashboard("uidg", ["--data-guard", "volumes", "--data-guard-dir", copies]);
}, 120_000);

afterAll(async () => {
  await ui?.close();
  rmSync(copies, { recursive: true, force: true });
}, 120_000);

/** The copies of `name` GET /v1/data-guard lists. */
async function copiesOf(name: string): Promise<CopyView[]> {
  const response = await fetch(`${ui.url}v1/data-guard`, { headers: { authorization: `Bearer ${ui.token}` } });
  return ((await response.json()) as { copies: CopyView[] }).copies.filter((copy) => copy.container === name);
}

async function versionIn(name: string, expected: string): Promise<void> {
  for (let i = 0; i < 100; i++) {
    if (docker(["exec", name, "cat", "/data/version"], { allowFailure: true }).stdout.trim() === expected) return;
    await Bun.sleep(100);
  }
  throw new Error(`${name} never had ${expected} data`);
}

test("roll back with its data: the dialog says what is lost, and v1 runs on its own data again", async () => {
  const v1 = ui.fx.image("app", {
    changes: [`CMD ${JSON.stringify(["/bin/sh", "-c", `${WRITE_V1}; exec sleep 3600`])}`],
  });
  const volume = ui.fx.volume("app-data");
  const name = ui.run("app", v1.ref, { binds: [`${volume}:/data`] });
  await versionIn(name, "v1");
  ui.fx.image("app", {
    changes: [`CMD ${JSON.stringify(["/bin/sh", "-c", `test -e /data/new || (${MIGRATE_V2}); exec sleep 3600`])}`],
  });

  const page = await ui.open();
  await rowOf(page, name);
  await page.getByRole("button", { name: `Update ${name}` }).click();
  await confirm(page, "Update");
  await noticeSaying(page, `${name}: updated`, 60_000);
  await versionIn(name, "v2");
  // the copy of v1's data, listed on the page as the API lists it
  const [copy] = await copiesOf(name);
  const line = page.locator(`table.copies tr[data-copy-of="${name}"]`);
  await line.waitFor();
  expect(await line.locator("td").first().textContent()).toBe(name);
  expect(await line.locator("td.size").textContent()).toBe(formatSize(copy!.bytes));
  expect(await line.locator("td.version").textContent()).toBe(copy!.version!);

  await menuAction(page, name, "Roll back");
  const dialog = page.getByRole("dialog");
  await dialog.filter({ hasText: "what it wrote since" }).waitFor();
  expect(await dialog.textContent()).toContain("its present data is copied first");
  await dialog.getByLabel("Put back").selectOption("data");
  await confirm(page, "Roll back");
  await noticeSaying(page, `${name}: back on its earlier image and its data`, 60_000);
  expect(inspect(name).Image).toBe(v1.id);
  expect(docker(["exec", name, "cat", "/data/version"]).stdout.trim()).toBe("v1");
  await page.close();
}, 180_000);

test("the copy of the data a rollback replaced is listed, and Delete on the page deletes it", async () => {
  const name = ui.fx.name("app");
  const [kept] = await copiesOf(name);
  expect(kept).toBeDefined();
  const page = await ui.open();
  const line = page.locator(`table.copies tr[data-copy-of="${name}"][data-copy="${kept!.id}"]`);
  await line.waitFor({ timeout: 90_000 });
  await line.getByRole("button", { name: `Delete the copy of ${name}'s data` }).click();
  await confirm(page, "Delete");
  await noticeSaying(page, `${name}: the copy of its data (version ${kept!.version}) is deleted.`, 30_000);
  expect(await copiesOf(name)).toEqual([]);
  await line.waitFor({ state: "detached" });
  await page.close();
}, 120_000);
