/**
 * The HTTP API (docs/api.md). One Elysia catch-all route, with Elysia's body parser off, hands
 * every request to our own small table of endpoints: health, metrics, the actions (update, check,
 * skip, rollback, snooze) and the dashboard's reads (containers, progress, history, peers, a
 * peer's endpoints, the page's files: dashboard.ts). The table applies the checks in their
 * documented order: path and method (404 / 405), auth (401; 403 for a viewer's action: auth.ts),
 * then the endpoint's own checks
 * (415, 413, 400, 409). Elysia's per-route hooks would run auth after parsing, answer 422 for
 * validation and never 415, so the order is kept here in plain code. Handlers only call the
 * runner and the metrics; nothing below the API sees Elysia's Context.
 */

import type { Server } from "bun";
import { Elysia } from "elysia";
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
import { answer, type Endpoint, getEndpoint, type Handler, oneContainer } from "./endpoint.ts";
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

function buildEndpoints(deps: ApiDeps, dashboard: [string, Endpoint][], log: Logger): Map<string, Endpoint> {
  const api = deps.config.http_api;
  const health: Handler = (request) => {
    const headers: Record<string, string> = { "content-type": "application/json" };
    const challenge = deps.ownerNonce === undefined ? null : request.headers.get(OWNER_CHALLENGE_HEADER);
    if (isOwnerChallenge(challenge)) headers[OWNER_PROOF_HEADER] = ownerProof(deps.ownerNonce!, challenge);
    return new Response(HEALTH_BODY, { headers });
  };
  const metrics: Handler = (request) => metricsResponse(deps.metrics, request.headers.get("accept"));
  /** Runs a cycle for the request's filter; `render` shapes the report into the answer. */
  const cycle =
    (dryRun: boolean | undefined, render: (report: SessionReport) => unknown): Handler =>
    async (request, target, server) => {
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
  const update: Handler = async (request, target, server) => {
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
  const skip: Handler = async (request, target, server) => {
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
  const rollback: Handler = async (request, target, server, who) => {
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
  const acceptSigner: Handler = async (request, target, _server, who) => {
    const fields = await parseRequestFields(request, new URLSearchParams(target.query), ["container"] as const);
    const trigger = who?.name === HANDED_OVER_NAMES["/v1/signers/accept"] ? "run_once" : undefined;
    return answer(await deps.runner.acceptSigner(oneContainer(fields.container), trigger));
  };
  return new Map([
    ["/v1/health", getEndpoint(true, false, health)],
    ["/v1/metrics", getEndpoint(api.metrics, !api.metrics_no_auth, metrics)],
    ["/v1/update", { enabled: api.update, authenticated: true, methods: { POST: update }, allow: "POST" }],
    ["/v1/check", { enabled: api.update, authenticated: true, methods: { POST: check }, allow: "POST" }],
    ["/v1/skip", { enabled: api.update, authenticated: true, methods: { POST: skip }, allow: "POST" }],
    ["/v1/rollback", { enabled: api.update, authenticated: true, methods: { POST: rollback }, allow: "POST" }],
    [
      "/v1/signers/accept",
      { enabled: api.update, authenticated: true, methods: { POST: acceptSigner }, allow: "POST" },
    ],
    ["/v1/data-guard", dataGuardEndpoint(true, deps.dataCopies)],
    ...dashboard,
  ]);
}

/** Every method but GET and HEAD changes something: an action, refused to a viewer. */
const isAction = (method: string): boolean => method !== "GET" && method !== "HEAD";

function serveEndpoint(
  endpoint: Endpoint | undefined,
  who: (request: Request, server: Server<unknown> | null) => Principal | null,
  request: Request,
  target: RequestTarget,
  server: Server<unknown> | null,
  audit: (principal: Principal, request: Request, target: RequestTarget, response: Promise<Response>) => void,
): Response | Promise<Response> {
  if (!endpoint?.enabled) return errorResponse(notFound());
  const handler = Object.hasOwn(endpoint.methods, request.method) ? endpoint.methods[request.method] : undefined;
  if (!handler) return errorResponse(methodNotAllowed(), { allow: endpoint.allow });
  if (!endpoint.authenticated) return handler(request, target, server);
  const principal = who(request, server);
  if (!principal) return errorResponse(unauthorized());
  if (!isAction(request.method)) return handler(request, target, server, principal);
  if (principal.role !== "admin") return errorResponse(forbidden());
  const crossSite = principal.via === "proxy" ? notFromThePage(request) : null;
  if (crossSite !== null)
    return errorResponse(
      new SvcError(
        "forbidden",
        `forbidden: a user the identity proxy signed in acts only from svc's own page, and ${crossSite} (docs/security.md)`,
      ),
    );
  const response = Promise.resolve().then(() => handler(request, target, server, principal));
  audit(principal, request, target, response);
  return response;
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
  const dashboard = dashboardRoutes({ ...deps, log });
  const endpoints = buildEndpoints(deps, dashboard.exact, log);
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

  const accessOn = deps.access?.enabled === true;
  // server.port is a native getter that cost half a microsecond a request: read once per server
  // (a self-update's reclaim listens anew).
  let portOf: { server: Server<unknown> | null; port: number | undefined } = { server: null, port: undefined };
  const serverPort = (server: Server<unknown> | null): number | undefined => {
    if (portOf.server !== server) portOf = { server, port: server?.port };
    return portOf.port;
  };

  // Synchronous when the handler is (health, metrics): no promise on the hot path.
  const route = (request: Request, server: Server<unknown> | null): Response | Promise<Response> => {
    const startedAt = accessOn ? performance.now() : 0;
    const target = requestTarget(request.url);
    const endpoint = endpoints.get(target.path) ?? dashboard.match(target.path);
    const finish = (response: Response): Response => {
      if (endpoint?.authenticated) keptPrivate(response);
      if (accessOn)
        writeAccess(
          { request, target, remote: server?.requestIP(request), serverPort: serverPort(server), startedAt },
          response.status,
        );
      return response;
    };
    let result: Response | Promise<Response>;
    try {
      result = serveEndpoint(endpoint, who, request, target, server, audit);
    } catch (error) {
      return finish(failed(error, request));
    }
    if (result instanceof Response) return finish(result);
    return result.then(finish, (error) => finish(failed(error, request)));
  };

  return (
    new Elysia({ strictPath: true })
      // Only Elysia's own failures reach this: every route catches its errors itself.
      .onError(({ error, request }) => failed(error, request))
      .all("*", ({ request, server }) => route(request, server), { parse: "none" })
  );
}

export type App = ReturnType<typeof createApp>;

/**
 * What an endpoint that needs the token answers (and its refusals) is kept by no cache, a
 * browser's or a proxy's, and never taken for another type than it says (docs/security.md).
 */
function keptPrivate(response: Response): void {
  response.headers.set("cache-control", "no-store");
  response.headers.set("x-content-type-options", "nosniff");
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
