/**
 * Which engine answers, and its API version: read from the headers of `GET /_ping`, else from
 * `GET /version`.
 *
 * Why the ping first: Podman's `/version` gathers its whole `/info` (the packages of conmon and
 * the runtime, asked of the package manager each time, and the store's counts): some 60-90 ms on
 * Podman 5.8 and 270-290 ms on 4.3 on an idle 2-core machine, at every start of svc, of `svc
 * rollback` and of a run-once. Its `/_ping` answers at once and names the same things in headers
 * (handler_api.go sets `Api-Version` and `Libpod-Api-Version` on every answer, the latter the
 * Podman version; compat/ping.go). Docker's ping has `Api-Version` and a `Server` header,
 * `Docker/28.5.2 (linux)`. Neither names the architecture: `/version` is asked for it only when
 * something needs it (the data guard's helper, a Swarm service's platform).
 */
import { podmanVersion } from "./podman.ts";
import type { Platform } from "./port.ts";

export interface EngineIdentity {
  /** the highest API version the engine speaks; undefined when it does not say */
  apiVersion: string | undefined;
  /** the Podman version behind the compatible API, null on Docker */
  podman: string | null;
  /** "Docker 28.5.2", "Podman 4.3.1" */
  product: string;
  /** null when the answer does not say (a ping): `/version` tells it */
  platform: Platform | null;
}

/** A version as engines write them: digits and dots first; anything else is not read. */
const VERSION = /^v?\d{1,4}(?:\.\d{1,4}){1,3}(?:[-+~][0-9A-Za-z.+~-]{0,64})?$/;

function versionIn(value: string | null | undefined): string | undefined {
  const text = value?.trim();
  return text && VERSION.test(text) ? text : undefined;
}

/**
 * What a ping's headers say, or null when they do not name an API version (an engine or a proxy
 * that answers otherwise: `/version` is asked then).
 */
export function identityFromPing(headers: Headers): EngineIdentity | null {
  const apiVersion = versionIn(headers.get("api-version"));
  if (!apiVersion) return null;
  const podman = headers.get("libpod-api-version");
  if (podman !== null) {
    const version = versionIn(podman) ?? "";
    return { apiVersion, podman: version, product: `Podman ${version}`.trim(), platform: null };
  }
  // "Docker/28.5.2 (linux)"; a proxy may leave it out
  const server = /^Docker\/(\S{1,80})/.exec(headers.get("server") ?? "");
  const version = versionIn(server?.[1]);
  return { apiVersion, podman: null, product: version ? `Docker ${version}` : "Docker", platform: null };
}

export interface VersionAnswer {
  ApiVersion?: string;
  Version?: string;
  Os?: string;
  Arch?: string;
  Components?: { Name?: string; Version?: string }[];
}

/** What `GET /version` says: the same, and the platform. */
export function identityFromVersion(answer: VersionAnswer): EngineIdentity {
  const podman = podmanVersion(answer);
  return {
    apiVersion: answer.ApiVersion,
    podman,
    product: podman === null ? `Docker ${answer.Version ?? ""}`.trim() : `Podman ${podman}`,
    platform: { os: answer.Os ?? "linux", architecture: answer.Arch ?? "" },
  };
}
