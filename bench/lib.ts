/** Small helpers for the benchmark: processes, timing, statistics, the engine over its socket. */
import { rmSync } from "node:fs";
import { type Subprocess, spawn, spawnSync } from "bun";

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

export function run(
  cmd: string[],
  options: { env?: Record<string, string>; allowFailure?: boolean; input?: string } = {},
): string {
  const proc = spawnSync(cmd, {
    env: { ...process.env, ...options.env },
    stdin: options.input === undefined ? "ignore" : Buffer.from(options.input),
    stdout: "pipe",
    stderr: "pipe",
  });
  if (proc.exitCode !== 0 && !options.allowFailure) {
    throw new Error(`${cmd.join(" ")} failed (${proc.exitCode}): ${proc.stderr.toString().slice(-2000)}`);
  }
  return proc.stdout.toString().trim();
}

/**
 * `run` without blocking the event loop: needed whenever the command talks to a server of the
 * bench's own process (the counting proxies), which a synchronous spawn would starve.
 */
export async function runAsync(cmd: string[], options: { env?: Record<string, string> } = {}): Promise<string> {
  const proc = spawn(cmd, { env: { ...process.env, ...options.env }, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, exitCode] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  if (exitCode !== 0) throw new Error(`${cmd.join(" ")} failed (${exitCode}): ${stderr.slice(-2000)}`);
  return stdout.trim();
}

/** Resident set size of a process, in KiB, from /proc. */
export async function rssKiB(pid: number): Promise<number> {
  return (await memoryKiB(pid)).rss;
}

/**
 * RSS and its two parts: anonymous memory (heaps, JIT code) and file-backed pages (the parts of
 * the executable the process has touched: runtime code, embedded bytecode), which the kernel can
 * drop and read again under memory pressure.
 */
export async function memoryKiB(pid: number): Promise<{ rss: number; anon: number; file: number }> {
  const status = await Bun.file(`/proc/${pid}/status`).text();
  const field = (name: string) => {
    const match = new RegExp(`${name}:\\s+(\\d+) kB`).exec(status);
    if (!match) throw new Error(`no ${name} for pid ${pid}`);
    return Number(match[1]);
  };
  return { rss: field("VmRSS"), anon: field("RssAnon"), file: field("RssFile") };
}

/** Polls every `pollMs` (the start-up step polls every millisecond, for its resolution). */
export async function waitForHealth(port: number, timeoutMs = 20_000, pollMs = 5): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try {
      const response = await fetch(`http://127.0.0.1:${port}/v1/health`);
      if (response.status === 200) return;
    } catch {
      // not listening yet
    }
    await Bun.sleep(pollMs);
  }
  throw new Error(`no 200 from :${port}/v1/health within ${timeoutMs} ms`);
}

export async function stop(proc: Subprocess): Promise<void> {
  if (proc.exitCode !== null) return;
  proc.kill("SIGTERM");
  const exited = await Promise.race([proc.exited.then(() => true), Bun.sleep(10_000).then(() => false)]);
  if (!exited) proc.kill("SIGKILL");
  await proc.exited;
}

/** Every process the bench started, so that a step failing halfway leaves none running. */
const started = new Set<Subprocess>();

export function startProcess(cmd: string[], env: Record<string, string> = {}, logFile?: string): Subprocess {
  const proc = spawn(cmd, {
    env: { ...process.env, ...env },
    stdout: logFile ? Bun.file(logFile) : "ignore",
    stderr: logFile ? Bun.file(logFile) : "ignore",
  });
  started.add(proc);
  void proc.exited.then(() => started.delete(proc));
  return proc;
}

/** Stops whatever the bench started and is still running. */
export async function stopAll(): Promise<void> {
  await Promise.all([...started].map(stop));
}

export function freePort(): number {
  const server = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = server.port;
  server.stop(true);
  return port;
}

/** A GET on the engine's API over its unix socket. */
export async function engineGet(socketPath: string, path: string): Promise<unknown> {
  const response = await fetch(`http://localhost${path}`, { unix: socketPath });
  if (!response.ok) throw new Error(`engine ${path}: ${response.status}`);
  return response.json();
}

export interface WrkResult {
  requestsPerSecond: number;
  non2xx: number;
}

