/** Watchtower's notification settings: URLs, the older per-service variables, host name and title tag. */
import { describe, expect, test } from "bun:test";
import { migrateWatchtower } from "../../../src/config/index.ts";
import { load, problems } from "./helpers.ts";

const SLACK = "https://hooks.slack.com/services/T0001/B0002/XXXXsecretXXXX";
const LEGACY = {
  WATCHTOWER_RUN_ONCE: "true",
  WATCHTOWER_NOTIFICATIONS: "email slack msteams gotify shoutrrr",
  WATCHTOWER_NOTIFICATION_URL: "discord://T0ken@123456789 ntfy://ntfy.sh/svc",
  WATCHTOWER_NOTIFICATION_SLACK_HOOK_URL: SLACK,
  WATCHTOWER_NOTIFICATION_SLACK_IDENTIFIER: "watchtower-nas",
  WATCHTOWER_NOTIFICATION_SLACK_CHANNEL: "#ops",
  WATCHTOWER_NOTIFICATION_MSTEAMS_HOOK:
    "https://prod-01.westeurope.logic.azure.com/workflows/abc/triggers/manual/paths/invoke?api-version=2016-06-01&sig=S1g",
  WATCHTOWER_NOTIFICATION_GOTIFY_URL: "http://gotify.lan:8080/",
  WATCHTOWER_NOTIFICATION_GOTIFY_TOKEN: "AGotifyT0ken",
  WATCHTOWER_NOTIFICATION_EMAIL_SERVER: "smtp.lan",
  WATCHTOWER_NOTIFICATION_EMAIL_FROM: "wt@lan",
  WATCHTOWER_NOTIFICATION_EMAIL_TO: "ops@lan",
  WATCHTOWER_NOTIFICATIONS_HOSTNAME: "nas",
  WATCHTOWER_NOTIFICATION_TITLE_TAG: "prod",
  WATCHTOWER_NOTIFICATION_TEMPLATE: "{{range .}}{{.Message}}{{end}}",
  WATCHTOWER_NOTIFICATIONS_LEVEL: "info",
};
const EXPECTED_URLS = [
  "discord://T0ken@123456789",
  "ntfy://ntfy.sh/svc",
  "slack://hook:T0001-B0002-XXXXsecretXXXX@webhook?botname=watchtower-nas&channel=%23ops",
  "teams+https://prod-01.westeurope.logic.azure.com/workflows/abc/triggers/manual/paths/invoke?api-version=2016-06-01&sig=S1g",
  "gotify://gotify.lan:8080/AGotifyT0ken?disabletls=yes",
];

