/** Notification URLs: each shoutrrr form parsed into its target, wrong parts named, secrets known. */
import { describe, expect, test } from "bun:test";
import { defaultConfig, printConfig, REDACTED } from "../../../src/config/index.ts";
import { createRedactor } from "../../../src/log/index.ts";
import { notificationSecrets } from "../../../src/notify/secrets.ts";
import {
  type NotificationTarget,
  notificationUrlSecrets,
  parseNotificationUrl,
  redactNotificationUrl,
  SERVICES,
} from "../../../src/shoutrrr/index.ts";
import { load, problems, RUNS } from "../config/helpers.ts";

function parsed(url: string): NotificationTarget {
  const result = parseNotificationUrl(url);
  if ("problem" in result) throw new Error(`${url}: ${result.problem}`);
  return result;
}

function problem(url: string): string {
  const result = parseNotificationUrl(url);
  if (!("problem" in result)) throw new Error(`${url} parsed`);
  return result.problem;
}

describe("each form parses into its target", () => {
  test("discord://token@webhookid", () => {
    expect(parsed("discord://AbC-dEf_123@123456789012345678?username=svc&color=0x50D9ff")).toMatchObject({
      service: "discord",
      token: "AbC-dEf_123",
      webhookId: "123456789012345678",
      username: "svc",
    });
  });

  test("telegram: the token is id:secret, chats a list", () => {
    expect(
      parsed(
        "telegram://110201543:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw@telegram?chats=@svc_news,-100123456&notification=no&preview=no",
      ),
    ).toMatchObject({
      service: "telegram",
      token: "110201543:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw",
      chats: [{ chat: "@svc_news" }, { chat: "-100123456" }],
      silent: true,
      preview: false,
    });
  });

  test("slack webhook and bot token", () => {
    expect(parsed("slack://hook:T0001-B0002-XXXXsecretXXXX1@webhook?botname=svc&icon=:whale:")).toMatchObject({
      service: "slack",
      webhookPath: "T0001/B0002/XXXXsecretXXXX1",
      botname: "svc",
      icon: ":whale:",
    });
    expect(parsed("slack://xoxb:123456789012-1234567890123-4mt0t4l1YL3g1T5L4cK70k3N@C001CH4NN3L")).toMatchObject({
      service: "slack",
      botToken: "xoxb-123456789012-1234567890123-4mt0t4l1YL3g1T5L4cK70k3N",
      channel: "C001CH4NN3L",
    });
    // shoutrrr's first form, from older Watchtower setups
    expect(parsed("slack://watchtower@T0001/B0002/XXXXsecretXXXX1")).toMatchObject({
      service: "slack",
      webhookPath: "T0001/B0002/XXXXsecretXXXX1",
      botname: "watchtower",
    });
  });

  test("gotify: host, port, path prefix and token; disabletls for plain HTTP", () => {
    expect(parsed("gotify://gotify.lan:8443/sub/AbCdEf123456789?priority=8")).toMatchObject({
      service: "gotify",
      endpoint: "https://gotify.lan:8443/sub",
      token: "AbCdEf123456789",
      priority: 8,
    });
    expect(parsed("gotify://127.0.0.1:8080/AbCdEf123456789?disabletls=yes")).toMatchObject({
      endpoint: "http://127.0.0.1:8080",
    });
  });

  test("ntfy: topic, credentials, scheme", () => {
    expect(parsed("ntfy://ntfy.sh/svc-alerts")).toMatchObject({
      service: "ntfy",
      endpoint: "https://ntfy.sh",
      topic: "svc-alerts",
      headers: [],
    });
    expect(parsed("ntfy://me:pa55word@127.0.0.1:8090/updates?scheme=http&priority=high&tags=whale,svc")).toMatchObject({
      endpoint: "http://127.0.0.1:8090",
      username: "me",
      password: "pa55word",
      headers: [
        ["Priority", "4"],
        ["Tags", "whale,svc"],
      ],
    });
  });

  test("pushover: token, user key, devices", () => {
    expect(
      parsed(
        "pushover://shoutrrr:azGDORePK8gMaC0QOYAMyEEuzJnyUi@uQiRzpo4DXghDmr9QzzfQu27cmVRsG/?devices=phone,tablet&priority=1",
      ),
    ).toMatchObject({
      service: "pushover",
      token: "azGDORePK8gMaC0QOYAMyEEuzJnyUi",
      userKey: "uQiRzpo4DXghDmr9QzzfQu27cmVRsG",
      devices: ["phone", "tablet"],
      priority: 1,
    });
  });

  test("smtp with shoutrrr's auth, encryption and usestarttls", () => {
    expect(
      parsed(
        "smtp://mailer:s3cr%40t@mail.lan:587/?from=svc@lan&to=a@lan,b@lan&auth=Plain&encryption=ExplicitTLS&fromname=svc",
      ),
    ).toMatchObject({
      service: "smtp",
      smtp: {
        host: "mail.lan",
        port: 587,
        username: "mailer",
        password: "s3cr@t",
        from: "svc@lan",
        to: ["a@lan", "b@lan"],
        auth: "plain",
        encryption: "explicittls",
        useStartTls: true,
        fromName: "svc",
      },
    });
    expect(parsed("smtp://mail.lan/?fromaddress=svc@lan&toaddresses=a@lan&usestarttls=no")).toMatchObject({
      smtp: { port: 25, auth: "none", encryption: "auto", useStartTls: false },
    });
  });

  test("teams: the Workflows webhook, as teams+https:// or teams://, and the legacy connector form", () => {
    const workflow =
      "prod-01.westeurope.logic.azure.com:443/workflows/0123abcd4567/triggers/manual/paths/invoke?api-version=2016-06-01&sp=%2Ftriggers%2Fmanual%2Frun&sv=1.0&sig=Zx9SigNaTure123";
    const expected =
      "https://prod-01.westeurope.logic.azure.com/workflows/0123abcd4567/triggers/manual/paths/invoke?api-version=2016-06-01&sp=%2Ftriggers%2Fmanual%2Frun&sv=1.0&sig=Zx9SigNaTure123";
    expect(parsed(`teams+https://${workflow}`)).toMatchObject({ service: "teams", endpoint: expected });
    expect(parsed(`teams://${workflow}`)).toMatchObject({ service: "teams", endpoint: expected });
    expect(parsed("teams://group1@tenant2/alt3/owner4/extra5?host=org.webhook.office.com")).toMatchObject({
      endpoint: "https://org.webhook.office.com/webhookb2/group1@tenant2/IncomingWebhook/alt3/owner4/extra5",
    });
  });

  test("matrix: user and password, rooms", () => {
    expect(parsed("matrix://bot:pa55@matrix.lan:8448/?rooms=!abc:matrix.lan,%23ops:matrix.lan")).toMatchObject({
      service: "matrix",
      endpoint: "https://matrix.lan:8448",
      user: "bot",
      password: "pa55",
      rooms: ["!abc:matrix.lan", "#ops:matrix.lan"],
    });
  });

  test("generic: https by default, headers, method, forwarded parameters; generic+http wraps a URL", () => {
    expect(
      parsed("generic://hooks.lan/svc?@authorization=Bearer%20xyz123456&method=PUT&_method=keep&room=7&template=json"),
    ).toMatchObject({
      service: "generic",
      endpoint: "https://hooks.lan/svc?method=keep&room=7",
      method: "PUT",
      headers: [["Authorization", "Bearer xyz123456"]],
      body: "json",
    });
    expect(parsed("generic+http://127.0.0.1:9000/hook?template=json&x=1")).toMatchObject({
      endpoint: "http://127.0.0.1:9000/hook?x=1",
      method: "POST",
      body: "json",
    });
    expect(
      parsed("generic://127.0.0.1:9000/hook?disabletls=yes&template=/etc/svc/hook.mustache&contenttype=text/plain"),
    ).toMatchObject({
      endpoint: "http://127.0.0.1:9000/hook",
      body: "template",
      template: "/etc/svc/hook.mustache",
      contentType: "text/plain",
    });
  });
});

