/**
 * The page behind an identity proxy that signs people in with its session cookie (as Authelia,
 * Authentik and oauth2-proxy are usually deployed), in Chromium: a loopback stand-in proxy sets
 * `X-Forwarded-User` only for requests that carry its cookie and passes them on to svc
 * (`trusted_proxy_role = "admin"`). The page loads, lists and acts through it; a page of another
 * origin (another loopback port: same site, so the browser sends the cookie) auto-submits forms
 * to svc's actions through the proxy, and changes nothing (docs/security.md).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { inspect } from "../../harness.ts";
import { confirm, type Dashboard, noticeSaying, rowOf, startDashboard } from "./support.ts";

const PROXY_HEADER = "X-Forwarded-User";
const SESSION = `session-${crypto.randomUUID()}`;

let ui: Dashboard;
let proxy: ReturnType<typeof Bun.serve>;
let attacker: ReturnType<typeof Bun.serve>;
/** What the stand-in proxy passed on, and whether it was signed in (had the cookie) */
const passed: { method: string; path: string; signedIn: boolean; status: number }[] = [];

/** The stand-in: /login sets the session cookie; with it, a request goes on to svc as alice; without, 401. */
function standInProxy(upstream: string) {
  return Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      const url = new URL(request.url);
      if (url.pathname === "/login")
        return new Response(null, {
          status: 302,
          headers: { location: "/", "set-cookie": `proxy_session=${SESSION}; Path=/; HttpOnly` },
        });
      const signedIn = (request.headers.get("cookie") ?? "").split(/;\s*/).includes(`proxy_session=${SESSION}`);
      if (!signedIn) {
        passed.push({ method: request.method, path: url.pathname, signedIn, status: 401 });
        return new Response("sign in at /login", { status: 401 });
      }
      const headers = new Headers(request.headers);
      headers.delete(PROXY_HEADER);
      headers.delete("host");
      headers.set(PROXY_HEADER, "alice");
      headers.set("x-forwarded-host", url.host);
      const body = request.method === "GET" || request.method === "HEAD" ? undefined : await request.arrayBuffer();
      const answer = await fetch(`${upstream}${url.pathname}${url.search}`, {
        method: request.method,
        headers,
        body,
        redirect: "manual",
      });
      passed.push({ method: request.method, path: url.pathname, signedIn, status: answer.status });
      const out = new Headers(answer.headers);
      out.delete("content-encoding");
      out.delete("content-length");
      return new Response(await answer.arrayBuffer(), { status: answer.status, headers: out });
    },
  });
}

/** Another origin's page: one form, auto-submitted to the proxy (its cookie goes with it). */
function attackerSite(target: () => string) {
  return Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(request) {
      const url = new URL(request.url);
      const action = url.searchParams.get("action") ?? "update";
      const enctype = url.searchParams.get("enctype") ?? "application/x-www-form-urlencoded";
      const container = url.searchParams.get("container") ?? "";
      const html = `<!DOCTYPE html><html><body><form method="post" enctype="${enctype}" action="${target()}/v1/${action}"><input name="container" value="${container}"><input name="for" value="365d"></form><script>document.forms[0].submit()</script></body></html>`;
      return new Response(html, { headers: { "content-type": "text/html" } });
    },
  });
}

beforeAll(async () => {
  ui = await startDashboard("proxy", [
    "--http-api-trusted-proxy-header",
    PROXY_HEADER,
    "--http-api-trusted-proxies",
    "127.0.0.1",
    "--http-api-trusted-proxy-role",
    "admin",
  ]);
  proxy = standInProxy(ui.url.replace(/\/$/, ""));
  attacker = attackerSite(() => `http://127.0.0.1:${proxy.port}`);
}, 120_000);

afterAll(async () => {
  proxy?.stop(true);
  attacker?.stop(true);
  await ui?.close();
}, 120_000);

test("behind a cookie-signing proxy the page loads, lists and acts; another origin's auto-submitted forms change nothing", async () => {
  const mine = ui.staleContainer("mine");
  const theirs = ui.staleContainer("theirs");
  const page = await ui.browser.newPage();
  await page.goto(`http://127.0.0.1:${proxy.port}/login`);
  // no token asked: the proxy's cookie went with the page's requests, the proxy named alice
  await rowOf(page, mine.name);
  await rowOf(page, theirs.name);
  expect(await page.getByLabel("API token").count()).toBe(0);
  await page.getByRole("button", { name: `Update ${mine.name}` }).click();
  await confirm(page, "Update");
  await noticeSaying(page, `${mine.name}: updated`, 60_000);
  expect(inspect(mine.name).Image).toBe(mine.newId);
  expect(passed.filter((r) => r.method === "POST" && r.path === "/v1/update")).toEqual([
    { method: "POST", path: "/v1/update", signedIn: true, status: 200 },
  ]);

  const before = passed.length;
  const attempts = [
    { action: "update", enctype: "application/x-www-form-urlencoded" },
    { action: "update", enctype: "text/plain" },
    { action: "snooze", enctype: "application/x-www-form-urlencoded" },
    { action: "skip", enctype: "multipart/form-data" },
  ];
  for (const { action, enctype } of attempts) {
    const tab = await ui.browser.newPage();
    const answered = tab.waitForResponse((response) => response.url().endsWith(`/v1/${action}`));
    await tab.goto(
      `http://127.0.0.1:${attacker.port}/?action=${action}&enctype=${encodeURIComponent(enctype)}&container=${theirs.name}`,
    );
    expect((await answered).status()).toBe(403);
    await tab.close();
  }
  // the browser did send the proxy's cookie with each form: the proxy signed alice in, svc said no
  expect(passed.slice(before).filter((r) => r.method === "POST")).toEqual(
    attempts.map(({ action }) => ({ method: "POST", path: `/v1/${action}`, signedIn: true, status: 403 })),
  );
  expect(inspect(theirs.name).Image).toBe(theirs.oldId);
  const listed = (await (
    await fetch(`${ui.url}v1/containers?container=${theirs.name}`, { headers: { authorization: `Bearer ${ui.token}` } })
  ).json()) as { containers: { state: string; reason: string | null }[] };
  expect(listed.containers[0]).toMatchObject({ state: "stale" });
  expect(listed.containers[0]!.reason ?? "").not.toContain("snoozed");
  await page.close();
}, 180_000);
