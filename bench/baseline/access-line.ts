// The bare baseline writing an access log: for each request the fields docs/api.md lists are read,
// one NDJSON line is built (the timestamp text kept for its millisecond, as svc does) and queued,
// and the queue is appended to a file every 10 ms in one write. The floor of what an access log
// costs in this runtime, compiled exactly like svc.
import { openSync, writeSync } from "node:fs";

const port = Number(process.argv[2] ?? 8080);
const fd = openSync(process.argv[3] ?? "access-line.log", "a", 0o600);
let pending: string[] = [];
let scheduled = false;
const flush = () => {
  scheduled = false;
  const batch = `${pending.join("\n")}\n`;
  pending = [];
  writeSync(fd, batch);
};
let lastMs = Number.NaN;
let iso = "";
const timestamp = () => {
  const ms = Date.now();
  if (ms !== lastMs) {
    lastMs = ms;
    iso = new Date(ms).toISOString();
  }
  return iso;
};

Bun.serve({
  port,
  hostname: "0.0.0.0",
  reusePort: false,
  fetch(request, server) {
    const started = performance.now();
    const url = new URL(request.url);
    const response =
      url.pathname === "/v1/health"
        ? Response.json({ status: "ok" })
        : Response.json({ error: "not found" }, { status: 404 });
    const remote = server.requestIP(request);
    const headers = request.headers;
    const fields = {
      remote_addr: `${remote?.address}:${remote?.port}`,
      host: headers.get("host") ?? "",
      uri: url.pathname + url.search,
      path: url.pathname,
      method: request.method,
      protocol: "HTTP/1.1",
      scheme: "http",
      user_agent: headers.get("user-agent") ?? "",
      authorization: headers.has("authorization") ? "[redacted]" : "",
      status: response.status,
      duration_ms: Math.round(performance.now() - started),
    };
    pending.push(JSON.stringify({ timestamp: timestamp(), level: "info", target: "svc::access", fields }));
    if (!scheduled) {
      scheduled = true;
      setTimeout(flush, 10);
    }
    return response;
  },
});
