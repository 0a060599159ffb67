/**
 * The Sigstore trusted root keyless signatures and log entries are checked against: a file for a
 * private Sigstore (`trusted_root`), else the snapshot of the public root that @sigstore/tuf ships
 * (bundled into svc's binary), refreshed through TUF when its servers answer. The snapshot's TUF
 * root has an expiry: past it, and with no refresh, nothing keyless verifies (fails closed).
 */
import { readFileSync } from "node:fs";
import { TrustedRoot } from "@sigstore/protobuf-specs";
import { getTrustedRoot } from "@sigstore/tuf";
import seeds from "@sigstore/tuf/seeds.json";
import { z } from "zod";
import { SvcError } from "../core/errors.ts";

const MIRROR = "https://tuf-repo-cdn.sigstore.dev";
const REFRESH_EVERY_MS = 24 * 3_600_000;
const REFRESH_TIMEOUT_MS = 20_000;

const seedSchema = z.record(
  z.string(),
  z.object({ "root.json": z.string(), targets: z.record(z.string(), z.string()) }),
);
const tufRootSchema = z.object({ signed: z.object({ expires: z.string() }) });

export interface RootSource {
  /** the root to check with now; throws SvcError when none may be used (expired, unreadable) */
  get(): Promise<TrustedRoot>;
}

/** The trusted root from `file`, or the shipped snapshot refreshed through TUF into `cacheDir`. */
export function rootSource(options: { file?: string; cacheDir?: string; now?: () => number }): RootSource {
  if (options.file !== undefined) {
    const file = options.file;
    return { get: async () => readRootFile(file) };
  }
  const now = options.now ?? Date.now;
  let refreshed: { root: TrustedRoot; at: number } | undefined;
  let tried = 0;
  return {
    get: async () => {
      if ((!refreshed || now() - refreshed.at > REFRESH_EVERY_MS) && now() - tried > REFRESH_EVERY_MS / 24) {
        tried = now();
        const root = await refresh(options.cacheDir).catch(() => undefined);
        if (root) refreshed = { root, at: now() };
      }
      if (refreshed) return refreshed.root;
      return shippedRoot(now());
    },
  };
}

/** The snapshot in the binary, unless its TUF root has expired. */
export function shippedRoot(now: number): TrustedRoot {
  const seed = seedSchema.parse(seeds)[MIRROR];
  if (!seed) throw new SvcError("internal", "the shipped Sigstore root is missing");
  const expires = Date.parse(tufRootSchema.parse(JSON.parse(decode(seed["root.json"]))).signed.expires);
  if (!(expires > now))
    throw new SvcError(
      "registry",
      `the shipped Sigstore trusted root expired on ${new Date(expires).toISOString()} and could not be refreshed: keyless signatures are refused`,
    );
  return TrustedRoot.fromJSON(JSON.parse(decode(seed.targets["trusted_root.json"] ?? "")));
}

async function refresh(cacheDir: string | undefined): Promise<TrustedRoot | undefined> {
  if (cacheDir === undefined) return undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), REFRESH_TIMEOUT_MS);
  });
  try {
    return await Promise.race([getTrustedRoot({ cachePath: cacheDir, mirrorURL: MIRROR }), late]);
  } finally {
    clearTimeout(timer);
  }
}

function readRootFile(file: string): TrustedRoot {
  try {
    const text = readFileSync(file, "utf8");
    if (text.length > 1024 * 1024) throw new Error("larger than 1 MiB");
    const json = JSON.parse(text) as { tlogs?: unknown };
    if (!Array.isArray(json.tlogs)) throw new Error("not a Sigstore trusted root");
    return TrustedRoot.fromJSON(json);
  } catch (error) {
    throw new SvcError("config", `trusted_root ${file} cannot be used: ${(error as Error).message}`);
  }
}

/** The seeds hold each file as JSON text or as base64 of it. */
function decode(text: string): string {
  return text.trimStart().startsWith("{") ? text : Buffer.from(text, "base64").toString("utf8");
}
