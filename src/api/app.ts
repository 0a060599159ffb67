/**
 * The HTTP API (docs/api.md) as Elysia routes: health, metrics, the actions (update, check, skip,
 * rollback, snooze) and the dashboard's reads (containers, progress, history, peers, a peer's
 * endpoints, the page's files: dashboard.ts). Each endpoint is one route per method, with
 * Elysia's body parser off (the handlers read the body themselves: update-request.ts); the checks
 * run in their documented order: Elysia's router finds the path and method (404: the fallback
 * route; 405: a route for the other methods of a known path), then `guarded` checks the token
 * (401; 403 for a viewer's action: auth.ts) before the handler reads anything, then the handler's
 * own checks (415, 413, 400, 409). Handlers only call the runner and the metrics; nothing below
 * the API sees Elysia's Context.
 */

import type { Server } from "bun";
import { type Context, Elysia } from "elysia";
import type { Config } from "../config/index.ts";
import { parseBoolean } from "../config/values.ts";
import { httpStatusOf, SvcError, toSvcError } from "../core/errors.ts";
import type { CopyList } from "../dataguard/index.ts";
import type { AccessLog, AuditLog, Logger } from "../log/index.ts";
import type { Metrics } from "../metrics/index.ts";
import {
  isOwnerChallenge,
  OWNER_CHALLENGE_HEADER,
  OWNER_PROOF_HEADER,
  OWNER_REQUEST_HEADER,
  ownerProof,
  ownerRequestVerifier,
} from "../state/owner.ts";
import type { ContainerActions, CycleRunner, QueuedRequest, SessionReport } from "../updater/types.ts";
import type { LiveProgress } from "../updater/views/live.ts";
import type { DashboardActions } from "../updater/views/overview.ts";
import { accessFields, type RequestInfo, type RequestTarget, requestTarget } from "./access.ts";
import { type Authenticate, createAuthenticator, type Principal } from "./auth.ts";
import { dashboardRoutes } from "./dashboard.ts";
import { dataGuardEndpoint } from "./data-guard.ts";
import { answer, type Endpoint, getEndpoint, type Handler, oneContainer, postEndpoint } from "./endpoint.ts";
import { errorResponse, forbidden, jsonResponse, methodNotAllowed, notFound, unauthorized } from "./http.ts";
import { metricsResponse } from "./metrics.ts";
import { notFromThePage } from "./same-origin.ts";
import { parseRequestFields, parseUpdateRequest } from "./update-request.ts";

export interface ApiDeps {
  config: Config;
  runner: CycleRunner & ContainerActions & DashboardActions;
  /** the running cycle's steps (GET /v1/progress); absent: only whether one runs */
  progress?: LiveProgress;
  /** the kept session reports (GET /v1/history); absent: none */
  history?: { list(): readonly SessionReport[] };
  metrics: Metrics;
  log: Logger;
  /** absent: no access log is written */
  access?: AccessLog;
  /** where an action asked of the API is written with who asked (absent: nowhere) */
  audit?: AuditLog;
  /** the nonce of the state file's owner claim: GET /v1/health proves knowing it to `svc rollback` (state/owner.ts) */
  ownerNonce?: string;
  /** the data guard's copies (GET and DELETE /v1/data-guard); absent: none listed */
  dataCopies?: CopyList;
}

const HEALTH_BODY = JSON.stringify({ status: "ok" });

