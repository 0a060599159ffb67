/** Small fakes of our own ports for the API's unit tests (no module mocking). */
import { createApp } from "../../../src/api/index.ts";
import { type Config, type DeepPartial, defaultConfig } from "../../../src/config/index.ts";
import { SvcError } from "../../../src/core/errors.ts";
import type { AccessFields, AuditEntry } from "../../../src/log/index.ts";
import { Metrics } from "../../../src/metrics/index.ts";
import { queuedRequest } from "../../../src/updater/cycle/runner.ts";
import type {
  ContainerActions,
  CycleRunner,
  QueuedRequest,
  RollbackResult,
  RunOptions,
  SessionReport,
  SkipResult,
  Trigger,
  UpdateFilter,
} from "../../../src/updater/types.ts";
import { containerOverviews, type DashboardActions, type Overview } from "../../../src/updater/views/overview.ts";
import { type RecordedLine, recordingLogger } from "../../support/logger.ts";
import { emptyReport } from "../../support/report.ts";

export const TOKEN = "s3cret-token-value";

export function sampleReport(trigger: Trigger, filter: UpdateFilter = {}): SessionReport {
  return emptyReport(trigger, filter, { id: "00000000-0000-4000-8000-000000000000" });
}

/**
 * Follows the runner contract: one cycle at a time; a request meanwhile gets null and is counted,
 * or, asking to be queued, is told so and runs once the cycle under way has ended.
 */
export class FakeRunner implements CycleRunner, ContainerActions, DashboardActions {
  snoozes: { container: string; ms: number }[] = [];

  async overview(filter?: UpdateFilter): Promise<Overview | null> {
    const report = await this.run("api", filter, { dryRun: true });
    return (
      report && {
        checked_at: report.finished_at,
        containers: containerOverviews(report, {}, defaultConfig(), {}),
        excluded: [],
      }
    );
  }

  async snooze(container: string, ms: number) {
    this.snoozes.push({ container, ms });
    return { container, until: ms > 0 ? new Date(Date.parse("2026-01-01T00:00:00Z") + ms).toISOString() : null };
  }

  skips: { container: string; digest?: string; tag?: string }[] = [];

  /** containers whose held signer was accepted, and what asked (undefined: the API's default) */
  accepted: string[] = [];
  acceptedBy: (Trigger | undefined)[] = [];

  async acceptSigner(container: string, trigger?: Trigger) {
    if (container === "missing") throw new SvcError("not_found", "no container or service named missing");
    this.accepted.push(container);
    this.acceptedBy.push(trigger);
    return { container, repository: "ghcr.io/acme/app", signer: "key SHA256:abc" };
  }

  calls: { trigger: Trigger; filter?: UpdateFilter; options?: RunOptions }[] = [];
  /** when set, run() waits for it (a slow cycle) */
  gate: Promise<void> | null = null;
  /** when set, run() throws it */
  failure: unknown = null;
  /** shapes the report run() answers */
  report: (report: SessionReport) => SessionReport = (report) => report;
  private running = false;

  constructor(private readonly metrics: Metrics) {}

  get busy(): boolean {
    return this.running;
  }

  rollbacks: string[] = [];

  async rollback(container: string): Promise<RollbackResult | null> {
    if (this.running) return null;
    this.rollbacks.push(container);
    return { container, from_image_id: "sha256:new", to_image_id: "sha256:old", state: "updated", reason: null };
  }

  async skip(container: string, what: { digest?: string; tag?: string } = {}): Promise<SkipResult | null> {
    if (this.running) return null;
    const { digest, tag } = what;
    this.skips.push({ container, ...(digest === undefined ? {} : { digest }), ...(tag === undefined ? {} : { tag }) });
    if (tag !== undefined) return { container, image: `r/${container}:${tag}` };
    return { container, digest: digest ?? `sha256:${"e".repeat(64)}` };
  }

  /** the requests waiting, as the runner shows them */
  queued: QueuedRequest[] = [];
  private ended: Promise<void> = Promise.resolve();

  queuedRequests(): QueuedRequest[] {
    return [...this.queued];
  }

  async run(trigger: Trigger, filter?: UpdateFilter, options?: RunOptions): Promise<SessionReport | null> {
    if (this.running && options?.queue) {
      const entry = queuedRequest(trigger, filter);
      this.queued.push(entry);
      options.onQueued?.(entry);
      while (this.running) await this.ended;
      this.queued.splice(this.queued.indexOf(entry), 1);
    }
    if (this.running) {
      this.metrics.recordSkipped();
      return null;
    }
    let end = () => {};
    this.ended = new Promise((resolve) => {
      end = resolve;
    });
    this.running = true;
    // whether it asked to be queued is told by `queued` and the answer; the calls keep what it asked for
    const { queue: _queue, onQueued: _onQueued, ...asked } = options ?? {};
    this.calls.push(Object.keys(asked).length === 0 ? { trigger, filter } : { trigger, filter, options: asked });
    try {
      if (this.gate) await this.gate;
      if (this.failure) throw this.failure;
      const report = this.report(sampleReport(trigger, filter));
      this.metrics.recordCycle(report.counts);
      return report;
    } finally {
      this.running = false;
      end();
    }
  }
}

export function makeApp(overrides: DeepPartial<Config> = {}, reports: SessionReport[] = []) {
  const config = defaultConfig({
    ...overrides,
    http_api: { update: true, metrics: true, token: TOKEN, ...overrides.http_api },
  });
  const metrics = new Metrics();
  const runner = new FakeRunner(metrics);
  const logs: RecordedLine[] = [];
  const access: AccessFields[] = [];
  const audit: AuditEntry[] = [];
  const app = createApp({
    config,
    runner,
    metrics,
    log: recordingLogger(logs),
    access: { enabled: true, write: (fields) => void access.push(fields) },
    audit: { record: (entry) => void audit.push(entry) },
    history: { list: () => reports },
  });
  const request = (path: string, init: RequestInit = {}) => app.handle(new Request(`http://localhost${path}`, init));
  return { app, config, metrics, runner, logs, access, audit, request };
}

export const bearer = (token = TOKEN) => ({ authorization: `Bearer ${token}` });
export const bytes = (text: string) => new TextEncoder().encode(text);
