/**
 * MQTT channel (mqtt.js): the SessionReport JSON published to `notifications.mqtt.topic`, and
 * optionally Home Assistant discovery (homeassistant.ts beside this file).
 */
import { readFileSync } from "node:fs";
import mqtt from "mqtt";
import type { IClientOptions, MqttClient } from "mqtt";
import { SvcError } from "../../core/errors.ts";
import { duration } from "../../core/moments.ts";
import type { Config } from "../../config/index.ts";
import type { SessionReport } from "../../updater/types.ts";
import type { Notifier } from "../types.ts";
import { HomeAssistantDiscovery } from "./homeassistant.ts";

/** The channel's own settings: a digest (docs/windows.md) is the dispatcher's, not the channel's. */
export type MqttSettings = Omit<Config["notifications"]["mqtt"], "digest" | "immediate_on_failure">;

export interface BrokerAddress {
  protocol: "mqtt" | "mqtts";
  host: string;
  port: number;
  tls: boolean;
  /** credentials written into the broker URL (`mqtt://user:pass@host`), used when the options are unset */
  username?: string;
  password?: string;
}

/**
 * `tcp://` and `mqtt://` are plain, `mqtts://` and `ssl://` TLS; a bare `host[:port]` is plain.
 * Any TLS setting turns TLS on whatever the scheme (docs/notifications.md, MQTT). Parsed here with the WHATWG URL
 * parser and handed to mqtt.js as options: its own URL parsing uses the deprecated `url.parse`,
 * whose warning would be a non-JSON line on stderr.
 */
export function brokerAddress(settings: Pick<MqttSettings, "broker" | "tls_ca_cert" | "tls_cert" | "tls_key" | "tls_skip_verify">): BrokerAddress {
  const raw = (settings.broker ?? "").trim();
  const match = /^([a-z][a-z0-9+.-]*):\/\/(.*)$/i.exec(raw);
  const scheme = match ? match[1]!.toLowerCase() : "tcp";
  const rest = match ? match[2]! : raw;
  if (!["tcp", "mqtt", "mqtts", "ssl"].includes(scheme)) {
    throw new SvcError("config", `notifications.mqtt.broker: scheme ${scheme}:// is not one of tcp, mqtt, mqtts, ssl`);
  }
  const anyTlsField = Boolean(settings.tls_ca_cert || settings.tls_cert || settings.tls_key || settings.tls_skip_verify);
  const tls = scheme === "mqtts" || scheme === "ssl" || anyTlsField;
  let url: URL;
  try {
    // "http" only to borrow the URL parser's handling of host, port and credentials.
    url = new URL(`http://${rest}`);
  } catch {
    throw new SvcError("config", "notifications.mqtt.broker is not a valid broker address");
  }
  if (!url.hostname) throw new SvcError("config", "notifications.mqtt.broker is not a valid broker address");
  const host = url.hostname.replace(/^\[(.*)\]$/, "$1");
  const port = url.port ? Number(url.port) : tls ? 8883 : 1883;
  const address: BrokerAddress = { protocol: tls ? "mqtts" : "mqtt", host, port, tls };
  if (url.username) address.username = decodeURIComponent(url.username);
  if (url.password) address.password = decodeURIComponent(url.password);
  return address;
}

export function generatedClientId(hostname: string): string {
  // MQTT 3.1 brokers may refuse client IDs over 23 characters.
  const host = hostname.replace(/[^A-Za-z0-9-]/g, "").slice(0, 10);
  return `svc-${host}-${Buffer.from(crypto.getRandomValues(new Uint8Array(4))).toString("hex")}`;
}

function readPem(option: string, path: string | undefined): Buffer | undefined {
  if (!path) return undefined;
  try {
    return readFileSync(path);
  } catch (error) {
    throw new SvcError("config", `${option}: cannot read ${path} (${(error as NodeJS.ErrnoException).code ?? "error"})`);
  }
}

/** What is published, and how: svc's channel sends the SessionReport JSON; an mqtt:// URL the message text. */
export interface MqttPublication {
  name: string;
  payload: (report: SessionReport) => string;
  retain: boolean;
  clean: boolean;
}

const REPORT_JSON: MqttPublication = { name: "mqtt", payload: (report) => JSON.stringify(report), retain: false, clean: true };

export function createMqttNotifier(settings: MqttSettings, hostname: string, timeoutMs: number, publication: MqttPublication = REPORT_JSON): Notifier {
  if (!settings.broker) throw new SvcError("config", "notifications.mqtt.broker is not set");
  const topic = settings.topic;
  if (!topic) throw new SvcError("config", "notifications.mqtt.topic is required with notifications.mqtt.broker");
  const address = brokerAddress(settings);
  // Certificates are read once, at start: a missing file is a configuration error, not a
  // failure discovered hours later at the first update.
  const ca = readPem("notifications.mqtt.tls_ca_cert", settings.tls_ca_cert);
  const cert = readPem("notifications.mqtt.tls_cert", settings.tls_cert);
  const key = readPem("notifications.mqtt.tls_key", settings.tls_key);
  if (Boolean(cert) !== Boolean(key)) {
    throw new SvcError("config", "notifications.mqtt.tls_cert and notifications.mqtt.tls_key go together (mutual TLS)");
  }
  const clientId = settings.client_id || generatedClientId(hostname);
  const options: IClientOptions = {
    protocol: address.protocol,
    host: address.host,
    port: address.port,
    clientId,
    username: settings.username ?? address.username,
    password: settings.password ?? address.password,
    connectTimeout: timeoutMs,
    reconnectPeriod: 0, // one attempt per dispatch; the dispatcher retries
    clean: publication.clean,
    ...(address.tls ? { ca, cert, key, rejectUnauthorized: !settings.tls_skip_verify } : {}),
  };
  const open = new Set<MqttClient>();
  const discovery = settings.homeassistant_discovery ? new HomeAssistantDiscovery(settings.discovery_prefix, topic, hostname) : undefined;

  return {
    name: publication.name,
    async send(report: SessionReport) {
      // Connect per dispatch: nothing stays open between cycles, nothing to leak at shutdown.
      const client = mqtt.connect(options);
      open.add(client);
      try {
        await connected(client, timeoutMs);
        await withTimeout(client.publishAsync(topic, publication.payload(report), { qos: settings.qos, retain: publication.retain }), timeoutMs, "publish");
        for (const message of discovery?.messages(report) ?? []) {
          await withTimeout(client.publishAsync(message.topic, message.payload, { qos: settings.qos, retain: true }), timeoutMs, "publish");
        }
        discovery?.published(report);
        await withTimeout(client.endAsync(), timeoutMs, "disconnect").catch(() => undefined);
      } finally {
        if (!client.disconnected) client.end(true);
        open.delete(client);
      }
    },
    async close() {
      for (const client of open) client.end(true);
      open.clear();
    },
  };
}

function connected(client: MqttClient, timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => done(new Error(`no CONNACK within ${duration(timeoutMs)}`)), timeoutMs);
    const done = (error?: Error) => {
      clearTimeout(timer);
      client.off("connect", onConnect);
      client.off("error", onError);
      client.off("close", onClose);
      if (error) reject(error);
      else resolve();
    };
    const onConnect = () => done();
    const onError = (error: Error) => done(error);
    const onClose = () => done(new Error("connection closed before CONNACK"));
    client.on("connect", onConnect);
    client.on("error", onError);
    client.on("close", onClose);
  });
}

async function withTimeout<T>(promise: Promise<T>, timeoutMs: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} timed out after ${duration(timeoutMs)}`)), timeoutMs);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
