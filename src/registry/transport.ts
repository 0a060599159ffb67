/**
 * One registry HTTP exchange: scheme choice, per-request timeout, bounded retries (429 with
 * Retry-After, 5xx, timeouts) and redirects that never carry credentials to another origin.
 * fetch keeps connections alive and reuses them, which is all the pooling svc needs.
 */
import { SvcError } from "../core/errors.ts";
import { isLoopbackHostname } from "../core/loopback.ts";
import { duration } from "../core/moments.ts";
import { canonicalHost, DOCKER_HUB, DOCKER_HUB_API_HOST } from "./reference.ts";

export interface RetryPolicy {
  /** per-attempt timeout, ms */
  timeoutMs: number;
  /** extra attempts after the first for 429, 5xx and timeouts */
  retries: number;
  /** first backoff delay for 5xx/timeouts, ms (doubles per attempt) */
  baseDelayMs: number;
  /** upper bound of any wait, including a server's Retry-After, ms */
  maxDelayMs: number;
}

export const DEFAULT_RETRY: Omit<RetryPolicy, "timeoutMs"> = { retries: 2, baseDelayMs: 250, maxDelayMs: 10_000 };

const MAX_REDIRECTS = 5;

/** 127.0.0.0/8, ::1 and localhost: registries the engine itself speaks plain HTTP to. */
export function isLoopbackHost(host: string): boolean {
  return isLoopbackHostname(hostnameOf(host));
}

/** Second-level labels under which country-code domains are registered (registry.example.co.uk). */
const SHARED_SECOND_LEVEL = new Set([
  "co",
  "com",
  "net",
  "org",
  "gov",
  "edu",
  "ac",
  "or",
  "ne",
  "go",
  "gv",
  "ltd",
  "plc",
]);

/**
 * The registrable domain of a host (its last two labels, three under a country code's shared
 * second level), close enough to the public suffix list for telling registry-1.docker.io and
 * auth.docker.io apart from another site; an IP address is itself.
 */
export function registrableDomain(host: string): string {
  const hostname = hostnameOf(host);
  if (hostname.includes(":") || /^\d{1,3}(\.\d{1,3}){3}$/.test(hostname)) return hostname;
  const labels = hostname.split(".");
  const keep = labels.length >= 3 && labels.at(-1)!.length === 2 && SHARED_SECOND_LEVEL.has(labels.at(-2)!) ? 3 : 2;
  return labels.slice(-keep).join(".");
}

/** "host:port" -> "host"; "[::1]:5000" -> "::1". */
export function hostnameOf(host: string): string {
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(host);
  if (bracketed) return bracketed[1]!.toLowerCase();
  return host.replace(/:\d+$/, "").toLowerCase();
}

/** Base URL of a registry's API: plain HTTP for loopback and configured insecure hosts only. */
export function baseUrlOf(registry: string, insecure: readonly string[]): string {
  const host = canonicalHost(registry) === DOCKER_HUB ? DOCKER_HUB_API_HOST : registry;
  const plain =
    isLoopbackHost(host) ||
    insecure.some((entry) => {
      const listed = entry
        .trim()
        .replace(/^[a-z]+:\/\//i, "")
        .replace(/\/.*$/, "")
        .toLowerCase();
      return listed === host.toLowerCase() || listed === hostnameOf(host);
    });
  return `${plain ? "http" : "https"}://${host}`;
}

/** The host:port part of a URL, for messages (never userinfo or query). */
export function hostOfUrl(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return "?";
  }
}

function parseRetryAfter(value: string | null): number | undefined {
  if (!value) return undefined;
  const seconds = Number(value.trim());
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

function isTimeout(error: unknown): boolean {
  return error instanceof Error && (error.name === "TimeoutError" || error.name === "AbortError");
}

function describeNetworkError(error: unknown): string {
  const code = (error as { code?: unknown })?.code;
  if (code === "ConnectionRefused" || code === "ECONNREFUSED") return "connection refused";
  if (typeof code === "string") return code;
  return error instanceof Error ? error.message : String(error);
}

/**
 * Sends one request with retries. Redirects are followed by hand: `Authorization` goes only to the
 * origin it was made for (blob stores and CDNs on other hosts never see it).
 * Resolves with the final response whatever its status (after retries); throws SvcError kind
 * "registry" when the host cannot be reached or keeps timing out.
 */
export async function send(
  url: string,
  init: { method: string; headers: Record<string, string> },
  policy: RetryPolicy,
  sleep: (ms: number) => Promise<void> = Bun.sleep,
): Promise<Response> {
  for (let attempt = 0; ; attempt++) {
    const last = attempt >= policy.retries;
    let response: Response;
    try {
      response = await sendFollowingRedirects(url, init, policy.timeoutMs);
    } catch (error) {
      if (isTimeout(error) && !last) {
        await sleep(Math.min(policy.baseDelayMs * 2 ** attempt, policy.maxDelayMs));
        continue;
      }
      const why = isTimeout(error)
        ? `did not answer within ${duration(policy.timeoutMs)}`
        : `is unreachable (${describeNetworkError(error)})`;
      throw new SvcError("registry", `registry ${hostOfUrl(url)} ${why}`, { cause: error });
    }
    if (last) return response;
    if (response.status === 429) {
      const wait = parseRetryAfter(response.headers.get("retry-after")) ?? policy.baseDelayMs * 2 ** attempt;
      await response.body?.cancel();
      await sleep(Math.min(wait, policy.maxDelayMs));
      continue;
    }
    if (response.status >= 500 && response.status !== 501) {
      await response.body?.cancel();
      await sleep(Math.min(policy.baseDelayMs * 2 ** attempt, policy.maxDelayMs));
      continue;
    }
    return response;
  }
}

async function sendFollowingRedirects(
  url: string,
  init: { method: string; headers: Record<string, string> },
  timeoutMs: number,
): Promise<Response> {
  const origin = new URL(url).origin;
  let current = url;
  for (let hop = 0; ; hop++) {
    const headers = { ...init.headers };
    if (new URL(current).origin !== origin) delete headers.Authorization;
    const response = await fetch(current, {
      method: init.method,
      headers,
      redirect: "manual",
      signal: AbortSignal.timeout(timeoutMs),
    });
    const location = response.headers.get("location");
    if (response.status < 300 || response.status >= 400 || !location || hop >= MAX_REDIRECTS) return response;
    await response.body?.cancel();
    current = new URL(location, current).toString();
  }
}
