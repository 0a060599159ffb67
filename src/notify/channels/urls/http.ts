/** The requests the notification URLs' services are sent, and how their answers are read. */
import { z } from "zod";
import { readBoundedJson } from "../../../core/bounded.ts";
import { SvcError } from "../../../core/errors.ts";

/** Telegram's Bot API and Slack's Web API: `ok`, and why not (`description`, `error`). */
const OK_ANSWER = z.object({ ok: z.boolean(), error: z.string().optional(), description: z.string().optional() });

export function expectOk(answer: unknown, service: string): void {
  const parsed = OK_ANSWER.safeParse(answer);
  if (parsed.success && parsed.data.ok) return;
  const reason = parsed.success ? (parsed.data.error ?? parsed.data.description) : undefined;
  throw new SvcError("notify", `${service} refused the message${reason ? `: ${reason.slice(0, 200)}` : ""}`);
}

/** shoutrrr's `insecureskipverify`/`disabletlsverification`: any server certificate is accepted. */
export function insecure(skip: boolean): RequestInit {
  return skip ? ({ tls: { rejectUnauthorized: false } } as RequestInit) : {};
}

export function postJson(
  url: string,
  body: unknown,
  timeoutMs: number,
  headers: Record<string, string> = {},
): Promise<unknown> {
  return request(
    url,
    { method: "POST", headers: { ...headers, "content-type": "application/json" }, body: JSON.stringify(body) },
    timeoutMs,
  );
}

/** Sends one request; a status outside 200-299 is a failure. Answers with the JSON body, or null. */
export async function request(url: string, init: RequestInit, timeoutMs: number): Promise<unknown> {
  const response = await fetch(url, { ...init, signal: AbortSignal.timeout(timeoutMs), redirect: "manual" });
  // nothing lost: an unreadable body leaves the status, checked next, and an answer of null
  const read = await readBoundedJson(response, ANSWER_MAX_BYTES).catch(() => undefined);
  if (response.status < 200 || response.status > 299) throw new SvcError("notify", `HTTP status ${response.status}`);
  return read && "value" in read ? read.value : null;
}

/** An answer is read only for its "ok", ids and error fields: more than this is not one of those. */
const ANSWER_MAX_BYTES = 64 * 1024;
