/**
 * The push services' notification URLs, delivered as shoutrrr delivers them: Gotify, ntfy,
 * Pushover, Pushbullet, Bark, MQTT. Pushover gets what its own channel sends; the others the
 * short summary under the subject as title; mqtt:// URLs go through the MQTT channel's client.
 */
import { z } from "zod";
import { SvcError } from "../../../core/errors.ts";
import type { MqttTarget } from "../../../shoutrrr/index.ts";
import type { MqttSettings } from "../mqtt.ts";
import { encryptPushoverForm, postPushover, pushoverForm } from "../pushover.ts";
import { type Delivery, fixedOrigin, notifier } from "./context.ts";
import { insecure, postJson, request } from "./http.ts";

export const gotify: Delivery<"gotify"> = (name, target, context) =>
  notifier(name, async (report) => {
    const { subject, text } = context.chat(report);
    const body = JSON.stringify({ title: subject, message: text.trim() || subject, priority: target.priority });
    await request(
      `${target.endpoint}/message`,
      {
        method: "POST",
        headers: { "x-gotify-key": target.token, "content-type": "application/json" },
        body,
        ...insecure(target.skipTlsVerify),
      },
      context.timeoutMs,
    );
  });

export const ntfy: Delivery<"ntfy"> = (name, target, context) => {
  const headers: Record<string, string> = {};
  if (target.username)
    headers.authorization = `Basic ${Buffer.from(`${target.username}:${target.password ?? ""}`).toString("base64")}`;
  else if (target.password) headers.authorization = `Bearer ${target.password}`;
  // shoutrrr's request: the message as the body of a POST to the topic's path, the rest in headers
  const endpoint = `${target.endpoint}/${target.topic.split("/").map(encodeURIComponent).join("/")}`;
  return notifier(name, async (report) => {
    const { subject, text } = context.chat(report, target.markdown ? "markdown" : "plain");
    const sent = new Headers([...target.headers, ...Object.entries(headers)]);
    sent.set("content-type", target.markdown ? "text/markdown" : "text/plain; charset=utf-8");
    sent.set("title", headerText(subject));
    await request(
      endpoint,
      { method: "POST", headers: sent, body: text.trim() || subject, ...insecure(target.skipTlsVerify) },
      context.timeoutMs,
    );
  });
};

export const pushover: Delivery<"pushover"> = (name, target, context) => {
  const endpoint = `${fixedOrigin(context, "pushover")}/1/messages.json`;
  return notifier(name, async (report) => {
    const { subject, text } = context.render(report);
    const form = pushoverForm({ token: target.token, user_key: target.userKey }, subject, text);
    if (target.devices.length > 0) form.set("device", target.devices.join(","));
    if (target.priority !== undefined) form.set("priority", String(target.priority));
    if (target.encryptionKey) encryptPushoverForm(form, Buffer.from(target.encryptionKey, "hex"));
    await postPushover(endpoint, form, context.timeoutMs);
  });
};

export const pushbullet: Delivery<"pushbullet"> = (name, target, context) => {
  const endpoint = `${fixedOrigin(context, "pushbullet")}/v2/pushes`;
  const targets = target.targets.length > 0 ? target.targets : [""];
  return notifier(name, async (report) => {
    const { subject, text } = context.chat(report);
    // one note per target: a #channel tag, an e-mail address or a device (none: all the account's devices)
    for (const to of targets) {
      const address = to.startsWith("#")
        ? { channel_tag: to.slice(1) }
        : to.includes("@")
          ? { email: to }
          : to
            ? { device_iden: to }
            : {};
      const answer = await postJson(
        endpoint,
        { type: "note", title: subject, body: text.trim() || subject, ...address },
        context.timeoutMs,
        { "access-token": target.token },
      );
      // shoutrrr checks the push it gets back is the note it sent
      if (!PUSHBULLET_PUSH.safeParse(answer).success)
        throw new SvcError("notify", "Pushbullet answered without the note it was sent");
    }
  });
};

export const bark: Delivery<"bark"> = (name, target, context) =>
  notifier(name, async (report) => {
    const { subject, text } = context.chat(report);
    const answer = BARK_ANSWER.safeParse(
      await postJson(
        target.endpoint,
        { body: text.trim() || subject, device_key: target.deviceKey, title: subject, ...target.fields },
        context.timeoutMs,
      ),
    );
    // Bark answers 200 with its own code; anything but 200 there is a refusal
    if (!answer.success || answer.data.code !== 200)
      throw new SvcError(
        "notify",
        `Bark refused the message${answer.success ? `: ${answer.data.message.slice(0, 200)}` : ""}`,
      );
  });

export const mqtt: Delivery<"mqtt"> = async (name, target, context) =>
  (await import("../mqtt.ts")).createMqttNotifier(mqttSettings(target.mqtt), context.hostname, context.timeoutMs, {
    name,
    payload: (report) => {
      const { subject, text } = context.chat(report);
      return `${subject}\n${text}`.trim();
    },
    retain: target.mqtt.retained,
    clean: target.mqtt.cleanSession,
  });

/** An mqtt:// URL as the MQTT channel's settings (the broker's address rebuilt, TLS by its scheme). */
function mqttSettings(target: MqttTarget): MqttSettings {
  const host = target.host.includes(":") ? `[${target.host}]` : target.host;
  return {
    broker: `${target.tls ? "mqtts" : "mqtt"}://${host}:${target.port}`,
    topic: target.topic,
    qos: target.qos,
    client_id: target.clientId,
    username: target.username,
    password: target.password,
    tls_skip_verify: target.tls && target.skipTlsVerify, // any TLS setting turns TLS on in the channel
    homeassistant_discovery: false,
    discovery_prefix: "homeassistant",
    homeassistant_install: false,
    homeassistant_user: "homeassistant",
  };
}

/** A header value may hold only Latin-1: other text goes as an RFC 2047 word, which ntfy decodes. */
function headerText(text: string): string {
  const line = text.replace(/[\r\n]+/g, " ");
  return /^[\x20-\x7e]*$/.test(line) ? line : `=?UTF-8?B?${Buffer.from(line).toString("base64")}?=`;
}

/** The answers read, each parsed with its schema (what else they hold is not looked at). */
const PUSHBULLET_PUSH = z.object({ type: z.literal("note") });
const BARK_ANSWER = z.object({ code: z.number(), message: z.string().max(4096).default("") });
