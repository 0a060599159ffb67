/**
 * The webhook recipes of docs/notifications.md, taken from the document itself, sent through the
 * real notification dispatcher to a local receiver that checks what each service's API requires.
 * The report's reasons hold quotes, backslashes, newlines and non-ASCII text.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Server } from "bun";
import { defaultConfig } from "../../../src/config/index.ts";
import { createNotifications } from "../../../src/notify/index.ts";
import { recordingLogger } from "../../support/logger.ts";
import { tempDir } from "../../temp.ts";
import { sampleReport } from "./peers.ts";

interface Recipe {
  name: string;
  url: string;
  headers?: string;
  template: string;
}

/** Every `<!-- recipe: NAME -->` of the document: its TOML settings and its template. */
async function recipes(): Promise<Recipe[]> {
  const doc = await Bun.file(new URL("../../../docs/notifications.md", import.meta.url)).text();
  return [
    ...doc.matchAll(/<!-- recipe: (\w+) -->[\s\S]*?```toml\n([\s\S]*?)```[\s\S]*?```mustache\n([\s\S]*?)```/g),
  ].map(([, name, toml, template]) => {
    const settings = (Bun.TOML.parse(toml!) as any).notifications.webhook;
    return { name: name!, url: settings.url, headers: settings.headers, template: template! };
  });
}

interface Received {
  method: string;
  path: string;
  headers: Headers;
  body: string;
}

const REASON = 'pull failed: "manifest unknown" \\ next\nline — ünïcode ✓';
const received = new Map<string, Received>();
let receiver: Server<undefined>;
let dir: string;

beforeAll(() => {
  dir = tempDir("svc-recipes-");
  receiver = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      const url = new URL(request.url);
      received.set(url.pathname, {
        method: request.method,
        path: url.pathname,
        headers: request.headers,
        body: await request.text(),
      });
      return new Response("{}", { headers: { "content-type": "application/json" } });
    },
  });
});
afterAll(() => receiver?.stop(true));

/** Sends one report with the recipe, to the receiver instead of the service's host. */
async function send(recipe: Recipe): Promise<Received> {
  const path = new URL(recipe.url).pathname;
  const template = join(dir, `${recipe.name}.mustache`);
  writeFileSync(template, recipe.template);
  const webhook = {
    url: `http://127.0.0.1:${receiver.port}${path}`,
    template,
    ...(recipe.headers ? { headers: recipe.headers } : {}),
  };
  const log = recordingLogger();
  const dispatcher = await createNotifications(defaultConfig({ notifications: { webhook } }), log, {
    hostname: "nas-ü",
    retryDelayMs: 10,
    timeoutMs: 5000,
    attempts: 1,
  });
  const report = sampleReport();
  report.containers[1]!.reason = REASON;
  report.containers.push({
    ...report.containers[0]!,
    id: "c0ffee09",
    name: "proxy",
    state: "rolled_back",
    reason: REASON,
  });
  dispatcher.publish(report);
  await dispatcher.close();
  expect(log.lines.filter((l) => l.level === "error")).toEqual([]);
  const request = received.get(path);
  if (!request) throw new Error(`${recipe.name}: nothing reached ${path}`);
  expect(request.method).toBe("POST");
  expect(request.headers.get("content-type")).toBe("application/json");
  return request;
}

const isString = (value: unknown, min = 1, max = Infinity) =>
  typeof value === "string" && value.length >= min && value.length <= max;

/** What each service's public API requires of a request. */
const REQUIREMENTS: Record<string, (request: Received, body: any) => void> = {
  ntfy(request, body) {
    expect(request.path).toBe("/");
    expect(request.headers.get("authorization")).toMatch(/^Bearer tk_\w+$/);
    expect(body.topic).toMatch(/^[-_A-Za-z0-9]{1,64}$/);
    expect(isString(body.message)).toBe(true);
    expect(isString(body.title)).toBe(true);
    expect(Number.isInteger(body.priority) && body.priority >= 1 && body.priority <= 5).toBe(true);
    expect(Array.isArray(body.tags) && body.tags.every((t: unknown) => isString(t))).toBe(true);
    expect(body.message).toContain(REASON);
  },
  gotify(request, body) {
    expect(request.path).toBe("/message");
    expect(request.headers.get("x-gotify-key")).toBeTruthy();
    expect(isString(body.message)).toBe(true);
    expect(isString(body.title, 0)).toBe(true);
    expect(Number.isInteger(body.priority)).toBe(true);
    expect(body.message).toContain(REASON);
  },
  discord(request, body) {
    expect(request.path).toMatch(/^\/api\/webhooks\/\d+\/[\w-]+$/);
    expect(isString(body.content, 1, 2000)).toBe(true);
    expect(isString(body.username, 1, 80)).toBe(true);
    expect(body.content).toContain("proxy");
  },
  slack(request, body) {
    expect(request.path).toMatch(/^\/services\/\w+\/\w+\/\w+$/);
    expect(isString(body.text)).toBe(true);
    expect(body.text).toContain(REASON);
  },
  matrix(request, body) {
    expect(request.path).toMatch(/^\/webhook\/[\w-]+$/);
    expect(isString(body.text)).toBe(true);
    expect(body.text).toContain(REASON);
  },
  homeassistant(request, body) {
    expect(request.path).toMatch(/^\/api\/webhook\/[\w-]+$/);
    expect(body.host).toBe("nas-ü");
    expect(Number.isInteger(body.updated) && Number.isInteger(body.failed)).toBe(true);
    expect(body.containers.map((c: any) => [c.name, c.state])).toEqual([
      ["web", "updated"],
      ["db", "failed"],
      ["cache", "fresh"],
      ["proxy", "rolled_back"],
    ]);
  },
};

describe("webhook recipes of docs/notifications.md", async () => {
  const all = await recipes();
  test("the document has one recipe for each service, and each has its check here", () => {
    expect(all.map((r) => r.name).sort()).toEqual(Object.keys(REQUIREMENTS).sort());
  });
  for (const recipe of all) {
    test(`${recipe.name}: the body and headers the service requires`, async () => {
      const request = await send(recipe);
      const body = JSON.parse(request.body);
      REQUIREMENTS[recipe.name]!(request, body);
    }, 30_000);
  }
});
