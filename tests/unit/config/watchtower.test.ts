import { describe, expect, test } from "bun:test";
import { OPTIONS } from "../../../src/config/options.ts";
import { migrateWatchtower, WATCHTOWER_ALIASES, WATCHTOWER_UNMAPPED } from "../../../src/config/watchtower.ts";
import { load, problems, RUNS } from "./helpers.ts";

describe("WATCHTOWER_* variables", () => {
  test("are read as svc's options in Watchtower's syntax, each with a notice naming svc's own variable", async () => {
    const { config, warnings, sources } = await load({
      env: {
        WATCHTOWER_POLL_INTERVAL: "300",
        WATCHTOWER_CLEANUP: "true",
        WATCHTOWER_DISABLE_CONTAINERS: "db cache,proxy",
        WATCHTOWER_TIMEOUT: "30s",
        WATCHTOWER_LOG_FORMAT: "JSON",
        WATCHTOWER_WARN_ON_HEAD_FAILURE: "never",
        REPO_USER: "me",
      },
    });
    expect(config.poll_interval).toBe(300_000);
    expect(config.cleanup).toBe(true);
    expect(config.disable_containers).toEqual(["db", "cache", "proxy"]);
    expect(config.stop_timeout).toBe(30_000);
    expect(config.log_format).toBe("json");
    expect(config.head_warn_strategy).toBe("never");
    expect(config.registry_username).toBe("me");
    expect(sources.poll_interval).toEqual({ source: "env", name: "WATCHTOWER_POLL_INTERVAL" });
    expect(warnings).toContain(
      "WATCHTOWER_POLL_INTERVAL: read as poll_interval; svc's own variable is SVC_POLL_INTERVAL",
    );
    expect(warnings).toContain("REPO_USER: read as registry_username; svc's own variable is SVC_REGISTRY_USERNAME");
  });

  test("svc's own variable wins when both are set", async () => {
    const { config } = await load({
      env: {
        WATCHTOWER_POLL_INTERVAL: "300",
        SVC_POLL_INTERVAL: "1h",
        WATCHTOWER_MONITOR_ONLY: "true",
        SVC_MONITOR_ONLY: "false",
      },
    });
    expect(config.poll_interval).toBe(3_600_000);
    expect(config.monitor_only).toBe(false);
  });

  test("debug and trace set the log level; scope none is no scope; panic and fatal are error", async () => {
    expect((await load({ env: { WATCHTOWER_RUN_ONCE: "true", WATCHTOWER_DEBUG: "true" } })).config.log_level).toBe(
      "debug",
    );
    expect(
      (await load({ env: { WATCHTOWER_RUN_ONCE: "true", WATCHTOWER_DEBUG: "true", WATCHTOWER_TRACE: "1" } })).config
        .log_level,
    ).toBe("trace");
    expect((await load({ env: { WATCHTOWER_RUN_ONCE: "true", WATCHTOWER_DEBUG: "false" } })).config.log_level).toBe(
      "info",
    );
    expect((await load({ env: { WATCHTOWER_RUN_ONCE: "true", WATCHTOWER_LOG_LEVEL: "panic" } })).config.log_level).toBe(
      "error",
    );
    expect(
      (await load({ env: { WATCHTOWER_RUN_ONCE: "true", WATCHTOWER_SCOPE: "none" } })).config.scope,
    ).toBeUndefined();
    expect((await load({ env: { WATCHTOWER_RUN_ONCE: "true", WATCHTOWER_SCOPE: "prod" } })).config.scope).toBe("prod");
  });

  test("settings without counterpart and unknown names are warnings, not errors; a bad value names the variable", async () => {
    const { warnings } = await load({
      env: { WATCHTOWER_RUN_ONCE: "true", WATCHTOWER_ROLLING_RESTART: "true", WATCHTOWER_SOMETHING: "x" },
    });
    expect(warnings.some((w) => w.startsWith("WATCHTOWER_ROLLING_RESTART: no svc counterpart ("))).toBe(true);
    expect(warnings).toContain("WATCHTOWER_SOMETHING: not a Watchtower setting svc knows; ignored");
    expect(await problems({ env: { WATCHTOWER_POLL_INTERVAL: "soon" } })).toEqual([
      'WATCHTOWER_POLL_INTERVAL: is not a duration (examples: "30s", "5m", "1h30m", "250ms", or plain seconds) (got "soon")',
    ]);
  });

  test("the Docker CLI's own variables are not read at startup (only by svc migrate)", async () => {
    const { config } = await load({
      env: { WATCHTOWER_RUN_ONCE: "true", DOCKER_TLS_VERIFY: "1", DOCKER_API_VERSION: "1.30" },
    });
    expect(config.docker.tls_verify).toBe(false);
    expect(config.docker.api_version).toBeUndefined();
  });

  test("every Watchtower name is declared once, and none is both mapped and unmapped", () => {
    const envs = WATCHTOWER_ALIASES.map((a) => a.name.env);
    expect(new Set(envs).size).toBe(envs.length);
    for (const env of envs) expect(WATCHTOWER_UNMAPPED[env]).toBeUndefined();
    expect(WATCHTOWER_ALIASES.every((a) => OPTIONS.includes(a.option))).toBe(true);
  });
});

