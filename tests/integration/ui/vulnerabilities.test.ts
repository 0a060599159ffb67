/**
 * What an update fixes and brings in, on the dashboard in Chromium, against svc on the sandbox
 * engine and registry and a loopback OSV stand-in (tests/support/osv.ts): the badge under the
 * release notes, the lists in its panel, hold_if_introduces' held update with the list in its
 * reason, applied by the row's Update; min_image_age passed over for an update that fixes a high
 * one, said on the badge (docs/vulnerabilities.md).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { inspect, sandbox } from "../../harness.ts";
import { DEBIAN_RECORDS, startOsvStandIn } from "../../support/osv.ts";
import { debianImage, dpkgStatus, OPENSSL_CRITICAL, removeBuildDirs } from "../vulns/support.ts";
import { confirm, type Dashboard, rowOf, startDashboard } from "./support.ts";

const osv = startOsvStandIn([...DEBIAN_RECORDS, OPENSSL_CRITICAL]);
let ui: Dashboard;

beforeAll(async () => {
  ui = await startDashboard("vulnui", [
    "--vulnerabilities-enabled",
    "--vulnerabilities-osv-url",
    osv.url,
    "--vulnerabilities-hold-if-introduces",
    "high",
    "--vulnerabilities-min-image-age-unless-fixes",
    "high",
  ]);
}, 120_000);

afterAll(async () => {
  await ui?.close();
  osv.stop();
  removeBuildDirs();
}, 120_000);

test("the badge and the lists under the release notes; the held update applied by the row's Update", async () => {
  const ref = `${sandbox().registry}/${ui.fx.name("vapp")}:latest`;
  const old = debianImage(ref, dpkgStatus("2.36-9+deb12u1", "3.0.20-1"));
  const name = ui.run("vapp", ref);
  const newer = debianImage(ref, dpkgStatus("2.36-9+deb12u4", "3.0.21-1"));

  const page = await ui.open();
  const row = await rowOf(page, name);
  await row.locator(".state", { hasText: "held" }).waitFor();
  expect(await row.locator(".reason").textContent()).toContain(
    'the update brings in DEBIAN-CVE-2099-0002 (critical, openssl): held by hold_if_introduces = "high"',
  );
  const badge = row.locator("details.vulnerabilities");
  expect(await badge.getAttribute("class")).toContain("introduces");
  const summary = badge.locator("summary");
  expect(await summary.textContent()).toBe("fixes 1, 1 high; brings in 1, 1 critical");
  await summary.click();
  const lists = badge.locator(".vulns-list");
  expect(await lists.locator("h4").allTextContents()).toEqual(["Fixes (1)", "Brings in (1)"]);
  expect(await lists.first().locator("li").textContent()).toContain(
    "DSA-5514-1 high 7.8: glibc 2.36-9+deb12u1 (fixed in 2.36-9+deb12u3)",
  );
  expect(await lists.nth(1).locator("li.severity-critical").textContent()).toContain(
    "DEBIAN-CVE-2099-0002 critical 9.8: openssl 3.0.21-1 (fixed in 3.0.22-1)",
  );

  expect(inspect(name).Image).toBe(old);
  await row.getByRole("button", { name: `Update ${name}` }).click();
  await confirm(page, "Update");
  await row.locator(".state", { hasText: "up to date" }).waitFor({ timeout: 60_000 });
  expect(inspect(name).Image).toBe(newer);
  await page.close();
}, 240_000);

test("min_image_age passed over for an update that fixes a high one, said on the badge", async () => {
  const ref = `${sandbox().registry}/${ui.fx.name("vaged")}:latest`;
  debianImage(ref, dpkgStatus("2.36-9+deb12u1", "3.0.20-1"));
  const name = ui.run("vaged", ref, { labels: { "svc.min_image_age": "72h" } });
  debianImage(ref, dpkgStatus("2.36-9+deb12u4", "3.0.20-1"));

  const page = await ui.open();
  const row = await rowOf(page, name);
  const summary = row.locator("details.vulnerabilities summary");
  await summary.waitFor();
  expect(await summary.textContent()).toBe("fixes 1, 1 high; min_image_age passed over");
  // not held for its age: the page offers the update as any other
  expect(await row.locator(".state").textContent()).not.toContain("held");
  await page.close();
}, 240_000);
