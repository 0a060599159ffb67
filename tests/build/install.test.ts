/**
 * install.sh, run by dash against a local HTTP server holding a release (the binary for this
 * machine and SHA256SUMS): it installs a working svc into a prefix, and refuses a tampered
 * checksum leaving nothing installed and no temp files behind. The repository's copy names no
 * release; the copy a release publishes, signed, is tested by release.test.ts.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import {
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { build, hostReleaseFile, ROOT, run, tempDir } from "./helpers.ts";

// Builds, qemu and the engine are slow on a busy 2-core machine; no test here is about speed.
setDefaultTimeout(60_000);

const asset = hostReleaseFile();
let work: string;
let versions: string[];
let server: ReturnType<typeof Bun.serve>;

/** Serves <work>/<release>/<file> at /<release>/<file>. */
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

beforeAll(() => {
  work = tempDir("install");
  const release = join(work, "releases/good");
  versions = build(release, "--target", asset.replace(/^svc-/, ""));
  // The same binary with a SHA256SUMS that does not match it (one hex digit changed).
  const tampered = join(work, "releases/tampered");
  mkdirSync(tampered, { recursive: true });
  cpSync(join(release, asset), join(tampered, asset));
  const sums = readFileSync(join(release, "SHA256SUMS"), "utf8");
  writeFileSync(
    join(tampered, "SHA256SUMS"),
    sums.replace(/^(.)/gm, (c) => (c === "0" ? "1" : "0")),
  );
  server = serveReleases(join(work, "releases"));
}, 120_000);

afterAll(() => {
  server?.stop(true);
  if (work) rmSync(work, { recursive: true, force: true });
});

/**
 * Runs install.sh under dash with its own TMPDIR, so leftovers can be seen. Asynchronously: the
 * release server lives in this process, and a synchronous spawn would starve it.
 */
