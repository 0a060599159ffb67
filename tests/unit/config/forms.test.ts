/**
 * Every option of the schema, in each of its three forms (TOML, env, flag), generated from the
 * schema itself: an option added tomorrow is covered without touching this file.
 */
import { describe, expect, test } from "bun:test";
import { defaultStateDir, OPTIONS, type OptionSpec } from "../../../src/config/index.ts";
import { tomlLiteral } from "../../../src/config/toml.ts";
import { load, tempDir, writeFile } from "./helpers.ts";

const dir = tempDir();
const pem = (name: string) => writeFile(dir, name, "-----BEGIN CERTIFICATE-----\n");

/** Strings whose value has a format of its own. */
const FORMATTED_STRINGS: Record<string, string> = {
  "docker.api_version": "1.41",
  "notifications.webhook.content_type": "text/plain; charset=utf-8",
  tag_policy: "semver:minor+pre",
  "http_api.address": "127.0.0.1",
  update_window: "Sat,Sun 02:00-05:00",
  data_guard_max_size: "512MiB",
  "notifications.webhook.digest": "daily 08:00",
  "notifications.email.digest": "weekly Mon 08:00",
  "notifications.mqtt.digest": "daily 20:30",
  "notifications.pushover.digest": "weekly Sat,Sun 09:00",
  "notifications.urls_digest": "daily 07:30",
  "compose.git_author": "Ops Bot <ops@example.com>",
};

/** A valid value different from the default, and what the loaded Config must hold for it. */
function sample(option: OptionSpec): { value: unknown; expected: unknown } {
  const meta = option.meta;
  switch (meta.kind) {
    case "boolean":
      return { value: !meta.default, expected: !meta.default };
    case "integer": {
      const n = meta.min! + 1;
      return { value: n, expected: n };
    }
    case "enum": {
      const other = meta.values!.find((v) => v !== meta.default)!;
      return { value: other, expected: other };
    }
    case "duration":
      return { value: "5m30s", expected: 330_000 };
    case "cron":
      return { value: "*/5 * * * *", expected: "*/5 * * * *" };
    case "list":
      // notification URLs are parsed: their example is valid
      if (meta.spaceSeparated) return { value: meta.example, expected: meta.example };
      if (option.key === "http_api.trusted_proxies")
        return { value: ["127.0.0.1", "::1"], expected: ["127.0.0.1", "::1"] };
      return { value: ["alpha", "beta"], expected: ["alpha", "beta"] };
    case "credentials": {
      const entries = [{ host: "ghcr.io", username: "u1", password: "p1" }, { host: "quay.io" }];
      return { value: entries, expected: entries };
    }
    case "tables": {
      if (option.key === "release_notes.sources") {
        const sources = [
          { image: "nginx", source: "https://github.com/nginx/nginx" },
          { image: "ghcr.io/o/app", source: "https://codeberg.org/o/app" },
        ];
        return { value: sources, expected: sources };
      }
      if (option.key === "verify") {
        // one word per list, so that the env and flag form (fields split at commas) says the same
        const policies = [
          { images: "ghcr.io/acme/*", keys: "/etc/svc/acme.pub", transparency_log: "false" },
          {
            images: "ghcr.io/oss/*",
            issuer: "https://token.actions.githubusercontent.com",
            identity: "me",
            mode: "warn",
          },
        ];
        const expected = [
          { images: ["ghcr.io/acme/*"], keys: ["/etc/svc/acme.pub"], mode: "enforce", transparency_log: false },
          {
            images: ["ghcr.io/oss/*"],
            keys: [],
            issuer: "https://token.actions.githubusercontent.com",
            identity: "me",
            mode: "warn",
            transparency_log: true,
          },
        ];
        return { value: policies, expected };
      }
      const entries = [
        { name: "nas", url: "https://nas.lan:8080/", token: "t1" },
        { name: "pi", url: "http://pi.lan:8080/", token: "t2", ca_cert: "ca.pem" },
      ];
      return { value: entries, expected: entries };
    }
    case "path": {
      const path = pem(`${option.key}.pem`);
      return { value: path, expected: path };
    }
    case "url": {
      const url = option.key === "docker.host" ? "tcp://10.0.0.1:2376" : String(meta.example ?? "http://127.0.0.1:9");
      return { value: url, expected: url };
    }
    default: {
      const text = FORMATTED_STRINGS[option.key] ?? `value-of-${option.key}`;
      return { value: text, expected: text };
    }
  }
}

