/**
 * The API over a real socket (Bun.serve through listen()): access-log lines written by the real
 * logging room and checked field by field, 50 concurrent update requests, the idle timeout of a
 * long cycle, the startup error of a taken port, and `svc healthcheck`.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createApp, listen, serveApi } from "../../../src/api/index.ts";
import { runHealthcheck } from "../../../src/commands/healthcheck.ts";
import { type Config, type DeepPartial, defaultConfig, logSettings } from "../../../src/config/index.ts";
import { exitCodeOf } from "../../../src/core/errors.ts";
import { createLogging, silentLogger } from "../../../src/log/index.ts";
import { Metrics } from "../../../src/metrics/index.ts";
import { freePort } from "../../harness.ts";
import { FakeRunner, TOKEN } from "../../unit/api/fakes.ts";

const dir = mkdtempSync(join(tmpdir(), "svc-api-socket-"));
const stops: (() => unknown)[] = [];
afterAll(async () => {
  for (const stop of stops) await stop();
  rmSync(dir, { recursive: true, force: true });
});

function apiConfig(overrides: DeepPartial<Config> = {}): Config {
  return defaultConfig({
    log_format: "json",
    ...overrides,
    http_api: { update: true, metrics: true, token: TOKEN, ...overrides.http_api },
  });
}

function startApp(
  config: Config,
  options: { runner?: FakeRunner; metrics?: Metrics; idleTimeoutSeconds?: number } = {},
) {
  const metrics = options.metrics ?? new Metrics();
  const runner = options.runner ?? new FakeRunner(metrics);
  const port = freePort();
  const app = createApp({ config, runner, metrics, log: silentLogger });
  listen(app, port, "127.0.0.1", { idleTimeoutSeconds: options.idleTimeoutSeconds });
  stops.push(() => app.stop(true));
  return { app, runner, metrics, port, base: `http://127.0.0.1:${port}` };
}

/** One raw HTTP/1.1 request; answers the status line and the client's own local port. */
function rawRequest(port: number, text: string): Promise<{ response: string; localPort: number }> {
  return new Promise((resolve, reject) => {
    let response = "";
    let localPort = 0;
    Bun.connect({
      hostname: "127.0.0.1",
      port,
      socket: {
        open(socket) {
          localPort = socket.localPort;
          socket.write(text);
        },
        data(_socket, data) {
          response += data.toString();
        },
        close() {
          resolve({ response, localPort });
        },
        error(_socket, error) {
          reject(error);
        },
      },
    }).catch(reject);
  });
}

