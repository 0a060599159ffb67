/** What each service's delivery of a notification URL is given, and what one delivery is. */
import { type BaseUrls, FIXED_HOSTS, type FixedHostService, type NotificationTarget } from "../../../shoutrrr/index.ts";
import type { SessionReport } from "../../../updater/types.ts";
import type { Renderer } from "../../render.ts";
import type { Notifier } from "../../types.ts";

export interface UrlChannelContext {
  urls: readonly string[];
  /** e-mail and Pushover: the report as their own channels render it */
  render: Renderer;
  /** chat targets: the short summary */
  chat: Renderer;
  hostname: string;
  titleTag?: string;
  /** `notifications.services_base_url`, per service */
  bases: BaseUrls;
  timeoutMs: number;
  /** names of the channels already made (`mqtt`, `pushover`): a URL of the same service is `mqtt#2` */
  taken?: readonly string[];
}

export type TargetService = NotificationTarget["service"];
export type TargetOf<S extends TargetService> = NotificationTarget & { service: S };

/** Makes the notifier `name` that delivers to one service's target. */
export type Delivery<S extends TargetService> = (
  name: string,
  target: TargetOf<S>,
  context: UrlChannelContext,
) => Notifier | Promise<Notifier>;

/** The origin a fixed-host service is sent to: its `notifications.services_base_url`, else its public one. */
export function fixedOrigin(
  context: UrlChannelContext,
  service: FixedHostService,
  publicOrigin: string = FIXED_HOSTS[service],
): string {
  return context.bases[service] ?? publicOrigin;
}

/** A notifier that sends each report with `send`. */
export function notifier(name: string, send: (report: SessionReport) => Promise<void>): Notifier {
  return { name, send };
}
