#!/usr/bin/env bun
/**
 * Builds svc into single executables.
 *
 *   bun run build                 dist/svc for this machine
 *   bun run build --all           also dist/svc-linux-x64, dist/svc-linux-arm64, their SBOM
 *                                 dist/svc.cdx.json and dist/SHA256SUMS over the release files
 *   bun run build --outdir DIR    write into DIR instead of dist/ (the build tests use a temp dir)
 *   bun run build --target T      only the named release target(s), e.g. --target linux-arm64
 *
 * Traps on Bun 1.4.5 handled here:
 * - `process.env.NODE_ENV` is inlined at build time: define it as "production" explicitly, so a
 *   developer's shell cannot leak "development" into a release.
 * - A compiled binary auto-loads `.env` and `bunfig.toml` from its working directory unless told not
 *   to: an operator's stray files must not change svc's behaviour (autoloadDotenv/autoloadBunfig).
 * - `bytecode` needs ESM output (consola reads `import.meta`).
 * - `splitting` keeps lazily imported modules (the service, the engine client, mail and MQTT) out of
 *   the startup path: without it a dynamic import() is lazy to run but not to load.
 */
import { createHash } from "node:crypto";
import { copyFile, mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import pkg from "./package.json" with { type: "json" };
import type { Lockfile } from "./scripts/sbom.ts";

type ReleaseTarget = {
  /** file name in the output folder */
  file: string;
  /** Bun's compile target */
  bun: Bun.Build.CompileTarget;
};

/**
 * What `--all` ships. x64 uses Bun's baseline build: the small always-on boxes svc runs on are often
 * older Celerons/Atoms without AVX2, where the default x64 runtime dies with "Illegal instruction".
 */
const RELEASE_TARGETS: ReleaseTarget[] = [
  { file: "svc-linux-x64", bun: "bun-linux-x64-baseline" },
  { file: "svc-linux-arm64", bun: "bun-linux-arm64" },
  // No musl variant: Bun's musl runtime links a musl-built libstdc++.so.6 and libgcc_s (Alpine's
  // libstdc++ package). Debian has only the musl loader and libc (package `musl`), so the musl binary
  // cannot be run, let alone tested, here, and we ship nothing we cannot test. install.sh asks for
  // svc-linux-<arch>-musl on musl hosts and says clearly when the release has none.
];

type Options = { all: boolean; outdir: string; only: string[] };

function parseArgs(argv: string[]): Options {
  const options: Options = { all: false, outdir: "dist", only: [] };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const [flag, inline] = arg.includes("=")
      ? [arg.slice(0, arg.indexOf("=")), arg.slice(arg.indexOf("=") + 1)]
      : [arg, undefined];
    const value = () => inline ?? argv[++i] ?? fail(`${flag} needs a value`);
    if (flag === "--all") options.all = true;
    else if (flag === "--outdir") options.outdir = value();
    else if (flag === "--target") options.only.push(value());
    else fail(`unknown argument ${arg} (expected --all, --outdir DIR, --target NAME)`);
  }
  return options;
}

function fail(message: string): never {
  throw new Error(`build: ${message}`);
}

/** Short commit of the checkout, or "" outside git (a source tarball); SVC_BUILD_COMMIT overrides. */
function gitCommit(): string {
  const fromEnv = process.env.SVC_BUILD_COMMIT;
  if (fromEnv !== undefined) return fromEnv;
  const result = Bun.spawnSync(["git", "rev-parse", "--short", "HEAD"], { cwd: import.meta.dir, stderr: "ignore" });
  return result.success ? result.stdout.toString().trim() : "";
}

export type CompileOptions = {
  outfile: string;
  /** Bun's compile target; the host when absent */
  target?: Bun.Build.CompileTarget;
  /** stamped into the binary as SVC_BUILD_COMMIT ("" for none) */
  commit: string;
  /** the program to compile; svc's entry point unless a test compiles a probe with the same settings */
  entrypoint?: string;
};

