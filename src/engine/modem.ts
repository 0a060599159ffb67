/**
 * dockerode's transport (its `modem` option) on Bun's fetch, in place of docker-modem.
 *
 * Why: docker-modem is built on node:http and node:https. On Bun those modules are JavaScript
 * compiled at run time on top of the native HTTP client; loading and using them cost svc ~10 MiB
 * of resident memory and a slower request, while fetch speaks HTTP over the engine's unix socket
 * (and TCP, with TLS) natively. The build leaves docker-modem out (build.ts).
 *
 * It keeps docker-modem's `dial(options, callback)` contract, as dockerode's methods use it: a
 * path ending in `?` takes a query from `options._query`, else from the options themselves
 * (objects as JSON); a POST sends `options._body`, else the options themselves, as JSON;
 * `statusCodes` (status -> true means success, a text names the error), `isStream` (the answer is
 * handed over unread, as an async iterable of bytes), `authconfig` (the X-Registry-Auth header),
 * `registryconfig` (a build's X-Registry-Config header)
 * and `abortSignal`. An answer that is not JSON comes back as bytes (a container's logs). Errors
 * carry `statusCode` and the engine's `json` as docker-modem's do; a request that gets no answer
 * rejects with fetch's error.
 */
import type { Endpoint, TlsMaterial } from "./connection.ts";

export interface DialOptions {
  path: string;
  method: string;
  options?: Record<string, unknown> & { _query?: Record<string, unknown>; _body?: unknown };
  statusCodes: Record<number, true | string>;
  isStream?: boolean;
  /** the request's body as it is (a tar for PUT /containers/{id}/archive), instead of JSON options */
  file?: Blob | ReadableStream<Uint8Array>;
  authconfig?: unknown;
  /** logins by registry for a build's pulls (the X-Registry-Config header) */
  registryconfig?: unknown;
  abortSignal?: AbortSignal;
}

/** An answer with a status the caller did not expect, shaped like docker-modem's errors. */
export class EngineStatusError extends Error {
  constructor(
    readonly statusCode: number,
    readonly json: unknown,
  ) {
    super(engineMessage(json, statusCode));
  }
}

export type DialCallback = (error: Error | null, data?: unknown) => void;

export class FetchModem {
  /** dockerode sets this to the Promise implementation it was given. */
  Promise: PromiseConstructor = Promise;
  private readonly origin: string;
  private readonly init: BunFetchRequestInit;

  /** `version` ("v1.43") prefixes every path, as docker-modem's option of that name does. */
  constructor(
    endpoint: Endpoint,
    tls: TlsMaterial | null,
    private readonly version?: string,
  ) {
    this.origin = originOf(endpoint, tls !== null);
    // No idle timeout of fetch's own: a wait for a container to stop is silent for as long as
    // the stop takes. The engine room sets its own deadline for each answer (abortSignal).
    this.init = { timeout: false, decompress: false };
    if (endpoint.kind === "unix") this.init.unix = endpoint.socketPath;
    if (tls) this.init.tls = { ca: tls.ca, cert: tls.cert, key: tls.key, rejectUnauthorized: tls.verify };
  }

  dial(options: DialOptions, callback: DialCallback): void {
    this.send(options).then(
      (data) => callback(null, data),
      (error: Error) => callback(error),
    );
  }

  /** `GET /_ping`'s headers (the engine's kind and API version: identity.ts); null for another status than 200. */
  async ping(abortSignal: AbortSignal): Promise<Headers | null> {
    const response = await fetch(this.url({ path: "/_ping", method: "GET", statusCodes: {} }), {
      ...this.init,
      method: "GET",
      signal: abortSignal,
    });
    // the body is "OK" (or a proxy's page): not read, the connection given back
    await response.body?.cancel();
    return response.status === 200 ? response.headers : null;
  }

  private async send(options: DialOptions): Promise<unknown> {
    const response = await fetch(this.url(options), this.requestInit(options));
    if (options.statusCodes[response.status] !== true)
      throw new EngineStatusError(response.status, parseBody(await response.text()));
    if (options.isStream) return response.body ?? emptyStream();
    if (/json/i.test(response.headers.get("content-type") ?? "")) return parseBody(await response.text());
    const bytes = Buffer.from(await response.arrayBuffer());
    return bytes.length === 0 ? null : bytes;
  }

  private url(options: DialOptions): string {
    const [path] = options.path.split("?", 1);
    const query = options.path.includes("?") ? queryString(options.options?._query ?? ownOptions(options.options)) : "";
    return `${this.origin}${this.version ? `/${this.version}` : ""}${path}${query ? `?${query}` : ""}`;
  }

  private requestInit(options: DialOptions): BunFetchRequestInit {
    const headers: Record<string, string> = {};
    const init: BunFetchRequestInit = { ...this.init, method: options.method, headers, signal: options.abortSignal };
    if (options.file !== undefined) {
      headers["content-type"] = "application/x-tar";
      init.body = options.file;
      if (options.registryconfig)
        headers["x-registry-config"] = Buffer.from(JSON.stringify(options.registryconfig)).toString("base64");
      return init;
    }
    const body =
      options.method === "POST" && options.options ? (options.options._body ?? ownOptions(options.options)) : undefined;
    const json = body === undefined ? undefined : JSON.stringify(body);
    if (json !== undefined && json !== "{}") {
      headers["content-type"] = "application/json";
      init.body = json;
    }
    if (options.authconfig) headers["x-registry-auth"] = registryAuthHeader(options.authconfig);
    return init;
  }
}

/** The options that are the request's own: not the transport's (signal, credentials). */
function ownOptions(options: Record<string, unknown> | undefined): Record<string, unknown> {
  const own: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(options ?? {})) {
    if (key !== "abortSignal" && key !== "authconfig" && key !== "_query" && key !== "_body" && value !== undefined)
      own[key] = value;
  }
  return own;
}

/** A query as docker-modem writes one: objects as JSON, everything else as text. */
function queryString(query: Record<string, unknown>): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) {
    if (value === undefined) continue;
    params.append(
      key,
      value !== null && typeof value === "object" && !Array.isArray(value) ? JSON.stringify(value) : String(value),
    );
  }
  return params.toString();
}

function originOf(endpoint: Endpoint, tls: boolean): string {
  if (endpoint.kind === "unix") return "http://localhost";
  const host = endpoint.host.includes(":") ? `[${endpoint.host}]` : endpoint.host;
  return `${tls ? "https" : "http"}://${host}:${endpoint.port}`;
}

/** The engine decodes X-Registry-Auth as padded URL-safe base64 of the JSON credentials. */
export function registryAuthHeader(auth: unknown): string {
  return Buffer.from(JSON.stringify(auth)).toString("base64").replaceAll("+", "-").replaceAll("/", "_");
}

/** JSON when it is JSON (the engine's answers and errors), the text otherwise, null when empty. */
function parseBody(text: string): unknown {
  if (text === "") return null;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function engineMessage(json: unknown, status: number): string {
  const message = (json as { message?: unknown } | null)?.message;
  if (typeof message === "string") return message;
  if (typeof json === "string" && json.trim()) return json.trim();
  return `HTTP ${status}`;
}

function emptyStream(): ReadableStream<Uint8Array> {
  return new ReadableStream({ start: (controller) => controller.close() });
}
