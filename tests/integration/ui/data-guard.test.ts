/**
 * The page's roll-back dialog with the data guard (docs/data-guard.md), in Chromium: after an
 * update whose new version rewrote its data, "Roll back" offers the image only or the image and
 * its data, says what will be lost, and the image and its data put v1 back on its own data.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { docker, inspect } from "../../harness.ts";
import { MIGRATE_V2, WRITE_V1 } from "../updater/data-guard-support.ts";
import { confirm, type Dashboard, menuAction, rowOf, startDashboard } from "./support.ts";

let ui: Dashboard;
const copies = mkdtempSync(join(tmpdir(), "svc-ui-dg-"));

beforeAll(async () => {
  ui = await startDashboard("uidg", ["--data-guard", "volumes", "--data-guard-dir", copies]);
}, 120_000);

afterAll(async () => {
  await ui?.close();
  rmSync(copies, { recursive: true, force: true });
}, 120_000);

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
  const name = ui.run("app", v1.ref, ["-v", `${volume}:/data`]);
  await versionIn(name, "v1");
  ui.fx.image("app", {
    changes: [`CMD ${JSON.stringify(["/bin/sh", "-c", `test -e /data/new || (${MIGRATE_V2}); exec sleep 3600`])}`],
  });

  const page = await ui.open();
  await rowOf(page, name);
  await page.getByRole("button", { name: `Update ${name}` }).click();
  await confirm(page, "Update");
  await page
    .locator(".notice")
    .filter({ hasText: `${name}: updated` })
    .waitFor({ timeout: 60_000 });
  await versionIn(name, "v2");

  await menuAction(page, name, "Roll back");
  const dialog = page.getByRole("dialog");
  await dialog.filter({ hasText: "what it wrote since" }).waitFor();
  expect(await dialog.textContent()).toContain("its present data is copied first");
  await dialog.getByLabel("Put back").selectOption("data");
  await confirm(page, "Roll back");
  await page
    .locator(".notice")
    .filter({ hasText: `${name}: back on its earlier image and its data` })
    .waitFor({ timeout: 60_000 });
  expect(inspect(name).Image).toBe(v1.id);
  expect(docker(["exec", name, "cat", "/data/version"]).stdout.trim()).toBe("v1");
  await page.close();
}, 180_000);
