/** E-mail channel (nodemailer): the rendered report as plain text and HTML parts. */
import nodemailer from "nodemailer";
import { SvcError } from "../../errors.ts";
import type { Config } from "../../config/index.ts";
import type { SessionReport } from "../../updater/types.ts";
import type { Renderer } from "../render.ts";
import type { Notifier } from "../types.ts";

type EmailSettings = Config["notifications"]["email"];

export function createEmailNotifier(settings: EmailSettings, render: Renderer, timeoutMs: number): Notifier {
  const { server, from, to } = settings;
  if (!server) throw new SvcError("config", "notifications.email.server is not set");
  if (!from) throw new SvcError("config", "notifications.email.from is required with notifications.email.server");
  if (to.length === 0) throw new SvcError("config", "notifications.email.to is required with notifications.email.server");
  return {
    name: "email",
    async send(report: SessionReport) {
      const rendered = render(report);
      // One transport per message: a report every few hours is no reason to hold a connection.
      const transport = nodemailer.createTransport({
        host: server,
        port: settings.port,
        // 465 is implicit TLS; any other port starts plain and upgrades with STARTTLS when offered.
        secure: settings.port === 465,
        auth: settings.user ? { user: settings.user, pass: settings.password ?? "" } : undefined,
        tls: { rejectUnauthorized: !settings.tls_skip_verify },
        connectionTimeout: timeoutMs,
        greetingTimeout: timeoutMs,
        socketTimeout: timeoutMs,
        disableFileAccess: true,
        disableUrlAccess: true,
      });
      try {
        await transport.sendMail({ from, to, subject: rendered.subject, text: rendered.text, html: rendered.html });
      } finally {
        transport.close();
      }
    },
  };
}
