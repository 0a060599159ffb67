/**
 * The CLI as an operator runs it: `bun src/main.ts ...` in a directory of its own, with only
 * the environment we give it. Exit statuses and what is printed are what is asserted.
 */
import { describe, expect, test } from "bun:test";
import { existsSync, lstatSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { OPTIONS } from "../../../src/config/index.ts";
import { VERSION } from "../../../src/core/version.ts";
import { tempDir } from "../../temp.ts";

const MAIN = join(import.meta.dir, "../../../src/main.ts");

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function svc(args: string[], options: { cwd?: string; env?: Record<string, string> } = {}): Run {
  const cwd = options.cwd ?? tempDir("svc-cli-");
  const proc = Bun.spawnSync([process.execPath, MAIN, ...args], {
    cwd,
    env: {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: cwd,
      XDG_STATE_HOME: join(cwd, ".state"),
      NO_COLOR: "1",
      ...options.env,
    },
    stdout: "pipe",
    stderr: "pipe",
  });
  return { code: proc.exitCode ?? -1, stdout: proc.stdout.toString(), stderr: proc.stderr.toString() };
}

function dirWith(files: Record<string, string>): string {
  const dir = tempDir("svc-cli-");
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}

const PLAIN = { SVC_LOG_FORMAT: "pretty" };

describe("bad configuration: exit 2, every problem printed, nothing started", () => {
  test("problems from the file (with lines), env and flags, all at once", () => {
    const cwd = dirWith({
      "svc.toml": [
        'log_level = "loud"',
        "[http_api]",
        "update = true",
        "prot = 8080",
        "[notifications.mqtt]",
        "qos = 5",
      ].join("\n"),
    });
    const run = svc(["--stop-timeout", "soon", "--bogus-flag"], { cwd, env: { ...PLAIN, SVC_CLEANUP: "perhaps" } });
    expect(run.code).toBe(2);
    const expected = [
      "svc: invalid configuration (7 problems)",
      '  - svc.toml:1: log_level: must be one of trace, debug, info, warn, error (got "loud")',
      "  - svc.toml:4: http_api.prot: unknown option (did you mean http_api.port?)",
      "  - svc.toml:6: notifications.mqtt.qos: must be 0, 1 or 2 (got 5)",
      '  - SVC_CLEANUP: expected true/false, 1/0 or yes/no, got "perhaps"',
      "  - --bogus-flag: unknown flag",
      '  - --stop-timeout: is not a duration (examples: "30s", "5m", "1h30m", "250ms", or plain seconds) (got "soon")',
      "  - svc.toml:3: http_api.update: an authenticated endpoint is enabled but no token is set: set http_api.token (--http-api-token, SVC_HTTP_API_TOKEN)",
    ];
    for (const line of expected) expect(run.stderr).toContain(line);
    expect(run.stderr).not.toContain("    at "); // no stack
    expect(run.stdout).toBe("");
  });

  test("a TOML syntax error names the file and line", () => {
    const cwd = dirWith({ "my.toml": 'run_once = true\n\n[docker]\nhost = "unix:///x.sock\n' });
    const run = svc(["-c", "my.toml"], { cwd, env: PLAIN });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("  - my.toml:4: TOML syntax error:");
  });

  test("a named configuration file that does not exist", () => {
    const run = svc(["--config", "/nonexistent/svc.toml", "--run-once"], { env: PLAIN });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("--config: configuration file /nonexistent/svc.toml does not exist");
  });

  test("nothing would ever run", () => {
    const run = svc([], { env: PLAIN });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("nothing would ever run");
  });

  test("mutually exclusive schedule options and a bad cron", () => {
    const run = svc(["--run-once", "--poll-interval", "5m", "--schedule", "not a cron"], { env: PLAIN });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(
      "--poll-interval and --schedule and --run-once: poll_interval, schedule and run_once are mutually exclusive",
    );
    expect(run.stderr).toContain("--schedule: must have 5 or 6 fields (has 3)");
  });

  test("TLS files required when docker.tls_verify is true", () => {
    const run = svc(["--run-once"], {
      env: { ...PLAIN, SVC_DOCKER_TLS_VERIFY: "true", SVC_DOCKER_TLS_CA_CERT: "/nonexistent/ca.pem" },
    });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("SVC_DOCKER_TLS_CA_CERT: cannot read /nonexistent/ca.pem: no such file");
    expect(run.stderr).toContain(
      "SVC_DOCKER_TLS_VERIFY: is true, so docker.tls_cert (--docker-tls-cert, SVC_DOCKER_TLS_CERT) is required",
    );
  });

  test("a secret never appears in the problems", () => {
    const run = svc(
      [
        "--run-once",
        "--http-api-token",
        "tok-VERY-SECRET",
        "--registry-credentials",
        "host=a,username=u,pass=pw-VERY-SECRET",
      ],
      { env: PLAIN },
    );
    expect(run.code).toBe(2);
    expect(run.stderr).not.toContain("VERY-SECRET");
  });

  test("piped with the default log format, every line on stderr is a JSON record", () => {
    const run = svc(["--bogus"], {});
    expect(run.code).toBe(2);
    const records = run.stderr
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line));
    expect(records.map((r) => r.message)).toContain("--bogus: unknown flag");
    for (const record of records) expect(record).toMatchObject({ level: "error", target: "svc::config" });
  });

  test("healthcheck loads the configuration first", () => {
    const run = svc(["healthcheck", "--http-api-port", "0"], { env: PLAIN });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("--http-api-port: must be an integer between 1 and 65535 (got 0)");
  });
});

