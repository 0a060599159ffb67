/**
 * A notification URL shown to the user (--print-config, errors) is rebuilt from its parts, each
 * part as written unless it is secret: the password always, and any part (user, host, path
 * segment, query value) whose decoded text holds one of the target's secret parts, or a query
 * value whose name says it is a credential (token, key, secret, sig, password, an authorization
 * header). Decoding before comparing is what catches a secret written percent-encoded, with `+`
 * for a space, or without a digit in it: nothing is searched for as text in the URL as written.
 */
import { decodePercent } from "../core/urls.ts";
import { REDACTED } from "../log/redact.ts";
import { isCredentialName } from "./credentials.ts";

/** `text` with every secret part replaced by the mask; `secrets` are the target's, decoded or not. */
export function maskUrl(text: string, secrets: readonly string[]): string {
  const match = /^([a-z][a-z0-9+.-]*:\/\/)([^/?#]*)([^?#]*)(\?[^#]*)?(#.*)?$/i.exec(text.trim());
  if (!match) return REDACTED;
  const [, scheme, authority = "", path = "", query = "", fragment = ""] = match;
  const decoded = new Set(secrets.flatMap((s) => [s, decode(s)]).filter((s) => s !== ""));
  const holdsSecret = (part: string) => {
    const plain = decode(part);
    for (const secret of decoded) if (secret.length >= 4 ? plain.includes(secret) : plain === secret) return true;
    return false;
  };
  const mask = (part: string) => (part !== "" && holdsSecret(part) ? REDACTED : part);

  const at = authority.lastIndexOf("@");
  const host = authority.slice(at + 1);
  let userinfo = "";
  if (at >= 0) {
    const info = authority.slice(0, at);
    const colon = info.indexOf(":");
    userinfo =
      colon < 0 ? `${mask(info)}@` : `${mask(info.slice(0, colon))}:${info.length > colon + 1 ? REDACTED : ""}@`;
  }
  const hostPart = host.replace(/^([^:]*|\[[^\]]*\])(.*)$/, (_, name: string, port: string) => mask(name) + port);
  const pathPart = path.split("/").map(mask).join("/");
  const queryPart =
    query === ""
      ? ""
      : `?${query
          .slice(1)
          .split("&")
          .map((pair) => maskPair(pair, mask))
          .join("&")}`;
  return `${scheme}${userinfo}${hostPart}${pathPart}${queryPart}${fragment ? `#${mask(fragment.slice(1))}` : ""}`;
}

function maskPair(pair: string, mask: (part: string) => string): string {
  const eq = pair.indexOf("=");
  if (eq < 0) return pair;
  const name = pair.slice(0, eq);
  const value = pair.slice(eq + 1);
  if (value !== "" && isCredentialName(decode(name).replace(/^[@$_]/, ""))) return `${name}=${REDACTED}`;
  return `${name}=${mask(value)}`;
}

/** Percent-decoding as a query reads it (`+` is a space); text that does not decode stays as is. */
function decode(text: string): string {
  return decodePercent(text.replace(/\+/g, " "));
}

/** Each way a secret may be written: as is, decoded, percent-encoded, and encoded for a query. */
export function escapings(secret: string): string[] {
  const plain = decodePercent(secret);
  const encoded = encodeURIComponent(plain);
  return [secret, plain, encoded, encoded.replace(/%20/g, "+"), plain.replace(/ /g, "+")];
}