function apiEndpoints(deps: ApiDeps, log: Logger): Endpoint[] {
  const api = deps.config.http_api;
  const health: Handler = ({ request }) => {
    const headers: Record<string, string> = { "content-type": "application/json" };
    const challenge = deps.ownerNonce === undefined ? null : request.headers.get(OWNER_CHALLENGE_HEADER);
    if (isOwnerChallenge(challenge)) headers[OWNER_PROOF_HEADER] = ownerProof(deps.ownerNonce!, challenge);
    return new Response(HEALTH_BODY, { headers });
  };
  const metrics: Handler = ({ request }) => metricsResponse(deps.metrics, request.headers.get("accept"));
  /** Runs a cycle for the request's filter; `render` shapes the report into the answer. */
  const cycle =
    (dryRun: boolean | undefined, render: (report: SessionReport) => unknown): Handler =>
    async ({ request, target, server }) => {
      const filter = await parseUpdateRequest(request, new URLSearchParams(target.query));
      // The answer comes when the cycle ends, which may take minutes: lift the idle timeout
      // for this request only, so slow clients elsewhere are still cut off.
      server?.timeout(request, 0);
      return answer(await deps.runner.run("api", filter, dryRun === undefined ? undefined : { dryRun }), render);
    };
  /**
   * An update asked for while a cycle runs is queued and runs after it, as a person who pressed
   * Update expects: answered at once with 202 and the queued request (GET /v1/progress lists it
   * until it starts); asked for when none runs, answered with its report once it ends.
   */
  const update: Handler = async ({ request, target, server }) => {
    const filter = await parseUpdateRequest(request, new URLSearchParams(target.query));
    let toldQueued: (queued: QueuedRequest) => void = () => {};
    const queued = new Promise<QueuedRequest>((resolve) => {
      toldQueued = resolve;
    });
    // the answer comes when the cycle ends, which may take minutes: lift the idle timeout for this
    // request only, so slow clients elsewhere are still cut off (a queued one is answered at once)
    server?.timeout(request, 0);
    const outcome = deps.runner.run("api", filter, { queue: true, onQueued: (entry) => toldQueued(entry) });
    const first = await Promise.race([outcome.then((report) => ({ report })), queued.then((entry) => ({ entry }))]);
    if ("entry" in first) {
      // its report goes where every cycle's goes (history, notifications); a failure is told here
      outcome.catch((error) =>
        log.warn("queued update failed", { error: toSvcError(error).message, container: first.entry.filter.container }),
      );
      return jsonResponse({ queued: first.entry }, 202);
    }
    return answer(first.report);
  };
  const check = cycle(true, (report) => report);
  const skip: Handler = async ({ request, target, server }) => {
    const fields = await parseRequestFields(request, new URLSearchParams(target.query), [
      "container",
      "digest",
      "tag",
    ] as const);
    const container = oneContainer(fields.container);
    const given = (fields.digest?.length ?? 0) + (fields.tag?.length ?? 0);
    if (given > 1) throw new SvcError("bad_request", "name at most one digest or tag");
    // without a digest or tag a dry run finds the one to skip, which may take as long as a cycle
    server?.timeout(request, 0);
    return answer(await deps.runner.skip(container, { digest: fields.digest?.[0], tag: fields.tag?.[0] }));
  };
  const rollback: Handler = async ({ request, target, server, who }) => {
    const fields = await parseRequestFields(request, new URLSearchParams(target.query), [
      "container",
      "with_data",
    ] as const);
    const container = oneContainer(fields.container);
    const withData = fields.with_data === undefined ? false : parseBoolean(fields.with_data.join(","));
    if (withData === undefined) throw new SvcError("bad_request", 'with_data must be "true" or "false"');
    // the rollback watches the container it puts back, as an update does
    server?.timeout(request, 0);
    // `svc rollback` handing its work over is the command line's rollback, said so in the records
    const trigger = who?.name === HANDED_OVER_NAMES["/v1/rollback"] ? "run_once" : undefined;
    return answer(await deps.runner.rollback(container, trigger, withData ? { withData } : undefined));
  };
  const acceptSigner: Handler = async ({ request, target, who }) => {
    const fields = await parseRequestFields(request, new URLSearchParams(target.query), ["container"] as const);
    const trigger = who?.name === HANDED_OVER_NAMES["/v1/signers/accept"] ? "run_once" : undefined;
    return answer(await deps.runner.acceptSigner(oneContainer(fields.container), trigger));
  };
  return [
    getEndpoint("/v1/health", true, false, health),
    getEndpoint("/v1/metrics", api.metrics, !api.metrics_no_auth, metrics),
    postEndpoint("/v1/update", api.update, update),
    postEndpoint("/v1/check", api.update, check),
    postEndpoint("/v1/skip", api.update, skip),
    postEndpoint("/v1/rollback", api.update, rollback),
    postEndpoint("/v1/signers/accept", api.update, acceptSigner),
    dataGuardEndpoint(deps.dataCopies),
  ];
}

/** Every method but GET and HEAD changes something: an action, refused to a viewer. */
const isAction = (method: string): boolean => method !== "GET" && method !== "HEAD";

/**
 * Checks the caller before the handler reads anything: the token (401), a viewer's action (403),
 * a proxy user's action from another site (403); an accepted action goes to the audit log.
 */
