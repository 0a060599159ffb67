/**
 * The dashboard in a real browser: Debian's Chromium driven by playwright-core (no browser is
 * ever downloaded), against svc run as a user runs it (tests/integration/e2e/support.ts) on the
 * sandbox engine and registry. One svc and one browser context per test file, closed in `close`
 * (svc stopped by pid); the Chromium behind the contexts is the process's one.
 */
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core";
import { freePort } from "../../harness.ts";
import type { RunOptions } from "../../support/fixture.ts";
import { baseFlags, Fixture, type SvcProcess, startSvc, stopAll, waitForPort } from "../e2e/support.ts";

export const CHROMIUM = "/usr/bin/chromium";
const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

export const DESKTOP = { width: 1280, height: 900 };
export const PHONE = { width: 390, height: 844 };

export interface Dashboard {
  fx: Fixture;
  svc: SvcProcess;
  /** the scope every container of this file carries: svc sees no other */
  scope: string;
  url: string;
  token: string;
  browser: BrowserContext;
  /** a new tab, signed in when `signIn` is true */
  open(options?: { signIn?: boolean; viewport?: { width: number; height: number } }): Promise<Page>;
  /** a container with this file's scope label (the fixture's `run`) */
  run(what: string, image: string, options?: RunOptions): string;
  /** a running container (of this file's scope) with a newer image of its tag in the registry */
  staleContainer(what: string, options?: RunOptions): { name: string; oldId: string; newId: string };
  close(): Promise<void>;
}

/** svc with the page and actions on, in its own scope, and a browser with a fresh profile. */
export async function startDashboard(what: string, extraFlags: string[] = []): Promise<Dashboard> {
  const fx = new Fixture(what);
  const scope = fx.prefix;
  const token = `ui-token-${scope}`;
  const port = freePort();
  const flags = [
    "--scope",
    scope,
    "--http-api-ui",
    "--http-api-update",
    "--http-api-token",
    token,
    "--http-api-port",
    String(port),
    ...extraFlags,
  ];
  const svc = startSvc([...baseFlags(), ...flags]);
  await waitForPort(port, svc);
  const browser = await (await sharedChromium()).newContext({ viewport: DESKTOP });
  const url = `http://127.0.0.1:${port}/`;
  const run = (name: string, image: string, options: RunOptions = {}) =>
    fx.run(name, image, { ...options, labels: { "svc.scope": scope, ...options.labels } });
  return {
    fx,
    svc,
    scope,
    url,
    token,
    browser,
    async open({ signIn = true, viewport = DESKTOP } = {}) {
      const page = await browser.newPage();
      await page.setViewportSize(viewport);
      await page.goto(url);
      if (signIn) await signInWith(page, token);
      return page;
    },
    run,
    staleContainer(what, options = {}) {
      const v1 = fx.image(what);
      const name = run(what, v1.ref, options);
      const v2 = fx.image(what);
      return { name, oldId: v1.id, newId: v2.id };
    },
    async close() {
      await browser.close().catch(() => {});
      await stopAll();
      fx.cleanup();
    },
  };
}

let chromiumStarted: Promise<Browser> | undefined;

/**
 * One Chromium for every page test of the process (a start costs about 4 CPU s here); each
 * dashboard gets a context of its own, as fresh as a new profile (no cookie, storage or cache
 * shared). Playwright stops the browser it launched, by its pid, when the test process exits.
 */
function sharedChromium(): Promise<Browser> {
  chromiumStarted ??= chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
  return chromiumStarted;
}

export async function signInWith(page: Page, token: string): Promise<void> {
  await page.getByLabel("API token").fill(token);
  await page.getByRole("button", { name: "Sign in" }).click();
}

/** The row of a container, once the list shows it. */
export async function rowOf(page: Page, name: string) {
  const row = page.locator(`tr[data-container="${name}"]`);
  // the first list is a dry run over every target (Swarm services too): slow on a loaded machine
  await row.waitFor({ timeout: 90_000 });
  return row;
}

/** Waits until the page shows one notice saying each of `texts` (an action's outcome). */
export async function noticeSaying(page: Page, texts: string | string[], timeout?: number): Promise<void> {
  let notice = page.locator(".notice");
  for (const text of [texts].flat()) notice = notice.filter({ hasText: text });
  await notice.waitFor(timeout === undefined ? undefined : { timeout });
}

/** Clicks the dialog's confirming button (the one that restarts). */
export async function confirm(page: Page, action: string): Promise<void> {
  const dialog = page.getByRole("dialog");
  await dialog.waitFor();
  await dialog.getByRole("button", { name: action }).click();
}

/** Clicks one of a row's other actions: its "More" menu first, then the item (as with the keyboard: Enter opens it). */
export async function menuAction(page: Page, row: string, label: string): Promise<void> {
  const more = page.getByLabel(`More actions for ${row}`, { exact: true });
  const item = page.getByRole("button", { name: `${label} ${row}`, exact: true });
  // The rows are drawn again when the page's own action ends (its items disabled until then): a
  // menu opened on the rows before closes with them, so it is opened again until the item takes
  // the click, as a person would.
  for (let attempt = 1; ; attempt++) {
    if (!(await item.isVisible())) await more.click();
    try {
      await item.click({ timeout: 5_000 });
      return;
    } catch (error) {
      if (attempt === 6) throw error;
    }
  }
}

/**
 * An svc of another host for the fleet page: the e2e flags on `dockerHost` (a private engine),
 * in the page's scope, its update API on `port` behind `token`, with `extra` flags; started once
 * it listens.
 */
export async function startPeerSvc(
  dockerHost: string,
  scope: string,
  token: string,
  port: number,
  extra: string[] = [],
): Promise<SvcProcess> {
  const flags = baseFlags().map((flag, i, all) => (all[i - 1] === "--docker-host" ? dockerHost : flag));
  const peer = startSvc([
    ...flags,
    "--scope",
    scope,
    "--http-api-update",
    "--http-api-token",
    token,
    "--http-api-port",
    String(port),
    ...extra,
  ]);
  await waitForPort(port, peer);
  return peer;
}