describe("Watchtower's notification settings", () => {
  test("are read at startup: URLs, the slack/msteams/gotify variables as URLs, e-mail, host name, title tag", async () => {
    const { config, warnings } = await load({ env: LEGACY });
    expect(config.notifications.urls).toEqual(EXPECTED_URLS);
    expect(config.notifications).toMatchObject({
      hostname: "nas",
      title_tag: "prod",
      email: { server: "smtp.lan", from: "wt@lan", to: ["ops@lan"] },
    });
    expect(warnings).toContain(
      "WATCHTOWER_NOTIFICATIONS: read as notifications.urls; svc's own variable is SVC_NOTIFICATIONS_URLS",
    );
    expect(config.notifications.notify_on_every_cycle).toBe(false);
    // the Go template is named once, with where svc's templates are
    expect(warnings.filter((w) => w.includes("WATCHTOWER_NOTIFICATION_TEMPLATE"))).toEqual([
      "WATCHTOWER_NOTIFICATION_TEMPLATE: no svc counterpart (a Go template is not read: svc's templates are mustache files (notifications.template, docs/notifications.md#templates)); ignored",
    ]);
    expect(warnings.join("\n")).not.toContain("not a Watchtower setting svc knows");
  });

  test("svc migrate carries the same, and lists what it cannot", () => {
    const env = Object.entries({
      ...LEGACY,
      WATCHTOWER_NOTIFICATION_GOTIFY_TLS_SKIP_VERIFY: "true",
      WATCHTOWER_NOTIFICATION_MSTEAMS_USE_LOG_DATA: "true",
    }).map(([k, v]) => `${k}=${v}`);
    const { values, unmapped } = migrateWatchtower({ env, args: [], labels: {} });
    expect(values.get("notifications.urls")).toEqual(EXPECTED_URLS);
    expect(values.get("notifications.hostname")).toBe("nas");
    expect(values.get("notifications.title_tag")).toBe("prod");
    expect(unmapped.some((line) => line.startsWith("WATCHTOWER_NOTIFICATION_GOTIFY_TLS_SKIP_VERIFY"))).toBe(false);
    expect(unmapped.some((line) => line.startsWith("WATCHTOWER_NOTIFICATION_MSTEAMS_USE_LOG_DATA:"))).toBe(true);
    expect(
      unmapped.some((line) => line.startsWith("WATCHTOWER_NOTIFICATION_TEMPLATE: a Go template is not read")),
    ).toBe(true);
  });

  test("svc migrate reads the same settings from Watchtower's flags (flags win; --notifications and --notification-url repeat)", () => {
    const args = [
      "--interval",
      "300",
      "--notifications",
      "slack",
      "-n",
      "gotify",
      `--notification-slack-hook-url=${SLACK}`,
      "--notification-slack-identifier",
      "wt",
      "--notification-gotify-url",
      "https://gotify.lan/",
      "--notification-gotify-token",
      "AFlagT0ken",
      "--notification-gotify-tls-skip-verify",
      "--notification-url",
      "discord://T0ken@123456789",
      "--notification-url",
      "ntfy://ntfy.sh/svc",
      "--notifications-level",
      "trace",
      "web",
    ];
    const { values, unmapped } = migrateWatchtower({
      env: ["WATCHTOWER_NOTIFICATION_GOTIFY_TOKEN=AEnvT0ken"],
      args,
      labels: {},
    });
    expect(values.get("notifications.urls")).toEqual([
      "discord://T0ken@123456789",
      "ntfy://ntfy.sh/svc",
      "slack://hook:T0001-B0002-XXXXsecretXXXX@webhook?botname=wt",
      "gotify://gotify.lan/AFlagT0ken?insecureskipverify=yes",
    ]);
    expect(values.get("notifications.notify_on_every_cycle")).toBe(true);
    expect(values.get("poll_interval")).toBe("300");
    expect(values.get("containers")).toEqual(["web"]);
    expect(unmapped).toEqual([]);
  });

  test("WATCHTOWER_NOTIFICATIONS_LEVEL: debug and trace notify after every cycle; a level above info is named as not carried", async () => {
    const debug = await load({ env: { WATCHTOWER_RUN_ONCE: "true", WATCHTOWER_NOTIFICATIONS_LEVEL: "debug" } });
    expect(debug.config.notifications.notify_on_every_cycle).toBe(true);
    expect(debug.warnings).toContain(
      "WATCHTOWER_NOTIFICATIONS_LEVEL: read as notifications.notify_on_every_cycle; svc's own variable is SVC_NOTIFICATIONS_NOTIFY_ON_EVERY_CYCLE",
    );
    const { values, unmapped } = migrateWatchtower({
      env: ["WATCHTOWER_NOTIFICATIONS_LEVEL=error"],
      args: [],
      labels: {},
    });
    expect(values.has("notifications.notify_on_every_cycle")).toBe(false);
    expect(unmapped).toContain(
      "WATCHTOWER_NOTIFICATIONS_LEVEL: svc has no level filter: it notifies after every cycle with an update, a failure or a rollback",
    );
    expect(
      migrateWatchtower({ env: ["WATCHTOWER_NOTIFICATIONS_LEVEL=trace"], args: [], labels: {} }).values.get(
        "notifications.notify_on_every_cycle",
      ),
    ).toBe(true);
  });

  test("Discord's Slack-compatible hook becomes a discord URL; a service not listed is not used, as in Watchtower", async () => {
    const { config, warnings } = await load({
      env: {
        WATCHTOWER_RUN_ONCE: "true",
        WATCHTOWER_NOTIFICATIONS: "slack",
        WATCHTOWER_NOTIFICATION_SLACK_HOOK_URL: "https://discord.com/api/webhooks/123456789/DiscT0ken/slack",
        WATCHTOWER_NOTIFICATION_GOTIFY_URL: "https://gotify.lan",
      },
    });
    expect(config.notifications.urls).toEqual(["discord://DiscT0ken@123456789"]);
    expect(warnings).toContain(
      "WATCHTOWER_NOTIFICATION_GOTIFY_URL: gotify is not in WATCHTOWER_NOTIFICATIONS, so Watchtower did not use it either; ignored",
    );
  });

  test("a setting that cannot be used stops the start, naming the variable and not its value", async () => {
    const found = await problems({
      env: {
        WATCHTOWER_RUN_ONCE: "true",
        WATCHTOWER_NOTIFICATIONS: "slack gotify",
        WATCHTOWER_NOTIFICATION_SLACK_HOOK_URL: "https://mattermost.lan/hooks/s3cretHook",
        WATCHTOWER_NOTIFICATION_GOTIFY_URL: "https://gotify.lan",
      },
    });
    expect(found).toEqual([
      "WATCHTOWER_NOTIFICATION_SLACK_HOOK_URL: not a hooks.slack.com or Discord webhook; for another Slack-compatible service use notifications.webhook with the Slack recipe (docs/notifications.md)",
      "WATCHTOWER_NOTIFICATION_GOTIFY_TOKEN: is required with WATCHTOWER_NOTIFICATION_GOTIFY_URL",
    ]);
    expect(
      await problems({
        env: { WATCHTOWER_RUN_ONCE: "true", WATCHTOWER_NOTIFICATION_URL: "discord://s3cret@hook/other" },
      }),
    ).toEqual([
      "WATCHTOWER_NOTIFICATION_URL: entry 1: discord://: the path may only be /raw (form: discord://token@webhookid)",
    ]);
  });
});