function guarded(
  handler: Handler,
  who: (request: Request, server: Server<unknown> | null) => Principal | null,
  audit: (principal: Principal, request: Request, target: RequestTarget, response: Promise<Response>) => void,
): Handler {
  return (call) => {
    const { request, server } = call;
    const principal = who(request, server);
    if (!principal) return errorResponse(unauthorized());
    if (!isAction(request.method)) return handler({ ...call, who: principal });
    if (principal.role !== "admin") return errorResponse(forbidden());
    const crossSite = principal.via === "proxy" ? notFromThePage(request) : null;
    if (crossSite !== null)
      return errorResponse(
        new SvcError(
          "forbidden",
          `forbidden: a user the identity proxy signed in acts only from svc's own page, and ${crossSite} (docs/security.md)`,
        ),
      );
    const response = Promise.resolve().then(() => handler({ ...call, who: principal }));
    audit(principal, call.request, call.target, response);
    return response;
  };
}

/** Who sent a request: its token, or the user a trusted proxy names (docs/dashboard.md, roles). */
function principalOf(
  authenticate: Authenticate,
  header: string | undefined,
  handedOver: (request: Request) => Principal | null,
) {
  return (request: Request, server: Server<unknown> | null): Principal | null =>
    handedOver(request) ??
    authenticate(
      request.headers.get("authorization"),
      () => (header ? request.headers.get(header) : null),
      () => server?.requestIP(request)?.address,
    );
}

/**
 * The requests a proof of the state folder's secret may make (state/owner.ts), without a body,
 * and who the audit log says made them.
 */
const HANDED_OVER_NAMES: Record<string, string> = {
  "/v1/rollback": "svc rollback (the state folder's proof)",
  "/v1/signers/accept": "svc accept-signer (the state folder's proof)",
};

/**
 * `svc rollback` or `svc accept-signer` handing its work over: a POST to its endpoint with no
 * body whose proof header shows the owner file's nonce (never a token: docs/security.md).
 * Without an owner nonce, nothing.
 */
function handedOverBy(ownerNonce: string | undefined): (request: Request) => Principal | null {
  if (ownerNonce === undefined) return () => null;
  const verify = ownerRequestVerifier(ownerNonce);
  return (request) => {
    const proof = request.headers.get(OWNER_REQUEST_HEADER);
    if (proof === null || request.method !== "POST") return null;
    const target = requestTarget(request.url);
    const bodiless =
      request.body === null &&
      (request.headers.get("content-length") ?? "0") === "0" &&
      !request.headers.has("transfer-encoding");
    const name = Object.hasOwn(HANDED_OVER_NAMES, target.path) ? HANDED_OVER_NAMES[target.path] : undefined;
    if (name === undefined || !bodiless) return null;
    return verify(proof, request.method, target.path + target.query) ? { role: "admin", name } : null;
  };
}

export function createApp(deps: ApiDeps) {
  const log = deps.log.child("api");
  const who = principalOf(
    createAuthenticator(deps.config.http_api),
    deps.config.http_api.trusted_proxy_header,
    handedOverBy(deps.ownerNonce),
  );
  /**
   * Who asked for an action: one audit line as it is accepted (before the engine actions it
   * causes, and written even if svc stops meanwhile), one more with the error when it fails.
   */
  const audit = (principal: Principal, request: Request, target: RequestTarget, response: Promise<Response>): void => {
    if (!deps.audit) return;
    const entry = {
      action: "request" as const,
      trigger: "api",
      actor: principal.name,
      request: `${request.method} ${target.path}`,
    };
    deps.audit.record(entry);
    response.then(
      (answered) => answered.ok || deps.audit?.record({ ...entry, error: `answered ${answered.status}` }),
      (error) =>
        deps.audit?.record({ ...entry, error: `answered ${httpStatusOf(error)}: ${toSvcError(error).message}` }),
    );
  };

  /** Expected errors become their status; anything at 500 or above is logged (never answered with a stack). */
  const failed = (error: unknown, request: Request): Response => {
    const svcError = toSvcError(error);
    if (httpStatusOf(svcError) >= 500) {
      log.error("request failed", {
        method: request.method,
        path: requestTarget(request.url).path,
        kind: svcError.kind,
        error: svcError.message,
      });
    }
    return errorResponse(svcError);
  };

  const writeAccess = (info: RequestInfo, status: number): void => {
    try {
      deps.access?.write(accessFields(info, status));
    } catch (error) {
      // A failing access log must never fail the request it describes.
      log.warn("access log write failed", { error: toSvcError(error).message });
    }
  };

  const app = routerOf(failed);
  if (deps.access?.enabled) logAccess(app, writeAccess);
  const guard = (handler: Handler) => guarded(handler, who, audit);
  for (const endpoint of [...apiEndpoints(deps, log), ...dashboardRoutes({ ...deps, log })])
    mount(app, endpoint, guard);
  return app.all("*", () => errorResponse(notFound()), { parse: "none" });
}

