/**
 * A fleet in one view: a second svc on a second engine (a sandbox of its own) is a peer of the
 * svc the browser talks to. Its containers show beside the local ones, the same name on both
 * hosts stays two rows, an update of the peer's container goes through the local svc with the
 * peer's token (the browser never holds it), and a peer stopped while the page is open is shown
 * unreachable with its last known state while the local host still works.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { freePort, inspect } from "../../harness.ts";
import { QUICK_STOP_CMD, type SvcProcess, stopProcess } from "../e2e/support.ts";
import { PrivateSandbox } from "../safety/support.ts";
import { confirm, type Dashboard, noticeSaying, startDashboard, startPeerSvc } from "./support.ts";

const PEER = "peer1";
let ui: Dashboard;
let peerEngine: PrivateSandbox;
let peerSvc: SvcProcess;
const peerToken = `peer-token-${crypto.randomUUID()}`;
/** the same name on both hosts */
let name: string;
let peerImage: string;

beforeAll(async () => {
  peerEngine = new PrivateSandbox();
  peerEngine.up();
  const peerPort = freePort();
  ui = await startDashboard("peers", [
    "--http-api-metrics",
    "--peers",
    `name=${PEER},url=http://127.0.0.1:${peerPort},token=${peerToken}`,
    // the default 2 s is short on a loaded test machine; a stopped peer still refuses at once
    "--peer-timeout",
    "15s",
  ]);
  name = ui.fx.name("web");
  ui.run("web", ui.fx.image("web").ref);
  peerImage = `${peerEngine.registry}/${name}:latest`;
  peerEngine.buildImage(peerImage, [QUICK_STOP_CMD]);
  peerEngine.run(name, peerImage, { network: "none", labels: { "svc.scope": ui.scope } });
  peerSvc = await startPeerSvc(peerEngine.dockerHost, ui.scope, peerToken, peerPort);
}, 180_000);

afterAll(async () => {
  await stopProcess(peerSvc?.proc);
  await ui?.close();
  peerEngine?.down();
}, 180_000);

describe("peers on the dashboard", () => {
  test("the peer's containers show beside the local ones, by host; an update on the peer goes through this svc with the peer's token", async () => {
    const oldId = peerEngine.inspect(name).Image;
    const newId = peerEngine.buildImage(peerImage, [QUICK_STOP_CMD]);
    const page = await ui.open();
    const local = page.locator(`tr[data-container="${name}"]:not([data-host="${PEER}"])`);
    const remote = page.locator(`tr[data-container="${name}"][data-host="${PEER}"]`);
    await local.waitFor();
    await remote.locator(".badge").waitFor();
    expect(await local.locator(".badge").count()).toBe(0);
    // at a glance, per host: pressed, the table shows that host's rows only
    const hosts = page.getByRole("group", { name: "Updates per host" });
    expect(await hosts.locator(`button[data-host="${PEER}"]`).textContent()).toBe(`1 on ${PEER}`);
    await hosts.locator(`button[data-host="${PEER}"]`).click();
    expect(await local.count()).toBe(0);
    await hosts.locator(`button[data-host="${PEER}"]`).click();
    await local.waitFor();

    // the browser is never given the peer's token
    const peers = await (await fetch(`${ui.url}v1/peers`, { headers: { authorization: `Bearer ${ui.token}` } })).text();
    expect(peers).not.toContain(peerToken);

    await page.getByRole("button", { name: `Update ${name} on ${PEER}` }).click();
    await confirm(page, "Update");
    await noticeSaying(page, `${name} on ${PEER}: updated`, 60_000);
    expect(peerEngine.inspect(name).Image).toBe(newId);
    expect(peerEngine.inspect(name).Image).not.toBe(oldId);
    // the local container of the same name is untouched
    expect(inspect(name).State.Running).toBe(true);
    await page.close();
  }, 120_000);

  test("a peer stopped while the page is open: shown unreachable with its last known containers, the local host still works", async () => {
    const page = await ui.open();
    await page.locator(`tr[data-container="${name}"][data-host="${PEER}"]`).waitFor();
    await stopProcess(peerSvc?.proc);
    await page.getByRole("button", { name: "Check now" }).click();
    const note = page.locator(`.peers [data-peer="${PEER}"]`);
    await note.waitFor();
    expect(await note.textContent()).toContain(`${PEER} is unreachable since`);
    // its last known row stays, marked, and offers nothing to do
    const remote = page.locator(`tr[data-container="${name}"][data-host="${PEER}"]`);
    expect(await remote.getAttribute("class")).toContain("unreachable");
    expect(await remote.getByRole("button").count()).toBe(0);
    // the local host answers as before
    await page.getByRole("button", { name: `Check ${name}`, exact: true }).click();
    await noticeSaying(page, `Checked ${name}.`);
    const metrics = await (
      await fetch(`${ui.url}v1/metrics`, { headers: { authorization: `Bearer ${ui.token}` } })
    ).text();
    expect(metrics).toContain(`svc_peer_up{peer="${PEER}"} 0`);
    await page.close();
  }, 60_000);
});