describe("access log over a real socket", () => {
  test("one NDJSON line per request in the file and on stdout, every field docs/api.md lists", async () => {
    const accessPath = join(dir, "access.log");
    const config = apiConfig({ log_access_to_stdout: true, http_api: { access_log: accessPath } });
    const stdout: string[] = [];
    const logging = createLogging(logSettings(config), {
      stdout: { write: (chunk) => void stdout.push(chunk) },
      stderr: { write() {} },
      captureConsole: false,
      handleSighup: false,
    });
    stops.push(() => logging.close());
    const metrics = new Metrics();
    const port = freePort();
    const app = createApp({
      config,
      runner: new FakeRunner(metrics),
      metrics,
      log: logging.log,
      access: logging.access,
    });
    listen(app, port, "127.0.0.1");
    stops.push(() => app.stop(true));
    const base = `http://127.0.0.1:${port}`;

    const sent = [
      { path: "/v1/health", init: { headers: { "user-agent": "probe/1.0 (test)" } }, status: 200, authorization: "" },
      {
        path: "/v1/update?container=a,b",
        init: { method: "POST", headers: { authorization: `Bearer ${TOKEN}` } },
        status: 200,
        authorization: "Bearer [redacted]",
      },
      {
        path: "/v1/metrics",
        init: { headers: { authorization: `Bearer wrong${TOKEN}` } },
        status: 401,
        authorization: "Bearer [redacted]",
      },
      { path: "/nowhere?q=1&r=%20", init: {}, status: 404, authorization: "" },
      {
        path: "/v1/health",
        init: { method: "DELETE", headers: { authorization: TOKEN } },
        status: 405,
        authorization: "[redacted]",
      },
    ];
    for (const request of sent) {
      const response = await fetch(base + request.path, request.init as RequestInit);
      await response.arrayBuffer();
      expect(response.status).toBe(request.status);
    }
    const raw = await rawRequest(
      port,
      "GET /v1/health?raw=1 HTTP/1.1\r\nHost: svc.example\r\nConnection: close\r\n\r\n",
    );
    expect(raw.response.startsWith("HTTP/1.1 200")).toBe(true);
    await logging.flush();

    const lines = readFileSync(accessPath, "utf8")
      .split("\n")
      .filter(Boolean)
      .map((line) => JSON.parse(line));
    expect(lines).toHaveLength(sent.length + 1);
    for (const [index, line] of lines.entries()) {
      expect(Object.keys(line).sort()).toEqual(["fields", "level", "target", "timestamp"]);
      expect(line.target).toBe("svc::access");
      expect(typeof line.level).toBe("string");
      expect(line.timestamp).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
      const fields = line.fields;
      expect(Object.keys(fields).sort()).toEqual(
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
      expect(fields.remote_addr).toMatch(/^127\.0\.0\.1:\d+$/);
      expect(fields.protocol).toBe("HTTP/1.1");
      expect(fields.scheme).toBe("http");
      expect(Number.isInteger(fields.duration_ms) && fields.duration_ms >= 0).toBe(true);
      expect(Number.isInteger(fields.status)).toBe(true);
      const request = sent[index];
      if (!request) continue;
      const url = new URL(base + request.path);
      expect(fields.host).toBe(`127.0.0.1:${port}`);
      expect(fields.uri).toBe(url.pathname + url.search);
      expect(fields.path).toBe(url.pathname);
      expect(fields.method).toBe((request.init as RequestInit).method ?? "GET");
      expect(fields.status).toBe(request.status);
      expect(fields.authorization).toBe(request.authorization);
      expect(fields.user_agent).toBe(index === 0 ? "probe/1.0 (test)" : `Bun/${Bun.version}`);
    }
    const rawLine = lines.at(-1)!.fields;
    expect(rawLine).toMatchObject({
      host: `svc.example:${port}`,
      uri: "/v1/health?raw=1",
      user_agent: "",
      remote_addr: `127.0.0.1:${raw.localPort}`,
    });

    const text = readFileSync(accessPath, "utf8") + stdout.join("");
    expect(text).not.toContain(TOKEN);
    const stdoutAccess = stdout
      .join("")
      .split("\n")
      .filter(Boolean)
      .map((line) => JSON.parse(line))
      .filter((line) => line.target === "svc::access");
    expect(stdoutAccess).toHaveLength(lines.length);
  });
});

describe("one cycle at a time over the socket", () => {
  test("50 concurrent POSTs while a slow cycle runs: 25 updates queued (202), 25 checks refused (409, empty, counted), all at once", async () => {
    const { runner, base } = startApp(apiConfig());
    let release!: () => void;
    runner.gate = new Promise((resolve) => (release = resolve));
    const send = (path: string) =>
      fetch(`${base}${path}`, { method: "POST", headers: { authorization: `Bearer ${TOKEN}` } }).then(
        async (response) => ({
          status: response.status,
          body: await response.text(),
        }),
      );
    const running = send("/v1/update");
    while (!runner.busy) await Bun.sleep(5);
    const responses = Array.from({ length: 50 }, (_, i) =>
      send(i % 2 === 0 ? `/v1/update?container=c${i}` : "/v1/check"),
    );
    // every request has been answered before the cycle is let go
    const all = await Promise.all(responses);
    expect(runner.queuedRequests()).toHaveLength(25);
    release();
    expect((await running).status).toBe(200);
    const queued = all.filter((r) => r.status === 202);
    expect(queued).toHaveLength(25);
    expect(queued.every((r) => JSON.parse(r.body).queued.trigger === "api")).toBe(true);
    const conflicts = all.filter((r) => r.status === 409);
    expect(conflicts).toHaveLength(25);
    expect(conflicts.every((r) => r.body === "")).toBe(true);
    while (runner.calls.length < 26 || runner.busy) await Bun.sleep(5);
    const metrics = await (
      await fetch(`${base}/v1/metrics`, { headers: { authorization: `Bearer ${TOKEN}`, accept: "application/json" } })
    ).json();
    expect(metrics).toMatchObject({ svc_scans_total: 26, svc_scans_skipped: 25 });
  });

  test("a cycle longer than the idle timeout still gets its answer", async () => {
    const { runner, base } = startApp(apiConfig(), { idleTimeoutSeconds: 1 });
    runner.gate = Bun.sleep(2500);
    const response = await fetch(`${base}/v1/update`, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(response.status).toBe(200);
    expect(((await response.json()) as { trigger: string }).trigger).toBe("api");
  });
});

describe("startup and healthcheck", () => {
  test("a taken port is a startup error naming the port (exit 2)", () => {
    const { port } = startApp(apiConfig());
    const second = createApp({
      config: apiConfig(),
      runner: new FakeRunner(new Metrics()),
      metrics: new Metrics(),
      log: silentLogger,
    });
    let caught: unknown;
    try {
      listen(second, port, "0.0.0.0");
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeDefined();
    expect((caught as Error).message).toContain(`${port}`);
    expect((caught as Error).message).toContain("already in use");
    expect(exitCodeOf(caught)).toBe(2);
  });

  test("svc healthcheck: 0 when /v1/health answers 200", async () => {
    const { port } = startApp(apiConfig());
    expect(await runHealthcheck(apiConfig({ http_api: { port } }))).toBe(0);
  });

  test("svc healthcheck: 1 when nothing listens", async () => {
    expect(await runHealthcheck(apiConfig({ http_api: { port: freePort() } }))).toBe(1);
  });

  test("svc healthcheck: 1 when the answer is not 200, or too late", async () => {
    const broken = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("no", { status: 503 }) });
    const hanging = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Promise<Response>(() => {}) });
    stops.push(
      () => broken.stop(true),
      () => hanging.stop(true),
    );
    expect(await runHealthcheck(apiConfig({ http_api: { port: broken.port } }))).toBe(1);
    expect(await runHealthcheck(apiConfig({ http_api: { port: hanging.port } }), 300)).toBe(1);
  });

  test("http_api.address: the API listens there only, and svc healthcheck asks there", async () => {
    const port = freePort();
    const config = apiConfig({ http_api: { port, address: "127.0.0.2" } });
    const api = serveApi(
      { config, runner: new FakeRunner(new Metrics()), metrics: new Metrics(), log: silentLogger },
      silentLogger,
    );
    stops.push(() => api.stopOnce());
    expect((await fetch(`http://127.0.0.2:${port}/v1/health`)).status).toBe(200);
    expect(
      await fetch(`http://127.0.0.1:${port}/v1/health`).then(
        () => "answered",
        () => "refused",
      ),
    ).toBe("refused");
    expect(await runHealthcheck(config)).toBe(0);
  });

  test("svc healthcheck: 0 when no API feature is on (nothing is meant to listen)", async () => {
    expect(await runHealthcheck(defaultConfig({ http_api: { port: freePort() } }))).toBe(0);
  });
});
