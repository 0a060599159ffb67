/**
 * The data guard of a peer's container on the fleet page (docs/data-guard.md, docs/dashboard.md),
 * in Chromium: a second svc with the data guard on, on a second engine (a sandbox of its own), is
 * a peer of the svc the browser talks to. After an update on the peer whose new version rewrote
 * its data, the page lists the peer's copy (container, size, age, version) as the peer's own API
 * does; "Roll back" on the peer's row with "the image and its data" puts the old image and the
 * old data back on the peer; a copy deleted on the page is gone from the peer's own API.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { formatSize } from "../../../src/config/values.ts";
import type { CopyView } from "../../../src/dataguard/index.ts";
import { freePort } from "../../harness.ts";
import { type SvcProcess, stopProcess } from "../e2e/support.ts";
import { PrivateSandbox } from "../safety/support.ts";
import { MIGRATE_V2, WRITE_V1 } from "../updater/data-guard-support.ts";
import { confirm, type Dashboard, menuAction, noticeSaying, startDashboard, startPeerSvc } from "./support.ts";

const PEER = "nas";
const peerToken = `peer-token-${crypto.randomUUID()}`;
const peerPort = freePort();
const copiesDir = mkdtempSync(join(tmpdir(), "svc-ui-peer-dg-"));
let ui: Dashboard;
let peerEngine: PrivateSandbox;
let peerSvc: SvcProcess;
let name: string;
let v1Id: string;
let v2Id: string;

beforeAll(async () => {
  peerEngine = new PrivateSandbox();
  peerEngine.up();
  ui = await startDashboard("uipdg", [
    "--peers",
    `name=${PEER},url=http://127.0.0.1:${peerPort},token=${peerToken}`,
    // the default 2 s is short on a loaded test machine
    "--peer-timeout",
    "15s",
  ]);
  name = ui.fx.name("app");
  const image = `${peerEngine.registry}/${name}:latest`;
  v1Id = peerEngine.buildImage(image, [
    `CMD ${JSON.stringify(["/bin/sh", "-c", `${WRITE_V1}; exec sleep 3600`])}`,
    "LABEL org.opencontainers.image.version=1.0.0",
  ]);
  peerEngine.run(name, image, { network: "none", labels: { "svc.scope": ui.scope }, binds: [`${name}-data:/data`] });
  await dataVersion("v1");
  v2Id = peerEngine.buildImage(image, [
    `CMD ${JSON.stringify(["/bin/sh", "-c", `test -e /data/new || (${MIGRATE_V2}); exec sleep 3600`])}`,
    "LABEL org.opencontainers.image.version=2.0.0",
  ]);
  peerSvc = await startPeerSvc(peerEngine.dockerHost, ui.scope, peerToken, peerPort, [
    "--data-guard",
    "volumes",
    "--data-guard-dir",
    copiesDir,
  ]);
}, 180_000);

afterAll(async () => {
  await stopProcess(peerSvc?.proc);
  await ui?.close();
  peerEngine?.down();
  rmSync(copiesDir, { recursive: true, force: true });
}, 180_000);

/** The data the peer's container holds now, as its version file says. */
async function dataVersion(expected: string): Promise<void> {
  let seen = "";
  for (let i = 0; i < 100; i++) {
    seen = peerEngine.docker(["exec", name, "cat", "/data/version"], { allowFailure: true }).stdout.trim();
    if (seen === expected) return;
    await Bun.sleep(100);
  }
  throw new Error(`${name} on ${PEER} holds ${seen || "no"} data, not ${expected}`);
}

/** The peer's copies as its own API lists them, asked directly with its token. */
async function peerCopies(): Promise<CopyView[]> {
  const response = await fetch(`http://127.0.0.1:${peerPort}/v1/data-guard`, {
    headers: { authorization: `Bearer ${peerToken}` },
  });
  expect(response.status).toBe(200);
  return ((await response.json()) as { copies: CopyView[] }).copies.filter((copy) => copy.container === name);
}

/** The page's line for the peer's copy of `version`, once the page lists it. */
async function copyLine(page: Page, version: string) {
  const line = page
    .locator(`table.copies tr[data-copy-of="${name}"][data-host="${PEER}"]`)
    .filter({ has: page.locator("td.version", { hasText: version }) });
  await line.waitFor({ timeout: 60_000 });
  return line;
}

describe("a peer's data guard on the fleet page", () => {
  test("after an update on the peer, the page lists the peer's copy as the peer's API does", async () => {
    const page = await ui.open();
    await page.locator(`tr[data-container="${name}"][data-host="${PEER}"]`).waitFor({ timeout: 90_000 });
    await page.getByRole("button", { name: `Update ${name} on ${PEER}` }).click();
    await confirm(page, "Update");
    await noticeSaying(page, `${name} on ${PEER}: updated`, 90_000);
    expect(peerEngine.inspect(name).Image).toBe(v2Id);
    await dataVersion("v2");

    const [copy] = await peerCopies();
    expect(copy).toMatchObject({ version: "1.0.0", image_id: v1Id, restoring: false });
    const line = await copyLine(page, "1.0.0");
    expect(await line.locator("td").first().textContent()).toBe(`${name} on ${PEER}`);
    expect(await line.locator("td.size").textContent()).toBe(formatSize(copy!.bytes));
    expect(copy!.bytes).toBeGreaterThan(2 * 1024 * 1024);
    expect(await line.locator("td.taken").textContent()).toMatch(/ago$|^just now$/);
    await page.close();
  }, 240_000);

  test("Roll back on the peer's row with the image and its data: the peer runs v1 on its v1 data", async () => {
    const page = await ui.open();
    await page.locator(`tr[data-container="${name}"][data-host="${PEER}"]`).waitFor({ timeout: 90_000 });
    await menuAction(page, `${name} on ${PEER}`, "Roll back");
    const dialog = page.getByRole("dialog");
    await dialog.filter({ hasText: "what it wrote since" }).waitFor();
    expect(await dialog.textContent()).toContain("its present data is copied first");
    await dialog.getByLabel("Put back").selectOption("data");
    await confirm(page, "Roll back");
    await noticeSaying(page, `${name} on ${PEER}: back on its earlier image and its data`, 90_000);
    expect(peerEngine.inspect(name).Image).toBe(v1Id);
    await dataVersion("v1");
    expect(peerEngine.docker(["exec", name, "cat", "/data/a"]).stdout).toBe("v1-data");
    expect(peerEngine.docker(["exec", name, "ls", "/data/new"], { allowFailure: true }).code).not.toBe(0);
    await page.close();
  }, 240_000);

  test("the copy of the data the rollback replaced is listed, and Delete on the page deletes it on the peer", async () => {
    const kept = await peerCopies();
    expect(kept.map((copy) => copy.version)).toEqual(["2.0.0"]);
    const page = await ui.open();
    const line = await copyLine(page, "2.0.0");
    // the copy the rollback put back is live data again: no longer listed
    expect(await page.locator(`table.copies tr[data-copy-of="${name}"]`).count()).toBe(1);
    await line.getByRole("button", { name: `Delete the copy of ${name} on ${PEER}'s data` }).click();
    const dialog = page.getByRole("dialog");
    await dialog.filter({ hasText: "version 2.0.0" }).waitFor();
    await confirm(page, "Delete");
    await noticeSaying(page, `${name} on ${PEER}: the copy of its data (version 2.0.0) is deleted.`, 30_000);
    expect(await peerCopies()).toEqual([]);
    await line.waitFor({ state: "detached", timeout: 30_000 });
    await page.close();
  }, 120_000);
});
