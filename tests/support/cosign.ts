/**
 * cosign 3.1 from Debian sid, as the sandbox keeps it (scripts/sandbox.sh cosign): key pairs and
 * signatures made in the sandbox's loopback registry, offline (no log upload, no signing config).
 */
import { spawnSync } from "node:child_process";
import { join } from "node:path";

let binary: string | undefined;

/** The cosign binary, downloaded into the sandbox's cache once. */
export function cosignBinary(): string {
  if (binary) return binary;
  const root = join(import.meta.dir, "../..");
  const run = spawnSync("bash", [join(root, "scripts/sandbox.sh"), "cosign"], { encoding: "utf8" });
  if (run.status !== 0) throw new Error(`cosign is not available: ${run.stderr}`);
  binary = run.stdout.trim();
  return binary;
}

function cosign(args: string[], cwd: string): string {
  const run = spawnSync(cosignBinary(), args, { cwd, encoding: "utf8", env: { ...process.env, COSIGN_PASSWORD: "" } });
  if (run.status !== 0) throw new Error(`cosign ${args.join(" ")} failed: ${run.stderr}`);
  return run.stdout;
}

/** A key pair in `dir` (`cosign.key`, `cosign.pub`); the public key's path. */
export function generateKeyPair(dir: string): string {
  cosign(["generate-key-pair"], dir);
  return join(dir, "cosign.pub");
}

/** Signs `repository@digest` with the key pair in `dir`: the Sigstore bundle, or the legacy format. */
export function sign(dir: string, repository: string, digest: string, format: "bundle" | "legacy"): void {
  cosign(
    [
      "sign",
      "--yes",
      "--key",
      join(dir, "cosign.key"),
      "--use-signing-config=false",
      "--tlog-upload=false",
      `--new-bundle-format=${format === "bundle"}`,
      "--allow-http-registry",
      "--allow-insecure-registry",
      `${repository}@${digest}`,
    ],
    dir,
  );
}
