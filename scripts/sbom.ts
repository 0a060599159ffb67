/**
 * The software bill of materials of the compiled binaries, as CycloneDX 1.6 JSON: the npm packages
 * the bundler actually put into them (build.ts reads them from the build's metafile, so a package
 * build.ts stubs out, or one only the tests use, is not listed), each with the exact version and
 * integrity bun.lock pins and the licence its installed package.json declares, plus the Bun runtime
 * every binary carries.
 *
 * Written here rather than by an npm tool: the CycloneDX and SPDX generators for npm read
 * package-lock.json or `npm ls`, neither of which a Bun project has, and none can know which
 * packages the bundler left out.
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join, relative, sep } from "node:path";

/** One entry of bun.lock's "packages": [ "name@version", registry, { dependencies... }, integrity ]. */
type LockEntry = [string, string, { dependencies?: Record<string, string> }?, string?];

export type Lockfile = { packages: Record<string, LockEntry> };

export type SbomInput = {
  /** the repository's folder (bun.lock, package.json, node_modules) */
  root: string;
  /** files the bundler read, as the metafile names them (relative to `root` or absolute) */
  inputs: string[];
  /** the version svc is released as */
  version: string;
  /** the Bun runtime compiled into the binaries */
  bunVersion: string;
  /** when the release's source was committed (ISO 8601): the same source gives the same document */
  timestamp: string;
};

/**
 * The bun.lock key of each package folder the inputs come from: `node_modules/a/node_modules/b/x.js`
 * is the copy of b that a pins, key "a/b"; scoped names keep their scope ("@s/p").
 */
export function lockKeysOf(root: string, inputs: string[]): string[] {
  const keys = new Set<string>();
  for (const input of inputs) {
    const path = relative(root, input.startsWith(sep) ? input : join(root, input)).split(sep);
    if (path[0] !== "node_modules") continue;
    const names: string[] = [];
    for (let i = 0; i < path.length; i++) {
      if (path[i] !== "node_modules" || i + 1 >= path.length) continue;
      const scoped = path[i + 1]!.startsWith("@");
      names.push(scoped ? `${path[i + 1]}/${path[i + 2]}` : path[i + 1]!);
    }
    if (names.length > 0) keys.add(names.join("/"));
  }
  return [...keys].sort();
}

/** "@s/p@1.2.3" into its name and version (the version follows the last "@"). */
function nameAndVersion(spec: string): { name: string; version: string } {
  const at = spec.lastIndexOf("@");
  return { name: spec.slice(0, at), version: spec.slice(at + 1) };
}

/** The package URL of an npm package (the scope's "@" percent-encoded, as the purl spec says). */
export function npmPurl(name: string, version: string): string {
  return `pkg:npm/${name.replace(/^@/, "%40")}@${version}`;
}

/** Where Bun installed the package a lock key names. */
function installedFolder(root: string, key: string): string {
  const parts = key.split("/");
  const names: string[] = [];
  for (let i = 0; i < parts.length; i++)
    names.push(parts[i]!.startsWith("@") ? `${parts[i]}/${parts[++i]}` : parts[i]!);
  return join(root, ...names.flatMap((name) => ["node_modules", name]));
}

/** The licence an installed package declares, when it declares one as an SPDX expression. */
function licenseOf(root: string, key: string): string | undefined {
  try {
    const manifest = JSON.parse(readFileSync(join(installedFolder(root, key), "package.json"), "utf8")) as {
      license?: unknown;
    };
    return typeof manifest.license === "string" ? manifest.license : undefined;
  } catch {
    return undefined;
  }
}

/** An SRI integrity ("sha512-<base64>") as CycloneDX's hash (hex). */
function hashOf(integrity: string | undefined): { alg: string; content: string }[] {
  const match = /^sha(256|384|512)-(.+)$/.exec(integrity ?? "");
  return match ? [{ alg: `SHA-${match[1]}`, content: Buffer.from(match[2]!, "base64").toString("hex") }] : [];
}

/** The CycloneDX document (an object to serialize). */
export function cycloneDx(input: SbomInput, lock: Lockfile): Record<string, unknown> {
  const keys = lockKeysOf(input.root, input.inputs);
  const bunRef = `pkg:generic/bun@${input.bunVersion}`;
  const components = [
    {
      type: "platform",
      "bom-ref": bunRef,
      name: "bun",
      version: input.bunVersion,
      description: "the Bun runtime compiled into each binary (bun build --compile)",
      purl: bunRef,
      licenses: [{ license: { id: "MIT" } }],
      externalReferences: [{ type: "vcs", url: "https://github.com/oven-sh/bun" }],
    },
    ...keys.flatMap((key) => {
      const entry = lock.packages[key];
      if (!entry) throw new Error(`sbom: ${key} is bundled but bun.lock does not pin it`);
      const { name, version } = nameAndVersion(entry[0]);
      const license = licenseOf(input.root, key);
      return [
        {
          type: "library",
          "bom-ref": npmPurl(name, version),
          name,
          version,
          purl: npmPurl(name, version),
          hashes: hashOf(entry[3]),
          ...(license ? { licenses: [{ expression: license }] } : {}),
        },
      ];
    }),
  ];
  // The same package at one version may be pinned twice (two parents): one component each.
  const unique = [...new Map(components.map((c) => [c["bom-ref"], c])).values()];
  const svcRef = npmPurl("svc", input.version);
  const serial = createHash("sha256")
    .update(JSON.stringify([input.version, input.timestamp, unique]))
    .digest("hex");
  return {
    bomFormat: "CycloneDX",
    specVersion: "1.6",
    // a UUID made from the content, so that one source yields one document
    serialNumber: `urn:uuid:${serial.slice(0, 8)}-${serial.slice(8, 12)}-5${serial.slice(13, 16)}-8${serial.slice(17, 20)}-${serial.slice(20, 32)}`,
    version: 1,
    metadata: {
      timestamp: input.timestamp,
      tools: { components: [{ type: "application", name: "svc scripts/sbom.ts" }] },
      component: {
        type: "application",
        "bom-ref": svcRef,
        name: "svc",
        version: input.version,
        purl: svcRef,
        licenses: [{ license: { id: "MIT" } }],
      },
    },
    components: unique,
    dependencies: [{ ref: svcRef, dependsOn: unique.map((c) => c["bom-ref"]) }],
  };
}
