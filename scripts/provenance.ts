#!/usr/bin/env bun
/**
 * The SLSA provenance (v1 predicate) scripts/release.sh attaches to the image it pushes, signed
 * with cosign (`cosign attest --type slsaprovenance1`): which source (repository, ref, commit)
 * built it, by which script and runtime, and on which run. In the release workflow the signature is
 * keyless, so the signing certificate itself also names the workflow, ref and commit.
 *
 *   bun scripts/provenance.ts VERSION IMAGE CHECKSUMS   prints the predicate (JSON)
 *
 * CHECKSUMS is the release's SHA256SUMS: the binaries the image holds, by digest.
 */
import { readFileSync } from "node:fs";

type Env = Record<string, string | undefined>;

function git(...args: string[]): string {
  const result = Bun.spawnSync(["git", ...args], { cwd: `${import.meta.dir}/..`, stderr: "ignore" });
  return result.success ? result.stdout.toString().trim() : "";
}

/** The files SHA256SUMS lists, as in-toto resource descriptors. */
function byproducts(checksums: string): { name: string; digest: { sha256: string } }[] {
  return checksums
    .split("\n")
    .map((line) => /^([0-9a-f]{64}) [ *](\S+)$/.exec(line))
    .flatMap((m) => (m ? [{ name: m[2]!, digest: { sha256: m[1]! } }] : []));
}

export function provenance(version: string, image: string, checksums: string, env: Env): Record<string, unknown> {
  const repository = env.GITHUB_REPOSITORY ?? "svc-project/svc";
  const server = env.GITHUB_SERVER_URL ?? "https://github.com";
  const ref = env.GITHUB_REF ?? (git("symbolic-ref", "-q", "HEAD") || "HEAD");
  const commit = env.GITHUB_SHA ?? git("rev-parse", "HEAD");
  const run = env.GITHUB_RUN_ID ? `${server}/${repository}/actions/runs/${env.GITHUB_RUN_ID}` : undefined;
  return {
    buildDefinition: {
      buildType: `${server}/${repository}/blob/${commit}/scripts/release.sh`,
      externalParameters: { repository: `${server}/${repository}`, ref, version, image },
      internalParameters: { bun: Bun.version, builder: "docker build, classic builder, FROM scratch" },
      resolvedDependencies: [{ uri: `git+${server}/${repository}@${ref}`, digest: { gitCommit: commit } }],
    },
    runDetails: {
      builder: { id: env.GITHUB_WORKFLOW_REF ? `${server}/${env.GITHUB_WORKFLOW_REF}` : "local: scripts/release.sh" },
      metadata: { ...(run ? { invocationId: run } : {}), startedOn: new Date().toISOString() },
      byproducts: byproducts(checksums),
    },
  };
}

if (import.meta.main) {
  const [version, image, checksums] = process.argv.slice(2);
  if (!version || !image || !checksums) {
    console.error("usage: bun scripts/provenance.ts VERSION IMAGE CHECKSUMS");
    process.exit(2);
  }
  console.log(JSON.stringify(provenance(version, image, readFileSync(checksums, "utf8"), process.env), null, 2));
}
