/**
 * The secrets the notification settings hold beyond the options the schema marks secret
 * (docs/security.md). This is the one place that derives them: the notify room's own redactor,
 * the service's logs and audit log, and `svc --print-config` all take them from here, so a new
 * notification URL form is protected everywhere by teaching it to this function.
 */
import type { Config } from "../config/index.ts";
import { decodePercent } from "../core/urls.ts";
import { credentialOf, isCredentialName, looksLikeToken, notificationUrlSecrets } from "../shoutrrr/index.ts";
import { parseHeaders } from "./channels/webhook.ts";

/**
 * Parts of a webhook URL (which often carries its credential: Slack, Discord, ntfy tokens),
 * the values of headers that carry a credential (and the credential after a scheme: `Bearer x`),
 * a password written into the MQTT broker URL, the secret parts of each notification URL
 * (`notifications.urls`). Empty and undefined parts are left out.
 */
export function notificationSecrets(settings: Config["notifications"]): string[] {
  const secrets: Array<string | undefined> = [
    ...urlSecrets(settings.webhook.url),
    ...urlSecrets(settings.mqtt.broker, { passwordOnly: true }),
    ...notificationUrlSecrets(settings.urls ?? []),
  ];
  try {
    for (const [name, value] of parseHeaders(settings.webhook.headers)) {
      // a header carries a credential by its name; others only when their value looks like one
      if (isCredentialName(name) || looksLikeToken(value)) secrets.push(value, ...credentialOf(value));
    }
  } catch {
    // a malformed header list is refused when the webhook channel is built
  }
  return [...new Set(secrets.filter((s): s is string => typeof s === "string" && s !== ""))];
}

/**
 * What a URL may carry as a credential: its password, and unless `passwordOnly` its whole text,
 * its path and query (unless short), and each path segment or query value that looks like a token.
 */
function urlSecrets(text: string | undefined, options: { passwordOnly?: boolean } = {}): Array<string | undefined> {
  if (!text) return [];
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return options.passwordOnly ? [] : [text]; // not a URL: refused by its channel, masked whole meanwhile
  }
  const password = [url.password, decodePercent(url.password)];
  if (options.passwordOnly) return password;
  const secrets = [
    text,
    ...password,
    url.pathname.length >= 8 ? url.pathname : undefined,
    url.search.length >= 8 ? url.search : undefined,
  ];
  for (const part of [...url.pathname.split("/"), ...url.searchParams.values()]) {
    if (looksLikeToken(part)) secrets.push(part, decodePercent(part));
  }
  return secrets;
}
