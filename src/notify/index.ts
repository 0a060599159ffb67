/**
 * Notifications: after a cycle, decide whether to tell anyone, wait `delay`, then send the report
 * to every enabled channel in parallel. Nothing here can fail or delay a cycle: `publish` returns
 * at once and never throws; a failing channel is retried a few times, then logged.
 */
import { hostname as osHostname } from "node:os";
import { type Config, secretValues } from "../config/index.ts";
import { timerDelay } from "../core/timers.ts";
import { createRedactor, type Logger, redactValue } from "../log/index.ts";
import type { Remembered } from "../state/index.ts";
import type { ProgressEvent } from "../updater/cycle/progress.ts";
import type { SessionReport } from "../updater/types.ts";
import { createChannels } from "./channels/index.ts";
import { baseUrlsOf, tokensToBaseUrls } from "./channels/urls.ts";
import { NotifyPolicy } from "./decide.ts";
import { createDigest, type Digest, digestSettingsOf } from "./digest.ts";
import { withRowLinks } from "./links.ts";
import { reasonOf } from "./redact.ts";
import { CHAT_TEMPLATE, DEFAULT_TEMPLATE, loadRenderer } from "./render.ts";
import { notificationSecrets } from "./secrets.ts";
import type { Notifier, RemoteControl, ReportSink } from "./types.ts";

export {
  buildView,
  CHAT_TEMPLATE,
  DEFAULT_TEMPLATE,
  loadRenderer,
  type RenderedReport,
  type Renderer,
  type ReportView,
} from "./render.ts";
export { notificationSecrets } from "./secrets.ts";
export type { Notifier, RemoteControl, ReportSink } from "./types.ts";

export interface Dispatcher extends ReportSink {
  /** Hands over a finished cycle's report. Returns at once; never throws. */
  publish(report: SessionReport): void;
  /** Resolves when every report published so far has been sent or given up on. */
  flush(): Promise<void>;
  /**
   * Sends what is still waiting for `delay` at once, waits for it, then closes every channel.
   * Later reports are dropped (with a log line). Nothing stays open after it resolves.
   */
  close(): Promise<void>;
  /** Names of the enabled channels, e.g. ["webhook", "mqtt"]. */
  readonly channels: readonly string[];
  /** Each step of an update as it starts, for the channels that show progress (Home Assistant). */
  progress(event: ProgressEvent): void;
  /** Where the channels that take commands (Home Assistant) have them done. */
  attach(control: RemoteControl): void;
}

export interface NotificationOptions {
  /** shown in reports and subjects; default: the machine's host name */
  hostname?: string;
  /** tries per channel and report (default 3) */
  attempts?: number;
  /** wait before the first retry, doubled for each next one (default 1000 ms) */
  retryDelayMs?: number;
  /** per-attempt timeout of e-mail, MQTT and Pushover (default 10000 ms); the webhook has its own option */
  timeoutMs?: number;
  /** use these channels instead of the configured ones (tests of the dispatcher) */
  notifiers?: Notifier[];
  /** the stale digests already announced, per container name (default: in memory only) */
  announcedStale?: Remembered;
  /** each digest channel's period, by channel name, kept between restarts (default: in memory only) */
  digests?: Remembered;
  /** the Home Assistant entities announced, by object id, kept between restarts (default: in memory only) */
  homeAssistant?: Remembered;
  /** the wait before a digest that could not be sent is tried again (default: digest.ts) */
  digestRetryMs?: number;
}

/**
 * Builds the dispatcher for `config.notifications`. Throws SvcError kind "startup" for a template
 * that cannot be read or parsed, kind "config" for a channel set up incompletely.
 */