describe("a URL that cannot be used names the wrong part, never the secret", () => {
  const cases: Array<[string, string]> = [
    ["not a url", "is not a URL"],
    ["foo://x", "foo://: not a service svc knows"],
    ["constructor://x", "constructor://: not a service svc knows"],
    ["discord://@123", "discord://: the webhook token is missing"],
    ["discord://t0ken-Secret@123/illegal-argument", "the path may only be /raw"],
    ["telegram://justtoken@telegram?chats=1", "telegram://: the bot token"],
    ["telegram://1:ABCsecret@telegram", "parameter chats is missing"],
    ["slack://bot:xyzSecret@webhook", "must start with hook: (webhook) or xoxb: (bot)"],
    ["slack://hook:A-BSecret@webhook", "three parts"],
    ["gotify://gotify.lan", "the application token (last path segment) is missing"],
    ["gotify://gotify.lan/T0kenSecret?priority=11", "parameter priority must be an integer from -2 to 10"],
    ["ntfy://ntfy.sh/", "the topic (the path) is missing"],
    ["ntfy://ntfy.sh/t?scheme=ftp", "parameter scheme must be http or https"],
    ["pushover://shoutrrr:@userKeySecret1", "the application token"],
    ["smtp://mail.lan/?to=a@lan", "parameter from is missing"],
    ["smtp://mail.lan/?from=a@lan&to=b@lan&encryption=sometimes", "parameter encryption must be one of"],
    ["matrix://bot@matrix.lan/", "the password (or access token) is missing"],
    ["discord://t0ken-Secret@123?colour=red", "discord://: unknown parameter colour"],
    ["generic+ftp://x/y", "only generic+http(s)://"],
    ["gotify://gotify.lan/T0kenSecret?disabletls=maybe", "parameter disabletls must be yes or no"],
  ];
  for (const [url, expected] of cases) {
    test(url, () => {
      const text = problem(url);
      expect(text).toContain(expected);
      expect(text).not.toMatch(/Secret/);
    });
  }
});

