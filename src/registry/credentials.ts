/**
 * Which credentials svc uses for a registry host, in this order (docs/decisions.md, "Registry"):
 *   1. a `registry_credentials` entry for the host (one with neither username nor password forces
 *      anonymous access, even when global credentials are set);
 *   2. the global `registry_username` / `registry_password`;
 *   3. the Docker CLI's config.json: `credHelpers[host]`, else `credsStore` (falling back to
 *      `auths`, as the CLI does), else `auths[host]`;
 *   4. anonymous.
 * Where each may then be sent (the global ones only to a token realm on the registry's own site)
 * is the client's rule (client.ts, docs/security.md).
 * Hosts are compared in canonical form, so Docker Hub's aliases (docker.io, index.docker.io,
 * registry-1.docker.io, and config.json's "https://index.docker.io/v1/") all match each other.
 */
import { join } from "node:path";
import type { RegistryCredential } from "../config/index.ts";
import { canonicalHost, DOCKER_HUB } from "./reference.ts";

export interface Credential {
  username?: string;
  password?: string;
  /** an OAuth refresh token from a credential helper (Username "<token>") */
  identityToken?: string;
  /** where it came from, for debug logs (never the secret itself) */
  source: "registry_credentials" | "global" | "docker-config" | "credential-helper";
}

/** The parts of Docker's config.json svc reads. */
export interface DockerConfigFile {
  auths?: Record<string, { auth?: string; username?: string; password?: string; identitytoken?: string }>;
  credsStore?: string;
  credHelpers?: Record<string, string>;
}

/** Runs `docker-credential-<helper> get` for `serverUrl`; undefined when it knows no credentials. */
export type HelperRunner = (
  helper: string,
  serverUrl: string,
) => Promise<{ username: string; secret: string } | undefined>;

export interface CredentialSources {
  configured: readonly RegistryCredential[];
  globalUsername?: string;
  globalPassword?: string;
  dockerConfig?: DockerConfigFile;
  runHelper: HelperRunner;
}

/**
 * The canonical host a configured key names: config.json and users write keys as
 * "https://index.docker.io/v1/", "ghcr.io", "https://ghcr.io", "http://localhost:5000/v2/".
 */
export function hostOfKey(key: string): string {
  const withoutScheme = key.trim().replace(/^[a-z][a-z0-9+.-]*:\/\//i, "");
  const host = withoutScheme.split("/")[0] ?? "";
  return canonicalHost(host);
}

/** The server address credential helpers and the engine know a host by. */
export function serverAddressOf(host: string): string {
  return canonicalHost(host) === DOCKER_HUB ? "https://index.docker.io/v1/" : host;
}

/** Resolves the credential for `host` (any alias); undefined means anonymous. */
export async function resolveCredential(host: string, sources: CredentialSources): Promise<Credential | undefined> {
  const target = canonicalHost(host);

  const entry = sources.configured.find((c) => hostOfKey(c.host) === target);
  if (entry) {
    if (entry.username === undefined && entry.password === undefined) return undefined;
    return { username: entry.username, password: entry.password, source: "registry_credentials" };
  }

  if (sources.globalUsername !== undefined || sources.globalPassword !== undefined) {
    return { username: sources.globalUsername, password: sources.globalPassword, source: "global" };
  }

  const docker = sources.dockerConfig;
  if (!docker) return undefined;
  const helperKey = Object.keys(docker.credHelpers ?? {}).find((key) => hostOfKey(key) === target);
  if (helperKey !== undefined) return fromHelper(sources.runHelper, docker.credHelpers![helperKey]!, host);
  if (docker.credsStore) {
    const stored = await fromHelper(sources.runHelper, docker.credsStore, host);
    if (stored) return stored;
  }
  return fromAuths(docker, target);
}

async function fromHelper(run: HelperRunner, helper: string, host: string): Promise<Credential | undefined> {
  const found = await run(helper, serverAddressOf(host));
  if (!found) return undefined;
  // Docker's convention: a helper returns Username "<token>" for an identity (refresh) token.
  if (found.username === "<token>") return { identityToken: found.secret, source: "credential-helper" };
  return { username: found.username, password: found.secret, source: "credential-helper" };
}

function fromAuths(docker: DockerConfigFile, target: string): Credential | undefined {
  const key = Object.keys(docker.auths ?? {}).find((k) => hostOfKey(k) === target);
  if (key === undefined) return undefined;
  const entry = docker.auths![key]!;
  if (entry.identitytoken) return { identityToken: entry.identitytoken, source: "docker-config" };
  if (entry.auth) {
    const decoded = Buffer.from(entry.auth, "base64").toString("utf8");
    const colon = decoded.indexOf(":");
    if (colon === -1) return undefined;
    return { username: decoded.slice(0, colon), password: decoded.slice(colon + 1), source: "docker-config" };
  }
  if (entry.username !== undefined || entry.password !== undefined) {
    return { username: entry.username, password: entry.password, source: "docker-config" };
  }
  return undefined;
}

/** Reads `<dir>/config.json`; undefined when it does not exist or cannot be parsed. */
export async function readDockerConfig(dir: string | undefined): Promise<DockerConfigFile | undefined> {
  if (!dir) return undefined;
  const file = Bun.file(join(dir, "config.json"));
  if (!(await file.exists())) return undefined;
  try {
    const parsed = (await file.json()) as unknown;
    return typeof parsed === "object" && parsed !== null ? (parsed as DockerConfigFile) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Runs a Docker credential helper (`docker-credential-<name> get`, server URL on stdin).
 * `path` replaces PATH for the helper lookup (tests put their helper there); without it the
 * helper inherits svc's environment.
 */
export function helperRunner(options: { path?: string; timeoutMs?: number } = {}): HelperRunner {
  return async (helper, serverUrl) => {
    if (!/^[A-Za-z0-9._-]+$/.test(helper)) return undefined;
    const executable = `docker-credential-${helper}`;
    const command = options.path === undefined ? Bun.which(executable) : Bun.which(executable, { PATH: options.path });
    if (!command) return undefined;
    const proc = Bun.spawn([command, "get"], {
      stdin: new Blob([serverUrl]),
      stdout: "pipe",
      stderr: "pipe",
      env: options.path === undefined ? undefined : { PATH: options.path },
      timeout: options.timeoutMs ?? 10_000,
    });
    const [stdout, code] = await Promise.all([new Response(proc.stdout).text(), proc.exited]);
    if (code !== 0) return undefined;
    try {
      const parsed = JSON.parse(stdout) as { Username?: unknown; Secret?: unknown };
      if (typeof parsed.Secret !== "string" || parsed.Secret === "") return undefined;
      return { username: typeof parsed.Username === "string" ? parsed.Username : "", secret: parsed.Secret };
    } catch {
      return undefined;
    }
  };
}
