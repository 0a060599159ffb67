import type { AuditLog } from "../log/index.ts";
import type { ProgressEvent } from "../updater/cycle/progress.ts";
import type { Updater } from "../updater/port.ts";
import type { SessionReport } from "../updater/types.ts";

export type { ReportSink } from "../updater/types.ts";

/** What a channel that takes commands (Home Assistant over MQTT) does them with: the API's own ways. */
export interface RemoteControl {
  runner: Pick<Updater, "run" | "rollback"> & { readonly busy?: boolean };
  audit?: AuditLog;
}

/** A notification channel: webhook, e-mail, MQTT, Pushover. */
export interface Notifier {
  readonly name: string;
  send(report: SessionReport): Promise<void>;
  close?(): Promise<void>;
  /** every report, told or not (Home Assistant's entities follow each one) */
  observe?(report: SessionReport): Promise<void>;
  /** a step of an update as it starts */
  progress?(event: ProgressEvent): void;
  /** where commands received are done */
  attach?(control: RemoteControl): void;
}
