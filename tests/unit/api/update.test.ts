/** POST /v1/update: every rule of docs/api.md, through app.handle. */
import { describe, expect, test } from "bun:test";
import { MAX_BODY_BYTES } from "../../../src/api/index.ts";

type Body = RequestInit["body"];

import { bearer, bytes, makeApp } from "./fakes.ts";

const JSON_TYPE = { "content-type": "application/json" };
const FORM_TYPE = { "content-type": "application/x-www-form-urlencoded" };

async function post(path: string, headers: Record<string, string> = {}, body?: Body) {
  const ctx = makeApp();
  const response = await ctx.request(path, { method: "POST", headers: { ...bearer(), ...headers }, body });
  return { ...ctx, response, text: await response.text() };
}

describe("filters reach the runner", () => {
  const cases: [string, string, Record<string, string>, Body | undefined, object][] = [
    ["no filter at all", "/v1/update", {}, undefined, {}],
    [
      "query, comma-separated",
      "/v1/update?container=a,b&image=repo/x",
      {},
      undefined,
      { container: ["a", "b"], image: ["repo/x"] },
    ],
    ["query, spaces trimmed", "/v1/update?container=%20a%20,b", {}, undefined, { container: ["a", "b"] }],
    ["query, repeated key adds", "/v1/update?container=a&container=b", {}, undefined, { container: ["a", "b"] }],
    ["JSON string", "/v1/update", JSON_TYPE, '{"container":"a,b"}', { container: ["a", "b"] }],
    ["JSON array", "/v1/update", JSON_TYPE, '{"image":["nginx","redis"]}', { image: ["nginx", "redis"] }],
    [
      "JSON with charset",
      "/v1/update",
      { "content-type": "Application/JSON; charset=utf-8" },
      '{"container":"a"}',
      { container: ["a"] },
    ],
    ["JSON empty object", "/v1/update", JSON_TYPE, "{}", {}],
    ["form body", "/v1/update", FORM_TYPE, "container=a,b&image=x", { container: ["a", "b"], image: ["x"] }],
    [
      "query and body on different fields",
      "/v1/update?image=x",
      JSON_TYPE,
      '{"container":["a"]}',
      { container: ["a"], image: ["x"] },
    ],
    ["empty body with JSON content type", "/v1/update", JSON_TYPE, "", {}],
    [
      "empty body with another content type",
      "/v1/update?container=a",
      { "content-type": "image/png" },
      "",
      { container: ["a"] },
    ],
  ];
  for (const [name, path, headers, body, filter] of cases) {
    test(name, async () => {
      const { response, text, runner } = await post(path, headers, body);
      expect(response.status).toBe(200);
      expect(response.headers.get("content-type")).toBe("application/json");
      expect(runner.calls).toEqual([{ trigger: "api", filter }]);
      const report = JSON.parse(text);
      expect(report.trigger).toBe("api");
      expect(report.filter).toEqual({ container: [], image: [], ...filter });
    });
  }
});

describe("400: bad filters and bodies, with an error object", () => {
  const cases: [string, string, Record<string, string>, Body | undefined][] = [
    ["same field in query and JSON body", "/v1/update?container=a", JSON_TYPE, '{"container":"b"}'],
    ["same field in query and form body", "/v1/update?image=a", FORM_TYPE, "image=b"],
    ["unparsable JSON", "/v1/update", JSON_TYPE, "{not json"],
    ["whitespace-only JSON", "/v1/update", JSON_TYPE, "   "],
    ["JSON array body", "/v1/update", JSON_TYPE, '["a"]'],
    ["JSON string body", "/v1/update", JSON_TYPE, '"a"'],
    ["JSON null body", "/v1/update", JSON_TYPE, "null"],
    ["JSON number field", "/v1/update", JSON_TYPE, '{"container":1}'],
    ["JSON null field", "/v1/update", JSON_TYPE, '{"container":null}'],
    ["JSON object field", "/v1/update", JSON_TYPE, '{"image":{"a":1}}'],
    ["JSON array with a non-string", "/v1/update", JSON_TYPE, '{"image":["a",2]}'],
    ["JSON unknown field", "/v1/update", JSON_TYPE, '{"containers":"a"}'],
    ["JSON empty array", "/v1/update", JSON_TYPE, '{"container":[]}'],
    ["JSON empty string", "/v1/update", JSON_TYPE, '{"container":""}'],
    ["JSON only commas", "/v1/update", JSON_TYPE, '{"container":" , ,"}'],
    ["JSON invalid UTF-8", "/v1/update", JSON_TYPE, new Uint8Array([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x7d])],
    ["query empty after splitting", "/v1/update?container=,", {}, undefined],
    ["query empty value", "/v1/update?image=", {}, undefined],
    ["query key without value", "/v1/update?image", {}, undefined],
    ["query unknown parameter", "/v1/update?force=1", {}, undefined],
    ["form unknown field", "/v1/update", FORM_TYPE, "container=a&x=1"],
    ["form empty after splitting", "/v1/update", FORM_TYPE, "container=,"],
    ["form invalid UTF-8", "/v1/update", FORM_TYPE, new Uint8Array([0x63, 0x3d, 0xc3])],
  ];
  for (const [name, path, headers, body] of cases) {
    test(name, async () => {
      const { response, text, runner } = await post(path, headers, body);
      expect(response.status).toBe(400);
      expect(response.headers.get("content-type")).toBe("application/json");
      const parsed = JSON.parse(text);
      expect(Object.keys(parsed)).toEqual(["error"]);
      expect(typeof parsed.error).toBe("string");
      expect(parsed.error.length).toBeGreaterThan(0);
      expect(runner.calls).toHaveLength(0);
    });
  }
});

