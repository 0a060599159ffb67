/**
 * The endpoints the dashboard reads and acts through (docs/api.md, docs/dashboard.md), and the
 * page itself. What the page shows is read with the token (GET /v1/containers, /v1/progress,
 * /v1/history, /v1/peers, /v1/summary, /v1/session: on with `http_api.update` or `http_api.ui`;
 * a viewer's token reads them too); what changes something
 * needs `http_api.update` (POST /v1/snooze, as the other actions, here and through a peer). The
 * page's own files need no token: they hold nothing but the page.
 */
import { hostname } from "node:os";
import type { Config } from "../config/index.ts";
import { parseDuration } from "../config/index.ts";
import { SvcError } from "../core/errors.ts";
import type { Logger } from "../log/index.ts";
import type { Metrics } from "../metrics/index.ts";
import type { RateLimitView } from "../ui/page/api.ts";
import { countRows } from "../ui/summary.ts";
import type { CycleRunner, SessionReport, UpdateFilter } from "../updater/types.ts";
import { type LiveProgress, liveProgress } from "../updater/views/live.ts";
import type { DashboardActions, Overview } from "../updater/views/overview.ts";
import { answer, type Endpoint, getEndpoint, type Handler, oneContainer } from "./endpoint.ts";
import { errorResponse, jsonResponse, notFound } from "./http.ts";
import { createPeers, PEER_ENDPOINTS, type PeerMethod, type Peers } from "./peers.ts";
import { parseRequestFields, parseUpdateRequest } from "./update-request.ts";

export interface DashboardDeps {
  config: Config;
  metrics: Metrics;
  log: Logger;
  runner: CycleRunner & DashboardActions;
  progress?: LiveProgress;
  /** the kept session reports, oldest first (GET /v1/history) */
  history?: { list(): readonly SessionReport[] };
}

/**
 * GET /v1/containers: the overview, with the host it describes and whether actions are on, and
 * per container what the history says last.
 */
function containersAnswer(deps: DashboardDeps, host: string, { lastOutcomes }: Timeline) {
  return (overview: Overview) => {
    const last = lastOutcomes(deps.history?.list() ?? []);
    const containers = overview.containers.map((c) => ({
      ...c,
      ...(last.get(c.name) ?? { last_cycle: null, last_update: null }),
    }));
    return {
      checked_at: overview.checked_at,
      host,
      update: deps.config.http_api.update,
      containers,
      excluded: overview.excluded,
    };
  };
}

type ContainersAnswer = ReturnType<ReturnType<typeof containersAnswer>> & { rate_limits: RateLimitView[] };

/** Every registry whose answers carried a rate limit, with the images a check would ask it for. */
async function rateLimits(metrics: Metrics, containers: readonly { image: string }[]): Promise<RateLimitView[]> {
  const known = Object.entries(metrics.rateLimitsOf());
  if (known.length === 0) return [];
  // loaded with the updater by then (the overview ran): nothing more at startup
  const { parseReference } = await import("../registry/reference.ts");
  const images = new Map<string, Set<string>>();
  for (const { image } of containers) {
    try {
      const ref = parseReference(image);
      if (!images.has(ref.registry)) images.set(ref.registry, new Set());
      images.get(ref.registry)!.add(ref.normalized);
    } catch {
      // a reference that does not parse is never checked
    }
  }
  return known.map(([registry, limit]) => ({ registry, ...limit, needed: images.get(registry)?.size ?? 0 }));
}

/** A summary older than this is counted again (a dry run): home dashboards ask every few seconds. */
export const SUMMARY_MAX_AGE_MS = 5 * 60_000;

/** Counted again when old, or when a real cycle has ended since (it may have changed everything). */
function summaryIsOld(last: ContainersAnswer, reports: readonly SessionReport[], now = Date.now()): boolean {
  const checkedAt = Date.parse(last.checked_at);
  const newest = reports.at(-1);
  return now - checkedAt > SUMMARY_MAX_AGE_MS || (newest !== undefined && Date.parse(newest.finished_at) > checkedAt);
}

