import { expect, test } from "bun:test";
import { type Config, type DeepPartial, defaultConfig } from "../../../src/config/index.ts";
import { createRedactor } from "../../../src/log/index.ts";
import { notificationSecrets } from "../../../src/notify/secrets.ts";

const secretsOf = (notifications: DeepPartial<Config["notifications"]>) =>
  notificationSecrets(defaultConfig({ notifications }).notifications);
const masked = (notifications: DeepPartial<Config["notifications"]>, text: string) =>
  createRedactor(secretsOf(notifications))(text);

test("a webhook URL's token, alone or inside the URL, is a secret", () => {
  const url = "https://hooks.slack.com/services/T0AAA1/B0BBB2/xoxbSecretToken9";
  expect(masked({ webhook: { url } }, `POST ${url} failed; token xoxbSecretToken9`)).toBe(
    "POST [redacted] failed; token [redacted]",
  );
  const discord = "https://discord.com/api/webhooks/112233445566/AbCdEfGhIjKlMnOpQrStUvWxYz";
  expect(masked({ webhook: { url: discord } }, "AbCdEfGhIjKlMnOpQrStUvWxYz")).toBe("[redacted]");
});

test("credential headers and their bearer are secrets; plain header values are not", () => {
  const headers = "Authorization: Bearer abc.def-ghi, X-Source: svc, X-Env: prod";
  expect(secretsOf({ webhook: { url: "https://h.example/x", headers } })).toEqual(
    expect.arrayContaining(["Bearer abc.def-ghi", "abc.def-ghi"]),
  );
  expect(masked({ webhook: { url: "https://h.example/x", headers } }, "svc in prod sent abc.def-ghi")).toBe(
    "svc in prod sent [redacted]",
  );
});

test("the password inside an MQTT broker URL is a secret, its host is not", () => {
  expect(
    masked(
      { mqtt: { broker: "mqtt://svc:p%40ss-w0rd@broker.lan:1883", topic: "t" } },
      "p@ss-w0rd p%40ss-w0rd broker.lan",
    ),
  ).toBe("[redacted] [redacted] broker.lan");
});

test("a short webhook path is not a secret: it would mask ordinary paths in every line", () => {
  expect(masked({ webhook: { url: "https://hooks.example.com/svc" } }, "/var/lib/svc/state.json")).toBe(
    "/var/lib/svc/state.json",
  );
});
