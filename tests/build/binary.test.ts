/**
 * The compiled binaries: the host one and the release ones run `--version` with the stamped
 * version, SHA256SUMS matches them, and stray `.env` / `bunfig.toml` files in the working
 * directory change nothing (the Bun traps build.ts handles).
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { compile } from "../../build.ts";
import pkg from "../../package.json" with { type: "json" };
import { build, run, tempDir } from "./helpers.ts";

// Builds, qemu and the engine are slow on a busy 2-core machine; no test here is about speed.
setDefaultTimeout(60_000);

let dist: string;
let versions: string[];

// every target compiled: about 40 CPU s, which took past 120 s on two cores shared with the matrix
beforeAll(() => {
  dist = tempDir("dist");
  versions = build(dist, "--all");
}, 300_000);

afterAll(() => {
  if (dist) rmSync(dist, { recursive: true, force: true });
});

describe("bun run build --all", () => {
  test("writes the host binary, the release binaries and SHA256SUMS", () => {
    for (const file of ["svc", "svc-linux-x64", "svc-linux-arm64", "SHA256SUMS"]) {
      expect(existsSync(join(dist, file))).toBe(true);
    }
  });

  test("the host binary prints the package version and the git commit", () => {
    const result = run([join(dist, "svc"), "--version"]);
    expect(result.code).toBe(0);
    expect(versions).toContain(result.stdout.trim());
    expect(result.stdout.trim().startsWith(pkg.version)).toBe(true);
  });

  test("the host binary answers --help", () => {
    const result = run([join(dist, "svc"), "--help"]);
    expect(result.code).toBe(0);
    expect(result.stdout + result.stderr).toContain("svc");
  });

  // the data guard's helper container runs the compiled binary as its copier (docs/data-guard.md)
  test("the host binary is the data guard's copier: `__data-guard-helper copy` writes a tar GNU tar reads", () => {
    const work = tempDir("copier");
    mkdirSync(join(work, "out"));
    mkdirSync(join(work, "volume", "sub"), { recursive: true });
    writeFileSync(join(work, "volume", "sub", "file"), "kept\n");
    writeFileSync(join(work, "out", ".probe"), "token");
    const spec = {
      out: join(work, "out"),
      limit: 1 << 20,
      owner: null,
      probe: { file: ".probe", token: "token" },
      mounts: [{ root: join(work, "volume"), base: "volume" }],
    };
    const result = run([join(dist, "svc"), "__data-guard-helper", "copy", JSON.stringify(spec)]);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(JSON.parse(readFileSync(join(work, "out", "result.json"), "utf8")).mounts[0].file).toBe("mount-0.tar");
    const listed = run(["tar", "-tf", join(work, "out", "mount-0.tar")]);
    expect(listed.stdout.trim().split("\n")).toEqual(["volume/", "volume/sub/", "volume/sub/file"]);
    rmSync(work, { recursive: true, force: true });
  });

  test("the x64 release binary runs --version", () => {
    if (process.arch !== "x64") return;
    const result = run([join(dist, "svc-linux-x64"), "--version"]);
    expect(result.code).toBe(0);
    expect(versions).toContain(result.stdout.trim());
  });

  test("the arm64 release binary runs --version under qemu-user", () => {
    const result = run([
      "qemu-aarch64-static",
      "-L",
      "/usr/aarch64-linux-gnu",
      join(dist, "svc-linux-arm64"),
      "--version",
    ]);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(versions).toContain(result.stdout.trim());
  }, 60_000);

  test("SHA256SUMS is in sha256sum's format and matches every release file (the binaries, their SBOM and the systemd unit install.sh installs)", () => {
    const sums = readFileSync(join(dist, "SHA256SUMS"), "utf8");
    expect(
      sums
        .trim()
        .split("\n")
        .map((line) => line.split(/\s+/)[1])
        .sort(),
    ).toEqual(["svc-linux-arm64", "svc-linux-x64", "svc.cdx.json", "svc.service"]);
    const check = run(["sha256sum", "-c", "SHA256SUMS"], { cwd: dist });
    expect(check.stderr).toBe("");
    expect(check.code).toBe(0);
  }, 60_000);
});

describe("the dashboard inside the binary", () => {
  test("with http_api.ui the host binary serves the page and every file it names, from itself", async () => {
    const port = 20_000 + Math.floor(Math.random() * 20_000);
    // the page listens before the engine is asked: an unreachable engine does not matter here
    const args = [
      "--http-api-ui",
      "--http-api-token",
      "build-test-token",
      "--http-api-port",
      String(port),
      "--docker-host",
      "unix:///nonexistent/docker.sock",
      "--poll-interval",
      "1h",
    ];
    const svc = Bun.spawn([join(dist, "svc"), ...args], {
      cwd: dist,
      stdout: "ignore",
      stderr: "ignore",
      env: { PATH: process.env.PATH ?? "" },
    });
    try {
      const base = `http://127.0.0.1:${port}`;
      let page: Response | undefined;
      for (let attempt = 0; attempt < 100 && !page; attempt++)
        page = await fetch(base).catch(() => Bun.sleep(100).then(() => undefined));
      expect(page!.status).toBe(200);
      expect(page!.headers.get("content-security-policy")).toContain("script-src 'self'");
      const files = [...(await page!.text()).matchAll(/(?:src|href)="\.?(\/[^"]+)"/g)].map((m) => m[1]!);
      expect(files.filter((file) => /\.(js|css)$/.test(file)).length).toBe(2);
      for (const file of files) {
        const response = await fetch(base + file, { headers: { "accept-encoding": "gzip" } });
        expect(response.status).toBe(200);
        expect((await response.text()).length).toBeGreaterThan(100);
      }
    } finally {
      svc.kill();
      await svc.exited;
    }
  }, 60_000);
});

describe("stray .env and bunfig.toml in the working directory", () => {
  let clean: string;
  let stray: string;

  beforeAll(() => {
    clean = join(dist, "clean-cwd");
    stray = join(dist, "stray-cwd");
    mkdirSync(clean);
    mkdirSync(stray);
    // Each line would change what svc does if the binary loaded it.
    writeFileSync(
      join(stray, ".env"),
      [
        "SVC_STRAY=from-dotenv",
        "SVC_CONFIG=/nonexistent/from-dotenv.toml",
        "SVC_LOG_LEVEL=from-dotenv",
        "SVC_LOG_FORMAT=from-dotenv",
        "DOCKER_HOST=unix:///nonexistent/from-dotenv.sock",
        "NODE_ENV=development",
        "",
      ].join("\n"),
    );
    writeFileSync(join(stray, "bunfig.toml"), 'preload = ["./stray-preload.js"]\nlogLevel = "debug"\n');
    writeFileSync(
      join(stray, "stray-preload.js"),
      'globalThis.__strayPreload = "ran"; require("node:fs").writeFileSync("preload-ran", "yes"); console.error("from-bunfig");\n',
    );
  });

  // A program that shows exactly what the traps would change, compiled once with build.ts's own
  // settings and once with Bun's defaults (the control: proves the stray files do bite).
  const probeSource = `console.log(JSON.stringify({ stray: process.env.SVC_STRAY ?? null, preload: globalThis.__strayPreload ?? null, nodeEnv: process.env.NODE_ENV ?? null }));\n`;

  test("a probe compiled with build.ts's settings ignores them, and NODE_ENV stays production", async () => {
    const probe = join(dist, "probe.ts");
    writeFileSync(probe, probeSource);
    await compile({ outfile: join(dist, "probe-ours"), commit: "", entrypoint: probe });
    const result = run([join(dist, "probe-ours")], { cwd: stray, env: { ...process.env, NODE_ENV: "development" } });
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual({ stray: null, preload: null, nodeEnv: "production" });
    expect(result.stderr).not.toContain("from-bunfig");
    expect(existsSync(join(stray, "preload-ran"))).toBe(false);
  }, 60_000);

  test("control: the same probe compiled with Bun's defaults is changed by them", async () => {
    const probe = join(dist, "probe.ts");
    writeFileSync(probe, probeSource);
    const built = await Bun.build({
      entrypoints: [probe],
      compile: { outfile: join(dist, "probe-default") },
      format: "esm",
    });
    expect(built.success).toBe(true);
    const result = run([join(dist, "probe-default")], { cwd: stray });
    rmSync(join(stray, "preload-ran"), { force: true });
    const seen = JSON.parse(result.stdout);
    expect({ stray: seen.stray, preload: seen.preload }).toEqual({ stray: "from-dotenv", preload: "ran" });
    // Without a define, NODE_ENV is whatever the building process had (bun test sets "test"): the
    // other trap, which build.ts closes by defining it.
    expect(seen.nodeEnv).toBe(process.env.NODE_ENV ?? null);
  }, 60_000);

  const invocations = [
    ["--version"],
    ["--help"],
    ["--generate-config"],
    ["--run-once", "--docker-host", "unix:///nonexistent/docker.sock", "svc-no-such-container"],
  ];
  for (const args of invocations) {
    test(`svc ${args.join(" ")} behaves as in a clean directory`, () => {
      const svc = join(dist, "svc");
      const env: Record<string, string | undefined> = { ...process.env, NO_COLOR: "1" };
      delete env.DOCKER_HOST;
      delete env.NODE_ENV;
      for (const key of Object.keys(env)) if (key.startsWith("SVC_")) delete env[key];
      const inClean = run([svc, ...args], { cwd: clean, env });
      const inStray = run([svc, ...args], { cwd: stray, env });
      expect(inStray.code).toBe(inClean.code);
      expect(inStray.stdout + inStray.stderr).not.toContain("from-dotenv");
      expect(inStray.stdout + inStray.stderr).not.toContain("from-bunfig");
      expect(existsSync(join(stray, "preload-ran"))).toBe(false);
      // Logs may carry timestamps; outputs without them must be identical.
      if (args[0] !== "--run-once") expect(inStray.stdout).toBe(inClean.stdout);
    }, 60_000);
  }
});
