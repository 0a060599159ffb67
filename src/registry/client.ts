/**
 * Authenticated requests to registry APIs: the /v2/ challenge flow (anonymous, Basic, Bearer),
 * with challenges, credentials and tokens cached across sessions (tokens until they expire).
 * Nothing here logs or throws a credential: messages name hosts, statuses and sources only.
 */
import type { Config } from "../config/index.ts";
import { SvcError } from "../core/errors.ts";
import type { Logger } from "../log/index.ts";
import { REGISTRY_LIMITS, readAnswer, tokenSchema } from "./answers.ts";
import { type Challenge, parseChallenges, pickChallenge } from "./challenge.ts";
import {
  type Credential,
  type DockerConfigFile,
  type HelperRunner,
  readDockerConfig,
  resolveCredential,
} from "./credentials.ts";
import { canonicalHost } from "./reference.ts";
import {
  baseUrlOf,
  hostnameOf,
  hostOfUrl,
  isLoopbackHost,
  type RetryPolicy,
  registrableDomain,
  send,
} from "./transport.ts";

/** Resolved credentials are re-read after this long (credential helpers hand out short-lived ones, e.g. ECR). */
const CREDENTIAL_TTL_MS = 5 * 60_000;
/** Tokens without `expires_in` live 60 s (distribution's token spec); renew a little early. */
const DEFAULT_TOKEN_LIFETIME_S = 60;
const TOKEN_RENEW_MARGIN_MS = 5_000;

export interface Target {
  /** canonical registry host */
  registry: string;
  repository: string;
}

interface CachedToken {
  token: string;
  expiresAt: number;
}

interface TokenEntry {
  token: Promise<CachedToken>;
  /** +Infinity while the fetch is pending */
  expiresAt: number;
}

interface HostState {
  /** null: the registry asked for no authentication */
  challenge?: Promise<Challenge | null>;
  credential?: { value: Promise<Credential | undefined>; expiresAt: number };
  tokens: Map<string, TokenEntry>;
}

export interface ClientOptions {
  config: Config;
  log: Logger;
  dockerConfigDir?: string;
  runHelper: HelperRunner;
  retry: RetryPolicy;
  sleep?: (ms: number) => Promise<void>;
  /** told of each answer that carries a rate limit (Docker Hub's ratelimit-remaining) */
  onRateLimit?: (registry: string, limit: RateLimitAnswer) => void;
}

/** What one answer said of the registry's rate limit. */
export interface RateLimitAnswer {
  remaining: number;
  limit: number | null;
  window_seconds: number | null;
}

/** At most this many requests left (or a tenth of the limit) is warned of. */
const LOW_RATE_LIMIT = 5;

/** "76;w=21600": a count, and the window in seconds (RFC draft ratelimit headers, as Docker Hub sends them). */
const RATE_LIMIT_VALUE = /^\s*(\d{1,9})\s*(?:;\s*w=(\d{1,9}))?/;

/** The rate limit an answer carries, or null (most registries send none). */
export function rateLimitOf(headers: Headers): RateLimitAnswer | null {
  const remaining = RATE_LIMIT_VALUE.exec(headers.get("ratelimit-remaining")?.slice(0, 64) ?? "");
  if (!remaining) return null;
  const limit = RATE_LIMIT_VALUE.exec(headers.get("ratelimit-limit")?.slice(0, 64) ?? "");
  const window = remaining[2] ?? limit?.[2];
  return {
    remaining: Number(remaining[1]),
    limit: limit ? Number(limit[1]) : null,
    window_seconds: window === undefined ? null : Number(window),
  };
}

export class RegistryClient {
  private readonly hosts = new Map<string, HostState>();
  private readonly warned = new Set<string>();
  private dockerConfig?: { value: Promise<DockerConfigFile | undefined>; expiresAt: number };

  constructor(private readonly options: ClientOptions) {}

  private state(registry: string): HostState {
    const key = canonicalHost(registry);
    let state = this.hosts.get(key);
    if (!state) {
      state = { tokens: new Map() };
      this.hosts.set(key, state);
    }
    return state;
  }

  baseUrl(registry: string): string {
    return baseUrlOf(registry, this.options.config.insecure_registries);
  }