describe("415: a non-empty body with another or no content type", () => {
  const cases: [string, Record<string, string>, Body][] = [
    ["text/plain", { "content-type": "text/plain" }, "container=a"],
    ["multipart", { "content-type": "multipart/form-data; boundary=x" }, "--x--"],
    ["no content type at all", {}, bytes('{"container":"a"}')],
    ["json-like but not json", { "content-type": "application/jsonx" }, "{}"],
    ["binary", { "content-type": "application/octet-stream" }, new Uint8Array([0, 1, 2, 255])],
  ];
  for (const [name, headers, body] of cases) {
    test(name, async () => {
      const { response, text, runner } = await post("/v1/update", headers, body);
      expect(response.status).toBe(415);
      expect(Object.keys(JSON.parse(text))).toEqual(["error"]);
      expect(runner.calls).toHaveLength(0);
    });
  }
});

describe("413: bodies over 64 KiB", () => {
  test("a JSON body one byte over the limit", async () => {
    const body = `{"container":"${"a".repeat(MAX_BODY_BYTES)}"}`;
    const { response, text, runner } = await post("/v1/update", JSON_TYPE, body);
    expect(response.status).toBe(413);
    expect(Object.keys(JSON.parse(text))).toEqual(["error"]);
    expect(runner.calls).toHaveLength(0);
  });

  test("a body of exactly 64 KiB is read and parsed", async () => {
    const padding = " ".repeat(MAX_BODY_BYTES - '{"container":"a"}'.length);
    const { response, runner } = await post("/v1/update", JSON_TYPE, `{"container":"a"}${padding}`);
    expect(response.status).toBe(200);
    expect(runner.calls).toEqual([{ trigger: "api", filter: { container: ["a"] } }]);
  });

  test("a streamed body without Content-Length is cut off at the limit", async () => {
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        sent += 16 * 1024;
        controller.enqueue(new Uint8Array(16 * 1024).fill(0x20));
        if (sent > 10 * MAX_BODY_BYTES) controller.close();
      },
    });
    const { response } = await post("/v1/update", JSON_TYPE, stream);
    expect(response.status).toBe(413);
    expect(sent).toBeLessThan(10 * MAX_BODY_BYTES);
  });
});

describe("202: asked while another cycle runs", () => {
  test("queued: answered at once with the request, listed by GET /v1/progress, run once the first has ended", async () => {
    const ctx = makeApp();
    let release!: () => void;
    ctx.runner.gate = new Promise((resolve) => (release = resolve));
    const first = ctx.request("/v1/update", { method: "POST", headers: bearer() });
    await Bun.sleep(0);
    expect(ctx.runner.busy).toBe(true);
    const second = await ctx.request("/v1/update?container=web", { method: "POST", headers: bearer() });
    expect(second.status).toBe(202);
    const { queued } = (await second.json()) as { queued: { trigger: string; filter: unknown; asked_at: string } };
    expect(queued).toMatchObject({ trigger: "api", filter: { container: ["web"], image: [] } });
    expect(Number.isNaN(Date.parse(queued.asked_at))).toBe(false);
    const progress = await ctx.request("/v1/progress", { headers: bearer() });
    expect(((await progress.json()) as { queued: unknown[] }).queued).toEqual([queued]);
    expect(ctx.metrics.snapshot().svc_scans_skipped).toBe(0);
    release();
    expect((await first).status).toBe(200);
    while (ctx.runner.calls.length < 2 || ctx.runner.busy) await Bun.sleep(1);
    expect(ctx.runner.calls).toEqual([
      { trigger: "api", filter: {} },
      { trigger: "api", filter: { container: ["web"] } },
    ]);
    expect(ctx.metrics.snapshot()).toMatchObject({ svc_scans_total: 2, svc_scans_skipped: 0 });
    // the audit's request lines: both accepted, neither answered with an error
    expect(ctx.audit.filter((entry) => entry.error !== undefined)).toEqual([]);
  });

  test("a check (a dry run) is not queued: 409 with an empty body, the skip counted", async () => {
    const ctx = makeApp();
    let release!: () => void;
    ctx.runner.gate = new Promise((resolve) => (release = resolve));
    const first = ctx.request("/v1/update", { method: "POST", headers: bearer() });
    await Bun.sleep(0);
    const check = await ctx.request("/v1/check", { method: "POST", headers: bearer() });
    expect(check.status).toBe(409);
    expect(await check.text()).toBe("");
    expect(ctx.metrics.snapshot().svc_scans_skipped).toBe(1);
    release();
    expect((await first).status).toBe(200);
  });
});

