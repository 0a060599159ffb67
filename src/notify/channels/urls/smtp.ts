/** smtp:// notification URLs: sent by the e-mail channel's client, loaded only when one is set. */
import type { Delivery } from "./context.ts";

export const smtp: Delivery<"smtp"> = async (name, target, context) =>
  (await import("../email.ts")).createSmtpUrlNotifier(name, target.smtp, context.render, context.timeoutMs);
