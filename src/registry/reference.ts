/**
 * Image references: parsing, normalisation and the API's image-prefix filter.
 *
 * The grammar follows distribution's reference package (the one the engine uses), so a
 * reference we accept is one the engine accepts, and the errors name what is wrong.
 */
import { SvcError } from "../core/errors.ts";
import type { ImageRef } from "./port.ts";

/** Docker Hub's canonical name; its other names are aliases of it. */
export const DOCKER_HUB = "docker.io";
const HUB_ALIASES = new Set([
  "docker.io",
  "index.docker.io",
  "registry-1.docker.io",
  "registry.hub.docker.com",
  "hub.docker.com",
]);
/** Where Docker Hub's registry API actually answers. */
export const DOCKER_HUB_API_HOST = "registry-1.docker.io";

const NAME_COMPONENT = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$/;
const DOMAIN_COMPONENT = "(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])";
const DOMAIN = new RegExp(`^(?:${DOMAIN_COMPONENT}(?:\\.${DOMAIN_COMPONENT})*|\\[[0-9a-fA-F:.]+\\])(?::[0-9]+)?$`);
const TAG = /^[\w][\w.-]{0,127}$/;
const DIGEST = /^[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[a-zA-Z0-9=_-]{32,}$/;
const SHA256_DIGEST = /^sha256:[a-f0-9]{64}$/;
const MAX_NAME_LENGTH = 255;

/** Canonical form of a registry host: Hub aliases become "docker.io", hosts are lower-cased. */
export function canonicalHost(host: string): string {
  const lower = host.toLowerCase();
  return HUB_ALIASES.has(lower) ? DOCKER_HUB : lower;
}

function invalid(text: string, why: string): SvcError {
  return new SvcError("reference", `invalid image reference "${text}": ${why}`);
}

/**
 * Docker's rule for telling a registry host from a first path component: it is a host when it
 * contains "." or ":", is "localhost", or has an uppercase letter (which a path component cannot).
 */
function looksLikeHost(component: string): boolean {
  return (
    component.includes(".") ||
    component.includes(":") ||
    component === "localhost" ||
    component !== component.toLowerCase()
  );
}

function splitHost(name: string): { host: string; path: string } {
  const slash = name.indexOf("/");
  if (slash === -1) return { host: DOCKER_HUB, path: name };
  const first = name.slice(0, slash);
  if (!looksLikeHost(first)) return { host: DOCKER_HUB, path: name };
  return { host: first, path: name.slice(slash + 1) };
}

/** Parses and normalises an image reference; throws SvcError kind "reference" when it is malformed. */
export function parseReference(text: string): ImageRef {
  const original = text;
  const trimmed = text.trim();
  if (trimmed === "") throw invalid(text, "it is empty");
  if (trimmed !== text || /\s/.test(trimmed)) throw invalid(text, "it contains whitespace");

  let rest = trimmed;
  let digest: string | undefined;
  const at = rest.indexOf("@");
  if (at !== -1) {
    digest = rest.slice(at + 1);
    rest = rest.slice(0, at);
    if (!DIGEST.test(digest)) throw invalid(text, `"${digest}" is not a valid digest`);
    if (digest.startsWith("sha256:") && !SHA256_DIGEST.test(digest)) {
      throw invalid(text, "a sha256 digest is 64 lowercase hexadecimal characters");
    }
  }

  let tag: string | undefined;
  const lastColon = rest.lastIndexOf(":");
  if (lastColon > rest.lastIndexOf("/")) {
    tag = rest.slice(lastColon + 1);
    rest = rest.slice(0, lastColon);
    if (!TAG.test(tag)) throw invalid(text, `"${tag}" is not a valid tag`);
  }

  if (rest === "") throw invalid(text, "the repository name is missing");
  if (rest.length > MAX_NAME_LENGTH)
    throw invalid(text, `the repository name is longer than ${MAX_NAME_LENGTH} characters`);

  const { host, path } = splitHost(rest);
  if (!DOMAIN.test(host)) throw invalid(text, `"${host}" is not a valid registry host`);
  if (path === "") throw invalid(text, "the repository name is missing");
  if (path !== path.toLowerCase()) throw invalid(text, "the repository name must be lowercase");
  for (const component of path.split("/")) {
    if (!NAME_COMPONENT.test(component)) {
      throw invalid(
        text,
        component === ""
          ? "the repository name has an empty path component"
          : `"${component}" is not a valid repository path component`,
      );
    }
  }

  const registry = canonicalHost(host);
  const repository = registry === DOCKER_HUB && !path.includes("/") ? `library/${path}` : path;
  if (tag === undefined && digest === undefined) tag = "latest";
  const normalized = `${registry}/${repository}${tag === undefined ? "" : `:${tag}`}${digest === undefined ? "" : `@${digest}`}`;
  return { original, registry, repository, tag, digest, normalized };
}

/** `ref` as written, with `tag` in its tag's place (or added): where a tag policy moves a container. */
export function withTag(ref: ImageRef, tag: string): string {
  const text = ref.original;
  const colon = text.lastIndexOf(":");
  return colon > text.lastIndexOf("/") ? `${text.slice(0, colon)}:${tag}` : `${text}:${tag}`;
}

/** A reference pinned by digest is never updated (reported as skipped, "pinned by digest"). */
export function isPinned(ref: ImageRef): boolean {
  return ref.digest !== undefined;
}

/** "registry/repository": the key under which the engine lists an image's RepoDigests. */
export function repositoryKey(ref: Pick<ImageRef, "registry" | "repository">): string {
  return `${ref.registry}/${ref.repository}`;
}

/** Same registry and repository (tags and digests aside). */
export function sameRepository(a: ImageRef, b: ImageRef): boolean {
  return a.registry === b.registry && a.repository === b.repository;
}

/**
 * The normalised forms a (possibly partial) prefix can stand for. A prefix need not be a whole
 * reference ("ngi", "ghcr.io/acme/"), so it is normalised the way a reference's name part would be,
 * without validating it.
 */
function normalisedPrefixes(prefix: string): string[] {
  const slash = prefix.indexOf("/");
  if (slash !== -1 && looksLikeHost(prefix.slice(0, slash))) {
    const host = canonicalHost(prefix.slice(0, slash));
    const path = prefix.slice(slash + 1);
    if (host === DOCKER_HUB && !path.includes("/")) return [`${host}/library/${path}`, `${host}/${path}`];
    return [`${host}/${path}`];
  }
  if (slash === -1) return [`${DOCKER_HUB}/library/${prefix}`];
  return [`${DOCKER_HUB}/${prefix}`];
}

/**
 * The API's image filter (docs/api.md, POST /v1/update): `prefix` matches the reference as written on the container
 * and its normalised form, so `nginx` matches `nginx:1.27` and `docker.io/library/nginx:1.27`, and
 * `index.docker.io/library/nginx` matches `nginx:1.27`.
 */
export function matchesImagePrefix(ref: ImageRef, prefix: string): boolean {
  if (prefix === "") return true;
  if (ref.original.startsWith(prefix)) return true;
  return normalisedPrefixes(prefix).some((candidate) => ref.normalized.startsWith(candidate));
}
