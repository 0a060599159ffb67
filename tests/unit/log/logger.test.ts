import { describe, expect, test } from "bun:test";
import { defaultConfig, logSettings } from "../../../src/config/index.ts";
import { SvcError } from "../../../src/core/errors.ts";
import { createLogging, type LevelName } from "../../../src/log/index.ts";
import { Collector, parseLogfmt, testLogging } from "./helpers.ts";

const LEVELS: LevelName[] = ["trace", "debug", "info", "warn", "error"];

function logEveryLevel(logging: ReturnType<typeof testLogging>): void {
  for (const level of LEVELS) logging.log[level](`at ${level}`);
}

describe("json format", () => {
  test("every line is one JSON object with timestamp, level, target, message, fields", async () => {
    const logging = testLogging({ log_format: "json", log_level: "trace" });
    logging.log.info("cycle started", { trigger: "schedule", count: 2 });
    logging.log.child("updater").child("rollback").debug("checking");
    logging.log.error("failed", { reason: "x" });
    await logging.close();

    const out = logging.stdout.json;
    expect(out).toHaveLength(2);
    expect(Object.keys(out[0])).toEqual(["timestamp", "level", "target", "message", "fields"]);
    expect(out[0]).toMatchObject({
      level: "info",
      target: "svc",
      message: "cycle started",
      fields: { trigger: "schedule", count: 2 },
    });
    expect(out[0].timestamp).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    expect(Math.abs(Date.parse(out[0].timestamp) - Date.now())).toBeLessThan(60_000);
    expect(out[1]).toMatchObject({ level: "debug", target: "svc::updater::rollback", message: "checking", fields: {} });
    expect(logging.stderr.json).toEqual([
      expect.objectContaining({ level: "error", target: "svc", message: "failed", fields: { reason: "x" } }),
    ]);
  });

  test("auto is json when stdout is not a terminal, pretty when it is", () => {
    expect(testLogging({ log_format: "auto" }).format).toBe("json");
    expect(testLogging({ log_format: "auto" }, { tty: true }).format).toBe("pretty");
    expect(testLogging({ log_format: "logfmt" }, { tty: true }).format).toBe("logfmt");
  });

  test("errors and odd values in fields are written as plain JSON", async () => {
    const logging = testLogging({ log_format: "json" });
    const cyclic: Record<string, unknown> = { name: "loop" };
    cyclic.self = cyclic;
    logging.log.info("values", {
      error: new SvcError("engine", "engine unreachable", { cause: new Error("connect ECONNREFUSED") }),
      big: 12n,
      when: new Date("2026-01-02T03:04:05.006Z"),
      nan: Number.NaN,
      skip: undefined,
      cyclic,
      set: new Set(["a"]),
    });
    await logging.close();
    const [line] = logging.stdout.json;
    expect(line.fields).toEqual({
      error: "engine unreachable (cause: connect ECONNREFUSED)",
      big: "12",
      when: "2026-01-02T03:04:05.006Z",
      nan: "NaN",
      cyclic: { name: "loop", self: "[circular]" },
      set: ["a"],
    });
  });

  test("a repeated line is written every time (consola's de-duplication is off)", async () => {
    const logging = testLogging({ log_format: "json" });
    for (let i = 0; i < 20; i++) logging.log.info("same line");
    await logging.close();
    expect(logging.stdout.lines).toHaveLength(20);
  });
});

describe("log_level", () => {
  const expected: Record<LevelName, LevelName[]> = {
    trace: ["trace", "debug", "info", "warn", "error"],
    debug: ["debug", "info", "warn", "error"],
    info: ["info", "warn", "error"],
    warn: ["warn", "error"],
    error: ["error"],
  };
  for (const level of LEVELS) {
    test(`${level} writes ${expected[level].join(", ")}`, async () => {
      const logging = testLogging({ log_format: "json", log_level: level });
      logEveryLevel(logging);
      await logging.close();
      const all = [...logging.stdout.json, ...logging.stderr.json];
      expect(all.map((l) => l.level).sort()).toEqual([...expected[level]].sort());
      expect(all.every((l) => l.message === `at ${l.level}`)).toBe(true);
    });
  }

  test("warnings and errors go to stderr, the rest to stdout", async () => {
    const logging = testLogging({ log_format: "json", log_level: "trace" });
    logEveryLevel(logging);
    await logging.close();
    expect(logging.stdout.json.map((l) => l.level)).toEqual(["trace", "debug", "info"]);
    expect(logging.stderr.json.map((l) => l.level)).toEqual(["warn", "error"]);
  });
});

describe("logfmt format", () => {
  test("each line reads back with level, target, message and fields", async () => {
    const logging = testLogging({ log_format: "logfmt", log_level: "debug" });
    logging.log.child("api").info('request "odd"', { path: "/v1/update", status: 409 });
    logging.log.debug("plain");
    await logging.close();
    const [first, second] = logging.stdout.lines.map(parseLogfmt);
    expect(first).toMatchObject({
      level: "info",
      target: "svc::api",
      message: 'request "odd"',
      path: "/v1/update",
      status: "409",
    });
    expect(first!.timestamp).toMatch(/Z$/);
    expect(second).toMatchObject({ level: "debug", target: "svc", message: "plain" });
  });
});