describe("500: unexpected errors", () => {
  for (const [name, failure] of [
    ["a plain Error", new Error("boom at /secret/path")],
    ["a thrown string", "kaboom"],
  ] as const) {
    test(`${name} gives {"error":"internal error"}, logged, no stack`, async () => {
      const ctx = makeApp();
      ctx.runner.failure = failure;
      const response = await ctx.request("/v1/update", { method: "POST", headers: bearer() });
      expect(response.status).toBe(500);
      expect(await response.json()).toEqual({ error: "internal error" });
      expect(ctx.logs.some((line) => line.level === "error")).toBe(true);
    });
  }

  test("an engine error from the runner is a 500 that says what to fix, without a stack", async () => {
    const { SvcError } = await import("../../../src/core/errors.ts");
    const ctx = makeApp();
    ctx.runner.failure = new SvcError(
      "engine",
      "cannot reach the Docker engine at unix:///var/run/docker.sock: ENOENT",
    );
    const response = await ctx.request("/v1/update", { method: "POST", headers: bearer() });
    expect(response.status).toBe(500);
    expect(await response.json()).toEqual({
      error: "cannot reach the Docker engine at unix:///var/run/docker.sock: ENOENT",
    });
  });
});

describe("order of checks (docs/api.md): 404/405, 401, 415, 413, 400, 409", () => {
  const huge = "x".repeat(MAX_BODY_BYTES + 10);
  const cases: [
    string,
    { method: string; path: string; headers?: Record<string, string>; body?: Body },
    number,
    object,
  ][] = [
    ["wrong method beats a missing token", { method: "GET", path: "/v1/update" }, 405, {}],
    [
      "disabled endpoint beats everything",
      { method: "POST", path: "/v1/update", headers: bearer() },
      404,
      { http_api: { update: false } },
    ],
    [
      "missing token beats a bad content type",
      { method: "POST", path: "/v1/update", headers: { "content-type": "text/plain" }, body: "x" },
      401,
      {},
    ],
    [
      "missing token beats a huge body",
      { method: "POST", path: "/v1/update", headers: JSON_TYPE, body: huge },
      401,
      {},
    ],
    [
      "bad content type beats a huge body",
      { method: "POST", path: "/v1/update", headers: { ...bearer(), "content-type": "text/plain" }, body: huge },
      415,
      {},
    ],
    [
      "huge body beats a bad query",
      { method: "POST", path: "/v1/update?nope=1", headers: { ...bearer(), ...JSON_TYPE }, body: huge },
      413,
      {},
    ],
    [
      "bad content type beats a bad query",
      { method: "POST", path: "/v1/update?nope=1", headers: { ...bearer(), "content-type": "text/plain" }, body: "x" },
      415,
      {},
    ],
  ];
  for (const [name, req, status, overrides] of cases) {
    test(name, async () => {
      const ctx = makeApp(overrides);
      const response = await ctx.request(req.path, { method: req.method, headers: req.headers, body: req.body });
      expect(response.status).toBe(status);
      expect(ctx.runner.calls).toHaveLength(0);
    });
  }

  test("a bad filter beats busy", async () => {
    const ctx = makeApp();
    let release!: () => void;
    ctx.runner.gate = new Promise((resolve) => (release = resolve));
    const first = ctx.request("/v1/update", { method: "POST", headers: bearer() });
    await Bun.sleep(0);
    const response = await ctx.request("/v1/update?container=", { method: "POST", headers: bearer() });
    expect(response.status).toBe(400);
    expect(ctx.metrics.snapshot().svc_scans_skipped).toBe(0);
    release();
    await first;
  });
});
