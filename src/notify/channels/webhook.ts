/**
 * Webhook channel: the SessionReport JSON, or the body the user's template renders (ntfy, Gotify,
 * Discord, Slack, Matrix, Home Assistant: docs/notifications.md), POSTed to
 * `notifications.webhook.url`.
 */

import type { Config } from "../../config/index.ts";
import { SvcError } from "../../core/errors.ts";
import type { SessionReport } from "../../updater/types.ts";
import type { BodyRenderer } from "../render.ts";
import type { Notifier } from "../types.ts";

/** RFC 9110 token characters: what a header name may contain. */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/**
 * `"Key: Value, Key2: Value2"` -> pairs. A value may contain ':' (URLs, times) but not ','.
 * Throws a config error naming the option for an entry that is not `Key: Value`.
 */
export function parseHeaders(spec: string | undefined): Array<[string, string]> {
  if (spec === undefined || spec.trim() === "") return [];
  const headers: Array<[string, string]> = [];
  for (const entry of spec.split(",")) {
    if (entry.trim() === "") continue;
    const colon = entry.indexOf(":");
    const name = colon < 0 ? "" : entry.slice(0, colon).trim();
    const value = colon < 0 ? "" : entry.slice(colon + 1).trim();
    // The entry is not echoed: it may hold a credential (Authorization: Bearer ...).
    if (!HEADER_NAME.test(name)) {
      throw new SvcError("config", `notifications.webhook.headers: entry ${headers.length + 1} is not "Key: Value"`);
    }
    headers.push([name, value]);
  }
  return headers;
}

export function createWebhookNotifier(
  settings: Config["notifications"]["webhook"],
  renderBody?: BodyRenderer,
): Notifier {
  const url = settings.url;
  if (!url) throw new SvcError("config", "notifications.webhook.url is not set");
  try {
    new URL(url);
  } catch {
    throw new SvcError("config", "notifications.webhook.url is not a valid URL");
  }
  const extra = parseHeaders(settings.headers);
  return {
    name: "webhook",
    async send(report: SessionReport) {
      const headers = new Headers(extra);
      headers.set("content-type", renderBody ? settings.content_type : "application/json");
      const response = await fetch(url, {
        method: "POST",
        headers,
        body: renderBody ? renderBody(report) : JSON.stringify(report),
        signal: AbortSignal.timeout(settings.timeout),
        redirect: "manual",
        ...(settings.tls_skip_verify ? { tls: { rejectUnauthorized: false } } : {}),
      });
      // Drain the body so the connection is released; its content is not logged (may echo input).
      // nothing lost: the status was read; draining only frees the connection
      await response.arrayBuffer().catch(() => undefined);
      if (response.status < 200 || response.status > 299) {
        throw new SvcError("notify", `HTTP status ${response.status}`);
      }
    },
  };
}