/**
 * Packages dockerode pulls in for features svc never uses: ssh2 (ssh:// engine hosts, which
 * docker.host does not accept) and gRPC + protobuf (BuildKit sessions of `buildImage`). docker-modem
 * and dockerode require them at load time, which cost every start ~30 ms and ~15 MiB of memory.
 * tar-fs (with tar-stream) only packs build contexts for `buildImage`. docker-modem itself is
 * replaced by svc's modem on Bun's fetch (src/engine/modem.ts), so node:http and node:https are
 * never loaded.
 * They are replaced by a stub that fails loudly if anything ever calls into it.
 */
const UNUSED_PACKAGES = /^(docker-modem|ssh2|@grpc\/grpc-js|@grpc\/proto-loader|protobufjs(\/.*)?|tar-fs)$/;

/**
 * Node built-ins that dockerode alone requires, for the same unused features: zlib gzips
 * `buildImage` contexts, crypto names BuildKit sessions. Loading node:zlib alone costs a compiled
 * svc ~8 MiB of resident memory; only dockerode's own imports of them are stubbed.
 */
const UNUSED_IN_DOCKERODE = /^(node:)?(zlib|crypto)$/;
const DOCKERODE_FILE = /[\\/]node_modules[\\/]dockerode[\\/]/;

const stubUnusedPackages: Bun.BunPlugin = {
  name: "stub-unused-packages",
  setup(build) {
    build.onResolve({ filter: UNUSED_PACKAGES }, (args) => ({ path: args.path, namespace: "svc-unused" }));
    build.onResolve({ filter: UNUSED_IN_DOCKERODE }, (args) =>
      DOCKERODE_FILE.test(args.importer) ? { path: args.path, namespace: "svc-unused" } : undefined,
    );
    build.onLoad({ filter: /.*/, namespace: "svc-unused" }, (args) => ({
      loader: "js",
      contents: `const fail = () => { throw new Error(${JSON.stringify(`${args.path} is not part of svc`)}); };
module.exports = new Proxy({}, { get: (_, key) => (key === "__esModule" || typeof key === "symbol" ? undefined : fail) });`,
    }));
  },
};

/**
 * Compiles one executable with every release setting. Exported so the build tests can probe them.
 * Returns the files the bundler read (the SBOM lists the packages they belong to).
 */
export async function compile({ outfile, target, commit, entrypoint }: CompileOptions): Promise<string[]> {
  const result = await Bun.build({
    entrypoints: [entrypoint ?? join(import.meta.dir, "src/main.ts")],
    compile: {
      ...(target ? { target } : {}),
      outfile,
      autoloadDotenv: false,
      autoloadBunfig: false,
      autoloadTsconfig: false,
      autoloadPackageJson: false,
    },
    target: "bun",
    format: "esm",
    bytecode: true,
    // Each literal dynamic import() becomes a chunk of its own inside the binary, loaded (and its
    // bytecode deserialized) only when imported: without it the whole bundle is materialized at
    // start, ~15 ms and ~20 MiB for code `--version` or an idle service never runs.
    splitting: true,
    minify: true,
    sourcemap: "none",
    metafile: true,
    plugins: [stubUnusedPackages],
    define: {
      "process.env.NODE_ENV": JSON.stringify("production"),
      SVC_BUILD_COMMIT: JSON.stringify(commit),
    },
  });
  if (!result.success) {
    for (const message of result.logs) console.error(message);
    fail(`compiling ${outfile} failed`);
  }
  return Object.keys(result.metafile?.inputs ?? {});
}

/** When the source was committed (the SBOM's date): SOURCE_DATE_EPOCH, git, or now outside git. */
function sourceDate(): string {
  const epoch = process.env.SOURCE_DATE_EPOCH;
  if (epoch) return new Date(Number(epoch) * 1000).toISOString();
  const result = Bun.spawnSync(["git", "log", "-1", "--format=%cI"], { cwd: import.meta.dir, stderr: "ignore" });
  const date = result.success ? result.stdout.toString().trim() : "";
  return date ? new Date(date).toISOString() : new Date().toISOString();
}