/** GET /v1/summary (docs/api.md): small and stable, for home dashboards. */
export function summaryOf(last: ContainersAnswer) {
  return { host: last.host, checked_at: last.checked_at, ...countRows(last.containers) };
}

/** The dashboard's endpoints: exact paths, and the ones that take a name (the page's files, a peer's endpoints). */
export function dashboardRoutes(deps: DashboardDeps): {
  exact: [string, Endpoint][];
  match(path: string): Endpoint | undefined;
} {
  const peers = createPeers(deps.config, deps.metrics, deps.log);
  const asset = uiAssetEndpoint(deps.config.http_api.ui);
  const throughPeer = peerEndpoint(deps.config, peers);
  return { exact: dashboardEndpoints(deps, peers), match: (path) => asset(path) ?? throughPeer(path) };
}

function dashboardEndpoints(deps: DashboardDeps, peers: Peers): [string, Endpoint][] {
  const api = deps.config.http_api;
  const reads = api.update || api.ui;
  const host = hostname();
  /** the last answer of an unfiltered GET /v1/containers: what GET /v1/summary counts */
  let lastAnswer: ContainersAnswer | null = null;
  const overview = async (filter: UpdateFilter, fresh = false): Promise<ContainersAnswer | null> => {
    const result = await deps.runner.overview(filter, { fresh });
    if (result === null) return null;
    const shaped = {
      ...containersAnswer(deps, host, await loadTimeline())(result),
      rate_limits: await rateLimits(deps.metrics, result.containers),
    };
    if (!filter.container?.length && !filter.image?.length && !filter.stack?.length) lastAnswer = shaped;
    return shaped;
  };
  const containers: Handler = async (request, target, server) => {
    const filter = await parseUpdateRequest(request, new URLSearchParams(target.query));
    // a dry run asks the registries: as long as a cycle's checks may take
    server?.timeout(request, 0);
    // a check asked for now (the page's fetches say so): no recent overview is reused, one under way is shared
    const fresh = /\bno-cache\b/i.test(request.headers.get("cache-control") ?? "");
    return answer(await overview(filter, fresh));
  };
  const summary: Handler = async (request, _target, server) => {
    if (!lastAnswer || summaryIsOld(lastAnswer, deps.history?.list() ?? [])) {
      server?.timeout(request, 0);
      if ((await overview({})) === null && !lastAnswer) return answer(null);
    }
    return jsonResponse(summaryOf(lastAnswer!));
  };
  const session: Handler = (_request, _target, _server, who) =>
    jsonResponse({ role: who?.role ?? "viewer", name: who?.name ?? "", update: api.update });
  // without a listener wired (tests of other endpoints), a running cycle is told without its steps
  const live = deps.progress ?? liveProgress();
  const progress: Handler = () =>
    jsonResponse({ running: live.running(deps.runner.busy), queued: deps.runner.queuedRequests() });
  const snooze: Handler = async (request, target) => {
    const fields = await parseRequestFields(request, new URLSearchParams(target.query), ["container", "for"] as const);
    const container = oneContainer(fields.container);
    const text = fields.for?.length === 1 ? fields.for[0]! : undefined;
    const ms = text === undefined ? undefined : parseDuration(text);
    if (ms === undefined)
      throw new SvcError("bad_request", 'give "for": one duration such as "12h" or "7d" ("0s" lifts the snooze)');
    return jsonResponse(await deps.runner.snooze(container, ms));
  };
  const history: Handler = async (request, target) => {
    const fields = await parseRequestFields(request, new URLSearchParams(target.query), ["container"] as const);
    const reports = deps.history?.list() ?? [];
    const { sessionSummary, timelineOf } = await loadTimeline();
    if (fields.container)
      return jsonResponse({
        container: oneContainer(fields.container),
        timeline: timelineOf(reports, fields.container[0]!),
      });
    return jsonResponse({ size: deps.config.history_size, reports: reports.map(sessionSummary).reverse() });
  };
  const peerList: Handler = async () => jsonResponse({ peers: await peers.refresh() });
  return [
    ["/v1/peers", getEndpoint(reads, true, peerList)],
    ["/v1/session", getEndpoint(reads, true, session)],
    ["/v1/summary", getEndpoint(reads, true, summary)],
    ["/v1/containers", getEndpoint(reads, true, containers)],
    ["/v1/history", getEndpoint(reads, true, history)],
    ["/v1/progress", getEndpoint(reads, true, progress)],
    ["/v1/snooze", { enabled: api.update, authenticated: true, methods: { POST: snooze }, allow: "POST" }],
  ];
}

