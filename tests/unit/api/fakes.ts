/** Small fakes of our own ports for the API's unit tests (no module mocking). */
import { createApp } from "../../../src/api/index.ts";
import { type Config, type DeepPartial, defaultConfig } from "../../../src/config/index.ts";
import type { AccessFields, Fields, Logger } from "../../../src/log/index.ts";
import { Metrics } from "../../../src/metrics/index.ts";
import type { CycleRunner, SessionReport, Trigger, UpdateFilter } from "../../../src/updater/types.ts";

export const TOKEN = "s3cret-token-value";

export function sampleReport(trigger: Trigger, filter: UpdateFilter = {}): SessionReport {
  const now = new Date().toISOString();
  return {
    id: "00000000-0000-4000-8000-000000000000",
    trigger,
    started_at: now,
    finished_at: now,
    duration_ms: 0,
    filter: { container: filter.container ?? [], image: filter.image ?? [] },
    counts: { scanned: 0, updated: 0, failed: 0, skipped: 0, fresh: 0, stale: 0, rolled_back: 0 },
    containers: [],
  };
}

/** Follows the runner contract: one cycle at a time, a request meanwhile gets null and is counted. */
export class FakeRunner implements CycleRunner {
  calls: { trigger: Trigger; filter?: UpdateFilter }[] = [];
  /** when set, run() waits for it (a slow cycle) */
  gate: Promise<void> | null = null;
  /** when set, run() throws it */
  failure: unknown = null;
  private running = false;

  constructor(private readonly metrics: Metrics) {}

  get busy(): boolean {
    return this.running;
  }

  async run(trigger: Trigger, filter?: UpdateFilter): Promise<SessionReport | null> {
    if (this.running) {
      this.metrics.recordSkipped();
      return null;
    }
    this.running = true;
    this.calls.push({ trigger, filter });
    try {
      if (this.gate) await this.gate;
      if (this.failure) throw this.failure;
      const report = sampleReport(trigger, filter);
      this.metrics.recordCycle(report.counts);
      return report;
    } finally {
      this.running = false;
    }
  }
}

export interface LogLine {
  level: string;
  message: string;
  fields?: Fields;
}

export function recordingLogger(lines: LogLine[]): Logger {
  const at = (level: string) => (message: string, fields?: Fields) => void lines.push({ level, message, fields });
  const logger: Logger = { trace: at("trace"), debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error"), child: () => logger };
  return logger;
}

export function makeApp(overrides: DeepPartial<Config> = {}) {
  const config = defaultConfig({ ...overrides, http_api: { update: true, metrics: true, token: TOKEN, ...overrides.http_api } });
  const metrics = new Metrics();
  const runner = new FakeRunner(metrics);
  const logs: LogLine[] = [];
  const access: AccessFields[] = [];
  const app = createApp({ config, runner, metrics, log: recordingLogger(logs), access: { enabled: true, write: (fields) => void access.push(fields) } });
  const request = (path: string, init: RequestInit = {}) => app.handle(new Request(`http://localhost${path}`, init));
  return { app, config, metrics, runner, logs, access, request };
}

export const bearer = (token = TOKEN) => ({ authorization: `Bearer ${token}` });
export const bytes = (text: string) => new TextEncoder().encode(text);