describe("secrets", () => {
  test("each form knows its secret parts; the URL is shown with them masked", () => {
    const urls = [
      "discord://AbC-dEf_Secret1@123456789012345678",
      "telegram://110201543:AAHdqTcvSecret2@telegram?chats=1",
      "slack://hook:T0001-B0002-XXXXSecret3@webhook",
      "slack://xoxb:1234-5678-Secret4@C001",
      "gotify://gotify.lan/Secret5token",
      "ntfy://me:Secret6pw@ntfy.lan/topic",
      "pushover://shoutrrr:Secret7token@Secret8userkey",
      "smtp://u:Secret9%21@mail.lan/?from=a@lan&to=b@lan",
      "teams+https://x.logic.azure.com/workflows/1/triggers/manual/paths/invoke?sig=Secret10sig",
      "matrix://bot:Secret11@matrix.lan/",
      "generic://hooks.lan/x?@x-api-key=Secret12",
    ];
    const secrets = notificationUrlSecrets(urls);
    for (let n = 1; n <= 12; n++) expect(secrets.some((s) => s.includes(`Secret${n}`))).toBe(true);
    expect(secrets).toContain("Secret9!");
    for (const url of urls) expect(redactNotificationUrl(url)).not.toMatch(/Secret\d/);
    expect(redactNotificationUrl("discord://AbC-dEf_Secret1@123456789012345678")).toBe(
      `discord://${REDACTED}@123456789012345678`,
    );
    expect(redactNotificationUrl("nonsense Secret")).toBe(REDACTED);
  });
});

