/**
 * Small fake registries for the registry room's unit tests: Bun.serve on loopback, stopped after
 * each test (`afterEach(stopServers)`), recording what each request carried.
 */
import { createHash } from "node:crypto";
import { type Config, type DeepPartial, defaultConfig } from "../../../src/config/index.ts";
import { silentLogger } from "../../../src/log/index.ts";
import { createRegistry } from "../../../src/registry/index.ts";

export const CONFIG_DIGEST = `sha256:${"c".repeat(64)}`;
export const MANIFEST = JSON.stringify({
  schemaVersion: 2,
  mediaType: "application/vnd.docker.distribution.manifest.v2+json",
  config: { mediaType: "application/vnd.docker.container.image.v1+json", digest: CONFIG_DIGEST, size: 1 },
  layers: [],
});
export const MANIFEST_DIGEST = `sha256:${createHash("sha256").update(MANIFEST).digest("hex")}`;
export const amd64 = async () => ({ os: "linux", architecture: "amd64" });
export const USER = "alice";
export const PASS = "s3cret-pass";
export const BASIC = `Basic ${Buffer.from(`${USER}:${PASS}`).toString("base64")}`;

export interface Seen {
  method: string;
  path: string;
  authorization: string | null;
}

const servers: { stop(force?: boolean): void }[] = [];
/** Stops every fake registry started so far: each test file calls it after each test. */
export function stopServers(): void {
  for (const server of servers.splice(0)) server.stop(true);
}

export function serve(
  handler: (request: Request, url: URL) => Response | Promise<Response>,
  hostname = "127.0.0.1",
): { host: string; seen: Seen[] } {
  const seen: Seen[] = [];
  const server = Bun.serve({
    hostname,
    port: 0,
    fetch(request) {
      const url = new URL(request.url);
      seen.push({
        method: request.method,
        path: url.pathname + url.search,
        authorization: request.headers.get("authorization"),
      });
      return handler(request, url);
    },
  });
  servers.push(server);
  return { host: `${hostname}:${server.port}`, seen };
}

export function manifestResponse(method: string, withDigest = true): Response {
  const headers: Record<string, string> = { "Content-Type": "application/vnd.docker.distribution.manifest.v2+json" };
  if (withDigest) headers["Docker-Content-Digest"] = MANIFEST_DIGEST;
  return new Response(method === "HEAD" ? null : MANIFEST, { headers });
}

/** A registry client for the stand-ins; 10 s to answer: a hostile page of 8 MiB took past 2 s at load. */
export function registry(overrides: DeepPartial<Config> = {}) {
  return createRegistry(defaultConfig({ registry_timeout: 10_000, ...overrides }), silentLogger, {
    retry: { baseDelayMs: 1 },
  });
}
