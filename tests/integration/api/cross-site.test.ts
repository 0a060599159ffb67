/**
 * Requests whose authority is an identity proxy's header (the proxy sets it for its session
 * cookie, which the browser sends to any site's form), over a real socket: a cross-site form
 * changes nothing, however it is sent; svc's own page (same origin, its X-Svc-Request header, a
 * JSON body) acts; a bearer token is unchanged (docs/security.md). The forms are what a browser
 * sends for an auto-submitted `<form method=post>` of another site (Fetch's `Sec-Fetch-Site`,
 * HTML's form encodings); the browser itself drives them in tests/integration/ui/proxy.test.ts.
 */
import { afterAll, expect, test } from "bun:test";
import { createApp, listen } from "../../../src/api/index.ts";
import { defaultConfig } from "../../../src/config/index.ts";
import { Metrics } from "../../../src/metrics/index.ts";
import { freePort } from "../../harness.ts";
import { recordingLogger } from "../../support/logger.ts";
import { FakeRunner, TOKEN } from "../../unit/api/fakes.ts";

const metrics = new Metrics();
const runner = new FakeRunner(metrics);
const config = defaultConfig({
  http_api: {
    update: true,
    ui: true,
    token: TOKEN,
    trusted_proxy_header: "X-Forwarded-User",
    trusted_proxies: ["127.0.0.1"],
    trusted_proxy_role: "admin",
  },
});
const app = createApp({ config, runner, metrics, log: recordingLogger() });
const port = freePort();
listen(app, port, "127.0.0.1");
const origin = `http://127.0.0.1:${port}`;
const elsewhere = "http://127.0.0.1:9";
afterAll(() => app.stop(true));

const FORMS = {
  "application/x-www-form-urlencoded": "container=web&for=365d",
  "multipart/form-data; boundary=x":
    '--x\r\nContent-Disposition: form-data; name="container"\r\n\r\nweb\r\n--x\r\nContent-Disposition: form-data; name="for"\r\n\r\n365d\r\n--x--\r\n',
  "text/plain": "container=web\r\nfor=365d\r\n",
};

const actions = () => ({
  updates: runner.calls.filter((c) => c.options?.dryRun !== true).length,
  snoozes: runner.snoozes.length,
  skips: runner.skips.length,
  rollbacks: runner.rollbacks.length,
});

const send = (path: string, headers: Record<string, string>, body?: string) =>
  fetch(`${origin}${path}`, { method: "POST", headers: { "x-forwarded-user": "alice", ...headers }, body });

test("a cross-site form with the proxy's user: refused, for every action and form encoding, with or without Sec-Fetch-Site", async () => {
  const before = actions();
  for (const path of ["/v1/snooze", "/v1/update", "/v1/skip", "/v1/rollback"]) {
    for (const [type, body] of Object.entries(FORMS)) {
      const sites: Record<string, string>[] = [
        { "sec-fetch-site": "cross-site", origin: elsewhere },
        { origin: elsewhere },
        { "sec-fetch-site": "same-site", origin: elsewhere },
        {},
      ];
      for (const site of sites) {
        const response = await send(path, { "content-type": type, ...site }, body);
        expect({ path, type, site, status: response.status }).toEqual({ path, type, site, status: 403 });
        expect(((await response.json()) as { error: string }).error).toContain("svc's own page");
      }
    }
  }
  expect(actions()).toEqual(before);
});

test("from svc's own origin, a form body or a request without X-Svc-Request is refused too: a same-origin page of another app behind the proxy could send those", async () => {
  const before = actions();
  expect(
    (
      await send(
        "/v1/snooze",
        {
          "sec-fetch-site": "same-origin",
          origin,
          "x-svc-request": "1",
          "content-type": "application/x-www-form-urlencoded",
        },
        FORMS["application/x-www-form-urlencoded"],
      )
    ).status,
  ).toBe(403);
  expect((await send("/v1/update", { "sec-fetch-site": "same-origin", origin })).status).toBe(403);
  expect((await send("/v1/update", { origin, "x-svc-request": "1" })).status).toBe(200);
  expect(actions()).toEqual({ ...before, updates: before.updates + 1 });
});

test("svc's page (same origin, X-Svc-Request, JSON) acts; a bearer token is unchanged, form and all", async () => {
  const before = actions();
  const page = await send(
    "/v1/snooze",
    { "sec-fetch-site": "same-origin", origin, "x-svc-request": "1", "content-type": "application/json" },
    JSON.stringify({ container: "web", for: "1h" }),
  );
  expect(page.status).toBe(200);
  const token = await fetch(`${origin}/v1/snooze`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${TOKEN}`,
      "content-type": "application/x-www-form-urlencoded",
      "sec-fetch-site": "cross-site",
      origin: elsewhere,
    },
    body: "container=db&for=1h",
  });
  expect(token.status).toBe(200);
  expect(actions()).toEqual({ ...before, snoozes: before.snoozes + 2 });
});
