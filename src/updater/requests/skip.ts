/**
 * `POST /v1/skip`: a digest (given, or the newer one a dry run finds) or a tag is remembered as
 * skipped for one target, container or Swarm service, until a newer one appears (check/check.ts).
 */
import { SvcError, toSvcError } from "../../core/errors.ts";
import type { Logger } from "../../log/index.ts";
import { parseReference, withTag } from "../../registry/reference.ts";
import type { Remembered } from "../../state/index.ts";
import type { Runner } from "../cycle/runner.ts";
import { firstOfKinds, type TargetKind } from "../cycle/target.ts";
import type { SkipResult } from "../types.ts";

export interface SkipDeps {
  log: Logger;
  /** digests skipped on request, per target name */
  skipped: Remembered;
  /** the kinds of target (cycle/target.ts) */
  kinds: readonly TargetKind[];
  run: Runner["run"];
}

export async function skipTarget(
  deps: SkipDeps,
  name: string,
  what: { digest?: string; tag?: string } = {},
): Promise<SkipResult | null> {
  const { digest, tag } = what;
  if (digest !== undefined && !/^sha256:[0-9a-f]{64}$/.test(digest))
    throw new SvcError("bad_request", `"${digest.slice(0, 80)}" is not a digest (sha256:<64 hex digits>)`);
  if (tag !== undefined) return skipTag(deps, name, tag);
  const chosen = digest ?? (await newerDigest(deps, name));
  if (chosen === null) return null;
  deps.skipped.set(name, chosen);
  deps.log.info("digest skipped on request", { container: name, digest: chosen });
  return { container: name, digest: chosen };
}

/** The newer digest a dry run finds for `name` (null: a cycle is running). */
async function newerDigest(deps: SkipDeps, name: string): Promise<string | null> {
  const report = await deps.run("api", { container: [name] }, { dryRun: true });
  if (report === null) return null;
  const entry = report.containers.find((c) => c.name === name);
  if (!entry) throw new SvcError("not_found", `svc watches no container or service named ${name}`);
  if ((entry.state !== "stale" && entry.state !== "held") || !entry.new_digest)
    throw new SvcError(
      "bad_request",
      `${name} has no newer image to skip (${entry.state}${entry.reason ? `: ${entry.reason}` : ""})`,
    );
  return entry.new_digest;
}

/** A tag is skipped as the reference the target would move to: the reference it follows, with that tag. */
async function skipTag(deps: SkipDeps, name: string, tag: string): Promise<SkipResult> {
  const followed = await firstOfKinds(deps.kinds, (kind) => kind.reference(name));
  if (followed === undefined) throw new SvcError("not_found", `no container or service named ${name}`);
  let image: string;
  try {
    image = withTag(parseReference(followed), tag);
    parseReference(image);
  } catch (error) {
    throw new SvcError("bad_request", `cannot skip tag "${tag.slice(0, 80)}": ${toSvcError(error).message}`);
  }
  deps.skipped.set(name, image);
  deps.log.info("tag skipped on request", { container: name, image });
  return { container: name, image };
}
