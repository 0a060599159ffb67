/** generic:// notification URLs (shoutrrr's generic webhook): the message text, shoutrrr's JSON or the user's template. */
import type { NotificationTarget } from "../../../shoutrrr/index.ts";
import { type BodyRenderer, loadBodyRenderer, type RenderedReport } from "../../render.ts";
import { type Delivery, notifier } from "./context.ts";
import { request } from "./http.ts";

export const generic: Delivery<"generic"> = async (name, target, context) => {
  const contentType = target.contentType ?? (target.body === "text" ? "text/plain" : "application/json");
  const body: BodyRenderer =
    target.body === "template"
      ? await loadBodyRenderer(
          target.template,
          contentType,
          context.hostname,
          context.titleTag,
          `notifications.urls (${name} template)`,
        )
      : (report) => genericBody(target, context.chat(report));
  return notifier(name, async (report) => {
    const headers = new Headers(target.headers);
    headers.set("content-type", contentType);
    if (!headers.has("accept")) headers.set("accept", contentType);
    // fetch sends no body with GET (shoutrrr's Go client does): a GET only says that something happened
    await request(
      target.endpoint,
      { method: target.method, headers, ...(target.method === "GET" ? {} : { body: body(report) }) },
      context.timeoutMs,
    );
  });
};

/**
 * The generic webhook's body as shoutrrr builds it: the message alone, or (`template=json`) an
 * object of the title and message under their keys and the `$name` extra fields.
 */
function genericBody(
  target: Extract<NotificationTarget, { service: "generic" }>,
  { subject, text }: RenderedReport,
): string {
  const message = text.trim() || subject;
  if (target.body !== "json") return message;
  const fields: Record<string, string> = { [target.titleKey]: subject };
  for (const [name, value] of target.extra) fields[name] = value;
  fields[target.messageKey] = message;
  return JSON.stringify(fields);
}
