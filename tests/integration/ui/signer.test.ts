/**
 * A signer change held with no configuration, and accepted on the page (Chromium): the newer
 * image of a repository first seen signed by its release workflow is signed keyless by another
 * identity (a private Sigstore on loopback, its trusted root given to svc); the row says so, its
 * menu accepts the new signer, and the update then runs.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { inspect } from "../../harness.ts";
import { attachBundle, type Sigstore, startSigstore, trustedRootJson } from "../../support/sigstore.ts";
import { confirm, type Dashboard, menuAction, noticeSaying, rowOf, startDashboard } from "./support.ts";

const RELEASE = "https://github.com/acme/app/.github/workflows/release.yml@refs/tags/v1";
const FORK = "https://github.com/mallory/app/.github/workflows/release.yml@refs/tags/v1";

let ui: Dashboard;
let sigstore: Sigstore;

beforeAll(async () => {
  sigstore = await startSigstore();
  const root = join(mkdtempSync(join(tmpdir(), "svc-trusted-root-")), "trusted_root.json");
  writeFileSync(root, trustedRootJson(sigstore.root));
  ui = await startDashboard("ui-signer", ["--trusted-root", root]);
  rootFile = root;
}, 120_000);

let rootFile = "";
afterAll(async () => {
  await ui?.close();
  sigstore?.stop();
  if (rootFile) rmSync(dirname(rootFile), { recursive: true, force: true });
}, 120_000);

test("signed by another identity: held on the row, accepted from its menu, then updated", async () => {
  const v1 = ui.fx.image("signed");
  const name = ui.run("signed", v1.ref);
  const repository = v1.ref.slice(0, v1.ref.lastIndexOf(":"));
  const v2 = ui.fx.image("signed");
  await attachBundle(repository, v2.digest!, await sigstore.sign(v2.digest!, { identity: RELEASE }));

  // the page's first list (a dry run) verifies the release workflow's signature and remembers it
  const page = await ui.open();
  const row = await rowOf(page, name);
  await row.getByText(`signed by ${RELEASE}`).waitFor();

  const v3 = ui.fx.image("signed");
  await attachBundle(repository, v3.digest!, await sigstore.sign(v3.digest!, { identity: FORK }));
  await menuAction(page, name, "Check");
  await row.getByText("held for its signature").waitFor({ timeout: 60_000 });

  await menuAction(page, name, "Accept the new signer of");
  const dialog = page.getByRole("dialog");
  expect(await dialog.textContent()).toContain(`signer changed: ${RELEASE}`);
  expect(await dialog.textContent()).toContain(`-> ${FORK}`);
  await confirm(page, "Accept");
  await noticeSaying(page, `is now expected to be signed by ${FORK}`, 60_000);
  await row.getByText(`signed by ${FORK}`).waitFor({ timeout: 60_000 });

  await row.getByRole("button", { name: `Update ${name}`, exact: true }).click();
  await confirm(page, "Update");
  await noticeSaying(page, `${name}: updated`, 120_000);
  // the image FORK signed runs, not the one before it
  expect(inspect(name).Image).toBe(v3.id);
  await page.close();
}, 180_000);
