/**
 * The API's listening server over the service's life: opened first, released for svc's
 * replacement during a self-update, reclaimed when that replacement is rolled back, and closed
 * once at shutdown.
 */
import type { Logger } from "../log/index.ts";
import { type ApiDeps, type App, createApp, listen } from "./app.ts";

/** The listening API; `stopOnce` closes the port (without cutting requests in progress) the first time only. */
export interface Api {
  stopOnce(): Promise<void>;
  /**
   * Self-update: stop accepting connections so svc's replacement can listen on the port (host
   * network, published port). Requests in flight, such as the POST /v1/update that started the
   * cycle, still get their answer: so this does not wait for them.
   */
  release(): Promise<void>;
  /** Listen again on the same port: the replacement was rolled back. */
  reclaim(): Promise<void>;
}

export function serveApi(deps: ApiDeps, log: Logger): Api {
  const config = deps.config;
  const app: App = createApp(deps);
  const { port, address } = config.http_api;
  let server: ReturnType<typeof listen> | undefined = listen(app, port, address);
  log.info("HTTP API listening", {
    address: `${address.includes(":") ? `[${address}]` : address}:${port}`,
    update: config.http_api.update,
    metrics: config.http_api.metrics,
    ui: config.http_api.ui,
  });
  // The Bun servers are stopped directly (not app.stop): a released server's requests in flight
  // may finish after a reclaim, and app.stop would then forget the new server.
  const closing: Promise<unknown>[] = [];
  const close = (): void => {
    if (!server) return;
    closing.push(server.stop(false));
    server = undefined;
  };
  let stopped: Promise<void> | undefined;
  return {
    stopOnce: () => (stopped ??= (close(), Promise.all(closing).then(() => {}))),
    release: async () => {
      close();
      log.info("HTTP API: port released for svc's replacement", { port });
    },
    reclaim: async () => {
      if (server || stopped) return;
      server = listen(app, port, address);
      log.info("HTTP API listening again: svc's replacement was rolled back", { port });
    },
  };
}