describe("notifications.urls in the configuration", () => {
  const DISCORD = "discord://Disc0rdSecretToken@123456789012345678";
  const NTFY = "ntfy://me:Ntfy5ecret@ntfy.lan/svc?tags=a,b";

  test("a TOML array, or space-separated in env as Watchtower's WATCHTOWER_NOTIFICATION_URL", async () => {
    const fromFile = await load({ argv: RUNS, toml: `[notifications]\nurls = ["${DISCORD}", "${NTFY}"]\n` });
    expect(fromFile.config.notifications.urls).toEqual([DISCORD, NTFY]);
    const fromEnv = await load({ argv: RUNS, env: { SVC_NOTIFICATIONS_URLS: `${DISCORD}  ${NTFY}` } });
    expect(fromEnv.config.notifications.urls).toEqual([DISCORD, NTFY]);
    const fromWatchtower = await load({ argv: RUNS, env: { WATCHTOWER_NOTIFICATION_URL: `${DISCORD} ${NTFY}` } });
    expect(fromWatchtower.config.notifications.urls).toEqual([DISCORD, NTFY]);
  });

  test("a URL that cannot be used stops the load, naming the entry and the part, not the secret", async () => {
    const fromFile = await problems({
      argv: RUNS,
      toml: `[notifications]\nurls = ["${DISCORD}", "discord://Disc0rdSecretToken@webhook/other"]\n`,
    });
    expect(fromFile).toEqual([
      "svc.toml:2: notifications.urls[1]: discord://: the path may only be /raw (form: discord://token@webhookid)",
    ]);
    const fromEnv = await problems({
      argv: RUNS,
      env: { SVC_NOTIFICATIONS_URLS: `${DISCORD} telegram://1:Te1egramSecret@telegram` },
    });
    expect(fromEnv).toEqual([
      `SVC_NOTIFICATIONS_URLS: entry 2: telegram://: parameter chats is missing (form: ${SERVICES.telegram.form})`,
    ]);
    expect(fromFile.join() + fromEnv.join()).not.toContain("Secret");
  });

  test("--print-config shows each URL with its secrets masked; notificationSecrets has them for every redactor", async () => {
    const result = await load({ argv: RUNS, env: { SVC_NOTIFICATIONS_URLS: `${DISCORD} ${NTFY}` } });
    const text = printConfig(result);
    expect(text).toContain(`discord://${REDACTED}@123456789012345678`);
    expect(text).toContain(`ntfy://me:${REDACTED}@ntfy.lan/svc?tags=a,b`);
    expect(text).not.toContain("Disc0rdSecretToken");
    expect(text).not.toContain("Ntfy5ecret");
    expect(notificationSecrets(result.config.notifications)).toEqual(
      expect.arrayContaining(["Disc0rdSecretToken", "Ntfy5ecret"]),
    );
  });
});

