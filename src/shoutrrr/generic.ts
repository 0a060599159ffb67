/** shoutrrr's generic webhook, `generic://` and `generic+http(s)://`. */
import { decodePercent } from "../core/urls.ts";
import { credentialOf, isCredentialName } from "./credentials.ts";
import { both, fail, hostPort, origin, type Params, requireHost, segments, tokenLike } from "./grammar.ts";
import type { GenericBody, NotificationTarget } from "./targets.ts";

export function generic(url: URL, params: Params): NotificationTarget {
  requireHost(params, "generic", url);
  const target = genericTarget(url, params, origin(url, params));
  return target;
}

/**
 * shoutrrr's generic service, `generic://host/path` (https unless `disabletls`) and
 * `generic+http(s)://host/path` alike: `@Name=value` parameters are request headers, `$name=value`
 * extra fields of the JSON body, `method`, `contenttype`, `template`, `title`, `titlekey`,
 * `messagekey` and `disabletls` its own; every other parameter goes on to the target URL (`_name`
 * for a name of its own). `template=json` is shoutrrr's JSON object; another template names a
 * mustache file of svc's.
 */
function genericTarget(url: URL, params: Params, base: string): NotificationTarget {
  const headers: Array<[string, string]> = [];
  const extra: Array<[string, string]> = [];
  const forwarded = new URLSearchParams();
  for (const [rawKey, value] of url.searchParams) {
    const key = rawKey.toLowerCase();
    if (rawKey.startsWith("@")) {
      params.get(key);
      headers.push([headerName(rawKey.slice(1)), value]);
    } else if (rawKey.startsWith("$")) {
      params.get(key);
      extra.push([rawKey.slice(1), value]);
    } else if (!GENERIC_OWN.includes(key)) {
      params.get(key);
      forwarded.append(rawKey.startsWith("_") ? rawKey.slice(1) : rawKey, value);
    }
  }
  const method = (params.get("method") ?? "POST").toUpperCase();
  if (!["POST", "PUT", "PATCH", "GET", "DELETE"].includes(method))
    fail("generic://: parameter method must be POST, PUT, PATCH, GET or DELETE");
  const contentType = params.get("contenttype");
  const query = forwarded.toString();
  const endpoint = `${base}${url.pathname === "/" ? "" : url.pathname}${query ? `?${query}` : ""}`;
  const named = [...extra, ...forwarded].filter(([name]) => isCredentialName(name)).map(([, v]) => v);
  const secrets = [
    ...both(url.password),
    ...headers
      .filter(([name, v]) => isCredentialName(name) || tokenLike([v]).length > 0)
      .flatMap(([, v]) => [v, ...credentialOf(v)]),
    ...both(...named),
    ...tokenLike([...segments(url), ...forwarded.values()]),
  ];
  basicAuth(url, headers, secrets);
  return {
    service: "generic",
    endpoint,
    method,
    headers,
    ...(contentType ? { contentType } : {}),
    ...genericBody(params, extra),
    secrets,
  };
}

/** The generic service's own parameters (everything else goes on to the target URL). */
const GENERIC_OWN = ["method", "contenttype", "template", "disabletls", "title", "titlekey", "messagekey"];

function genericBody(params: Params, extra: Array<[string, string]>): GenericBody {
  const template = params.get("template");
  if (template === undefined || template === "") return { body: "text" };
  if (template.toLowerCase() === "json")
    return {
      body: "json",
      titleKey: params.get("titlekey") || "title",
      messageKey: params.get("messagekey") || "message",
      extra,
    };
  return { body: "template", template };
}

/** `acceptLanguage` -> `Accept-Language` (shoutrrr's header keys are camel case). */
function headerName(key: string): string {
  const name = key
    .replace(/([a-z0-9])([A-Z])/g, "$1-$2")
    .replace(/(^|-)([a-z])/g, (_, dash: string, c: string) => dash + c.toUpperCase());
  if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name)) fail("generic://: a @header name is not a valid header name");
  return name;
}

/** `generic+https://host/path?q=1`: the URL after `generic+` is the target, read as generic:// is. */
export function wrappedGeneric(url: URL, scheme: string, params: Params): NotificationTarget {
  params.get("disabletls"); // the wrapped scheme says it
  const target = genericTarget(url, params, `${scheme}://${hostPort(url)}`);
  params.rejectUnknown();
  return target;
}

/** Credentials written into the URL are sent as Basic authorization (fetch does not send them itself). */
function basicAuth(url: URL, headers: Array<[string, string]>, secrets: string[]): void {
  if (!url.username && !url.password) return;
  const basic = Buffer.from(`${decodePercent(url.username)}:${decodePercent(url.password)}`).toString("base64");
  headers.push(["Authorization", `Basic ${basic}`]);
  secrets.push(basic);
}
