/**
 * The grammar every service shares: query parameters read as shoutrrr reads them (names
 * case-insensitive, its booleans, unknown ones refused), decoding, and the parts of a URL.
 * A problem names the part that is wrong, never its value (it may be a secret).
 */
import { decodePercent } from "../core/urls.ts";
import { looksLikeToken } from "./credentials.ts";
import type { NotificationTarget } from "./targets.ts";

/** Why a URL cannot be used: names the part, never echoes a value (it may be a secret). */
export class UrlProblem extends Error {}

export const fail = (message: string): never => {
  throw new UrlProblem(message);
};

/**
 * What the grammar reads of the services' table (services.ts): each service's form, shown when a
 * URL does not fit it, and the parameters it accepts without needing them. It reaches the parsers
 * through Params, since the table holds the parsers.
 */
export type Grammar = Readonly<Record<string, { readonly form: string; readonly ignored: readonly string[] }>>;

/** Query parameters, keys case-insensitive as in shoutrrr; each one read is marked as known. */
export class Params {
  private readonly values = new Map<string, string>();
  private readonly read = new Set<string>();
  constructor(
    private readonly service: string,
    url: URL,
    private readonly grammar: Grammar,
  ) {
    for (const [key, value] of url.searchParams) this.values.set(key.toLowerCase(), value);
    for (const key of grammar[service]!.ignored) this.read.add(key);
  }

  /** The form of `service` (a parser of two services names the one its messages speak of). */
  form(service: string): string {
    return this.grammar[service]!.form;
  }

  get(...names: string[]): string | undefined {
    for (const name of names) {
      this.read.add(name);
      if (this.values.has(name)) return this.values.get(name);
    }
    return undefined;
  }

  list(...names: string[]): string[] {
    return (this.get(...names) ?? "")
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean);
  }

  flag(name: string, fallback: boolean): boolean {
    const value = this.get(name);
    if (value === undefined) return fallback;
    if (/^(yes|y|true|1|on)$/i.test(value)) return true;
    if (/^(no|n|false|0|off)$/i.test(value)) return false;
    return fail(`${this.service}://: parameter ${name} must be yes or no`);
  }

  integer(name: string, min: number, max: number): number | undefined {
    const value = this.get(name);
    if (value === undefined) return undefined;
    const n = Number(value);
    if (!Number.isInteger(n) || n < min || n > max)
      return fail(`${this.service}://: parameter ${name} must be an integer from ${min} to ${max}`);
    return n;
  }

  /** Every parameter name given (lower case). */
  keys(): string[] {
    return [...this.values.keys()];
  }

  rejectUnknown(): void {
    const unknown = this.keys().filter((key) => !this.read.has(key));
    if (unknown.length > 0)
      fail(
        `${this.service}://: unknown parameter${unknown.length > 1 ? "s" : ""} ${unknown.join(", ")} (form: ${this.form(this.service)})`,
      );
  }
}

/** A secret as written in the URL and as decoded: logs may show either. */
export function both(...values: Array<string | undefined>): string[] {
  return values.flatMap((v) => (v ? [v, decodePercent(v)] : []));
}

/** Path segments, decoded, without empty ones. */
export function segments(url: URL): string[] {
  return url.pathname.split("/").filter(Boolean).map(decodePercent);
}

export function hostPort(url: URL): string {
  return url.port ? `${url.hostname}:${url.port}` : url.hostname;
}

export function requireHost(params: Params, service: string, url: URL): void {
  if (!url.hostname) fail(`${service}://: the host is missing (form: ${params.form(service)})`);
}

/** `https://host[:port]` unless `disabletls=yes`. */
export function origin(url: URL, params: Params, option = "disabletls"): string {
  return `${params.flag(option, false) ? "http" : "https"}://${hostPort(url)}`;
}

/** Path segments and query values that look like tokens. */
export function tokenLike(parts: readonly string[]): string[] {
  return parts.filter(looksLikeToken);
}

/** The fields of `values` that are given (not empty). */
export function optional<T extends Record<string, string | undefined>>(values: T): Partial<T> {
  return Object.fromEntries(Object.entries(values).filter(([, v]) => v !== undefined && v !== "")) as Partial<T>;
}

export function parseWrapped(text: string, scheme: string, service: string): URL {
  try {
    const url = new URL(`${scheme}://${text.slice(text.indexOf("://") + 3)}`);
    if (!url.hostname) throw new Error("no host");
    return url;
  } catch {
    return fail(`${service}+${scheme}://: the wrapped URL does not parse`);
  }
}

export type Parser = (url: URL, params: Params) => NotificationTarget;

/** A service that also takes a wrapped http(s) URL (`generic+https://...`): parsed from it, its query in `params`. */
export type WrappedParser = (url: URL, scheme: string, params: Params) => NotificationTarget;