export async function createNotifications(
  config: Config,
  log: Logger,
  options: NotificationOptions = {},
): Promise<Dispatcher> {
  const settings = config.notifications;
  const logger = log.child("notify");
  const host = options.hostname ?? settings.hostname ?? osHostname();
  const render = await loadRenderer(settings.template, host, DEFAULT_TEMPLATE, settings.title_tag);
  const chat = await loadRenderer(settings.template, host, CHAT_TEMPLATE, settings.title_tag);
  const notifiers =
    options.notifiers ??
    (await createChannels({
      config: settings,
      render,
      chat,
      hostname: host,
      timeoutMs: options.timeoutMs ?? 10_000,
      log: logger,
      announced: options.homeAssistant,
    }));
  const redact = createRedactor([...secretValues(config), ...notificationSecrets(settings)]);
  // Said once at start: a relay given the tokens of public services should never be a surprise.
  for (const { base, services } of tokensToBaseUrls(settings.urls ?? [], baseUrlsOf(settings.services_base_url))) {
    logger.info(
      `the tokens of ${services.join(", ")} go to ${base} (notifications.services_base_url), not to their public hosts`,
      { services: services.join(","), base_url: base },
    );
  }
  const policy = new NotifyPolicy(settings.notify_on_every_cycle, options.announcedStale);
  const attempts = Math.max(1, options.attempts ?? 3);
  const retryDelayMs = options.retryDelayMs ?? 1000;

  const inFlight = new Set<Promise<unknown>>();
  const delays = new Set<DelayHandle>();
  let closed = false;

  /** true once sent; false when every try failed (logged) */
  const sendWithRetry = async (notifier: Notifier, report: SessionReport): Promise<boolean> => {
    let reason = "";
    for (let attempt = 1; attempt <= attempts; attempt++) {
      try {
        await Promise.resolve().then(() => notifier.send(report));
        logger.info("notification sent", { channel: notifier.name, session_id: report.id, attempt });
        return true;
      } catch (error) {
        reason = reasonOf(error, redact);
        if (attempt < attempts) {
          logger.warn("notification failed, retrying", {
            channel: notifier.name,
            session_id: report.id,
            attempt,
            reason,
          });
          await Bun.sleep(retryDelayMs * 2 ** (attempt - 1));
        }
      }
    }
    logger.error("notification failed", { channel: notifier.name, session_id: report.id, attempts, reason });
    return false;
  };

  const tracked = <T>(task: Promise<T>): Promise<T> => {
    inFlight.add(task);
    void task.finally(() => inFlight.delete(task));
    return task;
  };
  // a channel with a digest gets every cycle's report, told once per period (digest.ts)
  const digests = new Map<Notifier, Digest>();
  for (const notifier of notifiers) {
    const digest = digestSettingsOf(settings, notifier.name);
    if (!digest) continue;
    const send = (report: SessionReport) => tracked(sendWithRetry(notifier, report));
    digests.set(
      notifier,
      createDigest({
        settings: digest,
        log: logger,
        send,
        store: options.digests,
        key: notifier.name,
        retryMs: options.digestRetryMs,
      }),
    );
  }
  const direct = notifiers.filter((notifier) => !digests.has(notifier));

  // the channels that follow every report (Home Assistant's entities), whether it is told or not
  const observeEach = (report: SessionReport): void => {
    for (const notifier of notifiers) {
      if (!notifier.observe) continue;
      tracked(
        notifier.observe(report).catch((error) => {
          logger.warn("home assistant entities not published", {
            channel: notifier.name,
            session_id: report.id,
            reason: reasonOf(error, redact),
          });
        }),
      );
    }
  };

  const dispatch = async (report: SessionReport): Promise<void> => {
    if (settings.delay > 0 && !closed) await cancellableDelay(settings.delay, delays);
    await Promise.all(direct.map((notifier) => sendWithRetry(notifier, report)));
  };

  const flush = async (): Promise<void> => {
    while (inFlight.size > 0) await Promise.allSettled([...inFlight]);
  };

  return {
    channels: notifiers.map((n) => n.name),

    progress(event) {
      for (const notifier of notifiers) notifier.progress?.(event);
    },

    attach(control) {
      for (const notifier of notifiers) notifier.attach?.(control);
    },

    publish(report) {
      try {
        if (notifiers.length === 0) return;
        if (closed) {
          logger.warn("notification dropped: shutting down", { session_id: report.id });
          return;
        }
        const told = withRowLinks(redactValue(report, redact), config.http_api.public_url);
        for (const digest of digests.values()) digest.add(told);
        observeEach(told);
        const decision = policy.decide(report);
        if (direct.length === 0) return;
        if (!decision.notify) {
          logger.debug("no notification for this cycle", { session_id: report.id, reason: decision.reason });
          return;
        }
        // A copy (the report object may live on in the caller: API response, metrics), whose
        // texts (reasons may quote a hook's output) hold no secret of svc's.
        tracked(
          dispatch(told).catch((error) => {
            logger.error("notification dispatch failed", { session_id: report.id, reason: reasonOf(error, redact) });
          }),
        );
      } catch (error) {
        logger.error("notification dispatch failed", { reason: reasonOf(error, redact) });
      }
    },

    flush,

    async close() {
      closed = true;
      for (const handle of delays) handle.skip();
      await Promise.all([...digests.values()].map((digest) => digest.close()));
      await flush();
      await Promise.allSettled(notifiers.map((n) => n.close?.()));
    },
  };
}

interface DelayHandle {
  skip(): void;
}

/** Bun.sleep that `close()` can cut short, so a long `delay` does not hold up shutdown. */
function cancellableDelay(ms: number, registry: Set<DelayHandle>): Promise<void> {
  return new Promise((resolve) => {
    const handle: DelayHandle = {
      skip() {
        clearTimeout(timer);
        registry.delete(handle);
        resolve();
      },
    };
    const timer = setTimeout(() => handle.skip(), timerDelay(ms));
    registry.add(handle);
  });
}
