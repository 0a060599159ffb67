import { describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  buildConfigSchema,
  defaultConfig,
  defaultStateDir,
  defaultValue,
  envName,
  flagName,
  formatDuration,
  generateSample,
  loadConfig,
  OPTIONS,
  parseDuration,
  renderDocs,
  TABLES,
} from "../../../src/config/index.ts";
import { UNSET_MARK } from "../../../src/config/sample.ts";
import { load, RUNS } from "./helpers.ts";

const sample = generateSample("test");

/** Uncomments the option lines that show defaults (not the examples of unset options). */
function uncommentDefaults(text: string): string {
  return text
    .split("\n")
    .map((line) => (/^# (\[[a-z_.]+\]$|[a-z_]+ = )/.test(line) && !line.includes(UNSET_MARK) ? line.slice(2) : line))
    .join("\n");
}

function valueAt(config: unknown, path: string[]): unknown {
  return path.reduce<any>((node, part) => node?.[part], config);
}

describe("generated sample", () => {
  test("is valid TOML that sets nothing as it is", () => {
    expect(Bun.TOML.parse(sample)).toEqual({});
  });

  test("lists every option, with its meaning, once", () => {
    for (const option of OPTIONS) {
      const name = option.path[option.path.length - 1]!;
      expect(sample).toContain(option.meta.description);
      expect(sample).toContain(`# ${name} = `);
    }
    for (const table of TABLES.filter((t) => t.key)) expect(sample).toContain(`# [${table.key}]`);
  });

  test("every default shown equals the schema's default", () => {
    const parsed = Bun.TOML.parse(uncommentDefaults(sample)) as Record<string, unknown>;
    const defaults = buildConfigSchema().parse({});
    for (const option of OPTIONS) {
      const shown = valueAt(parsed, option.path);
      const expected = valueAt(defaults, option.path);
      if (option.meta.default === undefined) {
        expect(shown).toBeUndefined();
        expect(expected).toBeUndefined();
        continue;
      }
      const value = option.meta.kind === "duration" ? parseDuration(shown as string) : shown;
      expect({ key: option.key, value }).toEqual({ key: option.key, value: expected });
    }
  });

  test("unset options are commented example lines saying so", () => {
    for (const option of OPTIONS.filter((o) => o.meta.default === undefined)) {
      const name = option.path[option.path.length - 1]!;
      expect(sample.split("\n").some((line) => line.startsWith(`# ${name} = `) && line.includes(UNSET_MARK))).toBe(
        true,
      );
    }
  });

  test("a service started with the sample unchanged is configured exactly as with no file", async () => {
    const without = await load({ argv: RUNS });
    const withSample = await load({ argv: RUNS, toml: sample });
    expect(withSample.config).toEqual(without.config);
    expect(withSample.file).toBeDefined();
  });

  test("with every default uncommented it is still the default configuration", async () => {
    const { config } = await load({ argv: RUNS, toml: uncommentDefaults(sample) });
    expect(config).toEqual(defaultConfig({ poll_interval: 3_600_000, state_dir: defaultStateDir({}) }));
  });
});

describe("schema-derived names", () => {
  test("flags and env names follow a.b_c -> --a-b-c, SVC_A_B_C and are unique", () => {
    expect(flagName("notifications.mqtt.broker")).toBe("--notifications-mqtt-broker");
    expect(envName("notifications.mqtt.broker")).toBe("SVC_NOTIFICATIONS_MQTT_BROKER");
    expect(new Set(OPTIONS.map((o) => o.flag)).size).toBe(OPTIONS.length);
    expect(new Set(OPTIONS.map((o) => o.env)).size).toBe(OPTIONS.length);
  });

  test("each option's default, taken from its metadata, is what its schema gives for a missing value", () => {
    for (const option of OPTIONS)
      expect({ key: option.key, value: defaultValue(option) }).toEqual({
        key: option.key,
        value: option.schema.parse(undefined),
      });
  });

  test("a loaded configuration equals the whole schema's parse of the same values", async () => {
    const dir = mkdtempSync(join(tmpdir(), "svc-assemble-"));
    const file = join(dir, "svc.toml");
    const toml =
      '[http_api]\nupdate = true\ntoken = "0123456789abcdef0123456789abcdef"\n[notifications]\ndelay = "5s"\n[notifications.mqtt]\nbroker = "mqtt://b:1883"\ntopic = "t"\nqos = 1\n';
    writeFileSync(file, `schedule = "0 0 4 * * *"\nstop_timeout = "1m"\ncontainers = ["a", "b"]\n${toml}`);
    const { config } = await loadConfig({ argv: ["--config", file], env: {}, cwd: tmpdir() });
    // state_dir's default depends on who runs svc: the loader fills it in, the schema cannot
    expect(config).toEqual({
      ...buildConfigSchema().parse(Bun.TOML.parse(await Bun.file(file).text())),
      state_dir: defaultStateDir({}),
    });
    expect(config.stop_timeout).toBe(60_000);
    expect(config.notifications.mqtt.qos).toBe(1);
    rmSync(dir, { recursive: true });
  });

  test("defaultConfig is the schema's defaults, deep-merged with overrides", () => {
    expect(defaultConfig()).toEqual(buildConfigSchema().parse({}));
    const config = defaultConfig({ http_api: { port: 9000 }, containers: ["a"] });
    expect(config.http_api).toEqual({
      update: false,
      metrics: false,
      port: 9000,
      address: "0.0.0.0",
      metrics_no_auth: false,
      ui: false,
      viewer_tokens: [],
      trusted_proxies: [],
      trusted_proxy_role: "viewer",
    });
    expect(config.containers).toEqual(["a"]);
    expect(config.stop_timeout).toBe(10_000);
    expect(config.notifications.pushover.api_url).toBe("https://api.pushover.net");
  });

  test("durations round-trip", () => {
    for (const ms of [0, 250, 1_000, 90_000, 5_400_000, 3_723_004]) expect(parseDuration(formatDuration(ms))).toBe(ms);
    expect(parseDuration("1h30m")).toBe(5_400_000);
    expect(parseDuration(" 45 ")).toBe(45_000);
    for (const bad of ["", "1x", "h", "1.5h", "-5s", "5 m"]) expect(parseDuration(bad)).toBeUndefined();
  });
});

describe("docs/configuration.md", () => {
  test("is up to date with the schema (run `bun run docs`)", () => {
    const committed = readFileSync(new URL("../../../docs/configuration.md", import.meta.url), "utf8");
    expect(committed).toBe(renderDocs());
  });

  test("lists every option's key, flag and env name", () => {
    const docs = renderDocs();
    for (const option of OPTIONS) {
      expect(docs).toContain(`\`${option.key}\``);
      expect(docs).toContain(option.flag);
      expect(docs).toContain(option.env);
    }
  });
});