describe("--generate-config", () => {
  test("to stdout: the commented sample, exit 0", () => {
    const run = svc(["--generate-config"]);
    expect(run.code).toBe(0);
    expect(Bun.TOML.parse(run.stdout)).toEqual({});
    for (const option of OPTIONS) expect(run.stdout).toContain(option.meta.description);
    // redirected by the shell, the file would be readable by others: the FILE form is named
    expect(run.stderr).toContain("svc --generate-config FILE writes it 0600");
  });

  test("stdout and stderr into one file (`> svc.toml 2>&1`, a terminal's `docker run -t`): the file parses as TOML, the note a comment in it", () => {
    const cwd = tempDir("svc-cli-");
    const proc = Bun.spawnSync(
      ["sh", "-c", 'exec "$0" "$1" --generate-config > svc.toml 2>&1', process.execPath, MAIN],
      {
        cwd,
        env: {
          PATH: process.env.PATH ?? "/usr/bin:/bin",
          HOME: cwd,
          XDG_STATE_HOME: join(cwd, ".state"),
          NO_COLOR: "1",
        },
      },
    );
    expect(proc.exitCode).toBe(0);
    const text = readFileSync(join(cwd, "svc.toml"), "utf8");
    expect(text).toContain("svc --generate-config FILE writes it 0600");
    expect(Bun.TOML.parse(text)).toEqual({});
    for (const option of OPTIONS) expect(text).toContain(option.meta.description);
  });

  test("svc help and svc version are the help and the version, not container names", () => {
    const help = svc(["help"]);
    expect([help.code, help.stdout]).toEqual([0, expect.stringContaining("Start here:")]);
    const version = svc(["version"]);
    expect(version.code).toBe(0);
    expect(version.stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
  });

  test("to a FILE; refuses to overwrite it without --force", () => {
    const cwd = dirWith({});
    const first = svc(["--generate-config", "svc.toml"], { cwd });
    expect(first.code).toBe(0);
    const path = join(cwd, "svc.toml");
    const sample = readFileSync(path, "utf8");
    expect(sample).toContain("# [http_api]");

    writeFileSync(path, "# mine\n");
    const refused = svc(["--generate-config", "svc.toml"], { cwd, env: PLAIN });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain("svc.toml already exists; add --force to overwrite it");
    expect(readFileSync(path, "utf8")).toBe("# mine\n");

    const forced = svc(["--generate-config", "svc.toml", "--force"], { cwd });
    expect(forced.code).toBe(0);
    expect(readFileSync(path, "utf8")).toBe(sample);
  });

  test("the FILE is its user's only (it is about to hold secrets), and a symlink there is replaced, never written through", () => {
    const cwd = dirWith({});
    const path = join(cwd, "svc.toml");
    writeFileSync(path, "# was world-readable\n", { mode: 0o644 });
    expect(svc(["--generate-config", "svc.toml", "--force"], { cwd }).code).toBe(0);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    const victim = join(cwd, "victim");
    writeFileSync(victim, "untouched");
    rmSync(path);
    symlinkSync(victim, path);
    expect(svc(["--generate-config", "svc.toml", "--force"], { cwd }).code).toBe(0);
    expect(readFileSync(victim, "utf8")).toBe("untouched");
    expect(lstatSync(path).isSymbolicLink()).toBe(false);
    expect(statSync(path).mode & 0o777).toBe(0o600);
  });

  test("a service started with the generated file behaves as with none", () => {
    const cwd = dirWith({});
    expect(svc(["--generate-config", "generated.toml"], { cwd }).code).toBe(0);
    expect(existsSync(join(cwd, "generated.toml"))).toBe(true);
    const withFile = svc(["--print-config", "-c", "generated.toml", "--poll-interval", "1h"], { cwd });
    const without = svc(["--print-config", "--poll-interval", "1h"], { cwd });
    expect(withFile.code).toBe(0);
    const body = (text: string) =>
      text
        .split("\n")
        .filter((line) => !line.startsWith("# Configuration file") && !line.startsWith("# No configuration file"));
    expect(body(withFile.stdout)).toEqual(body(without.stdout));
  });
});

describe("--print-config", () => {
  test("the effective configuration as TOML, secrets redacted, sources noted", () => {
    const cwd = dirWith({ "svc.toml": 'log_level = "warn"\n[http_api]\nupdate = true\n', token: "tok-FROM-FILE\n" });
    const run = svc(["--print-config", "--http-api-port", "9090", "web"], {
      cwd,
      env: { SVC_HTTP_API_TOKEN: join(cwd, "token"), SVC_REGISTRY_PASSWORD: "pw-SECRET" },
    });
    expect(run.code).toBe(0);
    expect(run.stdout).not.toContain("FROM-FILE");
    expect(run.stdout).not.toContain("pw-SECRET");
    const lines = run.stdout.split("\n");
    expect(lines).toContain('log_level = "warn"  # from file (svc.toml:1)');
    expect(lines).toContain('token = "[redacted]"  # from env (SVC_HTTP_API_TOKEN)');
    expect(lines).toContain('registry_password = "[redacted]"  # from env (SVC_REGISTRY_PASSWORD)');
    expect(lines).toContain("port = 9090  # from flag (--http-api-port)");
    expect(lines).toContain('containers = ["web"]  # from flag (arguments)');
    expect(lines).toContain('stop_timeout = "10s"  # from default');
    const parsed = Bun.TOML.parse(run.stdout) as any;
    expect(parsed.http_api).toMatchObject({ update: true, port: 9090, token: "[redacted]" });
  });

  test("the sample alone: its top names the one setting to choose; --print-config prints what it can, the problems under it, exit 2", () => {
    const cwd = dirWith({});
    expect(svc(["--generate-config", "svc.toml"], { cwd }).code).toBe(0);
    const top = readFileSync(join(cwd, "svc.toml"), "utf8").split("\n").slice(0, 12).join("\n");
    for (const choice of [
      '#   poll_interval = "6h"',
      "#   schedule = ",
      "#   run_once = true",
      "update = true under [http_api]",
    ])
      expect(top).toContain(choice);
    const run = svc(["--print-config", "--stop-timeout", "soon"], { cwd });
    expect(run.code).toBe(2);
    const lines = run.stdout.split("\n");
    expect(lines).toContain('log_level = "info"  # from default');
    expect(lines).toContain(
      "# stop_timeout: the value from flag (--stop-timeout) is refused (below); svc would not start",
    );
    const problems = lines.slice(lines.indexOf("# svc refuses to start with this configuration:") + 1);
    expect(problems[0]).toStartWith("#   - --stop-timeout: is not a duration");
    expect(problems[1]).toStartWith("#   - nothing would ever run: set one of poll_interval");
    expect(() => Bun.TOML.parse(run.stdout)).not.toThrow();
  });
});

describe("--version, --help", () => {
  test("--version prints the version", () => {
    const run = svc(["--version"]);
    expect(run).toMatchObject({ code: 0, stdout: `${VERSION}\n` });
  });

  test("--help lists every flag of the schema", () => {
    const run = svc(["--help"]);
    expect(run.code).toBe(0);
    for (const option of OPTIONS) expect(run.stdout).toContain(option.flag);
    for (const flag of ["--config", "--generate-config", "--force", "--print-config", "--version"])
      expect(run.stdout).toContain(flag);
    expect(run.stdout).toContain("healthcheck");
  });

  test("every command has its own help, which runs nothing; every line fits 80 columns off a terminal", () => {
    const widest = (text: string) => Math.max(...text.split("\n").map((line) => line.length));
    expect(widest(svc(["--help"]).stdout)).toBeLessThanOrEqual(80);
    for (const [command, usage] of [
      ["rollback", "Usage: svc rollback NAME [OPTIONS]"],
      ["accept-signer", "Usage: svc accept-signer NAME [OPTIONS]"],
      ["migrate", "Usage: svc migrate [CONTAINER]"],
      ["healthcheck", "Usage: svc healthcheck [OPTIONS]"],
    ] as const) {
      // an engine that is not there: the command would fail if it ran
      const run = svc([command, "web", "--help", "--docker-host", "unix:///nonexistent.sock"]);
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout).toStartWith(usage);
      expect(run.stderr).toBe("");
      expect(widest(run.stdout)).toBeLessThanOrEqual(80);
      expect(svc([command, "-h"]).stdout).toStartWith(usage);
    }
  });
});