  /** The credential for a registry host (see credentials.ts for the order); undefined = anonymous. */
  credentialFor(registry: string): Promise<Credential | undefined> {
    const state = this.state(registry);
    const now = Date.now();
    if (!state.credential || state.credential.expiresAt <= now) {
      const value = this.loadDockerConfig().then((dockerConfig) =>
        resolveCredential(registry, {
          configured: this.options.config.registry_credentials,
          globalUsername: this.options.config.registry_username,
          globalPassword: this.options.config.registry_password,
          dockerConfig,
          runHelper: this.options.runHelper,
        }),
      );
      value.then(
        (credential) =>
          this.options.log.debug("registry credentials resolved", {
            registry,
            source: credential?.source ?? "anonymous",
          }),
        () => {},
      );
      state.credential = { value, expiresAt: now + CREDENTIAL_TTL_MS };
    }
    return state.credential.value;
  }

  /**
   * The credential the engine may be given for `registry` (a pull; a Swarm service's spec, which
   * every node then holds): only what svc's own requests would send there, by the same realm rule
   * (docs/security.md). Global credentials go only to a registry that asked for them (its challenge,
   * as last learnt) and, for a token service, to a realm on its own site; undefined otherwise.
   */
  async credentialForEngine(registry: string): Promise<Credential | undefined> {
    const credential = await this.credentialFor(registry);
    if (!credential) return undefined;
    // nothing lost: without a challenge the line below gives the engine a global credential never, a registry's own one only
    const challenge = await this.challengeFor(registry).catch(() => undefined);
    const global = credential.source === "global";
    if (challenge === undefined || challenge === null) return global ? undefined : credential;
    if (challenge.scheme === "basic") return credential;
    let realm: URL;
    try {
      realm = new URL(challenge.params.realm ?? "");
    } catch {
      return undefined;
    }
    const refusal = this.realmRefusal({ registry, repository: "" }, realm, credential);
    if (!refusal) return credential;
    this.warnOnce(
      `engine ${registry} ${realm.host}`,
      "registry credentials not given to the engine for this registry: its token realm is not one they may go to",
      { registry, realm_host: realm.host, credentials: credential.source },
    );
    return undefined;
  }

  private loadDockerConfig(): Promise<DockerConfigFile | undefined> {
    const now = Date.now();
    if (!this.dockerConfig || this.dockerConfig.expiresAt <= now) {
      this.dockerConfig = { value: readDockerConfig(this.options.dockerConfigDir), expiresAt: now + CREDENTIAL_TTL_MS };
    }
    return this.dockerConfig.value;
  }

  /**
   * Sends `method path` to the registry of `target`, authenticated as its challenge asks.
   * Resolves with the response whatever its status; a 401 is retried once with fresh authentication
   * (an expired token, or a challenge that changed).
   */
  async request(target: Target, method: string, path: string, headers: Record<string, string>): Promise<Response> {
    const response = await this.authenticatedRequest(target, method, path, headers);
    const limit = rateLimitOf(response.headers);
    if (limit) this.noteRateLimit(canonicalHost(target.registry), limit);
    return response;
  }

  /**
   * Passes a rate limit on, and warns once while it is nearly used up (at most LOW_RATE_LIMIT
   * or a tenth of the limit left): checks and pulls fail once nothing is left.
   */
  private noteRateLimit(registry: string, limit: RateLimitAnswer): void {
    this.options.onRateLimit?.(registry, limit);
    const key = `ratelimit ${registry}`;
    if (limit.remaining > Math.max(LOW_RATE_LIMIT, (limit.limit ?? 0) / 10)) return void this.warned.delete(key);
    if (this.warned.has(key)) return;
    this.warned.add(key);
    this.options.log.warn("registry rate limit nearly used up: its checks and pulls fail once none is left", {
      registry,
      ...limit,
    });
  }

