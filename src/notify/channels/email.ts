/**
 * E-mail channel (nodemailer): the rendered report as plain text and HTML parts. Serves both the
 * `notifications.email` settings and `smtp://` notification URLs (shoutrrr's parameters).
 */
import nodemailer from "nodemailer";
import type SMTPTransport from "nodemailer/lib/smtp-transport";
import type { Config } from "../../config/index.ts";
import { SvcError } from "../../core/errors.ts";
import type { SmtpTarget } from "../../shoutrrr/index.ts";
import type { SessionReport } from "../../updater/types.ts";
import type { Renderer } from "../render.ts";
import type { Notifier } from "../types.ts";

type EmailSettings = Config["notifications"]["email"];

interface Mail {
  from: string | { name: string; address: string };
  to: string[];
  /** replaces the rendered subject (shoutrrr's `subject`) */
  subject?: string;
}

export function createEmailNotifier(settings: EmailSettings, render: Renderer, timeoutMs: number): Notifier {
  const { server, from, to } = settings;
  if (!server) throw new SvcError("config", "notifications.email.server is not set");
  if (!from) throw new SvcError("config", "notifications.email.from is required with notifications.email.server");
  if (to.length === 0)
    throw new SvcError("config", "notifications.email.to is required with notifications.email.server");
  return mailNotifier(
    "email",
    {
      host: server,
      port: settings.port,
      // 465 is implicit TLS; any other port starts plain and upgrades with STARTTLS when offered.
      secure: settings.port === 465,
      auth: settings.user ? { user: settings.user, pass: settings.password ?? "" } : undefined,
      tls: { rejectUnauthorized: !settings.tls_skip_verify },
    },
    { from, to },
    render,
    timeoutMs,
  );
}

/** `smtp://` with shoutrrr's `auth`, `encryption` and `usestarttls` (docs/notifications.md). */
export function createSmtpUrlNotifier(name: string, target: SmtpTarget, render: Renderer, timeoutMs: number): Notifier {
  const implicit = target.encryption === "implicittls" || (target.encryption === "auto" && target.port === 465);
  const plainOnly = target.encryption === "none" || !target.useStartTls;
  const auth =
    target.auth === "none" || !target.username ? undefined : { user: target.username, pass: target.password ?? "" };
  const authMethod = { none: undefined, plain: "PLAIN", login: "LOGIN", crammd5: "CRAM-MD5" }[target.auth];
  return mailNotifier(
    name,
    {
      host: target.host,
      port: target.port,
      secure: implicit,
      // explicittls: STARTTLS or nothing; none, or usestarttls=no: never upgrade.
      requireTLS: !implicit && (target.encryption === "explicittls" || (target.requireStartTls && !plainOnly)),
      ignoreTLS: !implicit && plainOnly,
      auth,
      ...(auth && authMethod ? { authMethod } : {}),
      tls: { rejectUnauthorized: !target.skipTlsVerify },
      ...(target.clientHost ? { name: target.clientHost } : {}),
    },
    {
      from: target.fromName ? { name: target.fromName, address: target.from } : target.from,
      to: target.to,
      ...(target.subject ? { subject: target.subject } : {}),
    },
    render,
    timeoutMs,
  );
}

function mailNotifier(
  name: string,
  transportOptions: SMTPTransport.Options,
  mail: Mail,
  render: Renderer,
  timeoutMs: number,
): Notifier {
  return {
    name,
    async send(report: SessionReport) {
      const rendered = render(report);
      // One transport per message: a report every few hours is no reason to hold a connection.
      const transport = nodemailer.createTransport({
        ...transportOptions,
        connectionTimeout: timeoutMs,
        greetingTimeout: timeoutMs,
        socketTimeout: timeoutMs,
        disableFileAccess: true,
        disableUrlAccess: true,
      });
      try {
        await transport.sendMail({
          from: mail.from,
          to: mail.to,
          subject: mail.subject ?? rendered.subject,
          text: rendered.text,
          html: rendered.html,
        });
      } finally {
        transport.close();
      }
    },
  };
}
