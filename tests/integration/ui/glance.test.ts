/**
 * The page a person keeps open (docs/dashboard.md), in Chromium against svc on the sandbox
 * engine and registry: the summary bar's counts and their filters, a compose project grouped and
 * updated as a stack in dependency order, a viewer who sees everything and can press nothing, a
 * user an identity proxy signed in (and the same header from an address that is not the proxy),
 * the phone layout, and words instead of raw timestamps and digests.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import http from "node:http";
import { join } from "node:path";
import { docker, inspect, sandbox } from "../../harness.ts";
import type { RunOptions } from "../../support/fixture.ts";
import { tempDir } from "../../temp.ts";
import { confirm, type Dashboard, noticeSaying, PHONE, rowOf, signInWith, startDashboard } from "./support.ts";

let ui: Dashboard;
const VIEWER = "viewer-token-of-the-family";
const PROXY_HEADER = "X-Forwarded-User";
const composeWorks = docker(["compose", "version"], { allowFailure: true }).code === 0;
const auditLog = join(tempDir("svc-ui-audit-"), "audit.log");

beforeAll(async () => {
  ui = await startDashboard("glance", [
    "--http-api-metrics",
    "--audit-log",
    auditLog,
    "--http-api-viewer-tokens",
    VIEWER,
    "--http-api-trusted-proxy-header",
    PROXY_HEADER,
    "--http-api-trusted-proxies",
    "127.0.0.1",
  ]);
}, 120_000);

afterAll(async () => {
  await ui?.close();
}, 120_000);

const staleContainer = (what: string, options: RunOptions = {}) => ui.staleContainer(what, options);

const textOf = (page: import("playwright-core").Page) => page.evaluate<string>("document.body.innerText");

describe("the page a person keeps open", () => {
  test("the summary counts updates by kind, held and failed, and each count filters the table", async () => {
    const digest = staleContainer("digest");
    const held = staleContainer("held", { labels: { "svc.monitor_only": "true" } });
    ui.fx.image("major", { tag: "1.0.0" });
    const major = ui.run("major", ui.fx.image("major", { tag: "1.0.0" }).ref, {
      labels: { "svc.tag_policy": "semver:major" },
    });
    ui.fx.image("major", { tag: "2.0.0" });
    const fresh = ui.run("fresh", ui.fx.image("fresh").ref);
    const page = await ui.open();
    await rowOf(page, fresh);
    const summary = page.getByRole("region", { name: "At a glance" });
    await summary.getByText("3 updates available").waitFor();
    const count = (bucket: string) => summary.locator(`button[data-bucket="${bucket}"]`);
    expect(await count("major").textContent()).toBe("1 major");
    expect(await count("digest").textContent()).toBe("2 digest");
    expect(await count("minor").textContent()).toBe("0 minor");
    expect(await count("held").textContent()).toBe("1 held or pending");
    expect(await count("failed").textContent()).toBe("0 failed or rolled back");
    const shown = () =>
      page
        .locator("tr[data-container]")
        .evaluateAll((rows) => rows.map((row) => row.getAttribute("data-container")).sort());

    await count("major").click();
    expect(await count("major").getAttribute("aria-pressed")).toBe("true");
    expect(await shown()).toEqual([major]);
    await count("digest").click();
    expect(await shown()).toEqual([digest.name, held.name].sort());
    await count("held").click();
    expect(await shown()).toEqual([held.name]);
    // its row says why, in words
    expect(await (await rowOf(page, held.name)).locator(".state").textContent()).toBe("held: monitor only");
    // pressed again: everything
    await count("held").click();
    expect(await shown()).toEqual([digest.name, held.name, major, fresh].sort());
    await page.close();
  }, 120_000);

  test.skipIf(!composeWorks)(
    "a compose project is one group; Update stack updates its two stale services in dependency order",
    async () => {
      const dir = tempDir("svc-ui-compose-");
      const project = ui.fx.name("shop");
      const db = ui.fx.image("shop-db");
      const api = ui.fx.image("shop-api");
      const web = ui.fx.image("shop-web");
      const service = (image: string, extra: Record<string, unknown> = {}) => ({
        image,
        labels: { "svc.scope": ui.scope },
        stop_grace_period: "1s",
        ...extra,
      });
      const file = {
        name: project,
        services: {
          db: service(db.ref),
          api: service(api.ref, { depends_on: ["db"] }),
          web: service(web.ref, { depends_on: ["api"] }),
        },
      };
      writeFileSync(join(dir, "compose.yaml"), JSON.stringify(file));
      const compose = (...args: string[]) => docker(["compose", "--project-directory", dir, "-p", project, ...args]);
      compose("up", "-d");
      try {
        const names = Object.fromEntries(
          compose("ps", "-a", "--format", "{{.Service}} {{.Name}}")
            .stdout.split("\n")
            .filter(Boolean)
            .map((line) => line.split(" ") as [string, string]),
        );
        const newDb = ui.fx.image("shop-db");
        const newApi = ui.fx.image("shop-api");
        const page = await ui.open();
        const group = page.locator(`tbody[data-group="${project}"]`);
        await group.locator("tr[data-container]").nth(2).waitFor();
        expect(
          await group
            .locator("tr[data-container]")
            .evaluateAll((rows) => rows.map((row) => row.getAttribute("data-container")).sort()),
        ).toEqual([names.api, names.db, names.web].sort());
        const heading = group.locator("tr.group-heading");
        expect(await heading.textContent()).toContain("compose project");
        expect(await heading.textContent()).toContain("3 containers · 2 updates");
        // folded away and back, with the keyboard
        const toggle = heading.locator(".group-toggle");
        await toggle.focus();
        await page.keyboard.press("Enter");
        expect(await group.locator("tr[data-container]").count()).toBe(0);
        expect(await toggle.getAttribute("aria-expanded")).toBe("false");
        await page.keyboard.press("Enter");
        await group.locator("tr[data-container]").nth(2).waitFor();

        await page.getByRole("button", { name: `Update stack ${project}`, exact: true }).click();
        await confirm(page, "Update");
        await noticeSaying(page, [`${names.db}: updated`, `${names.api}: updated`], 90_000);
        const after = { db: inspect(names.db!), api: inspect(names.api!), web: inspect(names.web!) };
        expect([after.db.Image, after.api.Image, after.web.Image]).toEqual([newDb.id, newApi.id, web.id]);
        // the engine's start times: the dependency first
        expect(Date.parse(after.db.State.StartedAt)).toBeLessThan(Date.parse(after.api.State.StartedAt));
        // the audit log names who asked, then the engine actions of that cycle
        const audit = readFileSync(auditLog, "utf8")
          .trim()
          .split("\n")
          .map((line) => JSON.parse(line).fields);
        expect(audit).toContainEqual(
          expect.objectContaining({
            action: "request",
            actor: "admin token",
            request: "POST /v1/update",
            trigger: "api",
          }),
        );
        expect(audit.filter((entry) => entry.action === "start").map((entry) => entry.container)).toEqual(
          expect.arrayContaining([names.db, names.api]),
        );
        await heading.getByText("3 containers", { exact: true }).waitFor();
        await page.close();
      } finally {
        compose("down", "--remove-orphans", "-t", "1");
      }
    },
    180_000,
  );

  test("a viewer token sees the rows and no action; its API calls are refused 403", async () => {
    const stale = staleContainer("viewed");
    const page = await ui.open({ signIn: false });
    await signInWith(page, VIEWER);
    const row = await rowOf(page, stale.name);
    await page.getByText("you are signed in as viewer token 1, a viewer").waitFor();
    expect(await row.locator(".badge").count()).toBe(1);
    // nothing that changes anything: no Update, Skip, Snooze, Roll back, no bulk or stack update
    expect(await page.getByRole("button", { name: /^(Update|Skip|Snooze|Roll back)/ }).count()).toBe(0);
    // the menu with the keyboard: Enter opens it, Tab reaches its items, Escape closes it and gives the focus back
    await page.getByLabel(`More actions for ${stale.name}`).focus();
    await page.keyboard.press("Enter");
    expect(await row.locator(".menu-items button").allTextContents()).toEqual(["Details", "History"]);
    await page.keyboard.press("Tab");
    expect(await page.evaluate<string>("document.activeElement.textContent")).toBe("Details");
    await page.keyboard.press("Escape");
    expect(await row.locator(".menu-items").isVisible()).toBe(false);
    expect(await page.evaluate<string>("document.activeElement.getAttribute('aria-label')")).toBe(
      `More actions for ${stale.name}`,
    );
    expect(await page.getByRole("checkbox", { name: `Select ${stale.name}` }).isDisabled()).toBe(true);
    // and the API says no, whatever the page shows
    const status = await page.evaluate<number, string>(
      async ([token, name]) =>
        (
          await fetch("/v1/update", {
            method: "POST",
            headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
            body: JSON.stringify({ container: [name] }),
          })
        ).status,
      [VIEWER, stale.name] as never,
    );
    expect(status).toBe(403);
    for (const path of ["skip", "snooze", "rollback", "check"]) {
      expect(
        (await fetch(`${ui.url}v1/${path}`, { method: "POST", headers: { authorization: `Bearer ${VIEWER}` } })).status,
      ).toBe(403);
    }
    expect(inspect(stale.name).Image).toBe(stale.oldId);
    await page.close();
  }, 120_000);

  test("signed in by the identity proxy's header from its address; the same header from another address is refused", async () => {
    const page = await ui.browser.newPage();
    await page.setExtraHTTPHeaders({ [PROXY_HEADER]: "alice" });
    await page.goto(ui.url);
    // no token asked: the proxy signed alice in, as a viewer (trusted_proxy_role's default)
    await page.getByText("you are signed in as alice, a viewer").waitFor();
    await page.getByRole("table").waitFor();
    expect(await page.getByLabel("API token").count()).toBe(0);
    await page.close();

    // from 127.0.0.2, which is not the configured proxy
    const port = new URL(ui.url).port;
    const status = await new Promise<number>((resolve, reject) =>
      http
        .get(
          {
            host: "127.0.0.1",
            port,
            path: "/v1/session",
            localAddress: "127.0.0.2",
            headers: { [PROXY_HEADER]: "alice" },
          },
          (response) => (response.resume(), resolve(response.statusCode ?? 0)),
        )
        .on("error", reject),
    );
    expect(status).toBe(401);
  }, 60_000);

  test("a registry's rate limit is on the page, with a warning when a check would run out, and in the metrics", async () => {
    // the sandbox registry behind a proxy that answers as Docker Hub does: its count on every manifest
    const upstream = sandbox().registry;
    const hub = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      async fetch(request) {
        const url = new URL(request.url);
        const headers = new Headers(request.headers);
        headers.delete("host");
        const answer = await fetch(`http://${upstream}${url.pathname}${url.search}`, {
          method: request.method,
          headers,
          redirect: "manual",
        });
        const out = new Headers(answer.headers);
        out.delete("content-encoding");
        if (url.pathname.includes("/manifests/")) {
          out.set("ratelimit-limit", "100;w=21600");
          out.set("ratelimit-remaining", "0;w=21600");
        }
        return new Response(request.method === "HEAD" ? null : await answer.arrayBuffer(), {
          status: answer.status,
          headers: out,
        });
      },
    });
    try {
      const image = ui.fx.image("limited");
      const viaHub = image.ref.replace(upstream, `127.0.0.1:${hub.port}`);
      docker(["tag", image.ref, viaHub]);
      const name = ui.run("limited", viaHub);
      const page = await ui.open();
      await rowOf(page, name);
      const warning = page.locator(".limits .limit.low");
      await warning.waitFor();
      expect(await warning.textContent()).toBe(
        `127.0.0.1:${hub.port}: 0 of 100 requests left (per 6 h): a check asks for 1 image there and would run out`,
      );
      expect(await warning.getAttribute("role")).toBe("alert");
      const metrics = await (
        await fetch(`${ui.url}v1/metrics`, { headers: { authorization: `Bearer ${ui.token}` } })
      ).text();
      expect(metrics).toContain(`svc_registry_ratelimit_remaining{registry="127.0.0.1:${hub.port}"} 0\n`);
      await page.close();
      docker(["rm", "-f", name]);
      docker(["rmi", viaHub], { allowFailure: true });
    } finally {
      hub.stop(true);
    }
  }, 120_000);

  test("no raw timestamp or full digest in the page's text; on a phone, nothing scrolls sideways", async () => {
    staleContainer("words", { labels: { "svc.min_image_age": "72h" } });
    for (const viewport of [undefined, PHONE]) {
      const page = await ui.open(viewport ? { viewport } : {});
      await page.locator("tr[data-container]").first().waitFor();
      await page
        .getByText(/held: min age 72 h, eligible in (3 d|2 d 23 h)/)
        .first()
        .waitFor();
      const text = await textOf(page);
      expect(text).not.toMatch(/\d{4}-\d{2}-\d{2}T\d{2}:\d{2}/);
      expect(text).not.toMatch(/[0-9a-f]{64}/);
      expect(text).not.toContain("(dry run)");
      if (viewport) {
        const widths = await page.evaluate<{ scroll: number; client: number }>(
          "({ scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth })",
        );
        expect(widths.scroll).toBeLessThanOrEqual(widths.client);
        expect(await page.getByRole("region", { name: "At a glance" }).isVisible()).toBe(true);
      }
      await page.close();
    }
  }, 120_000);
});
