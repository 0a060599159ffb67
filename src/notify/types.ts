import type { SessionReport } from "../updater/types.ts";

export type { ReportSink } from "../updater/types.ts";

/** A notification channel: webhook, e-mail, MQTT, Pushover. */
export interface Notifier {
  readonly name: string;
  send(report: SessionReport): Promise<void>;
  close?(): Promise<void>;
}