/**
 * The router, before its routes: what a handler throws becomes `failed`'s answer. Routes stay in
 * Elysia's router: its Bun adapter would hand them to Bun's own, where the route for every other
 * method (a known path's 405) takes the place of the path's routes.
 */
const routerOf = (failed: (error: unknown, request: Request) => Response) =>
  new Elysia({ strictPath: true, systemRouter: false }).onError(({ error, request }) => failed(error, request));
type Router = ReturnType<typeof routerOf>;

/**
 * One endpoint as Elysia routes, with the body parser off: a route per method, and one for every
 * other method (405 with Allow; a GET answers HEAD too). A parameter that names nothing is 404
 * whatever the method. What an endpoint that needs the token answers is kept private.
 */
function mount(app: Router, endpoint: Endpoint, guard: (handler: Handler) => Handler): void {
  if (!endpoint.enabled) return;
  const hooks = { parse: "none" as const, ...(endpoint.authenticated && { mapResponse: keptPrivate }) };
  const allow = Object.keys(endpoint.methods)
    .flatMap((method) => (method === "GET" ? ["GET", "HEAD"] : [method]))
    .join(", ");
  // async, so that Elysia awaits every answer before its hooks and catches what it throws: Elysia
  // tells an async handler by its type, else by guessing from its source text
  const route =
    (handler: Handler) =>
    async ({ request, server, params }: Context) =>
      endpoint.names && !endpoint.names(params)
        ? errorResponse(notFound())
        : handler({ request, server, params, target: requestTarget(request.url) });
  for (const [method, handler] of Object.entries(endpoint.methods))
    app.route(method, endpoint.path, route(endpoint.authenticated ? guard(handler) : handler), hooks);
  app.all(
    endpoint.path,
    route(() => errorResponse(methodNotAllowed(), { allow })),
    hooks,
  );
}

/**
 * One access-log line per answer (docs/api.md, "Logs the API writes"), timed from the request's
 * arrival; its hooks are only there when the access log is on.
 */
function logAccess(app: Router, write: (info: RequestInfo, status: number) => void): void {
  const arrived = new WeakMap<Request, number>();
  // server.port is a native getter that cost half a microsecond a request: read once per server
  // (a self-update's reclaim listens anew).
  let portOf: { server: Server<unknown> | null; port: number | undefined } = { server: null, port: undefined };
  const serverPort = (server: Server<unknown> | null): number | undefined => {
    if (portOf.server !== server) portOf = { server, port: server?.port };
    return portOf.port;
  };
  app
    .onRequest(({ request }) => {
      arrived.set(request, performance.now());
    })
    .mapResponse(({ request, server, responseValue, set }) => {
      const info = {
        request,
        target: requestTarget(request.url),
        remote: server?.requestIP(request),
        serverPort: serverPort(server),
        startedAt: arrived.get(request) ?? performance.now(),
      };
      write(info, responseValue instanceof Response ? responseValue.status : Number(set.status ?? 200));
    });
}

export type App = ReturnType<typeof createApp>;

/**
 * What an endpoint that needs the token answers (and its refusals) is kept by no cache, a
 * browser's or a proxy's, and never taken for another type than it says (docs/security.md).
 */
function keptPrivate({ responseValue }: { responseValue: unknown }): void {
  if (!(responseValue instanceof Response)) return;
  responseValue.headers.set("cache-control", "no-store");
  responseValue.headers.set("x-content-type-options", "nosniff");
}

/**
 * Starts listening. Elysia's defaults are overridden where they matter: `reusePort` would let
 * a second svc share the port silently instead of failing, and development mode would show
 * error pages. Throws SvcError "startup" (exit 2) when the port cannot be bound.
 */
export function listen(
  app: App,
  port: number,
  hostname = "0.0.0.0",
  options: { idleTimeoutSeconds?: number } = {},
): Server<unknown> {
  try {
    app.listen({ port, hostname, reusePort: false, development: false, idleTimeout: options.idleTimeoutSeconds ?? 30 });
  } catch (error) {
    const reason = toSvcError(error).message;
    const inUse = /in use|EADDRINUSE/i.test(`${reason} ${(error as { code?: string })?.code ?? ""}`);
    const what = inUse ? "the port is already in use" : reason;
    throw new SvcError("startup", `cannot listen on ${hostname}:${port}: ${what}`, { cause: error });
  }
  if (!app.server) throw new SvcError("startup", `cannot listen on ${hostname}:${port}`);
  return app.server;
}
