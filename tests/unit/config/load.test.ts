import { describe, expect, test } from "bun:test";
import { chmodSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { defaultConfig, defaultStateDir, loadConfig } from "../../../src/config/index.ts";
import { exitCodeOf, isSvcError } from "../../../src/core/errors.ts";
import { load, problems, RUNS, tempDir, writeFile } from "./helpers.ts";

describe("precedence: flag > env > file > default", () => {
  const toml = 'log_level = "warn"\nstop_timeout = "20s"\nregistry_concurrency = 4\npoll_interval = "1h"';

  test("file over default", async () => {
    const { config, sources } = await load({ toml });
    expect(config.log_level).toBe("warn");
    expect(config.stop_timeout).toBe(20_000);
    expect(sources.log_level).toEqual({ source: "file", name: "log_level", where: "svc.toml:1" });
    expect(sources.cleanup!.source).toBe("default");
  });

  test("env over file", async () => {
    const { config, sources } = await load({ toml, env: { SVC_LOG_LEVEL: "error" } });
    expect(config.log_level).toBe("error");
    expect(config.stop_timeout).toBe(20_000);
    expect(sources.log_level).toEqual({ source: "env", name: "SVC_LOG_LEVEL" });
  });

  test("flag over env over file", async () => {
    const { config, sources } = await load({
      toml,
      env: { SVC_LOG_LEVEL: "error", SVC_REGISTRY_CONCURRENCY: "6" },
      argv: ["--log-level", "debug"],
    });
    expect(config.log_level).toBe("debug");
    expect(config.registry_concurrency).toBe(6);
    expect(config.stop_timeout).toBe(20_000);
    expect(sources.log_level).toEqual({ source: "flag", name: "--log-level" });
  });

  test("nothing given: exactly the defaults, plus what runs", async () => {
    const { config } = await load({ argv: RUNS });
    expect(config).toEqual(defaultConfig({ poll_interval: 3_600_000, state_dir: defaultStateDir({}) }));
  });

  test("docker.host: SVC_DOCKER_HOST > file > DOCKER_HOST > default", async () => {
    const env = { DOCKER_HOST: "tcp://from-docker-host:2375" };
    expect((await load({ argv: RUNS })).config.docker.host).toBe("unix:///var/run/docker.sock");
    const fallback = await load({ argv: RUNS, env });
    expect(fallback.config.docker.host).toBe("tcp://from-docker-host:2375");
    expect(fallback.sources["docker.host"]).toEqual({ source: "env", name: "DOCKER_HOST" });
    const toml = '[docker]\nhost = "unix:///from/file.sock"';
    expect((await load({ argv: RUNS, env, toml })).config.docker.host).toBe("unix:///from/file.sock");
    expect(
      (await load({ argv: RUNS, env: { ...env, SVC_DOCKER_HOST: "tcp://svc:2375" }, toml })).config.docker.host,
    ).toBe("tcp://svc:2375");
  });

  test("docker.config: SVC_DOCKER_CONFIG > file > DOCKER_CONFIG > $HOME/.docker, where the Docker CLI looks", async () => {
    expect((await load({ argv: RUNS })).config.docker.config).toBeUndefined();
    expect((await load({ argv: RUNS, env: { HOME: "/home/op" } })).config.docker.config).toBe("/home/op/.docker");
    const env = { HOME: "/home/op", DOCKER_CONFIG: "/etc/docker-cli" };
    const fallback = await load({ argv: RUNS, env });
    expect(fallback.config.docker.config).toBe("/etc/docker-cli");
    expect(fallback.sources["docker.config"]).toEqual({ source: "env", name: "DOCKER_CONFIG" });
    const toml = '[docker]\nconfig = "/from/file"';
    expect((await load({ argv: RUNS, env, toml })).config.docker.config).toBe("/from/file");
    expect((await load({ argv: RUNS, env: { ...env, SVC_DOCKER_CONFIG: "/svc" }, toml })).config.docker.config).toBe(
      "/svc",
    );
  });
});

describe("config file selection", () => {
  test("--config, -c and SVC_CONFIG name the file; ./svc.toml is not read then", async () => {
    const dir = tempDir();
    writeFile(dir, "svc.toml", 'log_level = "warn"\nrun_once = true');
    const other = writeFile(dir, "other.toml", 'log_level = "error"\nrun_once = true');
    for (const argv of [["--config", other], ["-c", other], [`--config=${other}`]]) {
      const result = await loadConfig({ argv, env: {}, cwd: dir });
      expect(result.config.log_level).toBe("error");
      expect(result.file).toBe(other);
    }
    const viaEnv = await loadConfig({ argv: [], env: { SVC_CONFIG: "other.toml" }, cwd: dir });
    expect(viaEnv.config.log_level).toBe("error");
    const fallback = await loadConfig({ argv: [], env: {}, cwd: dir });
    expect(fallback.config.log_level).toBe("warn");
    expect(fallback.file).toBe(join(dir, "svc.toml"));
  });

  test("a named file that does not exist is an error; a missing ./svc.toml is not", async () => {
    expect(await problems({ argv: ["-c", "/nonexistent/svc.toml", ...RUNS] })).toEqual([
      "-c: configuration file /nonexistent/svc.toml does not exist",
    ]);
    expect(await problems({ argv: RUNS, env: { SVC_CONFIG: "missing.toml" } })).toEqual([
      "SVC_CONFIG: configuration file missing.toml does not exist",
    ]);
    expect((await load({ argv: RUNS })).file).toBeUndefined();
  });
});

describe("value forms", () => {
  test.each([
    ["--cleanup", true],
    ["--cleanup=true", true],
    ["--cleanup=false", false],
    ["--no-cleanup", false],
    ["--cleanup=yes", true],
  ])("boolean flag %s", async (flag, expected) => {
    expect((await load({ argv: [...RUNS, flag] })).config.cleanup).toBe(expected);
  });

  test.each([
    ["true", true],
    ["TRUE", true],
    ["1", true],
    ["yes", true],
    ["false", false],
    ["0", false],
    ["No", false],
  ])("boolean env %s", async (text, expected) => {
    expect((await load({ argv: RUNS, env: { SVC_CLEANUP: text } })).config.cleanup).toBe(expected);
  });

  test("a boolean option named no_pull keeps its own flag, and --no-no-pull negates it", async () => {
    expect((await load({ argv: [...RUNS, "--no-pull"] })).config.no_pull).toBe(true);
    expect((await load({ argv: [...RUNS, "--no-no-pull"], env: { SVC_NO_PULL: "true" } })).config.no_pull).toBe(false);
  });

  test.each([
    ["30s", 30_000],
    ["5m", 300_000],
    ["1h", 3_600_000],
    ["5m30s", 330_000],
    ["250ms", 250],
    ["45", 45_000],
  ])("duration %s", async (text, ms) => {
    expect((await load({ argv: [...RUNS, "--stop-timeout", text] })).config.stop_timeout).toBe(ms);
  });

  test("a plain TOML integer duration means seconds", async () => {
    expect((await load({ toml: "stop_timeout = 15\npoll_interval = 60" })).config).toMatchObject({
      stop_timeout: 15_000,
      poll_interval: 60_000,
    });
  });

  test("arrays are comma-separated in flags and env; a repeated array flag adds", async () => {
    const { config } = await load({
      argv: [...RUNS, "--disable-containers", "a, b", "--disable-containers=c"],
      env: { SVC_INSECURE_REGISTRIES: "r1:5000,r2" },
    });
    expect(config.disable_containers).toEqual(["a", "b", "c"]);
    expect(config.insecure_registries).toEqual(["r1:5000", "r2"]);
  });

  test("registry_credentials compact form in env and flags, array of tables in TOML", async () => {
    const compact = "host=ghcr.io,username=u,password=p;host=docker.io";
    const expected = [{ host: "ghcr.io", username: "u", password: "p" }, { host: "docker.io" }];
    expect(
      (await load({ argv: RUNS, env: { SVC_REGISTRY_CREDENTIALS: compact } })).config.registry_credentials,
    ).toEqual(expected);
    expect((await load({ argv: [...RUNS, "--registry-credentials", compact] })).config.registry_credentials).toEqual(
      expected,
    );
    const toml =
      'run_once = true\n[[registry_credentials]]\nhost = "ghcr.io"\nusername = "u"\npassword = "p"\n\n[[registry_credentials]]\nhost = "docker.io"\n';
    expect((await load({ toml })).config.registry_credentials).toEqual(expected);
  });

  test("positional arguments are container names, merged into containers", async () => {
    const { config, sources } = await load({
      argv: [...RUNS, "web", "--cleanup", "worker"],
      env: { SVC_CONTAINERS: "db,web" },
    });
    expect(config.containers).toEqual(["db", "web", "worker"]);
    expect(config.cleanup).toBe(true);
    expect(sources.containers!.source).toBe("flag");
  });
});

describe("bad input: every problem at once, each named as written", () => {
  test("types, enums, ranges, durations, cron from all three sources", async () => {
    const toml = [
      'log_level = "loud"',
      'run_once = "yes"',
      "[http_api]",
      "port = 70000",
      "[notifications.mqtt]",
      "qos = 3",
    ].join("\n");
    const found = await problems({
      toml,
      env: { SVC_STOP_TIMEOUT: "ten seconds", SVC_REGISTRY_CONCURRENCY: "many" },
      argv: ["--schedule", "61 * * * *", "--notifications-email-port", "0", "--log-format=xml"],
    });
    expect(found).toEqual(
      expect.arrayContaining([
        'svc.toml:1: log_level: must be one of trace, debug, info, warn, error (got "loud")',
        'svc.toml:2: run_once: expected a boolean (true or false), got a string ("yes")',
        "svc.toml:4: http_api.port: must be an integer between 1 and 65535 (got 70000)",
        "svc.toml:6: notifications.mqtt.qos: must be 0, 1 or 2 (got 3)",
        'SVC_STOP_TIMEOUT: is not a duration (examples: "30s", "5m", "1h30m", "250ms", or plain seconds) (got "ten seconds")',
        'SVC_REGISTRY_CONCURRENCY: expected an integer, got "many"',
        "--notifications-email-port: must be an integer between 1 and 65535 (got 0)",
        '--log-format: must be one of auto, json, logfmt, pretty (got "xml")',
      ]),
    );
    expect(found.some((p) => p.startsWith("--schedule: is not a valid cron expression"))).toBe(true);
  });

  test("cron: 5 and 6 fields are accepted, other counts are not", async () => {
    expect((await load({ argv: ["--schedule", "*/5 * * * *"] })).config.schedule).toBe("*/5 * * * *");
    expect((await load({ argv: ["--schedule", "0 */5 * * * *"] })).config.schedule).toBe("0 */5 * * * *");
    expect(await problems({ argv: ["--schedule", "* * * *"] })).toEqual([
      '--schedule: must have 5 or 6 fields (has 4) (got "* * * *")',
    ]);
  });

  test("bad booleans in env and flags", async () => {
    expect(await problems({ argv: [...RUNS, "--cleanup=maybe"], env: { SVC_MONITOR_ONLY: "on" } })).toEqual(
      [
        '--cleanup: expected true/false, 1/0 or yes/no, got "maybe"',
        'SVC_MONITOR_ONLY: expected true/false, 1/0 or yes/no, got "on"',
      ].sort((a, b) => (a.startsWith("--") ? -1 : b.startsWith("--") ? 1 : 0)),
    );
  });

  test("mutually exclusive poll_interval / schedule / run_once when given on the same level, named where set", async () => {
    const found = await problems({ toml: 'poll_interval = "5m"\nrun_once = true', argv: [] });
    expect(found).toEqual([
      "svc.toml:1: poll_interval and svc.toml:2: run_once: poll_interval, schedule and run_once are mutually exclusive; set only one",
    ]);
    expect(await problems({ env: { SVC_RUN_ONCE: "1", WATCHTOWER_POLL_INTERVAL: "300" } })).toEqual([
      "WATCHTOWER_POLL_INTERVAL and SVC_RUN_ONCE: poll_interval, schedule and run_once are mutually exclusive; set only one",
    ]);
  });

  test("a 'when' flag replaces the schedule of the file or the environment, with one line saying so (the Quick start's svc --run-once)", async () => {
    const fromFile = await load({ toml: 'poll_interval = "6h"', argv: ["--run-once", "--dry-run"] });
    expect(fromFile.config.run_once).toBe(true);
    expect(fromFile.config.poll_interval).toBeUndefined();
    expect(fromFile.notes).toContain(
      "--run-once given on the command line replaces svc.toml:1: poll_interval for this run",
    );
    const fromEnv = await load({ env: { WATCHTOWER_POLL_INTERVAL: "300" }, argv: ["--run-once"] });
    expect(fromEnv.config.run_once).toBe(true);
    expect(fromEnv.config.poll_interval).toBeUndefined();
    expect(fromEnv.notes).toContain(
      "--run-once given on the command line replaces WATCHTOWER_POLL_INTERVAL for this run",
    );
    const envOverFile = await load({ toml: 'schedule = "0 4 * * *"', env: { SVC_POLL_INTERVAL: "5m" } });
    expect([envOverFile.config.poll_interval, envOverFile.config.schedule]).toEqual([300_000, undefined]);
    expect(envOverFile.notes).toContain(
      "SVC_POLL_INTERVAL given in the environment replaces svc.toml:1: schedule for this run",
    );
    // run_once = false is no schedule: nothing replaced, nothing said
    const off = await load({ toml: "run_once = false", argv: ["--poll-interval", "1h"] });
    expect(off.notes.filter((w) => w.includes("replaces"))).toEqual([]);
  });

  test("the README's `svc --run-once` beside a file with a schedule and the API: one info line, no warning", async () => {
    const toml = 'schedule = "0 4 * * *"\n[http_api]\nupdate = true\nui = true\ntoken = "t"';
    const { config, warnings, notes } = await load({ toml, argv: ["--run-once", "web"] });
    expect(config.run_once).toBe(true);
    expect(warnings).toEqual([]);
    expect(notes).toEqual([
      "--run-once given on the command line replaces svc.toml:1: schedule for this run; the HTTP API (svc.toml:3: http_api.update, svc.toml:4: http_api.ui) is not started",
    ]);
    // with no schedule to replace, the API alone is the same one line
    const apiOnly = await load({ toml: '[http_api]\nupdate = true\ntoken = "t"', argv: ["--run-once"] });
    expect(apiOnly.warnings).toEqual([]);
    expect(apiOnly.notes).toEqual([
      "--run-once: the HTTP API (svc.toml:2: http_api.update) is not started for this run",
    ]);
  });

  test("Watchtower's --interval 300 is one problem: its value is not taken as a container name, and no 'nothing would ever run'", async () => {
    expect(await problems({ argv: ["--interval", "300"] })).toEqual([
      "--interval: unknown flag; Watchtower's --interval is svc's --poll-interval (a number alone is seconds, as in Watchtower; or 5m, 6h)",
    ]);
  });

  test("nothing would ever run", async () => {
    const found = await problems({});
    expect(found).toHaveLength(1);
    expect(found[0]).toStartWith("nothing would ever run: set one of poll_interval");
  });

  test("the update API alone is something that runs", async () => {
    const { config } = await load({ argv: ["--http-api-update", "--http-api-token", "t"] });
    expect(config.http_api.update).toBe(true);
  });

  test("token required for authenticated endpoints, not for metrics without auth", async () => {
    expect(await problems({ toml: "[http_api]\nupdate = true" })).toEqual([
      "svc.toml:2: http_api.update: an authenticated endpoint is enabled but no token is set: set http_api.token (--http-api-token, SVC_HTTP_API_TOKEN)",
    ]);
    expect(await problems({ argv: [...RUNS, "--http-api-metrics"] })).toEqual([
      "--http-api-metrics: an authenticated endpoint is enabled but no token is set: set http_api.token (--http-api-token, SVC_HTTP_API_TOKEN)",
    ]);
    const open = await load({ argv: [...RUNS, "--http-api-metrics", "--http-api-metrics-no-auth"] });
    expect(open.config.http_api.token).toBeUndefined();
  });

  test("run_once with API features: a warning, not an error, and no token needed", async () => {
    const { warnings, config } = await load({ argv: ["--run-once", "--http-api-update", "--http-api-metrics"] });
    expect(config.run_once).toBe(true);
    expect(warnings).toEqual([
      "run_once: the HTTP API is not started in run-once mode; ignoring --http-api-update and --http-api-metrics",
    ]);
  });

  test("TLS files required and readable when docker.tls_verify is true", async () => {
    const dir = tempDir();
    const ca = writeFile(dir, "ca.pem", "x");
    const locked = writeFile(dir, "key.pem", "x");
    chmodSync(locked, 0o000);
    const found = await problems({
      argv: [...RUNS, "--docker-tls-verify", "--docker-tls-ca-cert", ca, "--docker-tls-key", locked],
      env: {},
    });
    expect(found).toContain(
      "--docker-tls-verify: is true, so docker.tls_cert (--docker-tls-cert, SVC_DOCKER_TLS_CERT) is required",
    );
    if (process.getuid?.() !== 0) expect(found).toContain(`--docker-tls-key: cannot read ${locked}: permission denied`);
    const missing = await problems({ argv: RUNS, env: { SVC_DOCKER_TLS_CERT: join(dir, "nope.pem") } });
    expect(missing).toEqual([`SVC_DOCKER_TLS_CERT: cannot read ${join(dir, "nope.pem")}: no such file`]);
  });

  test("required fields of enabled notification channels", async () => {
    const toml = [
      'poll_interval = "1h"',
      "[notifications.email]",
      'server = "smtp.lan"',
      "[notifications.mqtt]",
      'broker = "mqtt://b:1883"',
      "[notifications.pushover]",
      'token = "abc"',
    ].join("\n");
    expect(await problems({ toml })).toEqual([
      "svc.toml:3: notifications.email.server: is set, so notifications.email.from (--notifications-email-from, SVC_NOTIFICATIONS_EMAIL_FROM) is required",
      "svc.toml:3: notifications.email.server: is set, so notifications.email.to (--notifications-email-to, SVC_NOTIFICATIONS_EMAIL_TO) is required",
      "svc.toml:5: notifications.mqtt.broker: is set, so notifications.mqtt.topic (--notifications-mqtt-topic, SVC_NOTIFICATIONS_MQTT_TOPIC) is required",
      "svc.toml:7: notifications.pushover.token: is set, so notifications.pushover.user_key (--notifications-pushover-user-key, SVC_NOTIFICATIONS_PUSHOVER_USER_KEY) is required",
    ]);
  });

  test("unknown keys, env names and flags, with a suggestion", async () => {
    const toml = ['poll_intervall = "1h"', "port = 8080", "[http_api]", 'tokn = "x"', "[dockr]", 'host = "x"'].join(
      "\n",
    );
    const found = await problems({
      toml,
      env: { SVC_CLEANUPP: "1", SVC_TEST_ANYTHING: "ignored", SVC_SANDBOX_DIR: "/x" },
      argv: ["--montor-only", "--zzz"],
    });
    expect(found).toEqual(
      expect.arrayContaining([
        "svc.toml:1: poll_intervall: unknown option (did you mean poll_interval?)",
        "svc.toml:2: port: unknown option (did you mean http_api.port?)",
        "svc.toml:4: http_api.tokn: unknown option (did you mean http_api.token?)",
        "svc.toml:5: dockr: unknown option (did you mean docker?)",
        "SVC_CLEANUPP: unknown environment variable (did you mean SVC_CLEANUP?)",
        "--montor-only: unknown flag (did you mean --monitor-only?)",
        "--zzz: unknown flag",
      ]),
    );
    expect(found.some((p) => p.includes("SVC_TEST_") || p.includes("SVC_SANDBOX_"))).toBe(false);
  });

  test("unknown and missing fields of registry_credentials entries", async () => {
    const toml = [
      "run_once = true",
      "[[registry_credentials]]",
      'host = "a"',
      "[[registry_credentials]]",
      'usrname = "u"',
    ].join("\n");
    expect(await problems({ toml })).toEqual([
      "svc.toml:4: registry_credentials[1].host: is required",
      "svc.toml:4: registry_credentials[1]: unknown field usrname (expected host, username, password)",
    ]);
    expect(await problems({ argv: RUNS, env: { SVC_REGISTRY_CREDENTIALS: "host=a;user=b" } })).toEqual([
      'SVC_REGISTRY_CREDENTIALS: entry 2: unknown field "user" (form: host=H,username=U,password=P;host=H2)',
    ]);
  });

  test("TOML syntax errors name the line", async () => {
    const toml = [
      'log_level = "info"',
      "",
      "containers = [",
      '  "a",',
      '  "b",',
      "]",
      "[http_api]",
      "port = ",
      "update = true",
    ].join("\n");
    const found = await problems({ toml });
    expect(found).toHaveLength(1);
    expect(found[0]).toStartWith("svc.toml:8: TOML syntax error:");
  });

  test("an unterminated multi-line array is reported at its first line", async () => {
    const found = await problems({ toml: 'run_once = true\ncontainers = [\n  "a",\n' });
    expect(found[0]).toStartWith("svc.toml:2: TOML syntax error:");
  });

  test("TOML dates and times are rejected where strings are expected", async () => {
    const found = await problems({
      toml: 'run_once = true\nschedule = 1979-05-27T07:32:00Z\ncontainers = ["a", 07:32:00]\n[notifications]\ntemplate = 1979-05-27',
    });
    expect(found).toEqual([
      "svc.toml:2: schedule: is a TOML date/time; quote it to make it a string",
      "svc.toml:3: containers[1]: is a TOML date/time; quote it to make it a string",
      "svc.toml:5: notifications.template: is a TOML date/time; quote it to make it a string",
    ]);
  });

  test("a table where a value is expected, and a value where a table is expected", async () => {
    const found = await problems({ toml: "http_api = 1\nrun_once = true\n[cleanup]\nx = 1" });
    expect(found).toEqual([
      "svc.toml:1: http_api: must be a table ([http_api])",
      "svc.toml:3: cleanup: expected a boolean (true or false), got a table",
    ]);
  });

  test("the error is a config SvcError, exit status 2", async () => {
    try {
      await load({ argv: ["--bogus"] });
      throw new Error("accepted");
    } catch (error) {
      expect(isSvcError(error) && error.kind).toBe("config");
      expect(exitCodeOf(error)).toBe(2);
    }
  });

  test("a flag that needs a value", async () => {
    expect(await problems({ argv: [...RUNS, "--http-api-port"] })).toEqual(["--http-api-port: needs a value"]);
  });

  test("empty strings are not values", async () => {
    expect(await problems({ argv: RUNS, env: { SVC_SCOPE: "" } })).toEqual([
      'SVC_SCOPE: must not be empty (leave the option out to keep it unset) (got "")',
    ]);
  });

  test("URLs of channels and the engine are checked", async () => {
    const found = await problems({
      argv: [...RUNS, "--notifications-webhook-url", "ftp://x", "--docker-host", "/var/run/docker.sock"],
    });
    expect(found).toEqual([
      '--docker-host: must be a URL starting with unix://, tcp://, http://, https:// (got "/var/run/docker.sock")',
      '--notifications-webhook-url: must be a URL starting with http://, https:// (got "ftp://x")',
    ]);
  });

  test("docker.host takes only what the engine connection speaks: ssh:// and npipe:// are refused at load", async () => {
    for (const host of ["ssh://me@host", "npipe:////./pipe/docker_engine"]) {
      expect(await problems({ argv: [...RUNS, "--docker-host", host] })).toEqual([
        `--docker-host: must be a URL starting with unix://, tcp://, http://, https:// (got "${host}")`,
      ]);
    }
  });

  test("a config file cannot be a directory or unreadable without a clear error", async () => {
    const dir = tempDir();
    writeFileSync(join(dir, "svc.toml"), "run_once = true\n");
    expect((await loadConfig({ argv: [], env: {}, cwd: dir })).config.run_once).toBe(true);
  });
});

describe("state_dir's default: a place that persists", () => {
  test("$XDG_STATE_HOME/svc when set, else /var/lib/svc as root, else ~/.local/state/svc", () => {
    expect(defaultStateDir({ XDG_STATE_HOME: "/x/state/" }, 0)).toBe("/x/state/svc");
    expect(defaultStateDir({ HOME: "/root" }, 0)).toBe("/var/lib/svc");
    expect(defaultStateDir({ HOME: "/home/ann" }, 1000)).toBe("/home/ann/.local/state/svc");
    expect(defaultStateDir({ XDG_STATE_HOME: "relative", HOME: "/home/ann" }, 1000)).toBe("/home/ann/.local/state/svc");
  });

  test("given nowhere, state_dir is that default, shown as one", async () => {
    const { config, sources } = await load({ argv: RUNS, env: { XDG_STATE_HOME: "/x" } });
    expect(config.state_dir).toBe("/x/svc");
    expect(sources.state_dir!.source).toBe("default");
  });
});

describe("lists are read one way", () => {
  test("names in env and flags: commas or whitespace separate them, as Watchtower reads them", async () => {
    for (const text of ["a b", "a,b", "a, b", " a\tb "]) {
      expect((await load({ argv: RUNS, env: { SVC_DISABLE_CONTAINERS: text } })).config.disable_containers).toEqual([
        "a",
        "b",
      ]);
      expect(
        (await load({ argv: RUNS, env: { WATCHTOWER_DISABLE_CONTAINERS: text } })).config.disable_containers,
      ).toEqual(["a", "b"]);
    }
    expect((await load({ argv: [...RUNS, "--containers", "web worker"] })).config.containers).toEqual([
      "web",
      "worker",
    ]);
  });

  test("a TOML entry holding two names is refused, naming the line", async () => {
    expect(await problems({ argv: RUNS, toml: 'disable_containers = ["a b"]' })).toEqual([
      "svc.toml:1: disable_containers[0]: one name per entry: a name holds no space or comma",
    ]);
  });

  test("notification URLs joined by commas: the separator is named", async () => {
    const found = await problems({
      argv: RUNS,
      env: { SVC_NOTIFICATIONS_URLS: "discord://token@123,ntfy://ntfy.sh/topic" },
    });
    expect(found).toEqual([
      "SVC_NOTIFICATIONS_URLS: URLs are separated by spaces, not commas (a URL may hold commas): a comma before ntfy://...",
    ]);
    expect(
      (await load({ argv: RUNS, env: { SVC_NOTIFICATIONS_URLS: "discord://token@123 ntfy://ntfy.sh/topic" } })).config
        .notifications.urls,
    ).toHaveLength(2);
  });
});

describe("peers need the dashboard", () => {
  const peers = '[[peers]]\nname = "nas"\nurl = "http://127.0.0.1:8081"\ntoken = "t0ken-of-the-nas"\n';
  test("without http_api.ui or update they are refused, saying what to turn on", async () => {
    expect(await problems({ argv: RUNS, toml: peers })).toEqual([
      "svc.toml:1: peers: nothing would ever ask them: they are shown by the dashboard; set http_api.ui (--http-api-ui, SVC_HTTP_API_UI) on this host (docs/dashboard.md)",
    ]);
  });

  test("with the update API only, a warning; with the dashboard, nothing", async () => {
    const updateOnly = await load({ argv: [...RUNS, "--http-api-update", "--http-api-token", "t"], toml: peers });
    expect(updateOnly.warnings.some((w) => w.includes("the dashboard that shows them is off"))).toBe(true);
    const withUi = await load({ argv: [...RUNS, "--http-api-ui", "--http-api-token", "t"], toml: peers });
    expect(withUi.warnings.filter((w) => w.includes("peers"))).toEqual([]);
  });
});