test("docs/migrating-from-watchtower.md is the one `bun run docs` writes", async () => {
  const { migrationGuide } = await import("../../../scripts/gen-docs.ts");
  expect(await Bun.file(new URL("../../../docs/migrating-from-watchtower.md", import.meta.url)).text()).toBe(
    migrationGuide(),
  );
});

describe("Watchtower flags on svc's command line", () => {
  test("each one svc does not take says what to use instead", async () => {
    expect(await problems({ argv: [...RUNS, "--interval", "300"] })).toEqual([
      "--interval: unknown flag; Watchtower's --interval is svc's --poll-interval (a number alone is seconds, as in Watchtower; or 5m, 6h)",
    ]);
    expect(await problems({ argv: [...RUNS, "--debug"] })).toEqual([
      "--debug: unknown flag; Watchtower's --debug is svc's --log-level debug",
    ]);
    expect(await problems({ argv: [...RUNS, "-R"] })).toEqual([
      "-R: unknown flag; Watchtower's -R is svc's --run-once",
    ]);
    expect((await problems({ argv: [...RUNS, "--rolling-restart"] }))[0]).toStartWith(
      "--rolling-restart: unknown flag; Watchtower's --rolling-restart has no svc counterpart: svc updates containers",
    );
    // not Watchtower's: the closest svc flag, as before
    expect(await problems({ argv: [...RUNS, "--poll-intervl", "5m"] })).toEqual([
      "--poll-intervl: unknown flag (did you mean --poll-interval?)",
    ]);
  });

  test("-c is svc's --config: used as Watchtower's cleanup, the message says so", async () => {
    expect(await problems({ argv: [...RUNS, "-c"] })).toEqual([
      "-c: needs a file path (-c is svc's --config; Watchtower's -c is svc's --cleanup)",
    ]);
    expect(await problems({ argv: [...RUNS, "-c", "web"] })).toEqual([
      "-c: configuration file web does not exist (-c is svc's --config; Watchtower's -c is svc's --cleanup)",
    ]);
  });

  test("every Watchtower flag svc refuses is in the migration guide", async () => {
    const guide = await Bun.file(new URL("../../../docs/migrating-from-watchtower.md", import.meta.url)).text();
    const refused = WATCHTOWER_ALIASES.flatMap(({ option, name }) => name.flags.filter((flag) => flag !== option.flag));
    for (const flag of [...refused, ...Object.values(WATCHTOWER_UNMAPPED).flatMap((u) => u.flags)])
      expect(guide).toContain(`| \`${flag}\` |`);
  });
});

test("migrate carries Watchtower's --enable-lifecycle-hooks; without it hooks stay off, as in Watchtower", () => {
  const settings = { env: [], labels: {} };
  expect(migrateWatchtower({ ...settings, args: ["--enable-lifecycle-hooks"] }).values.get("lifecycle_hooks")).toBe(
    true,
  );
  expect(
    migrateWatchtower({ ...settings, env: ["WATCHTOWER_LIFECYCLE_HOOKS=true"], args: [] }).values.get(
      "lifecycle_hooks",
    ),
  ).toBe(true);
  expect(migrateWatchtower({ ...settings, args: [] }).values.has("lifecycle_hooks")).toBe(false);
});
