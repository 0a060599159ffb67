/**
 * One connection to an MQTT broker, held while svc runs (docs/notifications.md, MQTT): reports,
 * Home Assistant's entities and its commands all go through it. mqtt.js's own reconnection waits
 * the same period every time; here a lost connection is retried after 1 s, doubling up to a
 * minute, and back to 1 s once connected. With an availability topic, the broker is asked to
 * publish a retained `offline` there when svc goes away without a goodbye (its last will), and
 * svc publishes a retained `online` on every connection.
 */

import type { IClientOptions, MqttClient } from "mqtt";
import mqtt from "mqtt";
import { duration } from "../../core/moments.ts";
import { timerDelay } from "../../core/timers.ts";
import type { Logger } from "../../log/index.ts";

export const FIRST_RETRY_MS = 1000;
export const MAX_RETRY_MS = 60_000;
/** Home Assistant's default availability payloads (its MQTT platforms' `payload_available`/`payload_not_available`). */
export const ONLINE = "online";
export const OFFLINE = "offline";

export type Qos = 0 | 1 | 2;
/**
 * `retained`: the broker kept this message and hands it to every new subscription (MQTT's retain
 * flag on delivery), so it may have been published long ago, by whoever could then.
 */
export type MessageHandler = (topic: string, payload: Buffer, delivery: { retained: boolean }) => void;

export interface BrokerConnection {
  /** Publishes once connected; rejects when no connection comes within the timeout. */
  publish(topic: string, payload: string, options: { qos: Qos; retain: boolean }): Promise<void>;
  /** Subscribes now and after every reconnection. */
  subscribe(filter: string, handler: MessageHandler): void;
  /** Called after every connection (the first and each reconnection), once `online` is published. */
  onConnect(listener: () => void): void;
  readonly connected: boolean;
  /** Says `offline` (when there is an availability topic), then disconnects; nothing stays open. */
  close(): Promise<void>;
}

/** The wait before reconnection attempt `attempt` (1, 2...): doubling from 1 s, capped at a minute. */
export function retryDelay(attempt: number): number {
  return Math.min(MAX_RETRY_MS, FIRST_RETRY_MS * 2 ** Math.max(0, attempt - 1));
}

export interface BrokerOptions {
  client: IClientOptions;
  timeoutMs: number;
  /** the retained availability topic, with the last will; absent: none */
  availability?: { topic: string; qos: Qos };
  /** told once when a connection is lost and once when it is back (never each failed try) */
  log?: Logger;
}

export function openBroker(options: BrokerOptions): BrokerConnection {
  const { availability, timeoutMs } = options;
  const handlers = new Map<string, MessageHandler>();
  const connectListeners: Array<() => void> = [];
  let lastError: Error | undefined;
  let failures = 0;
  let retry: ReturnType<typeof setTimeout> | undefined;
  let closing = false;
  const client: MqttClient = mqtt.connect({
    ...options.client,
    reconnectPeriod: 0, // reconnections are ours, with backoff (above)
    connectTimeout: timeoutMs,
    ...(availability
      ? { will: { topic: availability.topic, payload: Buffer.from(OFFLINE), qos: availability.qos, retain: true } }
      : {}),
  });

  client.on("error", (error) => {
    lastError = error;
  });
  let wasConnected = false;
  client.on("close", () => {
    if (closing || retry) return;
    if (wasConnected)
      options.log?.warn("MQTT broker connection lost; reconnecting", {
        broker: `${options.client.host}:${options.client.port}`,
      });
    wasConnected = false;
    failures += 1;
    retry = setTimeout(
      () => {
        retry = undefined;
        if (!closing) client.reconnect();
      },
      timerDelay(retryDelay(failures)),
    );
  });
  client.on("connect", () => {
    if (failures > 0)
      options.log?.info("MQTT broker connection back", {
        broker: `${options.client.host}:${options.client.port}`,
        tries: failures,
      });
    wasConnected = true;
    failures = 0;
    lastError = undefined;
    for (const filter of handlers.keys()) client.subscribe(filter, { qos: 1 });
    const announced = availability
      ? client.publishAsync(availability.topic, ONLINE, { qos: availability.qos, retain: true })
      : Promise.resolve();
    void announced.then(
      () => {
        for (const listener of connectListeners) listener();
      },
      () => undefined,
    );
  });
  client.on("message", (topic, payload, packet) => {
    const delivery = { retained: packet.retain === true };
    for (const [filter, handler] of handlers) {
      if (topicMatches(filter, topic)) handler(topic, payload, delivery);
    }
  });

  const waitConnected = (): Promise<void> => {
    if (client.connected) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => done(new Error(lastError ? lastError.message : `no CONNACK within ${duration(timeoutMs)}`)),
        timeoutMs,
      );
      const done = (error?: Error) => {
        clearTimeout(timer);
        client.off("connect", onConnect);
        client.off("error", onError);
        if (error) reject(error);
        else resolve();
      };
      const onConnect = () => done();
      const onError = (error: Error) => done(error);
      client.on("connect", onConnect);
      client.on("error", onError);
    });
  };

  return {
    get connected() {
      return client.connected;
    },
    async publish(topic, payload, { qos, retain }) {
      await waitConnected();
      await withTimeout(client.publishAsync(topic, payload, { qos, retain }), timeoutMs, "publish");
    },
    subscribe(filter, handler) {
      handlers.set(filter, handler);
      if (client.connected) client.subscribe(filter, { qos: 1 });
    },
    onConnect(listener) {
      connectListeners.push(listener);
    },
    async close() {
      closing = true;
      clearTimeout(retry);
      if (client.connected && availability) {
        // nothing lost: the availability message is retained with a will that says offline too; this is only the polite goodbye
        await withTimeout(
          client.publishAsync(availability.topic, OFFLINE, { qos: availability.qos, retain: true }),
          timeoutMs,
          "publish",
        ).catch(() => undefined);
      }
      // nothing lost: a broker that does not answer the disconnect is dropped just below (end(true))
      if (client.connected) await withTimeout(client.endAsync(), timeoutMs, "disconnect").catch(() => undefined);
      if (!client.disconnected) client.end(true);
    },
  };
}

/** MQTT topic filters: `+` one level, `#` the rest. */
export function topicMatches(filter: string, topic: string): boolean {
  const f = filter.split("/");
  const t = topic.split("/");
  for (let i = 0; i < f.length; i++) {
    if (f[i] === "#") return true;
    if (i >= t.length) return false;
    if (f[i] !== "+" && f[i] !== t[i]) return false;
  }
  return f.length === t.length;
}

export async function withTimeout<T>(promise: Promise<T>, timeoutMs: number, what: string): Promise<T> {
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