  private async authenticatedRequest(
    target: Target,
    method: string,
    path: string,
    headers: Record<string, string>,
  ): Promise<Response> {
    const url = `${this.baseUrl(target.registry)}${path}`;
    let challenge = await this.challengeFor(target.registry);
    const authorization = await this.authorization(target, challenge, false);
    const response = await this.send(url, method, headers, authorization);
    if (response.status !== 401) return response;

    const renewed = pickChallenge(parseChallenges(response.headers.get("www-authenticate")));
    if (!renewed) return response;
    if (!sameChallenge(challenge, renewed)) {
      challenge = renewed;
      this.state(target.registry).challenge = Promise.resolve(renewed);
    } else if (renewed.scheme === "basic") {
      return response; // the same Basic challenge again: the credentials are wrong or missing
    }
    const renewedAuthorization = await this.authorization(target, challenge, true);
    if (renewedAuthorization === undefined && authorization === undefined) return response; // nothing to answer with
    await response.body?.cancel();
    return this.send(url, method, headers, renewedAuthorization);
  }

  private send(
    url: string,
    method: string,
    headers: Record<string, string>,
    authorization: string | undefined,
  ): Promise<Response> {
    const all = authorization ? { ...headers, Authorization: authorization } : headers;
    return send(url, { method, headers: all }, this.options.retry, this.options.sleep);
  }

  /** The host's challenge, learnt once from `GET /v2/` (Docker's own "ping"). */
  private challengeFor(registry: string): Promise<Challenge | null> {
    const state = this.state(registry);
    if (!state.challenge) {
      const ping = this.send(`${this.baseUrl(registry)}/v2/`, "GET", {}, undefined).then(async (response) => {
        await response.body?.cancel();
        if (response.status !== 401) return null;
        return pickChallenge(parseChallenges(response.headers.get("www-authenticate"))) ?? null;
      });
      ping.catch(() => {
        if (state.challenge === ping) state.challenge = undefined; // unreachable now: ask again next time
      });
      state.challenge = ping;
    }
    return state.challenge;
  }

  private async authorization(
    target: Target,
    challenge: Challenge | null,
    renew: boolean,
  ): Promise<string | undefined> {
    if (!challenge) return undefined;
    const credential = await this.credentialFor(target.registry);
    if (challenge.scheme === "basic") {
      if (!credential || (credential.username === undefined && credential.password === undefined)) return undefined;
      return basic(credential);
    }
    const token = await this.tokenFor(target, challenge, credential, renew);
    return `Bearer ${token}`;
  }

  /** A cached token while it lives; concurrent requests for the same scope share one fetch. */
  private tokenFor(
    target: Target,
    challenge: Challenge,
    credential: Credential | undefined,
    renew: boolean,
  ): Promise<string> {
    const state = this.state(target.registry);
    const scope = `repository:${target.repository}:pull`;
    const key = `${challenge.params.realm} ${challenge.params.service ?? ""} ${scope}`;
    const cached = state.tokens.get(key);
    if (cached && !renew && cached.expiresAt > Date.now()) return cached.token.then((t) => t.token);

    const entry: TokenEntry = {
      token: this.fetchToken(target, challenge, scope, credential),
      expiresAt: Number.POSITIVE_INFINITY,
    };
    state.tokens.set(key, entry);
    entry.token.then(
      (token) => {
        entry.expiresAt = token.expiresAt;
      },
      () => {
        if (state.tokens.get(key) === entry) state.tokens.delete(key);
      },
    );
    return entry.token.then((t) => t.token);
  }

  /**
   * Why `credential` must not go to the token realm `realm`, if it must not (docs/security.md).
   * Global credentials were set for some registry, and any registry can name any realm: they go
   * only to a realm on the registry's own host or registrable domain, over HTTPS (plain HTTP only
   * from a loopback registry to the same loopback address). A registry's own credentials go where
   * its realm says, over HTTPS or to a loopback or configured insecure realm.
   */
  private realmRefusal(target: Target, realm: URL, credential: Credential): string | undefined {
    const registryHost = new URL(this.baseUrl(target.registry)).host;
    if (credential.source === "global") {
      const sameSite = realm.protocol === "https:" && registrableDomain(realm.host) === registrableDomain(registryHost);
      const sameLoopback =
        realm.protocol === "http:" &&
        isLoopbackHost(registryHost) &&
        hostnameOf(realm.host) === hostnameOf(registryHost);
      return sameSite || sameLoopback
        ? undefined
        : "token realm is not on the registry's own site over HTTPS: asking for an anonymous token instead of sending the global credentials";
    }
    const mayCarry =
      realm.protocol === "https:" ||
      isLoopbackHost(realm.host) ||
      this.options.config.insecure_registries.some((h) => hostnameOf(h) === hostnameOf(realm.host));
    return mayCarry
      ? undefined
      : "token realm is not HTTPS: asking for an anonymous token instead of sending credentials";
  }

