/** `smtp://` as shoutrrr reads it: server, credentials, addresses, auth and encryption. */
import { decodePercent } from "../core/urls.ts";
import { both, fail, type Params, requireHost } from "./grammar.ts";
import type { NotificationTarget, SmtpTarget } from "./targets.ts";

export function smtp(url: URL, params: Params): NotificationTarget {
  requireHost(params, "smtp", url);
  // A query decodes `+` to a space; shoutrrr puts it back (sender+tag@example.com), as does svc.
  const from = params.get("from", "fromaddress")?.replaceAll(" ", "+");
  const to = params.list("to", "toaddresses").map((address) => address.replaceAll(" ", "+"));
  if (!from) fail(`smtp://: parameter from is missing (form: ${params.form("smtp")})`);
  if (to.length === 0) fail(`smtp://: parameter to is missing (form: ${params.form("smtp")})`);
  const auth = oneOf(
    params.get("auth") ?? (url.username ? "plain" : "none"),
    "auth",
    ["none", "plain", "login", "crammd5"],
    { unknown: "plain", oauth2: "" },
  );
  const encryption = oneOf(
    params.get("encryption") ?? "auto",
    "encryption",
    ["auto", "none", "explicittls", "implicittls"],
    {},
  );
  const smtp: SmtpTarget = {
    host: url.hostname.replace(/^\[(.*)\]$/, "$1"),
    port: url.port ? Number(url.port) : 25,
    from: from!,
    to,
    auth: auth as SmtpTarget["auth"],
    encryption: encryption as SmtpTarget["encryption"],
    useStartTls: params.flag("usestarttls", true) && params.flag("starttls", true),
    requireStartTls: params.flag("requirestarttls", false),
    skipTlsVerify: params.flag("skiptlsverify", false),
  };
  if (url.username) smtp.username = decodePercent(url.username);
  if (url.password) smtp.password = decodePercent(url.password);
  const fromName = params.get("fromname");
  const subject = params.get("subject", "title");
  const clientHost = params.get("clienthost");
  if (clientHost) smtp.clientHost = clientHost;
  if (fromName) smtp.fromName = fromName;
  if (subject) smtp.subject = subject;
  return { service: "smtp", smtp, secrets: both(url.password) };
}

function oneOf(value: string, name: string, allowed: readonly string[], aliases: Record<string, string>): string {
  const lower = value.toLowerCase();
  const mapped = Object.hasOwn(aliases, lower) ? aliases[lower]! : lower;
  if (!allowed.includes(mapped)) fail(`smtp://: parameter ${name} must be one of ${allowed.join(", ")}`);
  return mapped;
}
