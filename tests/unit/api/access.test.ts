/** The access-log fields handed to the sink (docs/api.md), through app.handle. */
import { describe, expect, test } from "bun:test";
import { formatAddress, hostWithPort, requestTarget } from "../../../src/api/access.ts";
import { createApp } from "../../../src/api/index.ts";
import { defaultConfig } from "../../../src/config/index.ts";
import { silentLogger } from "../../../src/log/index.ts";
import { Metrics } from "../../../src/metrics/index.ts";
import { bearer, FakeRunner, makeApp, TOKEN } from "./fakes.ts";

describe("one entry per request", () => {
  test("fields of an authenticated update with a query string", async () => {
    const ctx = makeApp();
    await ctx.request("/v1/update?container=a", {
      method: "POST",
      headers: { ...bearer(), "user-agent": "curl/8.5.0", host: "svc.local:8080" },
    });
    expect(ctx.access).toHaveLength(1);
    const entry = ctx.access[0]!;
    expect(Object.keys(entry).sort()).toEqual(
      [
        "authorization",
        "duration_ms",
        "host",
        "method",
        "path",
        "protocol",
        "remote_addr",
        "scheme",
        "status",
        "uri",
        "user_agent",
      ].sort(),
    );
    expect(entry).toMatchObject({
      host: "svc.local:8080",
      uri: "/v1/update?container=a",
      path: "/v1/update",
      method: "POST",
      protocol: "HTTP/1.1",
      scheme: "http",
      user_agent: "curl/8.5.0",
      authorization: "Bearer [redacted]",
      status: 200,
    });
    expect(Number.isInteger(entry.duration_ms)).toBe(true);
    expect(JSON.stringify(ctx.access)).not.toContain(TOKEN);
  });

  test("every status is logged, also 401, 404, 405 and 500", async () => {
    const ctx = makeApp();
    await ctx.request("/v1/update", { method: "POST", headers: { authorization: `Bearer wrong-${TOKEN}` } });
    await ctx.request("/nowhere");
    await ctx.request("/v1/health", { method: "DELETE" });
    ctx.runner.failure = new Error("boom");
    await ctx.request("/v1/update", { method: "POST", headers: bearer() });
    expect(ctx.access.map((entry) => entry.status)).toEqual([401, 404, 405, 500]);
    expect(JSON.stringify(ctx.access)).not.toContain(TOKEN);
  });

  test("no Authorization header gives an empty authorization field", async () => {
    const ctx = makeApp();
    await ctx.request("/v1/health");
    expect(ctx.access[0]!.authorization).toBe("");
  });

  test("a throwing sink never fails the request", async () => {
    const metrics = new Metrics();
    const app = createApp({
      config: defaultConfig(),
      runner: new FakeRunner(metrics),
      metrics,
      log: silentLogger,
      access: {
        enabled: true,
        write() {
          throw new Error("disk full");
        },
      },
    });
    const response = await app.handle(new Request("http://localhost/v1/health"));
    expect(response.status).toBe(200);
  });
});

describe("field helpers", () => {
  test("authorization keeps the scheme only; a bare token is masked whole", async () => {
    const ctx = makeApp();
    for (const header of [`Bearer ${TOKEN}`, "Basic dXNlcjpwYXNz", TOKEN]) {
      await ctx.request("/v1/health", { headers: { authorization: header } });
    }
    expect(ctx.access.map((entry) => entry.authorization)).toEqual([
      "Bearer [redacted]",
      "Basic [redacted]",
      "[redacted]",
    ]);
  });

  test("addresses carry their port; IPv6 in brackets", () => {
    expect(formatAddress({ address: "127.0.0.1", port: 51234, family: "IPv4" })).toBe("127.0.0.1:51234");
    expect(formatAddress({ address: "::1", port: 80, family: "IPv6" })).toBe("[::1]:80");
    expect(formatAddress(null)).toBe("");
  });

  test("host always has a port", () => {
    const target = requestTarget("http://example.com/v1/health");
    expect(hostWithPort("example.com:9000", target, 9000)).toBe("example.com:9000");
    expect(hostWithPort("example.com", target, 9000)).toBe("example.com:9000");
    expect(hostWithPort("[::1]:8080", target, 8080)).toBe("[::1]:8080");
    expect(hostWithPort(null, requestTarget("http://localhost:1234/"), undefined)).toBe("localhost:1234");
    expect(hostWithPort(null, requestTarget("http://localhost/"), undefined)).toBe("localhost:80");
  });

  test("request targets split without a URL object", () => {
    expect(requestTarget("http://127.0.0.1:8080/v1/update?container=a,b")).toEqual({
      scheme: "http",
      authority: "127.0.0.1:8080",
      path: "/v1/update",
      query: "?container=a,b",
    });
    expect(requestTarget("http://h/v1/health")).toEqual({
      scheme: "http",
      authority: "h",
      path: "/v1/health",
      query: "",
    });
    expect(requestTarget("http://h")).toEqual({ scheme: "http", authority: "h", path: "/", query: "" });
    expect(requestTarget("http://h/a?b?c#frag")).toEqual({ scheme: "http", authority: "h", path: "/a", query: "?b?c" });
  });
});
