/**
 * From the `docker` configuration table to the engine connection (endpoint and TLS material) of
 * svc's modem. Pure apart from reading the TLS files through the reader it is given.
 */

import type { Config } from "../config/index.ts";
import { SvcError } from "../core/errors.ts";

export type DockerConfig = Config["docker"];

export type Endpoint = { kind: "unix"; socketPath: string } | { kind: "tcp"; host: string; port: number; tls: boolean };

/** Parses `docker.host`: unix:///path, tcp://host:port, http://host:port, https://host:port. */
export function parseDockerHost(host: string): Endpoint {
  const text = host.trim();
  if (text.startsWith("unix://")) {
    const socketPath = text.slice("unix://".length);
    if (!socketPath.startsWith("/"))
      throw configError(`docker.host: "${host}" must name an absolute socket path (unix:///var/run/docker.sock)`);
    return { kind: "unix", socketPath };
  }
  const match = /^(tcp|http|https):\/\/(\[[^\]]+\]|[^:/]+)(?::(\d+))?\/?$/.exec(text);
  if (!match) throw configError(`docker.host: "${host}" is not a unix://, tcp://, http:// or https:// address`);
  const scheme = match[1]!;
  const tls = scheme === "https";
  const port = match[3] ? Number(match[3]) : tls ? 2376 : 2375;
  if (!Number.isInteger(port) || port < 1 || port > 65535)
    throw configError(`docker.host: port ${match[3]} is out of range`);
  return { kind: "tcp", host: match[2]!.replace(/^\[|\]$/g, ""), port, tls };
}

/** The host as shown in messages: no user info. */
export function displayHost(host: string): string {
  return host.replace(/\/\/[^@/]*@/, "//");
}

export interface TlsMaterial {
  ca?: string;
  cert?: string;
  key?: string;
  verify: boolean;
}

const TLS_FILES = [
  ["tls_ca_cert", "ca"],
  ["tls_cert", "cert"],
  ["tls_key", "key"],
] as const;

/**
 * TLS is used when `tls_verify` is on, when any TLS file is given, or for an https:// host.
 * `tls_verify` needs all three files; without it the server's certificate is not checked
 * (Docker's `--tls` without `--tlsverify`).
 */
export function tlsMaterial(
  docker: DockerConfig,
  endpoint: Endpoint,
  readFile: (path: string) => string,
): TlsMaterial | null {
  if (endpoint.kind !== "tcp") return null;
  const anyFile = TLS_FILES.some(([option]) => docker[option]);
  if (!docker.tls_verify && !anyFile && !endpoint.tls) return null;
  const material: TlsMaterial = { verify: docker.tls_verify };
  for (const [option, field] of TLS_FILES) {
    const path = docker[option];
    if (!path) {
      if (docker.tls_verify) throw configError(`docker.${option} is required when docker.tls_verify is true`);
      continue;
    }
    try {
      material[field] = readFile(path);
    } catch (error) {
      const reason = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
      throw configError(`docker.${option}: cannot read ${path} (${reason})`);
    }
  }
  return material;
}

function configError(message: string): SvcError {
  return new SvcError("config", message);
}

/** "1.41", "v1.41" -> "1.41"; anything else is a configuration error. */
export function normalizeApiVersion(version: string): string {
  const match = /^v?(\d+\.\d+)$/.exec(version.trim());
  if (!match) throw configError(`docker.api_version: "${version}" is not a version like 1.41`);
  return match[1]!;
}

/** The highest API version this client knows how to speak. */
export const CLIENT_MAX_API_VERSION = "1.51";
/** The oldest engine API svc supports (Docker 17.06). */
export const CLIENT_MIN_API_VERSION = "1.30";

const WHERE = "set --docker-host or DOCKER_HOST";

/**
 * Why the engine cannot be reached, with what to do about it, from the system error code of the
 * failed connection; undefined when the code says nothing more than the message.
 */
export function unreachableAdvice(endpoint: Endpoint, code: string, podmanSockets: string[] = []): string | undefined {
  if (endpoint.kind === "unix") {
    const path = endpoint.socketPath;
    if (code === "ENOENT" && podmanSockets.length > 0)
      return `no Docker socket at ${path}; Podman's is at ${podmanSockets.map((s) => `unix://${s}`).join(" and ")}: ${WHERE} to it`;
    if (code === "ENOENT")
      return `no Docker socket at ${path}: start the Docker engine, or ${WHERE} to where its socket is`;
    if (code === "EACCES" || code === "EPERM")
      return `no permission to use ${path}: run svc as root or as a user in the socket's group (usually docker)`;
    if (code === "ECONNREFUSED")
      return `nothing answers on ${path}: start the Docker engine (the socket is there, the engine is not)`;
    return undefined;
  }
  const at = `${endpoint.host}:${endpoint.port}`;
  if (code === "ECONNREFUSED") return `nothing answers at ${at}: start the engine there, or ${WHERE}`;
  if (code === "ENOTFOUND" || code === "EAI_AGAIN")
    return `the host ${endpoint.host} is not known: ${WHERE} to the engine's address`;
  return undefined;
}
