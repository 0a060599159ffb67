/**
 * The chat services' notification URLs, delivered as shoutrrr delivers them: Discord, Telegram,
 * Slack, Teams, Matrix, Mattermost, Rocket.Chat, Google Chat, Signal. Each gets the short summary
 * (CHAT_TEMPLATE, or the user's template) under the subject as title.
 */
import { z } from "zod";
import { SvcError } from "../../../core/errors.ts";
import { ESCAPE } from "../../../core/markup.ts";
import type { SessionReport } from "../../../updater/types.ts";
import { type RenderedReport, truncate } from "../../render.ts";
import type { Notifier } from "../../types.ts";
import { type Delivery, fixedOrigin, notifier, type TargetOf } from "./context.ts";
import { expectOk, postJson, request } from "./http.ts";

/** Limits of the services, in characters. */
const DISCORD_MAX = 2000;
const TELEGRAM_MAX = 4096;
const SLACK_MAX = 3000;

export const discord: Delivery<"discord"> = (name, target, context) => {
  const thread = target.threadId ? `?thread_id=${encodeURIComponent(target.threadId)}` : "";
  const endpoint = `${fixedOrigin(context, "discord")}/api/webhooks/${target.webhookId}/${encodeURIComponent(target.token)}${thread}`;
  return notifier(name, async (report) => {
    const { subject, text } = context.chat(report, "markdown");
    // no mention pings, whatever the text says (Discord's "Allowed Mentions Object")
    const body = {
      content: truncate(`**${subject}**\n${text}`.trim(), DISCORD_MAX),
      username: target.username,
      avatar_url: target.avatarUrl,
      allowed_mentions: { parse: [] },
    };
    await postJson(endpoint, body, context.timeoutMs);
  });
};

/**
 * One message per chat (the Bot API's sendMessage). A retry goes only to the chats that have not
 * got this report yet, so one refusing chat does not repeat the message in the others.
 */
export const telegram: Delivery<"telegram"> = (name, target, context): Notifier => {
  const endpoint = `${fixedOrigin(context, "telegram")}/bot${target.token}/sendMessage`;
  const delivered = new WeakMap<SessionReport, Set<string>>();
  return {
    name,
    async send(report) {
      // plain text (no parse_mode): only mentions are read in it
      const { subject, text } = context.chat(report, "chat");
      const done = delivered.get(report) ?? new Set<string>();
      delivered.set(report, done);
      const failures: string[] = [];
      for (const { chat, thread } of target.chats) {
        const key = `${chat}:${thread ?? ""}`;
        if (done.has(key)) continue;
        const body = {
          chat_id: chat,
          message_thread_id: thread,
          text: truncate(`${subject}\n\n${text}`.trim(), TELEGRAM_MAX),
          disable_notification: target.silent,
          link_preview_options: { is_disabled: !target.preview },
        };
        try {
          expectOk(await postJson(endpoint, body, context.timeoutMs), "Telegram");
          done.add(key);
        } catch (error) {
          failures.push(`chat ${chat}: ${(error as Error).message}`);
        }
      }
      if (failures.length > 0) throw new SvcError("notify", failures.join("; "));
    },
  };
};

export const slack: Delivery<"slack"> = (name, target, context) => {
  const endpoint = target.webhookPath
    ? `${fixedOrigin(context, "slack")}/services/${target.webhookPath}`
    : `${fixedOrigin(context, "slack", "https://slack.com")}/api/chat.postMessage`;
  const headers: Record<string, string> = target.botToken ? { authorization: `Bearer ${target.botToken}` } : {};
  const icon = target.icon
    ? /^https?:\/\//.test(target.icon)
      ? { icon_url: target.icon }
      : { icon_emoji: target.icon }
    : {};
  return notifier(name, async (report) => {
    // the whole text, the template's own too: Slack asks for &, < and > always as entities
    const { subject, text } = context.chat(report);
    const body = {
      channel: target.channel,
      username: target.botname,
      ...icon,
      thread_ts: target.threadTs,
      text: truncate(`*${ESCAPE.slack(subject)}*\n${ESCAPE.slack(text)}`.trim(), SLACK_MAX),
    };
    const answer = await postJson(endpoint, body, context.timeoutMs, headers);
    // The Web API answers 200 with {"ok": false, "error": ...} when it refuses.
    if (target.botToken) expectOk(answer, "Slack");
  });
};

export const teams: Delivery<"teams"> = (name, target, context) =>
  notifier(name, async (report) => {
    await postJson(target.endpoint, teamsCard(context.chat(report, "markdown")), context.timeoutMs);
  });

