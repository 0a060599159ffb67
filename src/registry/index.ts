/**
 * The registry room: image references and the fetch-based implementation of the registry port.
 *
 * `createRegistry(config, log, options)` is built once per service: credentials, challenges and
 * tokens are cached in it (tokens until they expire) and shared by every session. Each cycle takes
 * a `session()`, whose answers are cached for that cycle only.
 *
 * This room reads no environment. The Docker CLI config directory is the option `docker.config`
 * (the config room fills it from $DOCKER_CONFIG, else $HOME/.docker, as the Docker CLI does).
 */
import type { Config } from "../config/index.ts";
import type { RegistryAuth } from "../engine/port.ts";
import type { Logger } from "../log/index.ts";
import { createArtifactReader } from "./artifacts.ts";
import { CheckSession } from "./check.ts";
import { type RateLimitAnswer, RegistryClient } from "./client.ts";
import { type HelperRunner, helperRunner, serverAddressOf } from "./credentials.ts";
import type { ImageRef, Registry } from "./port.ts";
import { DEFAULT_RETRY, type RetryPolicy } from "./transport.ts";

export { pickPlatform } from "./check.ts";
export type { ArtifactManifest, Descriptor } from "./descriptors.ts";
export type { ArtifactReader, CheckResult, ImageRef, LocalImage, Registry, RegistryCheckSession } from "./port.ts";
export { canonicalHost, isPinned, matchesImagePrefix, parseReference, repositoryKey, withTag } from "./reference.ts";

export interface RegistryOptions {
  /** directory holding the Docker CLI's config.json (tests); default: `docker.config` of the configuration */
  dockerConfigDir?: string;
  /** PATH used to find `docker-credential-*` helpers; unset: helpers inherit svc's environment */
  helperPath?: string;
  /** runs credential helpers (tests replace it); default: `docker-credential-<name> get` */
  runHelper?: HelperRunner;
  /** retry tuning (tests shorten it); the per-request timeout is always `registry_timeout` */
  retry?: Partial<Omit<RetryPolicy, "timeoutMs">>;
  /** tags asked for per page of a tags listing (tests lower it to see the pages) */
  tagsPageSize?: number;
  /** told of each answer that carries a rate limit (the service keeps it in the metrics) */
  onRateLimit?: (registry: string, limit: RateLimitAnswer) => void;
}

export function createRegistry(config: Config, log: Logger, options: RegistryOptions = {}): Registry {
  const registryLog = log.child("registry");
  const client = new RegistryClient({
    config,
    log: registryLog,
    dockerConfigDir: options.dockerConfigDir ?? config.docker.config,
    runHelper: options.runHelper ?? helperRunner({ path: options.helperPath, timeoutMs: config.registry_timeout }),
    retry: { ...DEFAULT_RETRY, ...options.retry, timeoutMs: config.registry_timeout },
    onRateLimit: options.onRateLimit,
  });
  return {
    artifacts: () => createArtifactReader(client),
    session: () => new CheckSession(client, config, registryLog, options.tagsPageSize),
    pullAuth: async (ref: ImageRef): Promise<RegistryAuth | undefined> => {
      const credential = await client.credentialForEngine(ref.registry);
      if (!credential) return undefined;
      const serveraddress = serverAddressOf(ref.registry);
      if (credential.identityToken) return { identitytoken: credential.identityToken, serveraddress };
      return { username: credential.username, password: credential.password, serveraddress };
    },
  };
}
