/**
 * Fuzz over a real socket: a few thousand random requests (methods, paths, query strings,
 * headers, content types, bodies: binary, malformed, huge), from a seeded PRNG so a failure can
 * be replayed (SVC_FUZZ_SEED). No answer may be a 5xx, the server must not crash, an
 * authenticated endpoint must never answer 200 without the token, and health stays ok.
 */
import { afterAll, expect, test } from "bun:test";
import { createApp, listen } from "../../../src/api/index.ts";
import { defaultConfig } from "../../../src/config/index.ts";
import { Metrics } from "../../../src/metrics/index.ts";
import { freePort } from "../../harness.ts";
import { type RecordedLine, recordingLogger } from "../../support/logger.ts";
import { fuzzSeed, prng } from "../../support/random.ts";
import { FakeRunner, TOKEN } from "../../unit/api/fakes.ts";

const SEED = fuzzSeed(0x5eed);
const FETCH_REQUESTS = 2400;
const RAW_REQUESTS = 600;
const PARALLEL = 24;

const rng = prng(SEED);
const metrics = new Metrics();
const runner = new FakeRunner(metrics);
const logs: RecordedLine[] = [];
const config = defaultConfig({ http_api: { update: true, metrics: true, token: TOKEN } });
const app = createApp({ config, runner, metrics, log: recordingLogger(logs), access: { enabled: true, write() {} } });
const port = freePort();
listen(app, port, "127.0.0.1");
const base = `http://127.0.0.1:${port}`;
afterAll(() => app.stop(true));

/** What a header value may hold. */
const PRINTABLE = Array.from({ length: 95 }, (_, i) => String.fromCharCode(32 + i)).join("");

const KNOWN_PATHS = ["/v1/health", "/v1/metrics", "/v1/update"];
const PROTECTED = new Set(["/v1/metrics", "/v1/update"]);
// The API's statuses, plus the runtime's own refusals of oversized requests (headers, URI).
const ALLOWED_STATUSES = new Set([200, 202, 400, 401, 404, 405, 409, 413, 415, 414, 431]);

function randomPath(): string {
  const known = rng.pick(KNOWN_PATHS);
  if (rng.chance(0.6)) return known;
  switch (rng.int(10)) {
    case 0:
      return `${known}/`;
    case 1:
      return `/${rng.text(rng.int(30), "abcdefghijklmnopqrstuvwxyz0123456789/._-~")}`;
    case 2:
      return encodeURI(`${known}${rng.text(3)}`);
    case 3:
      return `/${"a/".repeat(rng.int(2000))}`;
    case 4:
      return `/v1/%${rng.text(2, "0123456789abcdefgxyz")}`;
    case 5:
      return known.toUpperCase();
    default:
      return known;
  }
}

