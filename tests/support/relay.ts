/**
 * A relay as a local user could run it: `bun tests/support/relay.ts HOST PORT TARGET_HOST
 * TARGET_PORT LOG` listens on HOST:PORT, passes every request on to TARGET_HOST:TARGET_PORT
 * unchanged (headers and body) and answers what the target answers, and appends what it saw
 * (method, path, every header) to LOG as one JSON line per request. It stands for whatever takes
 * 127.0.0.1:PORT when svc listens elsewhere on that port.
 */
import { appendFileSync } from "node:fs";

const [host, port, targetHost, targetPort, log] = Bun.argv.slice(2);
if (!host || !port || !targetHost || !targetPort || !log)
  throw new Error("usage: relay.ts HOST PORT TARGET_HOST TARGET_PORT LOG");

Bun.serve({
  hostname: host,
  port: Number(port),
  async fetch(request) {
    const url = new URL(request.url);
    appendFileSync(
      log,
      `${JSON.stringify({ method: request.method, path: url.pathname + url.search, headers: Object.fromEntries(request.headers) })}\n`,
    );
    const body = request.method === "GET" || request.method === "HEAD" ? undefined : await request.arrayBuffer();
    const headers = new Headers(request.headers);
    headers.delete("host");
    const answer = await fetch(`http://${targetHost}:${targetPort}${url.pathname}${url.search}`, {
      method: request.method,
      headers,
      body,
      redirect: "manual",
    });
    return new Response(await answer.arrayBuffer(), { status: answer.status, headers: answer.headers });
  },
});
console.log(`relaying ${host}:${port} to ${targetHost}:${targetPort}`);