/** wrk with 2 threads and 50 connections for `seconds`. */
export function wrk(url: string, seconds: number, headers: Record<string, string> = {}): WrkResult {
  const args = ["wrk", "-t2", "-c50", `-d${seconds}s`];
  for (const [key, value] of Object.entries(headers)) args.push("-H", `${key}: ${value}`);
  const out = run([...args, url]);
  const rps = /Requests\/sec:\s+([\d.]+)/.exec(out);
  const non2xx = /Non-2xx or 3xx responses:\s+(\d+)/.exec(out);
  if (!rps) throw new Error(`cannot read wrk output:\n${out}`);
  return { requestsPerSecond: Number(rps[1]), non2xx: non2xx ? Number(non2xx[1]) : 0 };
}

/**
 * A counting reverse proxy in front of a registry: the bench reads how many manifest requests
 * svc made. Images are addressed through the proxy's host:port so the engine uses it too.
 */
export function countingProxy(target: string): {
  port: number;
  manifestRequests: () => number;
  tagsRequests: () => number;
  allRequests: () => number;
  /** the requests svc sent (Bun's fetch names itself), not the engine's pulls nor a signer's pushes */
  svcRequests: () => number;
  reset: () => void;
  stop: () => void;
} {
  let manifests = 0;
  let tags = 0;
  let all = 0;
  let fromSvc = 0;
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      const url = new URL(request.url);
      all += 1;
      if (request.headers.get("user-agent")?.startsWith("Bun/")) fromSvc += 1;
      if (url.pathname.includes("/manifests/")) manifests += 1;
      if (url.pathname.endsWith("/tags/list")) tags += 1;
      const upstream = `http://${target}${url.pathname}${url.search}`;
      const headers = new Headers(request.headers);
      headers.delete("host");
      const response = await fetch(upstream, {
        method: request.method,
        headers,
        body: request.method === "GET" || request.method === "HEAD" ? undefined : await request.arrayBuffer(),
        redirect: "manual",
      });
      const out = new Headers(response.headers);
      // Locations the registry hands out name itself; rewrite them to the proxy.
      const location = out.get("location");
      if (location) out.set("location", location.replace(`http://${target}`, `http://127.0.0.1:${server.port}`));
      return new Response(request.method === "HEAD" ? null : response.body, { status: response.status, headers: out });
    },
  });
  return {
    port: server.port!,
    manifestRequests: () => manifests,
    tagsRequests: () => tags,
    allRequests: () => all,
    svcRequests: () => fromSvc,
    reset: () => {
      manifests = 0;
      tags = 0;
      all = 0;
      fromSvc = 0;
    },
    stop: () => server.stop(true),
  };
}

/** "GET /v1.41/containers/<id>/json?size=0" -> "GET /containers/{id}/json": one key per kind of call. */
export function engineCallKey(method: string, pathname: string): string {
  const path = pathname
    .replace(/^\/v\d+(\.\d+)?(?=\/)/, "")
    .replace(/^\/containers\/(?!json$|create$|prune$)[^/]+/, "/containers/{id}")
    .replace(
      /^\/images\/(?!json$|create$|prune$|search$|load$|get$).+?(?=\/(json|history|push|tag)$|$)/,
      "/images/{name}",
    );
  return `${method} ${path}`;
}

/**
 * A counting proxy in front of the engine's unix socket: the bench reads which engine calls svc
 * made in a cycle (a check with nothing to update should inspect nothing). Plain request/response
 * and streamed answers pass through; connection hijacking (attach) does not, and no check needs it.
 */
export function countingEngineProxy(
  target: string,
  socketPath: string,
): { socketPath: string; requests: () => Record<string, number>; reset: () => void; stop: () => void } {
  let counts: Record<string, number> = {};
  rmSync(socketPath, { force: true });
  const server = Bun.serve({
    unix: socketPath,
    async fetch(request) {
      const url = new URL(request.url);
      const key = engineCallKey(request.method, url.pathname);
      counts[key] = (counts[key] ?? 0) + 1;
      const headers = new Headers(request.headers);
      headers.delete("host");
      const response = await fetch(`http://localhost${url.pathname}${url.search}`, {
        unix: target,
        method: request.method,
        headers,
        body: request.method === "GET" || request.method === "HEAD" ? undefined : await request.arrayBuffer(),
        redirect: "manual",
        decompress: false,
      });
      return new Response(request.method === "HEAD" ? null : response.body, {
        status: response.status,
        headers: response.headers,
      });
    },
  });
  return {
    socketPath,
    requests: () => ({ ...counts }),
    reset: () => {
      counts = {};
    },
    stop: () => server.stop(true),
  };
}
