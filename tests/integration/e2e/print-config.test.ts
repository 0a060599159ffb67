/**
 * `svc --print-config`, as a user checks what svc will do: secrets (here a token read from a
 * file, a password from the environment) are shown as [redacted], and every value says where it
 * came from (default, file line, env variable, flag).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { Fixture, runSvc, stopAll, userEnv } from "./support.ts";

const fx = new Fixture("e2e-print");
const TOKEN = "file-held-token-4be1c0a9";
const MQTT_PASSWORD = "env-mqtt-pw-77c2e1d0";

afterAll(async () => {
  await stopAll();
  fx.cleanup();
}, 120_000);

describe("svc --print-config", () => {
  let run: Awaited<ReturnType<typeof runSvc>>;
  let lines: string[];
  const lineOf = (key: string) => lines.find((l) => l.startsWith(`${key} = `) || l.startsWith(`# ${key} is unset`));

  beforeAll(async () => {
    const dir = fx.tempDir("cfg");
    writeFileSync(join(dir, "token"), `${TOKEN}\n`);
    writeFileSync(
      join(dir, "svc.toml"),
      [
        "# my svc",
        'poll_interval = "5m"',
        "",
        "[http_api]",
        "update = true",
        `token = "${join(dir, "token")}"`,
        "",
      ].join("\n"),
    );
    const env = userEnv({
      SVC_NOTIFICATIONS_MQTT_BROKER: "tcp://127.0.0.1:1883",
      SVC_NOTIFICATIONS_MQTT_TOPIC: "svc",
      SVC_NOTIFICATIONS_MQTT_PASSWORD: MQTT_PASSWORD,
    });
    run = await runSvc(["-c", "svc.toml", "--print-config", "--http-api-port", "9191"], { cwd: dir, env });
    lines = run.stdout.split("\n");
  }, 60_000);

  test("exits 0", () => {
    expect(run.code, run.svc.describe()).toBe(0);
  });

  test("the token read from a file is shown as [redacted], never its value or contents", () => {
    expect(lineOf("token")).toMatch(/^token = "\[redacted\]"/);
    expect(run.stdout + run.stderr).not.toContain(TOKEN);
  });

  test("a password from the environment is [redacted] too", () => {
    const password = lines.filter((l) => l.startsWith("password = "));
    expect(password.some((l) => l.includes("[redacted]") && l.includes("SVC_NOTIFICATIONS_MQTT_PASSWORD"))).toBe(true);
    expect(run.stdout + run.stderr).not.toContain(MQTT_PASSWORD);
  });

  test("each value says where it came from: file line, flag, env, default", () => {
    expect(lineOf("poll_interval")).toMatch(/from file \(svc\.toml:2\)/);
    expect(lineOf("update")).toMatch(/from file \(svc\.toml:5\)/);
    expect(lineOf("token")).toMatch(/from file \(svc\.toml:6\)/);
    expect(lineOf("port")).toMatch(/^port = 9191 .*from flag \(--http-api-port\)/);
    expect(lineOf("broker")).toMatch(/from env \(SVC_NOTIFICATIONS_MQTT_BROKER\)/);
    expect(lineOf("log_level")).toMatch(/from default/);
  });

  test("the printed configuration is valid TOML", () => {
    expect(() => Bun.TOML.parse(run.stdout)).not.toThrow();
  });
});