/** Companions that keep every single-option configuration valid. */
function base(): Map<string, unknown> {
  return new Map<string, unknown>([
    ["http_api.update", true],
    ["http_api.token", "base-token"],
    ["http_api.trusted_proxies", ["10.0.0.2"]],
    ["notifications.email.from", "svc@example.com"],
    ["notifications.email.to", ["ops@example.com"]],
    ["notifications.mqtt.topic", "svc"],
    ["notifications.pushover.user_key", "base-user"],
    ["docker.tls_ca_cert", pem("ca.pem")],
    ["docker.tls_cert", pem("cert.pem")],
    ["docker.tls_key", pem("key.pem")],
  ]);
}

function asText(option: OptionSpec, value: unknown): string {
  if (option.meta.kind === "credentials" || option.meta.kind === "tables") {
    return (value as Record<string, string>[])
      .map((e) =>
        Object.entries(e)
          .map(([k, v]) => `${k}=${v}`)
          .join(","),
      )
      .join(";");
  }
  return Array.isArray(value) ? value.join(option.meta.spaceSeparated ? " " : ",") : String(value);
}

function toToml(values: Map<string, unknown>): string {
  const tables = new Map<string, string[]>();
  for (const [key, value] of values) {
    const dot = key.lastIndexOf(".");
    const table = dot < 0 ? "" : key.slice(0, dot);
    if (!tables.has(table)) tables.set(table, []);
    tables.get(table)!.push(`${key.slice(dot + 1)} = ${tomlLiteral(value)}`);
  }
  const top = tables.get("") ?? [];
  tables.delete("");
  return [...top, ...[...tables].flatMap(([table, lines]) => [`[${table}]`, ...lines])].join("\n");
}

const byKey = new Map(OPTIONS.map((o) => [o.key, o]));

function toEnv(values: Map<string, unknown>): Record<string, string> {
  return Object.fromEntries([...values].map(([key, value]) => [byKey.get(key)!.env, asText(byKey.get(key)!, value)]));
}

function toFlags(values: Map<string, unknown>): string[] {
  return [...values].flatMap(([key, value]) => {
    const option = byKey.get(key)!;
    if (option.meta.kind === "boolean") return value ? [option.flag] : [`--no-${option.flag.slice(2)}`];
    return [option.flag, asText(option, value)];
  });
}

function valueAt(config: unknown, path: string[]): unknown {
  return path.reduce<any>((node, part) => node?.[part], config);
}

describe.each(OPTIONS.map((o) => [o.key, o] as const))("%s", (_key, option) => {
  const { value, expected } = sample(option);
  const values = base();
  values.set(option.key, value);

  test(`TOML key ${option.key}`, async () => {
    const result = await load({ toml: toToml(values) });
    expect(valueAt(result.config, option.path)).toEqual(expected);
    expect(result.sources[option.key]!.source).toBe("file");
  });

  test(`environment ${option.env}`, async () => {
    const result = await load({ env: toEnv(values) });
    expect(valueAt(result.config, option.path)).toEqual(expected);
    expect(result.sources[option.key]).toEqual({ source: "env", name: option.env });
  });

  test(`flag ${option.flag}`, async () => {
    const result = await load({ argv: toFlags(values) });
    expect(valueAt(result.config, option.path)).toEqual(expected);
    expect(result.sources[option.key]!.source).toBe("flag");
  });

  test("default when given nowhere", async () => {
    const others = base();
    others.delete(option.key);
    if (!others.has("http_api.update") || !others.has("http_api.token")) {
      // The API needs both; without it, something else has to run.
      others.delete("http_api.update");
      others.delete("http_api.token");
      others.set("poll_interval", "1h");
    }
    const result = await load({ env: toEnv(others) });
    // state_dir's default depends on who runs svc (the loader's, not the schema's)
    const fallback =
      option.key === "state_dir" ? defaultStateDir(toEnv(others)) : option.schema.safeParse(undefined).data;
    expect(valueAt(result.config, option.path)).toEqual(fallback);
    expect(result.sources[option.key]!.source).toBe("default");
  });
});
