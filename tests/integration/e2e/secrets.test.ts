/**
 * Secrets planted in every form the notification settings can hold them (a token in a webhook
 * URL's path, a bearer in a webhook header, a password inside the MQTT broker URL) and in a secret
 * option: no output of svc shows them, neither --print-config, nor the logs of a cycle whose
 * notifications fail and whose hook prints them, nor the audit log, nor the report
 * (docs/security.md).
 */
import { afterAll, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { freePort } from "../../harness.ts";
import { baseFlags, Fixture, runSvc, stopAll, userEnv } from "./support.ts";

const fx = new Fixture("e2e-secrets");
afterAll(async () => {
  await stopAll();
  fx.cleanup();
}, 120_000);

const PLANTED = {
  webhookToken: "whk9Tq2LxVb81cE0",
  bearer: "brr4Zk7QmPw02XsL",
  mqttPassword: "mqp6Hd3RtYu95NaB",
  apiToken: "api8Jc1VfGe47OiW",
};
// nothing listens on these: every notification fails, with the URL at hand for an error message
const refused = freePort();
const env = userEnv({
  SVC_NOTIFICATIONS_WEBHOOK_URL: `http://127.0.0.1:${refused}/services/T0SVC/B0SVC/${PLANTED.webhookToken}`,
  SVC_NOTIFICATIONS_WEBHOOK_HEADERS: `Authorization: Bearer ${PLANTED.bearer}, X-Source: svc`,
  SVC_NOTIFICATIONS_MQTT_BROKER: `mqtt://svc:${PLANTED.mqttPassword}@127.0.0.1:${refused}`,
  SVC_NOTIFICATIONS_MQTT_TOPIC: "svc/reports",
  SVC_HTTP_API_TOKEN: PLANTED.apiToken,
});

function expectNoPlanted(text: string): void {
  for (const [what, secret] of Object.entries(PLANTED)) expect(text.includes(secret), `${what} is shown`).toBe(false);
}

test("--print-config shows the channels' settings without the secrets inside them", async () => {
  const run = await runSvc(["--print-config", "--poll-interval", "1h"], { env });
  expect(run.code, run.svc.describe()).toBe(0);
  expectNoPlanted(run.stdout + run.stderr);
  const line = (key: string) => run.stdout.split("\n").find((l) => l.startsWith(`${key} = `)) ?? "";
  // a webhook URL is its credential (Slack, Discord): masked whole
  expect(line("url")).toStartWith('url = "[redacted]"');
  expect(line("headers")).toStartWith('headers = "Authorization: [redacted], X-Source: svc"');
  expect(line("broker")).toStartWith(`broker = "mqtt://svc:[redacted]@127.0.0.1:${refused}"`);
}, 60_000);

test("a cycle whose notifications fail and whose hook prints the secrets: logs, report and audit log show none", async () => {
  const name = fx.run("hook", fx.image("hook").ref, {
    labels: { "svc.hooks.pre_check": `echo ${PLANTED.bearer} ${PLANTED.webhookToken}; exit 1` },
  });
  const audit = join(fx.tempDir("audit"), "audit.log");
  const flags = [
    ...baseFlags(),
    "--run-once",
    "--lifecycle-hooks",
    "--log-level",
    "debug",
    "--notifications-notify-on-every-cycle",
    "--audit-log",
    audit,
    name,
  ];
  const run = await runSvc(flags, { env });
  const output = run.stdout + run.stderr;
  expect(output, run.svc.describe()).toContain("notification failed");
  expect(output).toContain("lifecycle hook failed");
  expect(existsSync(audit)).toBe(true);
  const auditText = readFileSync(audit, "utf8");
  expect(auditText).toContain("pre_check");
  expectNoPlanted(output + auditText);
}, 120_000);
