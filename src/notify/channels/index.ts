/**
 * The channels, in a static map: `bun build --compile` bundles only imports it can see, so a
 * computed `import()` of a channel module would fail in the binary. E-mail and MQTT are imported
 * with LITERAL dynamic imports (bundled, but loaded only when their channel is on): nodemailer and
 * mqtt would otherwise cost every svc their startup time and some 15 MiB of memory each.
 */
import type { Config } from "../../config/index.ts";
import { loadBodyRenderer, type Renderer } from "../render.ts";
import type { Notifier } from "../types.ts";
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
  /** the channel is on when its required setting is set (docs/notifications.md) */
  enabled(config: Config["notifications"]): boolean;
  create(context: ChannelContext): Notifier | Promise<Notifier>;
}

export const CHANNELS = {
  webhook: {
    enabled: (c) => Boolean(c.webhook.url),
    create: async ({ config, hostname }) => {
      const { template, content_type } = config.webhook;
      const body = template === undefined ? undefined : await loadBodyRenderer(template, content_type, hostname);
      return createWebhookNotifier(config.webhook, body);
    },
  },
  email: {
    enabled: (c) => Boolean(c.email.server),
    create: async ({ config, render, timeoutMs }) => (await import("./email.ts")).createEmailNotifier(config.email, render, timeoutMs),
  },
  mqtt: {
    enabled: (c) => Boolean(c.mqtt.broker),
    create: async ({ config, hostname, timeoutMs }) => (await import("./mqtt.ts")).createMqttNotifier(config.mqtt, hostname, timeoutMs),
  },
  pushover: {
    enabled: (c) => Boolean(c.pushover.token),
    create: ({ config, render, timeoutMs }) => createPushoverNotifier(config.pushover, render, timeoutMs),
  },
} satisfies Record<string, ChannelFactory>;

export type ChannelName = keyof typeof CHANNELS;

/** The enabled channels; throws the first configuration problem found. */
export async function createChannels(context: ChannelContext): Promise<Notifier[]> {
  const notifiers: Notifier[] = [];
  for (const factory of Object.values(CHANNELS) as ChannelFactory[]) {
    if (factory.enabled(context.config)) notifiers.push(await factory.create(context));
  }
  return notifiers;
}
