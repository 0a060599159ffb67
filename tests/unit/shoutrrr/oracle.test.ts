/**
 * shoutrrr is the oracle: each row is a URL from shoutrrr's own tests or docs (the source named:
 * repository, version, file), with what it means there, asserted as svc parses it.
 */
import { describe, expect, test } from "bun:test";
import { parseNotificationUrl } from "../../../src/shoutrrr/index.ts";

const V08 = "containrrr/shoutrrr v0.8.0";
const V17 = "nicholas-fedor/shoutrrr v0.17.1";

type Row = [source: string, url: string, meaning: Record<string, unknown> | { refused: string }];

const ROWS: Record<string, Row[]> = {
  smtp: [
    [
      `${V17} pkg/services/email/smtp/smtp_test.go (BasePlusURL)`,
      "smtp://user:password@example.com:2225/?useStartTLS=no&fromAddress=sender+tag@example.com&toAddresses=rec1+tag@example.com,rec2@example.com&useHTML=yes&timeout=10s",
      {
        smtp: {
          from: "sender+tag@example.com",
          to: ["rec1+tag@example.com", "rec2@example.com"],
          useStartTls: false,
          port: 2225,
        },
      },
    ],
  ],
  teams: [
    [
      `${V08} pkg/services/teams/teams_test.go`,
      "teams://11111111-4444-4444-8444-cccccccccccc@22222222-4444-4444-8444-cccccccccccc/33333333012222222222333333333344/44444444-4444-4444-8444-cccccccccccc",
      {
        endpoint:
          "https://outlook.office.com/webhook/11111111-4444-4444-8444-cccccccccccc@22222222-4444-4444-8444-cccccccccccc/IncomingWebhook/33333333012222222222333333333344/44444444-4444-4444-8444-cccccccccccc",
      },
    ],
    [
      `${V08} pkg/services/teams/teams_config.go (the password form)`,
      "teams://11111111-4444-4444-8444-cccccccccccc%4022222222-4444-4444-8444-cccccccccccc:33333333012222222222333333333344@44444444-4444-4444-8444-cccccccccccc?host=contoso.webhook.office.com",
      {
        endpoint:
          "https://contoso.webhook.office.com/webhookb2/11111111-4444-4444-8444-cccccccccccc@22222222-4444-4444-8444-cccccccccccc/IncomingWebhook/33333333012222222222333333333344/44444444-4444-4444-8444-cccccccccccc",
      },
    ],
    [
      `${V17} pkg/services/chat/teams/teams_test.go (serviceURLBase)`,
      `teams://?host=${encodeURIComponent("https://prod-00.westus.logic.azure.com:443/workflows/abc123/triggers/manual/paths/invoke?api-version=2016-06-00&sp=/triggers/manual/run&sv=1.0&sig=XXXXXXXX")}`,
      {
        endpoint:
          "https://prod-00.westus.logic.azure.com/workflows/abc123/triggers/manual/paths/invoke?api-version=2016-06-00&sp=/triggers/manual/run&sv=1.0&sig=XXXXXXXX",
      },
    ],
  ],
  telegram: [
    [
      `${V17} pkg/services/chat/telegram/telegram_json.go (createSendMessagePayload: chat:thread)`,
      "telegram://110201543:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw@telegram?chats=-100123:10,@chan&preview=n&notification=y",
      { chats: [{ chat: "-100123", thread: 10 }, { chat: "@chan" }], preview: false, silent: false },
    ],
  ],
  matrix: [
    [
      `${V17} pkg/services/chat/matrix/matrix_config.go (rooms without # or ! get #)`,
      "matrix://user:pass@example.com/?rooms=room1,!id:example.com",
      { rooms: ["#room1", "!id:example.com"] },
    ],
  ],
  ntfy: [
    [
      `${V17} pkg/services/push/ntfy/ntfy_config.go (Topic: the whole path)`,
      "ntfy://ntfy.sh/a/b/c?delay=10m&email=me@example.com&markdown=yes&disabletls=yes",
      {
        endpoint: "http://ntfy.sh",
        topic: "a/b/c",
        markdown: true,
        headers: [
          ["Delay", "10m"],
          ["Email", "me@example.com"],
        ],
      },
    ],
  ],
  gotify: [
    [
      `${V08} pkg/services/gotify/gotify_config.go (priority default 0)`,
      "gotify://my.gotify.tld/Aaa.bbb.ccc.ddd",
      { endpoint: "https://my.gotify.tld", token: "Aaa.bbb.ccc.ddd", priority: 0 },
    ],
  ],
  slack: [
    [
      `${V17} pkg/services/chat/slack/slack_config.go (username, icon_emoji, thread_ts)`,
      "slack://hook:T00000000-B00000000-XXXXXXXXXXXXXXXXXXXXXXXX@webhook?username=bot&icon_emoji=:ghost:&thread_ts=1234.5678",
      { botname: "bot", icon: ":ghost:", threadTs: "1234.5678" },
    ],
  ],
  discord: [
    [
      `${V08} pkg/services/discord/discord_test.go`,
      "discord://dummyToken@dummyChannel/raw",
      { webhookId: "dummyChannel", token: "dummyToken" },
    ],
    [
      `${V08} pkg/services/discord/discord_test.go (an unknown path)`,
      "discord://dummyToken@dummyChannel/illegal-argument",
      { refused: "the path may only be /raw" },
    ],
    [
      `${V17} pkg/services/chat/discord/discord_test.go (thread_id trimmed)`,
      "discord://token@channel?thread_id=%20%20123456789%20%20",
      { threadId: "123456789" },
    ],
    [
      `${V17} pkg/services/chat/discord/discord_config.go (thread_id)`,
      "discord://token@123456789?thread_id=987654321",
      { webhookId: "123456789", threadId: "987654321" },
    ],
  ],
  generic: [
    [
      `${V17} docs/services/specialized/generic (custom headers)`,
      "generic://example.com/api/v1/postStuff?@Authorization=Bearer%20tk&method=PUT",
      {
        endpoint: "https://example.com/api/v1/postStuff",
        method: "PUT",
        headers: [["Authorization", "Bearer tk"]],
        body: "text",
      },
    ],
    [
      `${V17} docs/services/specialized/generic (extra data, json template)`,
      "generic://example.com/hook?template=json&$context=inside&titlekey=subject",
      { body: "json", titleKey: "subject", messageKey: "message", extra: [["context", "inside"]] },
    ],
    [
      `${V08} pkg/services/generic/generic.go (GetConfigURLFromCustom: generic+https)`,
      "generic+https://example.com/api?@Authorization=Bearer%20tk&foo=bar",
      { endpoint: "https://example.com/api?foo=bar", headers: [["Authorization", "Bearer tk"]] },
    ],
  ],
  pushover: [
    [
      `${V17} pkg/services/push/pushover/pushover_test.go`,
      "pushover://:apitoken@userkey?encryptionkey=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
      {
        token: "apitoken",
        userKey: "userkey",
        encryptionKey: "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
      },
    ],
    [
      `${V17} pkg/services/push/pushover/pushover_test.go (an empty key: no encryption)`,
      "pushover://:apptoken@usertoken?encryptionkey=",
      { token: "apptoken" },
    ],
    [
      `${V17} pkg/services/push/pushover/pushover_test.go (too short)`,
      "pushover://:apptoken@usertoken?encryptionkey=short",
      { refused: "64 hex characters" },
    ],
    [
      `${V17} pkg/services/push/pushover/pushover_test.go (not hex)`,
      "pushover://:apptoken@usertoken?encryptionkey=zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz",
      { refused: "64 hex characters" },
    ],
    [
      `${V08} pkg/services/pushover/pushover_test.go`,
      "pushover://:token@user/?devices=device",
      { token: "token", userKey: "user", devices: ["device"] },
    ],
  ],
  mattermost: [
    [
      `${V17} docs/services/chat/mattermost/index.md`,
      "mattermost://shoutrrrUser@your-domain.com/bywsw8zt5jgpte3nm65qjiru6h/shoutrrrChannel",
      {
        endpoint: "https://your-domain.com/hooks/bywsw8zt5jgpte3nm65qjiru6h",
        username: "shoutrrrUser",
        channel: "shoutrrrChannel",
      },
    ],
    [
      `${V17} docs/services/chat/mattermost/index.md`,
      "mattermost://your-domain.com/bywsw8zt5jgpte3nm65qjiru6h?icon=rocket",
      { endpoint: "https://your-domain.com/hooks/bywsw8zt5jgpte3nm65qjiru6h", icon: "rocket" },
    ],
    [
      `${V17} pkg/services/chat/mattermost/mattermost_test.go`,
      "mattermost://home.lan:8065/token?disabletls=yes",
      { endpoint: "http://home.lan:8065/hooks/token" },
    ],
  ],
  rocketchat: [
    [
      `${V17} docs/services/chat/rocketchat/index.md`,
      "rocketchat://shoutrrrUser@your-domain.com/8eGdRzc9r4YYNyvge/2XYQcX9NBwJBKfQnphpebPcnXZcPEi32Nt4NKJfrnbhsbRfX/shoutrrrChannel",
      {
        endpoint: "https://your-domain.com/hooks/8eGdRzc9r4YYNyvge/2XYQcX9NBwJBKfQnphpebPcnXZcPEi32Nt4NKJfrnbhsbRfX",
        username: "shoutrrrUser",
        channel: "#shoutrrrChannel",
      },
    ],
    [
      `${V17} docs/services/chat/rocketchat/index.md`,
      "rocketchat://shoutrrrUser@your-domain.com/8eGdRzc9r4YYNyvge/2XYQcX9NBwJBKfQnphpebPcnXZcPEi32Nt4NKJfrnbhsbRfX/@shoutrrrReceiver",
      { channel: "@shoutrrrReceiver" },
    ],
    [
      `${V17} pkg/services/chat/rocketchat/rocketchat_test.go (too few path parts)`,
      "rocketchat://rocketchat.my-domain.com/",
      { refused: "the path must be tokenA/tokenB" },
    ],
  ],
  googlechat: [
    [
      `${V17} pkg/services/chat/googlechat/googlechat_test.go`,
      "googlechat://chat.googleapis.com/v1/spaces/FOO/messages?key=bar&token=baz",
      { service: "googlechat", endpoint: "https://chat.googleapis.com/v1/spaces/FOO/messages?key=bar&token=baz" },
    ],
    [
      `${V17} docs/services/chat/hangouts/index.md (the old name)`,
      "hangouts://chat.googleapis.com/v1/spaces/FOO/messages?key=bar&token=baz",
      { service: "googlechat" },
    ],
    [
      `${V17} pkg/services/chat/googlechat/googlechat_test.go (empty token)`,
      "googlechat://chat.googleapis.com/v1/spaces/FOO/messages?key=bar&token=",
      { refused: "key and token" },
    ],
  ],
  pushbullet: [
    [
      `${V17} pkg/services/push/pushbullet/pushbullet_test.go`,
      "pushbullet://tokentokentokentokentokentokentoke/device?title=Great+News",
      { token: "tokentokentokentokentokentokentoke", targets: ["device"] },
    ],
    [
      `${V17} pkg/services/push/pushbullet/pushbullet_test.go`,
      "pushbullet://tokentokentokentokentokentokentoke/foo#bar",
      { targets: ["foo", "#bar"] },
    ],
    [
      `${V17} pkg/services/push/pushbullet/pushbullet_config.go (ExpectedTokenLength 34)`,
      "pushbullet://short",
      { refused: "34 characters" },
    ],
  ],
  mqtt: [
    [
      `${V17} docs/services/push/mqtt/index.md`,
      "mqtt://broker.example.com/alerts?qos=1&retained=yes",
      {
        service: "mqtt",
        mqtt: {
          tls: false,
          host: "broker.example.com",
          port: 1883,
          topic: "alerts",
          qos: 1,
          retained: true,
          cleanSession: true,
        },
      },
    ],
    [
      `${V17} docs/services/push/mqtt/index.md`,
      "mqtt://homeassistant.local:1883/homeassistant/notification",
      { mqtt: { port: 1883, topic: "homeassistant/notification" } },
    ],
    [
      `${V17} docs/services/push/mqtt/index.md`,
      "mqtts://admin:secret@mqtt.example.com:8883/production/alerts?clientid=prod-shoutrrr&qos=1&retained=yes&cleansession=no",
      {
        mqtt: {
          tls: true,
          port: 8883,
          username: "admin",
          password: "secret",
          clientId: "prod-shoutrrr",
          cleanSession: false,
        },
      },
    ],
    [
      `${V17} docs/services/push/mqtt/index.md`,
      "mqtts://broker.local:8883/secure/alerts?disabletlsverification=yes",
      { mqtt: { tls: true, skipTlsVerify: true } },
    ],
    [
      `${V17} pkg/services/push/mqtt/mqtt_config.go (DefaultTLSPort for mqtts)`,
      "mqtts://user:pass@broker.example.com/home/alerts",
      { mqtt: { tls: true, port: 8883 } },
    ],
  ],
  signal: [
    [
      `${V17} docs/services/chat/signal/index.md`,
      "signal://localhost:8080/+1234567890/+0987654321",
      {
        service: "signal",
        endpoint: "https://localhost:8080/v2/send",
        source: "+1234567890",
        recipients: ["+0987654321"],
      },
    ],
    [
      `${V17} docs/services/chat/signal/index.md`,
      "signal://localhost:8080/+1234567890/+0987654321/+1123456789/group.testgroup",
      { recipients: ["+0987654321", "+1123456789", "group.testgroup"] },
    ],
    [
      `${V17} docs/services/chat/signal/index.md`,
      "signal://localhost:8080/+1234567890/+0987654321?disabletls=yes",
      { endpoint: "http://localhost:8080/v2/send" },
    ],
    [
      `${V17} docs/services/chat/signal/index.md`,
      "signal://localhost:8080/+1234567890/+0987654321?token=YOUR_API_TOKEN",
      { authorization: "Bearer YOUR_API_TOKEN" },
    ],
    [
      `${V17} docs/services/chat/signal/index.md`,
      "signal://localhost:8080/+1234567890/group.abcdefghijklmnop=",
      { recipients: ["group.abcdefghijklmnop="] },
    ],
    [
      `${V17} docs/services/chat/signal/index.md`,
      "signal://user:password@localhost:8080/+1234567890/+0987654321",
      { authorization: `Basic ${Buffer.from("user:password").toString("base64")}` },
    ],
    [
      `${V17} pkg/services/chat/signal/signal_config.go (parseHostPort: 8080 by default)`,
      "signal://signal.lan/+1234567890/+0987654321",
      { endpoint: "https://signal.lan:8080/v2/send" },
    ],
    [
      `${V17} pkg/services/chat/signal/signal_config.go (ErrNoRecipients)`,
      "signal://localhost:8080/+1234567890",
      { refused: "then the recipients" },
    ],
  ],
  "mqtt qos": [
    [
      `${V17} pkg/services/push/mqtt/mqtt_config.go (QoS names)`,
      "mqtt://broker.example.com:1883/test/topic?qos=AtLeastOnce",
      { mqtt: { qos: 1 } },
    ],
    [
      `${V17} pkg/services/push/mqtt/mqtt_test.go (out of range)`,
      "mqtt://broker.example.com:1883/test/topic?qos=5",
      { refused: "parameter qos must be" },
    ],
  ],
  bark: [
    [
      `${V17} pkg/services/push/bark/bark_test.go`,
      "bark://:device-key@example.com:2225/?badge=5&category=CAT&group=GROUP&scheme=http&title=TITLE&url=URL",
      {
        endpoint: "http://example.com:2225/push",
        deviceKey: "device-key",
        fields: { badge: 5, category: "CAT", group: "GROUP", url: "URL" },
      },
    ],
    [
      `${V17} pkg/services/push/bark/bark_test.go`,
      "bark://:devicekey@hostname",
      { endpoint: "https://hostname/push", deviceKey: "devicekey" },
    ],
  ],
};

for (const [service, rows] of Object.entries(ROWS)) {
  describe(`${service}: as shoutrrr reads it`, () => {
    for (const [source, url, meaning] of rows) {
      test(`${url} (${source})`, () => {
        const result = parseNotificationUrl(url);
        if ("refused" in meaning) {
          expect(result).toHaveProperty("problem");
          expect((result as { problem: string }).problem).toContain(meaning.refused as string);
        } else {
          expect(result).toMatchObject(meaning);
        }
      });
    }
  });
}
