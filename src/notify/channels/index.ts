/**
 * The channels, in a static map: `bun build --compile` bundles only what is imported statically,
 * so a computed `import()` of a channel module would fail in the binary.
 */
import type { Config } from "../../config/index.ts";
import type { Renderer } from "../render.ts";
import type { Notifier } from "../types.ts";
import { createEmailNotifier } from "./email.ts";
import { createMqttNotifier } from "./mqtt.ts";
import { createPushoverNotifier } from "./pushover.ts";
import { createWebhookNotifier } from "./webhook.ts";

export interface ChannelContext {
  config: Config["notifications"];
  render: Renderer;
  hostname: string;
  /** per attempt, for the channels without a timeout option of their own */
  timeoutMs: number;
}

interface ChannelFactory {
  /** the channel is on when its required setting is set (SPEC 6) */
  enabled(config: Config["notifications"]): boolean;
  create(context: ChannelContext): Notifier;
}

export const CHANNELS = {
  webhook: {
    enabled: (c) => Boolean(c.webhook.url),
    create: ({ config }) => createWebhookNotifier(config.webhook),
  },
  email: {
    enabled: (c) => Boolean(c.email.server),
    create: ({ config, render, timeoutMs }) => createEmailNotifier(config.email, render, timeoutMs),
  },
  mqtt: {
    enabled: (c) => Boolean(c.mqtt.broker),
    create: ({ config, hostname, timeoutMs }) => createMqttNotifier(config.mqtt, hostname, timeoutMs),
  },
  pushover: {
    enabled: (c) => Boolean(c.pushover.token),
    create: ({ config, render, timeoutMs }) => createPushoverNotifier(config.pushover, render, timeoutMs),
  },
} satisfies Record<string, ChannelFactory>;

export type ChannelName = keyof typeof CHANNELS;

/** The enabled channels; throws the first configuration problem found. */
export function createChannels(context: ChannelContext): Notifier[] {
  const notifiers: Notifier[] = [];
  for (const factory of Object.values(CHANNELS) as ChannelFactory[]) {
    if (factory.enabled(context.config)) notifiers.push(factory.create(context));
  }
  return notifiers;
}