async function install(release: string | undefined, prefix: string, options: { path?: string; args?: string[] } = {}) {
  const tmp = join(work, `tmp-${release}-${readdirSync(work).length}`);
  mkdirSync(tmp);
  const proc = Bun.spawn(["dash", join(ROOT, "install.sh"), "--prefix", prefix, ...(options.args ?? [])], {
    cwd: work,
    env: {
      PATH: options.path ?? process.env.PATH!,
      HOME: work,
      TMPDIR: tmp,
      ...(release ? { SVC_INSTALL_BASE_URL: `http://127.0.0.1:${server.port}/${release}` } : {}),
    },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  return { code, stdout, stderr, leftovers: readdirSync(tmp) };
}

test("install.sh is POSIX sh that dash parses", () => {
  expect(run(["dash", "-n", "install.sh"]).code).toBe(0);
  expect(run(["sh", "-n", "install.sh"]).code).toBe(0);
}, 60_000);

test("installs the verified binary into PREFIX/bin and prints the next step", async () => {
  const prefix = join(work, "prefix-good");
  const result = await install("good", prefix);
  expect(result.stderr).toBe("");
  expect(result.code).toBe(0);
  expect(result.stdout).toContain("checksum verified");
  expect(result.stdout).toContain("this release is not signed: only the checksum is checked");
  expect(result.stdout).toContain("--generate-config svc.toml");
  expect(result.leftovers).toEqual([]);
  expect(readdirSync(join(prefix, "bin"))).toEqual(["svc"]);
  const installed = run([join(prefix, "bin/svc"), "--version"]);
  expect(installed.code).toBe(0);
  expect(versions).toContain(installed.stdout.trim());
}, 60_000);

test("--systemd installs a hardened unit that systemd-analyze verifies, and a sample configuration it keeps on reinstall", async () => {
  const prefix = join(work, "prefix-systemd");
  const units = join(work, "systemd-units");
  const etc = join(work, "systemd-etc");
  const args = ["--systemd", "--unit-dir", units, "--config-dir", etc];
  const result = await install("good", prefix, { args });
  expect(result.stderr).toBe("");
  expect(result.code).toBe(0);
  expect(result.stdout).toContain("systemctl enable --now svc");
  const unit = readFileSync(join(units, "svc.service"), "utf8");
  expect(unit).toContain(`ExecStart=${join(prefix, "bin/svc")} --config ${join(etc, "svc.toml")}`);
  // the repository's systemd/svc.service, verified against SHA256SUMS, with this install's paths
  expect(result.stdout).toContain("checksum verified: svc.service");
  const repoUnit = readFileSync(join(ROOT, "systemd", "svc.service"), "utf8");
  expect(unit).toBe(
    repoUnit.replace(/^ExecStart=.*$/m, `ExecStart=${join(prefix, "bin/svc")} --config ${join(etc, "svc.toml")}`),
  );
  for (const hardening of [
    "NoNewPrivileges=yes",
    "ProtectSystem=strict",
    "DynamicUser=yes",
    "SupplementaryGroups=docker",
    "StateDirectory=svc",
    "PrivateTmp=yes",
  ])
    expect(unit).toContain(hardening);
  const verify = run(["systemd-analyze", "verify", join(units, "svc.service")]);
  expect(`${verify.stdout}${verify.stderr}`.trim()).toBe("");
  expect(verify.code).toBe(0);
  // the file itself, as a user of a clone installs it (its ExecStart names /usr/local/bin/svc)
  const asIs = run(["systemd-analyze", "verify", join(ROOT, "systemd", "svc.service")]);
  expect(
    `${asIs.stdout}${asIs.stderr}`.replace(/.*Command \/usr\/local\/bin\/svc is not executable.*\n?/g, "").trim(),
  ).toBe("");
  // the sample is svc's own, and a second install keeps the user's edits
  expect(readFileSync(join(etc, "svc.toml"), "utf8")).toBe(run([join(prefix, "bin/svc"), "--generate-config"]).stdout);
  // it will hold secrets: root's and the unit's group's (docker) only, where the group exists
  const docker = run(["getent", "group", "docker"]).stdout.split(":")[2];
  const config = statSync(join(etc, "svc.toml"));
  expect(config.mode & 0o777).toBe(docker ? 0o640 : 0o600);
  if (docker) expect(config.gid).toBe(Number(docker));
  writeFileSync(join(etc, "svc.toml"), 'poll_interval = "6h"\n');
  expect((await install("good", prefix, { args })).stdout).toContain("kept the existing");
  expect(readFileSync(join(etc, "svc.toml"), "utf8")).toBe('poll_interval = "6h"\n');
}, 60_000);

test("refuses a tampered checksum: nothing installed, no temp files left", async () => {
  const prefix = join(work, "prefix-tampered");
  const result = await install("tampered", prefix);
  expect(result.code).not.toBe(0);
  expect(result.stderr).toContain("checksum mismatch");
  expect(existsSync(join(prefix, "bin/svc"))).toBe(false);
  expect(existsSync(prefix) ? readdirSync(prefix, { recursive: true }) : []).toEqual([]);
  expect(result.leftovers).toEqual([]);
}, 60_000);

test("a refused update leaves an installed svc as it was", async () => {
  const prefix = join(work, "prefix-existing");
  mkdirSync(join(prefix, "bin"), { recursive: true });
  writeFileSync(join(prefix, "bin/svc"), "#!/bin/sh\necho old\n", { mode: 0o755 });
  const result = await install("tampered", prefix);
  expect(result.code).not.toBe(0);
  expect(readFileSync(join(prefix, "bin/svc"), "utf8")).toBe("#!/bin/sh\necho old\n");
  expect(readdirSync(join(prefix, "bin"))).toEqual(["svc"]);
}, 60_000);

test("a release server without the files fails without installing anything", async () => {
  const prefix = join(work, "prefix-missing");
  const result = await install("no-such-release", prefix);
  expect(result.code).not.toBe(0);
  expect(result.stderr).toContain("could not download");
  expect(existsSync(prefix)).toBe(false);
  expect(result.leftovers).toEqual([]);
}, 60_000);

test("the repository's copy names no release: without SVC_INSTALL_BASE_URL it points at the published one", async () => {
  const prefix = join(work, "prefix-unreleased");
  const result = await install(undefined, prefix);
  expect(result.code).not.toBe(0);
  expect(result.stderr).toContain("this install.sh names no release");
  expect(result.stderr).toContain("releases/latest/download/install.sh | sh");
  expect(existsSync(prefix)).toBe(false);
  expect(result.leftovers).toEqual([]);
}, 60_000);

test("works with wget when curl is missing", async () => {
  // A PATH with every tool install.sh uses, except curl.
  const bin = join(work, "bin-without-curl");
  mkdirSync(bin);
  const tools = [
    "dash",
    "sh",
    "uname",
    "getconf",
    "ldd",
    "grep",
    "mktemp",
    "rm",
    "awk",
    "wget",
    "sha256sum",
    "mkdir",
    "cp",
    "chmod",
    "mv",
    "cat",
  ];
  for (const tool of tools) {
    const found = Bun.which(tool);
    if (!found) throw new Error(`${tool} is not installed`);
    symlinkSync(found, join(bin, tool));
  }
  const prefix = join(work, "prefix-wget");
  const result = await install("good", prefix, { path: bin });
  expect(result.stderr).toBe("");
  expect(result.code).toBe(0);
  expect(versions).toContain(run([join(prefix, "bin/svc"), "--version"]).stdout.trim());
}, 60_000);
