/** Helpers for the registry integration tests: registries and proxies of their own, a recording logger. */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { LocalImage } from "../../../src/registry/index.ts";
import { freePort, inspect, waitUntil } from "../../harness.ts";

export function tempDir(prefix: string): { path: string; remove(): void } {
  const path = mkdtempSync(join(tmpdir(), `${prefix}-`));
  return { path, remove: () => rmSync(path, { recursive: true, force: true }) };
}

/** What the engine knows of a local image, as the updater would pass it. */
export function localImage(reference: string): LocalImage {
  const image = inspect(reference);
  return { id: image.Id as string, repoDigests: (image.RepoDigests as string[]) ?? [] };
}

export interface RunningRegistry {
  host: string;
  stop(): void;
}

/** Starts distribution (`docker-registry serve`) on a free loopback port with extra YAML config lines. */
export async function startRegistry(dir: string, extraConfig: string): Promise<RunningRegistry> {
  const port = freePort();
  const config = join(dir, "registry.yml");
  writeFileSync(
    config,
    [
      "version: 0.1",
      "log: { level: warn }",
      `storage: { filesystem: { rootdirectory: ${join(dir, "storage")} }, delete: { enabled: true } }`,
      `http: { addr: 127.0.0.1:${port} }`,
      extraConfig,
    ].join("\n"),
  );
  const proc = Bun.spawn(["docker-registry", "serve", config], {
    stdout: "ignore",
    stderr: Bun.file(join(dir, "registry.log")),
  });
  const host = `127.0.0.1:${port}`;
  await waitUntil(
    async () => {
      try {
        await fetch(`http://${host}/v2/`);
        return true;
      } catch {
        return false;
      }
    },
    15_000,
    `registry on ${host}`,
  );
  return { host, stop: () => proc.kill() };
}

/** A loopback HTTP proxy in front of `upstream`; `intercept` may answer a request itself. */
export function startProxy(
  upstream: string,
  intercept?: (request: Request, url: URL) => Response | Promise<Response> | undefined,
): { host: string; requests: string[]; stop(): void } {
  const requests: string[] = [];
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      const url = new URL(request.url);
      requests.push(`${request.method} ${url.pathname}`);
      const own = intercept?.(request, url);
      if (own) return own;
      const headers = new Headers(request.headers);
      headers.delete("host");
      const response = await fetch(`http://${upstream}${url.pathname}${url.search}`, {
        method: request.method,
        headers,
        body: request.method === "GET" || request.method === "HEAD" ? undefined : await request.arrayBuffer(),
        redirect: "manual",
        decompress: false,
      } as RequestInit);
      return new Response(request.method === "HEAD" ? null : await response.arrayBuffer(), {
        status: response.status,
        headers: response.headers,
      });
    },
  });
  return { host: `127.0.0.1:${server.port}`, requests, stop: () => server.stop(true) };
}