/** svc.cdx.json: the packages compiled into the binaries, pinned by bun.lock (scripts/sbom.ts). */
async function writeSbom(outfile: string, inputs: string[], version: string): Promise<void> {
  // loaded here, for release builds only: `bun run build` needs nothing beyond build.ts and src/
  const { cycloneDx } = await import("./scripts/sbom.ts");
  const lock = (await import(join(import.meta.dir, "bun.lock"))).default as Lockfile;
  const sbom = cycloneDx(
    // the metafile names the files relative to the working folder
    {
      root: import.meta.dir,
      inputs: inputs.map((input) => resolve(input)),
      version,
      bunVersion: Bun.version,
      timestamp: sourceDate(),
    },
    lock,
  );
  await writeFile(outfile, `${JSON.stringify(sbom, null, 2)}\n`);
}

async function sha256(path: string): Promise<string> {
  return createHash("sha256")
    .update(await readFile(path))
    .digest("hex");
}

/**
 * The dependencies of `root`'s package.json that are not installed. Without them Bun's bundler
 * says only "Bundle failed": a fresh clone must be told to run `bun install` first.
 */
export async function missingDependencies(root: string): Promise<string[]> {
  const manifest = JSON.parse(await readFile(join(root, "package.json"), "utf8")) as {
    dependencies?: Record<string, string>;
  };
  const names = Object.keys(manifest.dependencies ?? {});
  const present = await Promise.all(
    names.map((name) =>
      readFile(join(root, "node_modules", name, "package.json")).then(
        () => true,
        () => false,
      ),
    ),
  );
  return names.filter((_, i) => !present[i]);
}

async function main(): Promise<void> {
  const missing = await missingDependencies(import.meta.dir);
  if (missing.length > 0)
    fail(
      `the dependencies are not installed (${missing.join(", ")} missing): run \`bun install\` in ${import.meta.dir} first`,
    );
  const options = parseArgs(process.argv.slice(2));
  const outdir = resolve(options.outdir);
  await mkdir(outdir, { recursive: true });
  const commit = gitCommit();
  const version = commit ? `${pkg.version}+${commit}` : pkg.version;

  if (!options.all && options.only.length === 0) {
    await compile({ outfile: join(outdir, "svc"), commit });
    console.log(`build: ${join(outdir, "svc")} (${version})`);
    return;
  }

  const targets = options.only.length
    ? options.only.map(
        (name) =>
          RELEASE_TARGETS.find((t) => t.file === `svc-${name}` || t.file === name) ?? fail(`unknown target ${name}`),
      )
    : RELEASE_TARGETS;
  const lines: string[] = [];
  const inputs = new Set<string>();
  for (const target of targets) {
    const outfile = join(outdir, target.file);
    await rm(outfile, { force: true });
    for (const input of await compile({ outfile, target: target.bun, commit })) inputs.add(input);
    lines.push(`${await sha256(outfile)}  ${target.file}`);
    console.log(`build: ${outfile} (${version}, ${target.bun})`);
  }
  // the systemd unit ships beside the binaries: install.sh --systemd downloads and checks it
  await copyFile(join(import.meta.dir, "systemd", "svc.service"), join(outdir, "svc.service"));
  lines.push(`${await sha256(join(outdir, "svc.service"))}  svc.service`);
  await writeSbom(join(outdir, "svc.cdx.json"), [...inputs], version);
  lines.push(`${await sha256(join(outdir, "svc.cdx.json"))}  svc.cdx.json`);
  // sha256sum's own format, so `sha256sum -c --ignore-missing SHA256SUMS` works for users.
  await writeFile(join(outdir, "SHA256SUMS"), lines.join("\n") + "\n");
  console.log(`build: ${join(outdir, "SHA256SUMS")}`);

  if (options.all) {
    // Compiled again rather than copied: the host may be neither glibc x64 nor arm64 (a Mac, Alpine).
    await compile({ outfile: join(outdir, "svc"), commit });
    console.log(`build: ${join(outdir, "svc")} (${version}, host)`);
  }
}

if (import.meta.main) {
  try {
    await main();
  } catch (error) {
    console.error(error instanceof Error ? error.message : error);
    process.exit(2);
  }
}