describe("pretty format", () => {
  test("shows message, target and fields; on a terminal consola's fancy reporter draws it", async () => {
    const logging = testLogging({ log_format: "pretty", log_level: "trace" }, { tty: true });
    logging.log.child("updater").info("updated app", { container: "app" });
    logging.log.trace("fine detail");
    logging.log.error("it broke");
    await logging.close();
    const out = Bun.stripANSI(logging.stdout.text);
    expect(out).toContain("updated app");
    expect(out).toContain("container=app");
    expect(out).toContain("svc::updater");
    expect(out).toContain("fine detail");
    // A trace line is one line, not a stack trace of the logging call.
    expect(out).not.toContain("    at ");
    expect(Bun.stripANSI(logging.stderr.text)).toContain("it broke");
  });

  test("pretty into a pipe uses the basic reporter: [level] [target] message", async () => {
    const logging = testLogging({ log_format: "pretty" });
    logging.log.child("api").warn("slow client", { ms: 5 });
    await logging.close();
    expect(logging.stderr.text).toBe("[warn] [svc::api] slow client  ms=5\n");
  });
});

describe("redaction", () => {
  test("secrets given as options and the configuration's secrets never appear, in messages or fields", async () => {
    const config = {
      log_format: "json" as const,
      http_api: { token: "tok-123456" },
      registry_password: "regpass!",
      notifications: { mqtt: { password: "mqtt-secret" }, pushover: { token: "push-tok", user_key: "push-user" } },
      registry_credentials: [{ host: "ghcr.io", username: "ghuser", password: "ghpass" }],
    };
    const logging = testLogging(config, { secrets: ["extra-secret"] });
    logging.log.info("token tok-123456 and extra-secret here", {
      url: "https://user:regpass!@example.com",
      nested: { list: ["mqtt-secret", { deep: "x push-tok y" }], err: new Error("auth failed for ghpass") },
      user_key: "push-user",
      who: "ghuser",
    });
    await logging.close();
    const text = logging.stdout.text;
    for (const secret of [
      "tok-123456",
      "extra-secret",
      "regpass!",
      "mqtt-secret",
      "push-tok",
      "push-user",
      "ghpass",
      "ghuser",
    ]) {
      expect(text).not.toContain(secret);
    }
    const [line] = logging.stdout.json;
    expect(line.message).toBe("token [redacted] and [redacted] here");
    expect(line.fields.url).toBe("https://user:[redacted]@example.com");
    expect(line.fields.nested.list).toEqual(["[redacted]", { deep: "x [redacted] y" }]);
    expect(line.fields.nested.err).toBe("auth failed for [redacted]");
  });

  test("a secret containing another is masked whole; very short values are not searched for", async () => {
    const logging = testLogging({ log_format: "json" }, { secrets: ["abc", "abcdef", "x"] });
    logging.log.info("abcdef abc x");
    await logging.close();
    expect(logging.stdout.json[0].message).toBe("[redacted] [redacted] x");
  });

  test("redaction applies in logfmt and pretty too", async () => {
    for (const log_format of ["logfmt", "pretty"] as const) {
      const logging = testLogging({ log_format }, { secrets: ["s3cr3t-value"] });
      logging.log.warn("s3cr3t-value", { k: "s3cr3t-value" });
      await logging.close();
      expect(logging.stderr.text).not.toContain("s3cr3t-value");
      expect(logging.stderr.text).toContain("[redacted]");
    }
  });
});

describe("console capture", () => {
  test("in json, console.* from anywhere becomes a JSON line (target svc::console) until close()", async () => {
    const stdout = new Collector();
    const stderr = new Collector();
    const original = console.log;
    const logging = createLogging(logSettings(defaultConfig({ log_format: "json" })), {
      stdout,
      stderr,
      handleSighup: false,
      secrets: ["hidden-one"],
    });
    try {
      console.log("from a library", { a: 1 });
      console.error("library error hidden-one");
      console.debug("not at info level");
    } finally {
      await logging.close();
    }
    expect(console.log).toBe(original);
    expect(stdout.json).toEqual([
      expect.objectContaining({ level: "info", target: "svc::console", message: "from a library { a: 1 }" }),
    ]);
    expect(stderr.json).toEqual([
      expect.objectContaining({ level: "error", target: "svc::console", message: "library error [redacted]" }),
    ]);
  });
});

describe("startup errors", () => {
  test("an audit log that cannot be opened is a startup error naming the file", () => {
    let error: unknown;
    try {
      testLogging({ audit_log: "/nonexistent-dir/audit.log" });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(SvcError);
    expect((error as SvcError).kind).toBe("startup");
    expect((error as SvcError).message).toContain("/nonexistent-dir/audit.log");
  });
});
