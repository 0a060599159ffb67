/**
 * The channels, in a static map: `bun build --compile` bundles only imports it can see, so a
 * computed `import()` of a channel module would fail in the binary. E-mail and MQTT are imported
 * with LITERAL dynamic imports (bundled, but loaded only when their channel is on): nodemailer and
 * mqtt would otherwise cost every svc their startup time and some 15 MiB of memory each.
 */
import { CHANNEL_SWITCHES, type ChannelName, type Config } from "../../config/index.ts";
import type { Logger } from "../../log/index.ts";
import type { Remembered } from "../../state/index.ts";
import { loadBodyRenderer, type Renderer } from "../render.ts";
import type { Notifier } from "../types.ts";
import { createPushoverNotifier } from "./pushover.ts";
import { baseUrlsOf, createUrlNotifiers } from "./urls.ts";
import { createWebhookNotifier } from "./webhook.ts";

export interface ChannelContext {
  config: Config["notifications"];
  render: Renderer;
  /** the short summary of the chat targets among the notification URLs */
  chat: Renderer;
  hostname: string;
  /** per attempt, for the channels without a timeout option of their own */
  timeoutMs: number;
  /** for the channels that log on their own (Home Assistant's commands) */
  log?: Logger;
  /** the Home Assistant entities announced, kept between restarts (default: in memory only) */
  announced?: Remembered;
}

interface ChannelFactory {
  create(context: ChannelContext): Notifier | Promise<Notifier>;
}

export const CHANNELS = {
  webhook: {
    create: async ({ config, hostname }) => {
      const { template, content_type } = config.webhook;
      const body =
        template === undefined ? undefined : await loadBodyRenderer(template, content_type, hostname, config.title_tag);
      return createWebhookNotifier(config.webhook, body);
    },
  },
  email: {
    create: async ({ config, render, timeoutMs }) =>
      (await import("./email.ts")).createEmailNotifier(config.email, render, timeoutMs),
  },
  mqtt: {
    create: async ({ config, hostname, timeoutMs, log, announced }) =>
      (await import("./mqtt.ts")).createMqttNotifier(config.mqtt, hostname, timeoutMs, undefined, { log, announced }),
  },
  pushover: {
    create: ({ config, render, timeoutMs }) => createPushoverNotifier(config.pushover, render, timeoutMs),
  },
} satisfies Record<ChannelName, ChannelFactory>;

/** A channel is on when the option the schema marks as its switch is set (docs/notifications.md). */
export function channelEnabled(config: Config["notifications"], name: ChannelName): boolean {
  const [, ...path] = CHANNEL_SWITCHES[name].path;
  return Boolean(path.reduce<any>((node, part) => node?.[part], config));
}

/** The enabled channels; throws the first configuration problem found. */
export async function createChannels(context: ChannelContext): Promise<Notifier[]> {
  const notifiers: Notifier[] = [];
  for (const [name, factory] of Object.entries(CHANNELS) as [ChannelName, ChannelFactory][]) {
    if (channelEnabled(context.config, name)) notifiers.push(await factory.create(context));
  }
  // Each notification URL is a channel of its own, beside the ones above.
  const { config, render, chat, hostname, timeoutMs } = context;
  notifiers.push(
    ...(await createUrlNotifiers({
      urls: config.urls ?? [],
      render,
      chat,
      hostname,
      titleTag: config.title_tag,
      bases: baseUrlsOf(config.services_base_url),
      timeoutMs,
      taken: notifiers.map((n) => n.name),
    })),
  );
  return notifiers;
}
