import type { SessionReport } from "../updater/types.ts";

/** A notification channel: webhook, e-mail, MQTT, Pushover. */
export interface Notifier {
  readonly name: string;
  send(report: SessionReport): Promise<void>;
  close?(): Promise<void>;
}

/** What the updater hands each finished cycle to. Never throws, never delays the next cycle. */
export interface ReportSink {
  publish(report: SessionReport): void;
}
