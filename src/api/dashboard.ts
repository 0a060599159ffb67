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
import { answer, type Endpoint, getEndpoint, type Handler, oneContainer, postEndpoint } from "./endpoint.ts";
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

/** The dashboard's endpoints: its reads, a peer's endpoints through this svc, and the page's files. */
export function dashboardRoutes(deps: DashboardDeps): Endpoint[] {
  const peers = createPeers(deps.config, deps.metrics, deps.log);
  return [
    ...dashboardEndpoints(deps, peers),
    ...peerEndpoints(deps.config, peers),
    ...uiAssetEndpoints(deps.config.http_api.ui),
  ];
}

function dashboardEndpoints(deps: DashboardDeps, peers: Peers): Endpoint[] {
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
  const containers: Handler = async ({ request, target, server }) => {
    const filter = await parseUpdateRequest(request, new URLSearchParams(target.query));
    // a dry run asks the registries: as long as a cycle's checks may take
    server?.timeout(request, 0);
    // a check asked for now (the page's fetches say so): no recent overview is reused, one under way is shared
    const fresh = /\bno-cache\b/i.test(request.headers.get("cache-control") ?? "");
    return answer(await overview(filter, fresh));
  };
  const summary: Handler = async ({ request, server }) => {
    if (!lastAnswer || summaryIsOld(lastAnswer, deps.history?.list() ?? [])) {
      server?.timeout(request, 0);
      if ((await overview({})) === null && !lastAnswer) return answer(null);
    }
    return jsonResponse(summaryOf(lastAnswer!));
  };
  const session: Handler = ({ who }) =>
    jsonResponse({ role: who?.role ?? "viewer", name: who?.name ?? "", update: api.update });
  // without a listener wired (tests of other endpoints), a running cycle is told without its steps
  const live = deps.progress ?? liveProgress();
  const progress: Handler = () =>
    jsonResponse({ running: live.running(deps.runner.busy), queued: deps.runner.queuedRequests() });
  const snooze: Handler = async ({ request, target }) => {
    const fields = await parseRequestFields(request, new URLSearchParams(target.query), ["container", "for"] as const);
    const container = oneContainer(fields.container);
    const text = fields.for?.length === 1 ? fields.for[0]! : undefined;
    const ms = text === undefined ? undefined : parseDuration(text);
    if (ms === undefined)
      throw new SvcError("bad_request", 'give "for": one duration such as "12h" or "7d" ("0s" lifts the snooze)');
    return jsonResponse(await deps.runner.snooze(container, ms));
  };
  const history: Handler = async ({ request, target }) => {
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
    getEndpoint("/v1/peers", reads, true, peerList),
    getEndpoint("/v1/session", reads, true, session),
    getEndpoint("/v1/summary", reads, true, summary),
    getEndpoint("/v1/containers", reads, true, containers),
    getEndpoint("/v1/history", reads, true, history),
    getEndpoint("/v1/progress", reads, true, progress),
    postEndpoint("/v1/snooze", api.update, snooze),
  ];
}

/**
 * `/v1/peers/NAME/ENDPOINT`: the peer's `/v1/ENDPOINT` through this svc, with the peer's token.
 * Reads need what this svc's own reads need; actions need http_api.update here too, so a
 * read-only dashboard cannot act on another host.
 */
function peerEndpoints(config: Config, peers: Peers): Endpoint[] {
  const reads = config.http_api.update || config.http_api.ui;
  const names = ({ name }: Record<string, string>) => peers.names.includes(name!);
  return Object.entries(PEER_ENDPOINTS).map(([endpoint, methods]) => {
    const forward =
      (method: PeerMethod): Handler =>
      ({ request, target, server, params }) => {
        // an update through a peer answers when its cycle ends, as a local one does
        server?.timeout(request, 0);
        return peers.forward(params.name!, endpoint, method, request, target.query);
      };
    const allowed = methods.filter((method) => (method === "GET" ? reads : config.http_api.update));
    return {
      path: `/v1/peers/:name/${endpoint}`,
      enabled: peers.names.length > 0 && allowed.length > 0,
      authenticated: true,
      methods: Object.fromEntries(allowed.map((method) => [method, forward(method)])),
      names,
    };
  });
}

/** `/` and the bundle's hashed files (`/chunk-1a2b3c.js`, the favicon): no other path can be one of them. */
const ASSET_NAME = /^[A-Za-z0-9_-]{1,64}\.(?:js|css|svg)$/;

/** The page and its files, when the page is on: they need no token. */
function uiAssetEndpoints(enabled: boolean): Endpoint[] {
  if (!enabled) return [];
  // built (or read from the binary) once, in the background: the first visit need not wait
  // nothing lost: the first visit builds it again and answers with the error
  void loadUi().catch(() => {});
  const get: Handler = async ({ request, target }) => {
    const { uiAssets, assetResponse } = await loadUi();
    const asset = (await uiAssets()).get(target.path);
    return asset ? assetResponse(asset, request) : errorResponse(notFound());
  };
  return [
    getEndpoint("/", true, false, get),
    { ...getEndpoint("/:file", true, false, get), names: ({ file }) => ASSET_NAME.test(file!) },
  ];
}

/** The page's files are loaded only when it is on: an svc without it carries them unread. */
const loadUi = () => import("../ui/assets.ts");

/**
 * What the history says, loaded on the first request that needs it: it reads the updater's
 * rules (selection, hooks, tags), which the API must not load before it listens (src/service/).
 */
const loadTimeline = () => import("../updater/views/timeline.ts");
type Timeline = Awaited<ReturnType<typeof loadTimeline>>;