  private warnOnce(key: string, message: string, fields: Record<string, unknown>): void {
    if (this.warned.has(key)) return;
    this.warned.add(key);
    this.options.log.warn(message, fields);
  }

  /**
   * Asks the token service named by the registry's Bearer challenge. Basic credentials go to the
   * realm only because the registry's challenge sent us there, and only over HTTPS (or to a
   * loopback / configured-insecure realm, as for the registry itself).
   */
  private async fetchToken(
    target: Target,
    challenge: Challenge,
    scope: string,
    credential: Credential | undefined,
  ): Promise<CachedToken> {
    const realm = challenge.params.realm!;
    let url: URL;
    try {
      url = new URL(realm);
    } catch {
      throw new SvcError("registry", `registry ${target.registry} named an invalid token realm`);
    }
    const refusal = credential ? this.realmRefusal(target, url, credential) : undefined;
    const usable = refusal ? undefined : credential;
    if (refusal)
      this.warnOnce(`${refusal} ${target.registry} ${url.host}`, refusal, {
        registry: target.registry,
        realm_host: url.host,
      });
    const service = challenge.params.service;

    let response: Response;
    if (usable?.identityToken) {
      // OAuth2 refresh-token grant, as the engine does for identity tokens.
      const form = new URLSearchParams({
        grant_type: "refresh_token",
        refresh_token: usable.identityToken,
        client_id: "svc",
        scope,
      });
      if (service) form.set("service", service);
      response = await fetchForm(url.toString(), form, this.options.retry.timeoutMs);
    } else {
      if (service) url.searchParams.set("service", service);
      url.searchParams.set("scope", scope);
      const headers: Record<string, string> = {};
      if (usable && (usable.username !== undefined || usable.password !== undefined))
        headers.Authorization = basic(usable);
      response = await send(url.toString(), { method: "GET", headers }, this.options.retry, this.options.sleep);
    }
    if (!response.ok) {
      await response.body?.cancel();
      const hint = response.status === 401 || response.status === 403 ? " (credentials rejected or missing)" : "";
      throw new SvcError(
        "registry",
        `token service ${url.host} for registry ${target.registry} answered ${response.status}${hint}`,
      );
    }
    const what = `the answer of token service ${url.host} for registry ${target.registry}`;
    const body = await readAnswer(response, REGISTRY_LIMITS.tokenBytes, tokenSchema, what);
    const token = body.token || body.access_token || "";
    if (!token)
      throw new SvcError("registry", `token service ${url.host} for registry ${target.registry} returned no token`);
    const lifetime = body.expires_in !== undefined && body.expires_in > 0 ? body.expires_in : DEFAULT_TOKEN_LIFETIME_S;
    const issued = body.issued_at !== undefined ? Date.parse(body.issued_at) : NaN;
    // Trust our own clock for the start: a skewed issued_at must not make a fresh token look expired.
    const start = Number.isNaN(issued) ? Date.now() : Math.min(Date.now(), Math.max(issued, Date.now() - 60_000));
    this.options.log.debug("registry token obtained", { registry: target.registry, scope, expires_in_s: lifetime });
    return { token, expiresAt: start + lifetime * 1000 - Math.min(TOKEN_RENEW_MARGIN_MS, (lifetime * 1000) / 10) };
  }
}

function basic(credential: Credential): string {
  return `Basic ${Buffer.from(`${credential.username ?? ""}:${credential.password ?? ""}`).toString("base64")}`;
}

function sameChallenge(a: Challenge | null, b: Challenge): boolean {
  return (
    a !== null && a.scheme === b.scheme && a.params.realm === b.params.realm && a.params.service === b.params.service
  );
}

async function fetchForm(url: string, form: URLSearchParams, timeoutMs: number): Promise<Response> {
  try {
    return await fetch(url, { method: "POST", body: form, redirect: "manual", signal: AbortSignal.timeout(timeoutMs) });
  } catch (error) {
    throw new SvcError("registry", `token service ${hostOfUrl(url)} is unreachable`, { cause: error });
  }
}
