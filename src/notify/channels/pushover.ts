/** Pushover channel: the rendered report as title + message, form-POSTed to `{api_url}/1/messages.json`. */
import { createCipheriv, createHmac, randomBytes } from "node:crypto";
import { gzipSync } from "node:zlib";
import { z } from "zod";
import type { Config } from "../../config/index.ts";
import { readBoundedJson } from "../../core/bounded.ts";
import { SvcError } from "../../core/errors.ts";
import type { SessionReport } from "../../updater/types.ts";
import type { Renderer } from "../render.ts";
import { truncate } from "../render.ts";
import type { Notifier } from "../types.ts";

/** Pushover's documented limits, in characters. */
export const PUSHOVER_TITLE_MAX = 250;
export const PUSHOVER_MESSAGE_MAX = 1024;

export function pushoverForm(
  settings: { token: string; user_key: string },
  title: string,
  message: string,
): URLSearchParams {
  return new URLSearchParams({
    token: settings.token,
    user: settings.user_key,
    title: truncate(title, PUSHOVER_TITLE_MAX),
    // An empty message is rejected by Pushover; a blank template still says something.
    message: truncate(message.trim() === "" ? title : message.trim(), PUSHOVER_MESSAGE_MAX),
    priority: "0",
  });
}

export function createPushoverNotifier(
  settings: Config["notifications"]["pushover"],
  render: Renderer,
  timeoutMs: number,
): Notifier {
  const { token, user_key } = settings;
  if (!token) throw new SvcError("config", "notifications.pushover.token is not set");
  if (!user_key)
    throw new SvcError("config", "notifications.pushover.user_key is required with notifications.pushover.token");
  const endpoint = `${settings.api_url.replace(/\/+$/, "")}/1/messages.json`;
  return {
    name: "pushover",
    async send(report: SessionReport) {
      const rendered = render(report);
      await postPushover(endpoint, pushoverForm({ token, user_key }, rendered.subject, rendered.text), timeoutMs);
    },
  };
}

/** Pushover's answer: `status` 1 when it took the message, else its `errors`. */
const PUSHOVER_ANSWER = z.object({ status: z.number(), errors: z.array(z.string().max(1024)).max(32).optional() });
const ANSWER_MAX_BYTES = 64 * 1024;

/** One message to Pushover's API; a failure is an answer whose JSON `status` is not 1, with Pushover's `errors`. */
export async function postPushover(endpoint: string, form: URLSearchParams, timeoutMs: number): Promise<void> {
  const response = await fetch(endpoint, {
    method: "POST",
    body: form,
    signal: AbortSignal.timeout(timeoutMs),
    redirect: "manual",
  });
  // nothing lost: an unreadable answer is no success: the message below says the status
  const read = await readBoundedJson(response, ANSWER_MAX_BYTES, PUSHOVER_ANSWER).catch(() => undefined);
  const answer = read && "value" in read ? read.value : undefined;
  if (response.ok && answer?.status === 1) return;
  const errors = answer?.errors ? `: ${answer.errors.join("; ")}` : "";
  throw new SvcError("notify", `Pushover answered HTTP ${response.status}${errors}`);
}

/**
 * Pushover's end-to-end encryption (shoutrrr's `encryptionkey`): the title and message each
 * gzip-compressed, AES-256-CBC encrypted under a random IV, authenticated with HMAC-SHA256 over
 * IV and ciphertext under the same key, sent as base64(IV | ciphertext | MAC) with `encrypted=1`.
 */
export function encryptPushoverForm(form: URLSearchParams, key: Buffer): void {
  for (const field of ["title", "message"]) {
    const value = form.get(field);
    if (value) form.set(field, encryptField(value, key));
  }
  form.set("encrypted", "1");
}

function encryptField(text: string, key: Buffer): string {
  const iv = randomBytes(16);
  const cipher = createCipheriv("aes-256-cbc", key, iv); // PKCS#7 padding is the cipher's default
  const ciphertext = Buffer.concat([cipher.update(gzipSync(text, { level: 9 })), cipher.final()]);
  const mac = createHmac("sha256", key).update(iv).update(ciphertext).digest();
  return Buffer.concat([iv, ciphertext, mac]).toString("base64");
}