/**
 * Matrix's client-server API: log in with the password (or use it as the access token when no
 * user is given), join each room (aliases resolve to ids; joining a joined room changes nothing),
 * then send an m.text message. Without rooms: every room the account has joined. The
 * transaction id is the report's, so a retry cannot post the message twice.
 */
export const matrix: Delivery<"matrix"> = (name, target, context): Notifier => {
  const api = `${target.endpoint}/_matrix/client/v3`;
  const { timeoutMs } = context;
  return {
    name,
    async send(report) {
      let token = target.password;
      if (target.user) {
        const login = await postJson(
          `${api}/login`,
          { type: "m.login.password", identifier: { type: "m.id.user", user: target.user }, password: target.password },
          timeoutMs,
        );
        const answer = MATRIX_LOGIN.safeParse(login);
        if (!answer.success) throw new SvcError("notify", "Matrix login answered without an access token");
        token = answer.data.access_token;
      }
      const auth = { authorization: `Bearer ${token}` };
      let rooms: string[] = [];
      if (target.rooms.length === 0) {
        const joined = MATRIX_JOINED.safeParse(
          await request(`${api}/joined_rooms`, { method: "GET", headers: auth }, timeoutMs),
        );
        rooms = joined.success ? joined.data.joined_rooms : [];
      } else {
        for (const room of target.rooms) {
          const joined = MATRIX_JOIN.safeParse(
            await postJson(`${api}/join/${encodeURIComponent(room)}`, {}, timeoutMs, auth),
          );
          rooms.push(joined.success ? joined.data.room_id : room);
        }
      }
      const { subject, text } = context.chat(report, "chat");
      for (const [index, room] of rooms.entries()) {
        const url = `${api}/rooms/${encodeURIComponent(room)}/send/m.room.message/svc-${report.id}-${index}`;
        await request(
          url,
          {
            method: "PUT",
            headers: { ...auth, "content-type": "application/json" },
            body: JSON.stringify({ msgtype: "m.text", body: `${subject}\n${text}`.trim() }),
          },
          timeoutMs,
        );
      }
    },
  };
};

/** Mattermost and Rocket.Chat take the same incoming-webhook body; only Mattermost takes an icon. */
export const mattermostOrRocketChat: Delivery<"mattermost" | "rocketchat"> = (
  name,
  target: TargetOf<"mattermost" | "rocketchat">,
  context,
) => {
  const icon = target.icon
    ? /^https?:\/\//i.test(target.icon)
      ? { icon_url: target.icon }
      : { icon_emoji: target.icon }
    : {};
  return notifier(name, async (report) => {
    const { subject, text } = context.chat(report, "mattermost");
    const extra = target.service === "mattermost" ? icon : {};
    await postJson(
      target.endpoint,
      { text: `${subject}\n${text}`.trim(), username: target.username, channel: target.channel, ...extra },
      context.timeoutMs,
    );
  });
};

export const googleChat: Delivery<"googlechat"> = (name, target, context) =>
  notifier(name, async (report) => {
    const { subject, text } = context.chat(report, "googlechat");
    await postJson(target.endpoint, { text: `*${subject}*\n${text}`.trim() }, context.timeoutMs);
  });

export const signal: Delivery<"signal"> = (name, target, context) =>
  notifier(name, async (report) => {
    const { subject, text } = context.chat(report, "chat");
    const headers: Record<string, string> = target.authorization ? { authorization: target.authorization } : {};
    await postJson(
      target.endpoint,
      { message: `${subject}\n${text}`.trim(), number: target.source, recipients: target.recipients },
      context.timeoutMs,
      headers,
    );
  });

/** An Adaptive Card, what a Teams Workflows webhook ("post to a channel") expects. */
function teamsCard({ subject, text }: RenderedReport): unknown {
  const lines = text.trim() === "" ? [] : [{ type: "TextBlock", text: text.trim(), wrap: true }];
  return {
    type: "message",
    attachments: [
      {
        contentType: "application/vnd.microsoft.card.adaptive",
        content: {
          $schema: "http://adaptivecards.io/schemas/adaptive-card.json",
          type: "AdaptiveCard",
          version: "1.4",
          body: [{ type: "TextBlock", text: subject, weight: "Bolder", wrap: true }, ...lines],
        },
      },
    ],
  };
}

/** Matrix's answers read, each parsed with its schema (what else they hold is not looked at). */
const MATRIX_LOGIN = z.object({ access_token: z.string().min(1).max(4096) });
const MATRIX_JOIN = z.object({ room_id: z.string().min(1).max(1024) });
const MATRIX_JOINED = z.object({ joined_rooms: z.array(z.string().max(1024)).max(10_000) });