describe("masking rebuilds the URL from its parts: no secret in any escaping", () => {
  // each secret as a user may write it: percent-encoded, with + or %20 for a space, no digit in it
  const cases: Array<[string, string[]]> = [
    [
      "generic+http://hooks.lan/hook?@Authorization=Bearer%20tkSecretNoDigits",
      ["tkSecretNoDigits", "Bearer%20tkSecretNoDigits"],
    ],
    ["generic://hooks.lan/hook?@authorization=Bearer+tkSecretPlus&room=7", ["tkSecretPlus"]],
    ["gotify://gotify.lan/AbC%2FdefSecret", ["AbC%2FdefSecret", "AbC/defSecret"]],
    ["gotify://gotify.lan/OnlyLettersSecretToken", ["OnlyLettersSecretToken"]],
    ["discord://AbCdEfSecretLetters@123456789012345678", ["AbCdEfSecretLetters"]],
    ["ntfy://me:pa%24%24wordSecret@ntfy.lan/topic", ["pa%24%24wordSecret", "pa$$wordSecret"]],
    ["generic://hooks.lan/hook?token=abcSecret&$apikey=xyzSecret", ["abcSecret", "xyzSecret"]],
    [
      `teams://?host=${encodeURIComponent("https://x.logic.azure.com:443/workflows/abc/triggers/manual/paths/invoke?api-version=2016-06-01&sig=SigSecretLetters")}`,
      ["SigSecretLetters"],
    ],
    ["pushover://shoutrrr:TokSecret@UserKeySecretLetters", ["TokSecret", "UserKeySecretLetters"]],
  ];
  for (const [url, secrets] of cases) {
    test(url, () => {
      const shown = redactNotificationUrl(url);
      expect(shown).toContain(REDACTED);
      for (const secret of secrets) expect(shown).not.toContain(secret);
      expect(shown).not.toMatch(/Secret/);
      // the log redactor has every escaping of each secret part
      const known = notificationUrlSecrets([url]);
      for (const secret of secrets) expect(known).toContain(secret);
    });
  }

  test("the parts that are not secret are shown as written", () => {
    expect(redactNotificationUrl("generic://hooks.lan:8443/hook?room=7&@X-Title=svc&@Authorization=Bearer%20tk")).toBe(
      `generic://hooks.lan:8443/hook?room=7&@X-Title=svc&@Authorization=${REDACTED}`,
    );
    expect(redactNotificationUrl("gotify://gotify.lan/sub/AbC%2Fdef?priority=3")).toBe(
      `gotify://gotify.lan/sub/${REDACTED}?priority=3`,
    );
  });

  test("the logs' redactor masks each secret in each escaping an error message could echo", () => {
    const settings = defaultConfig({
      notifications: {
        urls: [
          "generic+http://hooks.lan/hook/PathSecretNoDigits?@Authorization=Bearer%20HeaderSecret%2Fslash&token=Query+SecretPlus",
          "gotify://gotify.lan/GotifySecret%2FEncoded",
        ],
      },
    }).notifications;
    const redact = createRedactor(notificationSecrets(settings));
    const echoes = [
      "GET http://hooks.lan/hook/PathSecretNoDigits failed",
      "header Authorization: Bearer HeaderSecret/slash refused",
      "HeaderSecret%2Fslash",
      "token=Query+SecretPlus",
      "token=Query%20SecretPlus",
      "Query SecretPlus",
      "POST https://gotify.lan/GotifySecret%2FEncoded/message",
      "token GotifySecret/Encoded",
    ];
    for (const echo of echoes)
      expect(redact(echo)).not.toMatch(/PathSecret|HeaderSecret|Query.SecretPlus|Query%20SecretPlus|GotifySecret/);
  });

  test("--print-config shows them masked", async () => {
    const url = "generic+http://hooks.lan/hook?@Authorization=Bearer%20tkSecretNoDigits";
    const text = printConfig(
      await load({ argv: RUNS, env: { SVC_NOTIFICATIONS_URLS: `${url} gotify://gotify.lan/AbC%2FdefSecret` } }),
    );
    expect(text).not.toMatch(/tkSecret|defSecret/);
  });
});

test("parameters that only sound like credentials, and a Pushbullet #channel, are shown as written", () => {
  expect(redactNotificationUrl("mqtt://u:MqttPw1@broker.lan/t?cleansession=no&qos=1")).toBe(
    `mqtt://u:${REDACTED}@broker.lan/t?cleansession=no&qos=1`,
  );
  expect(redactNotificationUrl("generic://hooks.lan/x?template=json&titlekey=subject&messagekey=text")).toBe(
    "generic://hooks.lan/x?template=json&titlekey=subject&messagekey=text",
  );
  expect(redactNotificationUrl("pushbullet://o.PushbulletSecretToken0123456789a/phone/#news")).toBe(
    `pushbullet://${REDACTED}/phone/#news`,
  );
});
