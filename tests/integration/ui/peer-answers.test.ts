/**
 * What a peer answers cannot turn the page against its user (docs/security.md): a peer that
 * refuses its token does not sign the person out of their own svc, a peer entry svc never
 * answers is left out and named while the other rows show, and random overview entries (seeded:
 * the seed is in the test's name, SVC_FUZZ_SEED replays it) never stop the rows beside them nor
 * put markup in the page. The peer is a loopback stand-in that answers as a hostile svc would.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Page } from "playwright-core";
import { freePort } from "../../harness.ts";
import { answerOf, randomEntries, validEntry } from "../../support/overviews.ts";
import { fuzzSeed, prng } from "../../support/random.ts";
import { QUICK_STOP_CMD } from "../e2e/support.ts";
import { confirm, type Dashboard, menuAction, rowOf, startDashboard } from "./support.ts";

const PEER = "fz";
const peerToken = `peer-token-${crypto.randomUUID()}`;
const rng = prng(1);
const good = { ...validEntry(rng, 0), name: "good", state: "stale" as const, available_version: "2.0.0" };
/** what once stopped the whole table from rendering: hooks that are not a list */
const hostile = { ...validEntry(rng, 1), name: "hooks", policy: { ...good.policy, hooks: "pre_update" } };

/** what the peer lists: each test sets it */
let peerContainers: unknown[] = [good];
let ui: Dashboard;
let localName: string;
const peerPort = freePort();
const peer = Bun.serve({
  hostname: "127.0.0.1",
  port: peerPort,
  fetch(request) {
    const path = new URL(request.url).pathname;
    if (request.headers.get("authorization") !== `Bearer ${peerToken}`)
      return Response.json({ error: "unauthorized" }, { status: 401 });
    // an action the peer refuses as if svc's token for it were wrong
    if (request.method === "POST")
      return Response.json(
        { error: "unauthorized" },
        { status: 401, headers: { "www-authenticate": 'Bearer realm="svc"' } },
      );
    if (path === "/v1/containers") return Response.json({ ...answerOf([]), containers: peerContainers });
    if (path === "/v1/progress") return Response.json({ running: null });
    return Response.json({ size: 0, reports: [] });
  },
});

beforeAll(async () => {
  ui = await startDashboard("peer-answers", [
    "--peers",
    `name=${PEER},url=http://127.0.0.1:${peerPort},token=${peerToken}`,
  ]);
  localName = ui.fx.name("web");
  ui.run("web", ui.fx.image("web", { changes: [QUICK_STOP_CMD] }).ref);
}, 120_000);

afterAll(async () => {
  peer.stop(true);
  await ui?.close();
}, 60_000);

/** Fails the test on any error the page's script throws. */
function watchErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on("pageerror", (error) => errors.push(error.message));
  return errors;
}

describe("a peer's answers on the page", () => {
  test("a peer that refuses its token: a 502 naming the peer, and the person stays signed in to their own svc", async () => {
    const page = await ui.open();
    await page.locator(`tr[data-container="good"][data-host="${PEER}"]`).waitFor();
    await menuAction(page, `good on ${PEER}`, "Snooze updates of");
    await confirm(page, "Snooze");
    await page
      .locator(".notice.error")
      .filter({ hasText: `peer ${PEER} refused the token svc holds for it (401)` })
      .waitFor();
    expect(await page.getByLabel("API token").count()).toBe(0);
    expect(await page.evaluate(() => sessionStorage.getItem("svc.token"))).toBe(ui.token);
    await rowOf(page, localName);
    await page.close();
  }, 60_000);

  test("an entry svc never answers is left out and named; the rows beside it show", async () => {
    peerContainers = [good, hostile];
    const page = await ui.open();
    const errors = watchErrors(page);
    await rowOf(page, localName);
    await page.locator(`tr[data-container="good"][data-host="${PEER}"] .badge`).waitFor();
    expect(await page.locator('tr[data-container="hooks"]').count()).toBe(0);
    const note = page.locator(`.peers .peer-dropped[data-peer="${PEER}"]`);
    await note.waitFor();
    expect(await note.textContent()).toContain(
      "container hooks: policy.hooks: Invalid input: expected array, received string",
    );
    expect(errors).toEqual([]);
    await page.close();
  }, 60_000);
});

const SEED = fuzzSeed(Date.now() % 1_000_000);
const ROUNDS = 12;

test(`the page's rendering fuzz (seed ${SEED}): random overview entries, here and on a peer, never stop the rows beside them nor put markup in the page`, async () => {
  const random = prng(SEED);
  const page = await ui.open();
  const errors = watchErrors(page);
  await rowOf(page, localName);
  let local = answerOf([]);
  let remote = answerOf([]);
  // the page is fed as it is, past svc's own reading of a peer's answer: the page must hold by itself
  await page.route("**/v1/containers", (route) => route.fulfill({ json: local }));
  await page.route("**/v1/peers", (route) =>
    route.fulfill({
      json: {
        peers: [
          {
            name: PEER,
            up: true,
            busy: false,
            checked_at: remote.checked_at,
            unreachable_since: null,
            error: null,
            answered_at: remote.checked_at,
            data: remote,
            dropped: [],
          },
        ],
      },
    }),
  );
  for (let round = 0; round < ROUNDS; round++) {
    const replay = `round ${round} of seed ${SEED}`;
    const here = randomEntries(random, 1 + random.int(10));
    const there = randomEntries(random, 1 + random.int(10));
    // a marker on each host says the round's answers are on the page
    const marker = { entry: { ...validEntry(random, 99), name: `round-${round}` }, kept: `round-${round}` };
    local = answerOf([...here, marker], "here");
    remote = answerOf([...there, marker]);
    await page.getByRole("button", { name: "Check now" }).click();
    await page.locator(`tr[data-container="round-${round}"][data-host="here"]`).waitFor();
    await page.locator(`tr[data-container="round-${round}"][data-host="${PEER}"]`).waitFor();
    const rows = await page.evaluate<{ name: string; host: string; broken: boolean }[]>(
      `[...document.querySelectorAll("tbody tr[data-container]")].map((tr) => ({ name: tr.dataset.container, host: tr.dataset.host, broken: tr.classList.contains("broken") }))`,
    );
    for (const [host, entries] of [
      ["here", here],
      [PEER, there],
    ] as const) {
      for (const name of entries.map((e) => e.kept).filter((n): n is string => n !== null)) {
        expect(
          rows.filter((row) => row.name === name && row.host === host && !row.broken),
          `${replay}: ${name} on ${host}`,
        ).toHaveLength(1);
      }
    }
    // what the hostile text would have done as markup: run a script, add elements, a javascript: link
    const injected = await page.evaluate(
      `({ pwned: window.__pwned ?? null, elements: document.querySelectorAll("tbody img, tbody script, tbody svg, tbody iframe, .peers img, .peers script").length, hrefs: [...document.querySelectorAll("a[href]")].map((a) => a.href).filter((href) => !/^https?:/.test(href)) })`,
    );
    expect(injected, replay).toEqual({ pwned: null, elements: 0, hrefs: [] });
  }
  expect(errors, `seed ${SEED}`).toEqual([]);
  await page.close();
}, 180_000);
