/** Pushover channel: the rendered report as title + message, form-POSTed to `{api_url}/1/messages.json`. */
import { SvcError } from "../../errors.ts";
import type { Config } from "../../config/index.ts";
import type { SessionReport } from "../../updater/types.ts";
import type { Renderer } from "../render.ts";
import { truncate } from "../render.ts";
import type { Notifier } from "../types.ts";

/** Pushover's documented limits, in characters. */
export const PUSHOVER_TITLE_MAX = 250;
export const PUSHOVER_MESSAGE_MAX = 1024;

export function pushoverForm(settings: { token: string; user_key: string }, title: string, message: string): URLSearchParams {
  return new URLSearchParams({
    token: settings.token,
    user: settings.user_key,
    title: truncate(title, PUSHOVER_TITLE_MAX),
    // An empty message is rejected by Pushover; a blank template still says something.
    message: truncate(message.trim() === "" ? title : message.trim(), PUSHOVER_MESSAGE_MAX),
    priority: "0",
  });
}

export function createPushoverNotifier(settings: Config["notifications"]["pushover"], render: Renderer, timeoutMs: number): Notifier {
  const { token, user_key } = settings;
  if (!token) throw new SvcError("config", "notifications.pushover.token is not set");
  if (!user_key) throw new SvcError("config", "notifications.pushover.user_key is required with notifications.pushover.token");
  const endpoint = `${settings.api_url.replace(/\/+$/, "")}/1/messages.json`;
  return {
    name: "pushover",
    async send(report: SessionReport) {
      const rendered = render(report);
      await postPushover(endpoint, pushoverForm({ token, user_key }, rendered.subject, rendered.text), timeoutMs);
    },
  };
}

/** One message to Pushover's API; a failure is an answer whose JSON `status` is not 1, with Pushover's `errors`. */
export async function postPushover(endpoint: string, form: URLSearchParams, timeoutMs: number): Promise<void> {
  const response = await fetch(endpoint, { method: "POST", body: form, signal: AbortSignal.timeout(timeoutMs) });
  const answer = (await response.json().catch(() => null)) as { status?: unknown; errors?: unknown } | null;
  if (response.ok && answer?.status === 1) return;
  const errors = Array.isArray(answer?.errors) ? `: ${answer.errors.map(String).join("; ")}` : "";
  throw new SvcError("notify", `Pushover answered HTTP ${response.status}${errors}`);
}
