/**
 * A Watchtower user's notification settings through `svc migrate` against the real engine: the
 * written svc.toml loads and delivers the report to every receiver (loopback stand-ins for the
 * services, the SMTP peer), and nothing svc prints holds a secret.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { loadConfig } from "../../../src/config/index.ts";
import { createNotifications } from "../../../src/notify/index.ts";
import { buildImage, docker, sandbox, uniqueName } from "../../harness.ts";
import { recordingLogger } from "../../support/logger.ts";
import { tempDir } from "../../temp.ts";
import { runSvc, userEnv } from "../e2e/support.ts";
import {
  removeDir,
  SECRETS,
  type SmtpServer,
  sampleReport,
  serviceReceiver,
  startSmtp,
  stop,
  urlsFor,
} from "../notify/peers.ts";

const name = uniqueName("watchtower-notify");
const image = `${sandbox().registry}/${uniqueName("wt-notify-img")}:latest`;
let receiver: ReturnType<typeof serviceReceiver>;
let smtp: SmtpServer;

beforeAll(async () => {
  receiver = serviceReceiver();
  smtp = await startSmtp();
});

afterAll(async () => {
  docker(["rm", "-f", name], { allowFailure: true });
  docker(["rmi", "-f", image], { allowFailure: true });
  receiver?.server.stop(true);
  await stop(smtp?.proc);
  removeDir(smtp?.dir);
});

test("Watchtower's notification variables become notifications.urls that deliver to every receiver", async () => {
  const port = receiver.server.port!;
  const urls = urlsFor(port);
  const at = `127.0.0.1:${port}`;
  const env = {
    WATCHTOWER_NOTIFICATIONS: "email slack gotify msteams shoutrrr",
    WATCHTOWER_NOTIFICATION_URL: [
      urls.discord,
      urls.telegram,
      urls.ntfy,
      urls.matrix,
      `smtp://127.0.0.1:${smtp.port}/?from=wt@lan&to=ops@lan&usestarttls=no`,
    ].join(" "),
    WATCHTOWER_NOTIFICATION_SLACK_HOOK_URL: `https://hooks.slack.com/services/T0001/B0002/${SECRETS.slackHook}`,
    WATCHTOWER_NOTIFICATION_SLACK_IDENTIFIER: "watchtower",
    WATCHTOWER_NOTIFICATION_GOTIFY_URL: `http://${at}/gotify`,
    WATCHTOWER_NOTIFICATION_GOTIFY_TOKEN: SECRETS.gotify,
    WATCHTOWER_NOTIFICATION_MSTEAMS_HOOK: `http://${at}/workflows/0a1b/triggers/manual/paths/invoke?sig=${SECRETS.teams}`,
    WATCHTOWER_NOTIFICATIONS_HOSTNAME: "nas",
    WATCHTOWER_NOTIFICATION_TITLE_TAG: "prod",
    WATCHTOWER_NOTIFICATION_TEMPLATE: "{{range .}}{{.Message}}{{end}}",
  };
  buildImage(image, { push: false });
  docker([
    "run",
    "-d",
    "--name",
    name,
    "--network",
    "none",
    "-l",
    "com.centurylinklabs.watchtower=true",
    ...Object.entries(env).flatMap(([key, value]) => ["-e", `${key}=${value}`]),
    "--entrypoint",
    "/bin/sh",
    image,
    "-c",
    "sleep 3600",
    "/watchtower",
    "--interval",
    "300",
  ]);
  const dir = tempDir("svc-migrate-notify-");
  const run = await runSvc(["migrate", name, "--output", "svc.toml", "--docker-host", sandbox().dockerHost], {
    cwd: dir,
    env: userEnv(),
  });
  expect(run.code).toBe(0);
  expect(run.stderr.match(/WATCHTOWER_NOTIFICATION_TEMPLATE: a Go template is not read/g)).toHaveLength(1);
  expect(run.stderr).toContain("notifications.template");
  for (const secret of Object.values(SECRETS)) expect(run.stdout + run.stderr).not.toContain(secret);

  // The written file as it is; only the fixed hosts (Discord, Telegram, Slack) are pointed at the receiver.
  const { config } = await loadConfig({
    argv: ["--config", join(dir, "svc.toml")],
    env: { SVC_NOTIFICATIONS_SERVICES_BASE_URL: receiver.base },
    cwd: dir,
  });
  expect(readFileSync(join(dir, "svc.toml"), "utf8")).toContain("[notifications]");
  const log = recordingLogger();
  const mark = receiver.received.length;
  const dispatcher = await createNotifications(config, log, { retryDelayMs: 10, timeoutMs: 3000, attempts: 2 });
  expect(dispatcher.channels).toEqual(["discord", "telegram", "ntfy", "matrix", "smtp", "slack", "gotify", "teams"]);
  const before = smtp.messages().length;
  dispatcher.publish(sampleReport());
  await dispatcher.close();

  const got = receiver.received.slice(mark);
  const title = "[prod] svc on nas: 1 updated, 1 failed";
  const body = (path: (p: string) => boolean) => JSON.parse(got.find((r) => path(r.path))?.body ?? "null");
  expect(body((p) => p.startsWith("/api/webhooks/")).content).toStartWith(`**${title}**`);
  expect(body((p) => p.startsWith("/bot")).text).toStartWith(title);
  expect(got.find((r) => r.path === "/ntfy/svc-alerts")?.headers.title).toBe(title);
  expect(body((p) => p.startsWith("/_matrix/client/v3/rooms/")).body).toStartWith(title);
  expect(body((p) => p === "/services/T0001/B0002/" + SECRETS.slackHook)).toMatchObject({
    username: "watchtower",
    text: expect.stringContaining(title),
  });
  expect(body((p) => p.startsWith("/workflows/")).attachments[0].content.body[0].text).toBe(title);
  expect(body((p) => p === "/gotify/message").title).toBe(title);
  // e-mail: the smtp:// URL, and the e-mail channel from WATCHTOWER_NOTIFICATION_EMAIL_* (none set here: not on)
  expect(
    smtp
      .messages()
      .slice(before)
      .map((m) => m.subject),
  ).toEqual([title]);
  expect(log.lines.filter((l) => l.message === "notification failed")).toEqual([]);
  for (const secret of Object.values(SECRETS)) expect(log.text()).not.toContain(secret);
}, 90_000);