function randomQuery(): string {
  if (rng.chance(0.4)) return "";
  const parts: string[] = [];
  for (let i = rng.int(4); i >= 0; i--) {
    const key = rng.pick(["container", "image", "container", "image", rng.text(rng.int(8)), ""]);
    const value = rng.pick(["a", "a,b", ",", "", rng.text(rng.int(40)), "x".repeat(rng.int(5000))]);
    const encode = rng.chance(0.8) ? encodeURIComponent : (s: string) => s.replace(/[#\s]/g, "");
    parts.push(rng.chance(0.1) ? encode(key) : `${encode(key)}=${encode(value)}`);
  }
  return `?${parts.join("&")}`;
}

const RIGHT_TOKEN = [`Bearer ${TOKEN}`, `bearer ${TOKEN}`, `BEARER   ${TOKEN}`];

function randomAuthorization(): string | undefined {
  if (rng.chance(0.4)) return rng.pick(RIGHT_TOKEN);
  return rng.pick([
    undefined,
    "Bearer wrong",
    `Bearer ${TOKEN}${rng.text(1, PRINTABLE.trim())}`,
    `Bearer ${TOKEN.slice(1)}`,
    "Bearer",
    TOKEN,
    `Basic ${btoa("user:pass")}`,
    `Bearer ${"t".repeat(rng.int(20_000))}`,
    rng.text(rng.int(60), "abcdefghijklmnopqrstuvwxyz ABCDEFG0123456789+/="),
  ]);
}

/** The oracle: does this header carry the right token? (independent of the code under test) */
function carriesToken(authorization: string | undefined): boolean {
  return authorization !== undefined && new RegExp(`^bearer[ \\t]+${TOKEN}$`, "i").test(authorization.trim());
}

function randomContentType(): string | undefined {
  return rng.pick([
    undefined,
    "application/json",
    "application/json; charset=utf-8",
    "APPLICATION/JSON",
    "application/x-www-form-urlencoded",
    "application/x-www-form-urlencoded; charset=latin1",
    "text/plain",
    "multipart/form-data; boundary=zz",
    "application/octet-stream",
    ";;;",
    "application/json;;",
    rng.text(rng.int(30), "abcdefghijklmnopqrstuvwxyz/;=+-. "),
  ]);
}

function randomBody(): Uint8Array | string | undefined {
  switch (rng.int(12)) {
    case 0:
      return undefined;
    case 1:
      return "";
    case 2:
      return JSON.stringify({ container: rng.pick(["a", "a,b", "", ["a", "b"], [], [1], null, 3, { x: 1 }]) });
    case 3:
      return JSON.stringify({ image: rng.pick(["nginx", ["redis", "x"]]), [rng.text(4)]: rng.text(4) });
    case 4:
      return rng.pick([
        "[]",
        "null",
        "1",
        '"s"',
        "{",
        '{"container":',
        "\u0000",
        '{"__proto__":{"container":"a"}}',
        '{"constructor":"x"}',
      ]);
    case 5:
      return `container=${encodeURIComponent(rng.text(rng.int(20)))}&image=${rng.text(rng.int(10))}`;
    case 6:
      return rng.bytes(rng.int(4096));
    case 7:
      return rng.bytes(64 * 1024 + rng.int(3) - 1);
    case 8:
      return rng.chance(0.1) ? rng.bytes(2 * 1024 * 1024) : rng.bytes(70_000 + rng.int(200_000));
    case 9:
      return rng.text(rng.int(300));
    case 10:
      return `{"container":"${"a,".repeat(rng.int(40_000))}"}`;
    default:
      return rng.text(rng.int(64), "container=image&,%25");
  }
}

interface Sent {
  method: string;
  path: string;
  authorized: boolean;
}

/** statuses seen, by source: shows the fuzz reached every check rather than one early refusal */
const seen = { fetch: new Map<number, number>(), raw: new Map<number, number>() };
const count = (map: Map<number, number>, status: number) => map.set(status, (map.get(status) ?? 0) + 1);

function checkAnswer(sent: Sent, status: number, headers: Headers | Map<string, string>): void {
  const context = `${sent.method} ${sent.path.slice(0, 80)} -> ${status} (seed ${SEED})`;
  expect(status < 500, context).toBe(true);
  expect(ALLOWED_STATUSES.has(status), context).toBe(true);
  if (status === 401) expect(headers.get("www-authenticate"), context).toBe('Bearer realm="svc"');
  if (status === 405) expect(headers.get("allow"), context).toBeTruthy();
  if (status === 200 && PROTECTED.has(sent.path.split("?")[0]!)) expect(sent.authorized, context).toBe(true);
}

async function fetchOne(): Promise<void> {
  const method = rng.pick([
    "GET",
    "GET",
    "HEAD",
    "POST",
    "POST",
    "POST",
    "PUT",
    "DELETE",
    "PATCH",
    "OPTIONS",
    "PROPFIND",
  ]);
  const path = randomPath() + randomQuery();
  const headers = new Headers();
  const authorization = randomAuthorization();
  if (authorization !== undefined) headers.set("authorization", authorization);
  const contentType = randomContentType();
  if (contentType !== undefined) headers.set("content-type", contentType);
  if (rng.chance(0.3))
    headers.set("accept", rng.pick(["application/json", "text/plain", "*/*", rng.text(10, PRINTABLE)]));
  if (rng.chance(0.3)) headers.set("user-agent", rng.text(rng.int(200), "abcdefghijklmnopqrstuvwxyz/ .()0123456789"));
  if (rng.chance(0.1)) headers.set(`x-${rng.text(5, "abcdefghij")}`, rng.text(rng.int(100), "abcdef0123 "));
  const body = method === "GET" || method === "HEAD" ? undefined : randomBody();
  const response = await fetch(base + path, { method, headers, body });
  await response.arrayBuffer();
  count(seen.fetch, response.status);
  checkAnswer({ method, path, authorized: carriesToken(authorization) }, response.status, response.headers);
}

/** Sends bytes as they are and reads until the server closes. */
function rawExchange(payload: Uint8Array): Promise<string> {
  return new Promise((resolve) => {
    let response = "";
    const finish = () => resolve(response);
    Bun.connect({
      hostname: "127.0.0.1",
      port,
      socket: {
        open(socket) {
          socket.write(payload);
          socket.flush();
        },
        data(socket, data) {
          response += data.toString("latin1");
          // One answer is enough; close rather than wait for keep-alive to time out.
          if (/\r\n\r\n/.test(response) && !/content-length: *[1-9]/i.test(response.split("\r\n\r\n")[0]!))
            socket.end();
          else if (/content-length: *(\d+)/i.test(response)) {
            const [head, ...rest] = response.split("\r\n\r\n");
            const length = Number(/content-length: *(\d+)/i.exec(head!)![1]);
            if (Buffer.byteLength(rest.join("\r\n\r\n"), "latin1") >= length) socket.end();
          }
        },
        close: finish,
        error: finish,
        connectError: finish,
      },
    }).catch(finish);
  });
}

const encoder = new TextEncoder();

async function rawOne(): Promise<void> {
  const garbage = rng.chance(0.25);
  if (garbage) {
    const payload = rng.chance(0.5)
      ? rng.bytes(rng.int(2000) + 1)
      : encoder.encode(`${rng.text(8)} / HTTP/${rng.pick(["2.0", "0.9", "9", "1.1x"])}\r\n\r\n`);
    const response = await rawExchange(payload);
    const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(response)?.[1] ?? 0);
    // The runtime may refuse garbage with 400 or 505, or just close.
    expect(
      status === 0 || status === 400 || status === 505 || status < 500,
      `garbage -> ${status} (seed ${SEED})`,
    ).toBe(true);
    return;
  }
  const method = rng.chance(0.5)
    ? "POST"
    : rng.pick(["GET", "HEAD", "PUT", "DELETE", "OPTIONS", "PATCH", "FOO", "M-SEARCH", "TRACE", "CONNECT_X", "PURGE"]);
  const path = randomPath() + randomQuery();
  const authorization = randomAuthorization();
  const contentType = randomContentType();
  const body = randomBody();
  const bodyBytes = body === undefined ? new Uint8Array(0) : typeof body === "string" ? encoder.encode(body) : body;
  const chunked = bodyBytes.length > 0 && rng.chance(0.3);
  let head = `${method} ${path} HTTP/1.1\r\nHost: ${rng.pick([`127.0.0.1:${port}`, "svc", "[::1]", "x".repeat(300)])}\r\nConnection: close\r\n`;
  if (authorization !== undefined) head += `Authorization: ${authorization}\r\n`;
  if (contentType !== undefined) head += `Content-Type: ${contentType}\r\n`;
  if (rng.chance(0.2)) head += `User-Agent: ${rng.text(rng.int(50), "abcdefghijklmnopqrstuvwxyz/ .()")}\r\n`;
  let payload: Uint8Array;
  if (chunked) {
    head += "Transfer-Encoding: chunked\r\n\r\n";
    const size = bodyBytes.length.toString(16);
    payload = Buffer.concat([
      encoder.encode(head),
      encoder.encode(`${size}\r\n`),
      bodyBytes,
      encoder.encode("\r\n0\r\n\r\n"),
    ]);
  } else {
    if (bodyBytes.length > 0 || rng.chance(0.5)) head += `Content-Length: ${bodyBytes.length}\r\n`;
    payload = Buffer.concat([encoder.encode(`${head}\r\n`), bodyBytes]);
  }
  const response = await rawExchange(payload);
  const match = /^HTTP\/1\.1 (\d{3})/.exec(response);
  if (process.env.SVC_FUZZ_DEBUG && !match)
    console.log(
      "no answer:",
      JSON.stringify(new TextDecoder().decode(payload.slice(0, 200))),
      payload.length,
      JSON.stringify(response.slice(0, 100)),
    );
  if (!match) return; // the runtime may drop a request it refuses to parse (for example a huge Host)
  const status = Number(match[1]);
  count(seen.raw, status);
  const headerBlock = response.split("\r\n\r\n")[0]!;
  const headers = new Map(
    headerBlock
      .split("\r\n")
      .slice(1)
      .map(
        (line) =>
          [line.slice(0, line.indexOf(":")).toLowerCase(), line.slice(line.indexOf(":") + 1).trim()] as [
            string,
            string,
          ],
      ),
  );
  checkAnswer({ method, path, authorized: carriesToken(authorization) }, status, headers);
}

async function inBatches(count: number, one: () => Promise<void>): Promise<void> {
  for (let done = 0; done < count; done += PARALLEL) {
    await Promise.all(Array.from({ length: Math.min(PARALLEL, count - done) }, () => one()));
  }
}

test(`${FETCH_REQUESTS + RAW_REQUESTS} random requests: no 5xx, no crash, health still ok (seed ${SEED})`, async () => {
  await inBatches(FETCH_REQUESTS, fetchOne);
  await inBatches(RAW_REQUESTS, rawOne);

  const health = await fetch(`${base}/v1/health`);
  expect(health.status).toBe(200);
  expect(await health.json()).toEqual({ status: "ok" });
  expect(logs.filter((line) => line.level === "error")).toEqual([]);
  if (process.env.SVC_FUZZ_DEBUG) console.log({ fetch: [...seen.fetch], raw: [...seen.raw] });
  // The fuzz did run cycles through the API, and reached each of the API's answers.
  expect(runner.calls.length).toBeGreaterThan(0);
  for (const status of [200, 400, 401, 404, 405, 413, 415])
    expect(seen.fetch.has(status), `fetch saw ${status}`).toBe(true);
  for (const status of [200, 401, 404, 405, 415]) expect(seen.raw.has(status), `raw saw ${status}`).toBe(true);
  const rawAnswered = [...seen.raw.values()].reduce((a, b) => a + b, 0);
  expect(rawAnswered).toBeGreaterThan(RAW_REQUESTS / 2);
}, 120_000);
