/**
 * The screenshots of docs/dashboard.md, taken the way the browser tests run: svc on the sandbox
 * engine and registry with a few demo containers, Chromium from Debian. Not a test; run by hand:
 *
 *   eval "$(bash scripts/sandbox.sh env)" && bun tests/integration/ui/screenshots.ts docs
 *
 * Writes dashboard-desktop.png, dashboard-phone.png and dashboard-dark.png into the folder given.
 */
import { join, resolve } from "node:path";
import { buildImage, docker, sandbox } from "../../harness.ts";
import { runContainer } from "../../support/fixture.ts";
import { QUICK_STOP_CMD } from "../e2e/support.ts";
import { DESKTOP, PHONE, rowOf, startDashboard } from "./support.ts";

const out = resolve(process.argv[2] ?? "docs");
const ui = await startDashboard("shots", ["--history-size", "20"]);
const registry = sandbox().registry;
const names: string[] = [];
const references: string[] = [];

/** A container named `name` on `tag` of a demo repository, in the dashboard's scope. */
function demo(
  name: string,
  repository: string,
  tag: string,
  labels: Record<string, string> = {},
  imageLabels: string[] = [],
): string {
  const ref = `${registry}/demo/${repository}:${tag}`;
  buildImage(ref, { changes: [QUICK_STOP_CMD, ...imageLabels.map((label) => `LABEL ${label}`)] });
  references.push(ref);
  runContainer(
    name,
    ref,
    { network: "none", labels: { "svc.scope": ui.scope, ...labels } },
    { socketPath: sandbox().socketPath },
  );
  names.push(name);
  return ref;
}

function publish(repository: string, tag: string, imageLabels: string[] = []): void {
  const ref = `${registry}/demo/${repository}:${tag}`;
  buildImage(ref, { changes: [QUICK_STOP_CMD, ...imageLabels.map((label) => `LABEL ${label}`)] });
  references.push(ref);
}

try {
  // a compose project of three (its labels as compose sets them), the rest standalone
  const shop = (service: string, dependsOn?: string) => ({
    "com.docker.compose.project": "shop",
    "com.docker.compose.service": service,
    ...(dependsOn ? { "com.docker.compose.depends_on": `${dependsOn}:service_started:false` } : {}),
  });
  demo("web", "nginx", "1.27.1", shop("web", "api"), [
    "org.opencontainers.image.version=1.27.1",
    "org.opencontainers.image.source=https://github.com/nginx/nginx",
  ]);
  publish("nginx", "1.27.1", ["org.opencontainers.image.version=1.27.1"]);
  demo("api", "api", "2.3.1", {
    ...shop("api", "db"),
    "svc.tag_policy": "semver:minor",
    "svc.link": "https://example.org/api/releases/{version}",
  });
  publish("api", "2.4.0");
  demo("queue", "queue", "3.1.0", { "svc.tag_policy": "semver:major" });
  publish("queue", "4.0.0");
  demo("db", "postgres", "16.4", { ...shop("db"), "svc.monitor_only": "true" });
  demo("cache", "redis", "7.4.0", { "svc.min_image_age": "3d" });
  publish("redis", "7.4.0");
  demo("worker", "worker", "latest", { "svc.hooks.pre_update": "sleep 1" });

  // one update, so the history has something to say
  await fetch(`${ui.url}v1/update?container=worker`, {
    method: "POST",
    headers: { authorization: `Bearer ${ui.token}` },
  });
  publish("worker", "latest");

  for (const [file, viewport, colorScheme] of [
    ["dashboard-desktop.png", DESKTOP, "light"],
    ["dashboard-dark.png", DESKTOP, "dark"],
    ["dashboard-phone.png", PHONE, "light"],
  ] as const) {
    const page = await ui.open({ viewport });
    await page.emulateMedia({ colorScheme });
    await rowOf(page, "web");
    await page.locator('tr[data-container="web"] .badge').waitFor();
    // the page's own check has ended: no banner of it in the picture
    await page.locator(".progress").waitFor({ state: "hidden" });
    await page.screenshot({ path: join(out, file), fullPage: file !== "dashboard-phone.png" });
    await page.close();
    console.log(`wrote ${join(out, file)}`);
  }
} finally {
  if (names.length) docker(["rm", "-f", ...names], { allowFailure: true });
  for (const ref of references) docker(["rmi", "-f", ref], { allowFailure: true });
  await ui.close();
}
