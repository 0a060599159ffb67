/** Registry rate limits (docs/api.md): what Docker Hub's ratelimit headers say, kept per registry, as a metric. */
import { afterEach, describe, expect, test } from "bun:test";
import { defaultConfig } from "../../../src/config/index.ts";
import { silentLogger } from "../../../src/log/index.ts";
import { Metrics } from "../../../src/metrics/index.ts";
import { rateLimitOf } from "../../../src/registry/client.ts";
import { createRegistry, parseReference } from "../../../src/registry/index.ts";
import { rateLimitWords } from "../../../src/ui/page/format.ts";
import { recordingLogger } from "../../support/logger.ts";
import { amd64, CONFIG_DIGEST, manifestResponse, serve, stopServers } from "./fakes.ts";

afterEach(stopServers);

describe("registry rate limits", () => {
  test("Docker Hub's headers: the count and its window; a registry without them says nothing; junk is not a count", () => {
    const headers = (given: Record<string, string>) => new Headers(given);
    expect(rateLimitOf(headers({ "ratelimit-limit": "100;w=21600", "ratelimit-remaining": "76;w=21600" }))).toEqual({
      remaining: 76,
      limit: 100,
      window_seconds: 21600,
    });
    expect(rateLimitOf(headers({ "ratelimit-remaining": "5" }))).toEqual({
      remaining: 5,
      limit: null,
      window_seconds: null,
    });
    expect(rateLimitOf(headers({}))).toBeNull();
    expect(rateLimitOf(headers({ "ratelimit-remaining": "-1;w=x" }))).toBeNull();
  });

  test("each answer's count reaches the metrics by registry: the lowest of one check, as svc_registry_ratelimit_remaining", async () => {
    let remaining = 10;
    const hub = serve((request, url) => {
      if (url.pathname === "/v2/") return new Response("{}");
      const answer = manifestResponse(request.method);
      answer.headers.set("ratelimit-limit", "100;w=21600");
      answer.headers.set("ratelimit-remaining", `${remaining--};w=21600`);
      return answer;
    });
    const metrics = new Metrics();
    const registry = createRegistry(defaultConfig({ registry_timeout: 2_000 }), silentLogger, {
      retry: { baseDelayMs: 1 },
      onRateLimit: (host, limit) => metrics.recordRateLimit(host, limit),
    });
    const session = registry.session();
    for (const name of ["a", "b", "c"])
      await session.check(parseReference(`${hub.host}/${name}:1`), { id: CONFIG_DIGEST, repoDigests: [] }, amd64);
    // one count per manifest answer, each one lower: the last is the lowest
    const lowest = remaining + 1;
    expect(lowest).toBeLessThan(8);
    expect(metrics.rateLimitsOf()[hub.host]).toEqual({
      remaining: lowest,
      limit: 100,
      window_seconds: 21600,
      at: expect.any(String),
    });
    expect(metrics.toPrometheus()).toContain(`svc_registry_ratelimit_remaining{registry="${hub.host}"} ${lowest}\n`);
    // a minute later, the count as it is then (the window slides: it may have grown)
    metrics.recordRateLimit(hub.host, { remaining: 50, limit: 100, window_seconds: 21600 }, Date.now() + 61_000);
    expect(metrics.rateLimitsOf()[hub.host]!.remaining).toBe(50);
  });

  test("nearly used up: warned once, and again after it recovered", async () => {
    let remaining = 7;
    const hub = serve((request, url) => {
      if (url.pathname === "/v2/") return new Response("{}");
      const answer = manifestResponse(request.method);
      answer.headers.set("ratelimit-remaining", `${remaining}`);
      return answer;
    });
    const log = recordingLogger();
    const registry = createRegistry(defaultConfig({ registry_timeout: 2_000 }), log, { retry: { baseDelayMs: 1 } });
    const check = (name: string) =>
      registry.session().check(parseReference(`${hub.host}/${name}:1`), { id: CONFIG_DIGEST, repoDigests: [] }, amd64);
    const warnings = () =>
      log.lines.filter(
        (line) => line.level === "warn" && line.message.startsWith("registry rate limit nearly used up"),
      );
    await check("a");
    expect(warnings()).toEqual([]);
    remaining = 4;
    await check("b");
    await check("c");
    expect(warnings().map((line) => line.fields)).toEqual([
      { registry: hub.host, remaining: 4, limit: null, window_seconds: null },
    ]);
    remaining = 50;
    await check("d");
    remaining = 2;
    await check("e");
    expect(warnings().length).toBe(2);
  });

  test("on the page: the count in words, and a warning when a check would run out", () => {
    const limit = {
      registry: "docker.io",
      remaining: 87,
      limit: 100,
      window_seconds: 21600,
      at: "2026-11-25T10:00:00.000Z",
      needed: 4,
    };
    expect(rateLimitWords(limit)).toEqual({ text: "Docker Hub: 87 of 100 requests left (per 6 h)", low: false });
    expect(rateLimitWords({ ...limit, remaining: 3 })).toEqual({
      text: "Docker Hub: 3 of 100 requests left (per 6 h): a check asks for 4 images there and would run out",
      low: true,
    });
  });
});