const PEER_PATH = /^\/v1\/peers\/([A-Za-z0-9][A-Za-z0-9._-]{0,63})\/([a-z][a-z-]{0,15}(?:\/[a-z][a-z-]{0,15})?)$/;

/**
 * `/v1/peers/NAME/ENDPOINT`: the peer's `/v1/ENDPOINT` through this svc, with the peer's token.
 * Reads need what this svc's own reads need; actions need http_api.update here too, so a
 * read-only dashboard cannot act on another host.
 */
function peerEndpoint(config: Config, peers: Peers): (path: string) => Endpoint | undefined {
  const reads = config.http_api.update || config.http_api.ui;
  return (path) => {
    const match = PEER_PATH.exec(path);
    const name = match?.[1];
    const endpoint = match?.[2];
    if (!name || !endpoint || !peers.names.includes(name) || !Object.hasOwn(PEER_ENDPOINTS, endpoint)) return undefined;
    const methods = PEER_ENDPOINTS[endpoint]!;
    const forward =
      (method: PeerMethod): Handler =>
      (request, target, server) => {
        // an update through a peer answers when its cycle ends, as a local one does
        server?.timeout(request, 0);
        return peers.forward(name, endpoint, method, request, target.query);
      };
    const read = reads && methods.includes("GET") ? getEndpoint(reads, true, forward("GET")).methods : {};
    const acts = config.http_api.update ? methods.filter((method) => method !== "GET") : [];
    const handlers = { ...read, ...Object.fromEntries(acts.map((method) => [method, forward(method)])) };
    return {
      enabled: Object.keys(handlers).length > 0,
      authenticated: true,
      methods: handlers,
      allow: Object.keys(handlers).join(", "),
    };
  };
}

/** `/` and the bundle's hashed files (`/chunk-1a2b3c.js`, the favicon): no other path can be one of them. */
const ASSET_PATH = /^\/(?:[A-Za-z0-9_-]{1,64}\.(?:js|css|svg))?$/;

/** The endpoint of a path that may be a file of the page, when the page is on. */
function uiAssetEndpoint(enabled: boolean): (path: string) => Endpoint | undefined {
  if (!enabled) return () => undefined;
  // built (or read from the binary) once, in the background: the first visit need not wait
  // nothing lost: the first visit builds it again and answers with the error
  void loadUi().catch(() => {});
  const get: Handler = async (request, target) => {
    const { uiAssets, assetResponse } = await loadUi();
    const asset = (await uiAssets()).get(target.path);
    return asset ? assetResponse(asset, request) : errorResponse(notFound());
  };
  const endpoint = getEndpoint(true, false, get);
  return (path) => (ASSET_PATH.test(path) ? endpoint : undefined);
}

/** The page's files are loaded only when it is on: an svc without it carries them unread. */
const loadUi = () => import("../ui/assets.ts");

/**
 * What the history says, loaded on the first request that needs it: it reads the updater's
 * rules (selection, hooks, tags), which the API must not load before it listens (src/service/).
 */
const loadTimeline = () => import("../updater/views/timeline.ts");
type Timeline = Awaited<ReturnType<typeof loadTimeline>>;
