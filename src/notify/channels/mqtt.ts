/**
 * MQTT channel (mqtt.js): the SessionReport JSON published to `notifications.mqtt.topic` over one
 * held connection (broker.ts), and optionally Home Assistant's entities and commands
 * (homeassistant.ts, homeassistant-control.ts beside this file).
 */
import { readFileSync } from "node:fs";
import type { IClientOptions } from "mqtt";
import type { Config } from "../../config/index.ts";
import { SvcError } from "../../core/errors.ts";
import { decodePercent } from "../../core/urls.ts";
import type { Logger } from "../../log/index.ts";
import type { Remembered } from "../../state/index.ts";
import type { ProgressEvent } from "../../updater/cycle/progress.ts";
import type { SessionReport } from "../../updater/types.ts";
import type { Notifier, RemoteControl } from "../types.ts";
import { type BrokerConnection, openBroker } from "./broker.ts";
import { HomeAssistantDiscovery } from "./homeassistant.ts";
import { HomeAssistantBridge } from "./homeassistant-control.ts";

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
export function brokerAddress(
  settings: Pick<MqttSettings, "broker" | "tls_ca_cert" | "tls_cert" | "tls_key" | "tls_skip_verify">,
): BrokerAddress {
  const raw = (settings.broker ?? "").trim();
  const match = /^([a-z][a-z0-9+.-]*):\/\/(.*)$/i.exec(raw);
  const scheme = match ? match[1]!.toLowerCase() : "tcp";
  const rest = match ? match[2]! : raw;
  if (!["tcp", "mqtt", "mqtts", "ssl"].includes(scheme)) {
    throw new SvcError("config", `notifications.mqtt.broker: scheme ${scheme}:// is not one of tcp, mqtt, mqtts, ssl`);
  }
  const anyTlsField = Boolean(
    settings.tls_ca_cert || settings.tls_cert || settings.tls_key || settings.tls_skip_verify,
  );
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
  // a lone "%" in a password is the password's own character, never a reason to fail the start
  if (url.username) address.username = decodePercent(url.username);
  if (url.password) address.password = decodePercent(url.password);
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
    throw new SvcError(
      "config",
      `${option}: cannot read ${path} (${(error as NodeJS.ErrnoException).code ?? "error"})`,
    );
  }
}

/** What is published, and how: svc's channel sends the SessionReport JSON; an mqtt:// URL the message text. */
export interface MqttPublication {
  name: string;
  payload: (report: SessionReport) => string;
  retain: boolean;
  clean: boolean;
}

const REPORT_JSON: MqttPublication = {
  name: "mqtt",
  payload: (report) => JSON.stringify(report),
  retain: false,
  clean: true,
};

/**
 * One connection, opened with the channel when Home Assistant's entities are on (they need it for
 * their availability and commands), else at the first report; either way held until `close`.
 */
export function createMqttNotifier(
  settings: MqttSettings,
  hostname: string,
  timeoutMs: number,
  publication: MqttPublication = REPORT_JSON,
  { log, announced }: { log?: Logger; announced?: Remembered } = {},
): Notifier {
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
  const client: IClientOptions = {
    protocol: address.protocol,
    host: address.host,
    port: address.port,
    clientId,
    username: settings.username ?? address.username,
    password: settings.password ?? address.password,
    clean: publication.clean,
    ...(address.tls ? { ca, cert, key, rejectUnauthorized: !settings.tls_skip_verify } : {}),
  };
  if (settings.homeassistant_install && !settings.homeassistant_discovery) {
    throw new SvcError(
      "config",
      "notifications.mqtt.homeassistant_install needs notifications.mqtt.homeassistant_discovery = true",
    );
  }
  const qos = settings.qos;
  const commands = settings.homeassistant_install ? { commandUser: settings.homeassistant_user } : {};
  const discovery = settings.homeassistant_discovery
    ? new HomeAssistantDiscovery({
        prefix: settings.discovery_prefix,
        reportTopic: topic,
        hostname,
        announced,
        ...commands,
      })
    : undefined;
  let broker: BrokerConnection | undefined;
  const connection = (): BrokerConnection =>
    (broker ??= openBroker({
      client,
      timeoutMs,
      log,
      ...(discovery ? { availability: { topic: discovery.topics.availability, qos: 1 as const } } : {}),
    }));
  const bridge = discovery
    ? new HomeAssistantBridge(connection(), discovery, hostname, { qos, ...commands }, log)
    : undefined;

  return {
    name: publication.name,
    async send(report: SessionReport) {
      await connection().publish(topic, publication.payload(report), { qos, retain: publication.retain });
    },
    ...(bridge
      ? {
          observe: (report: SessionReport) => bridge.observe(report),
          progress: (event: ProgressEvent) => bridge.progress(event),
          attach: (control: RemoteControl) => bridge.attach(control),
        }
      : {}),
    async close() {
      await broker?.close();
    },
  };
}
