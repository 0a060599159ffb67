/** How a service's rollout ends, from the UpdateStatus a (scripted) manager reports. */
import { describe, expect, test } from "bun:test";
import { type Config, type DeepPartial, defaultConfig } from "../../../src/config/index.ts";
import { SvcError } from "../../../src/core/errors.ts";
import type { ServiceSummary, ServiceUpdateStatus, Swarm, TaskSummary } from "../../../src/engine/swarm.ts";
import { silentLogger } from "../../../src/log/index.ts";
import type { ProtocolContext } from "../../../src/updater/cycle/context.ts";
import { awaitRollout, writeImage } from "../../../src/updater/swarm/rollout.ts";
import { FakeEngine, MemoryAudit } from "./fakes.ts";

const before: ServiceUpdateStatus = {
  state: "completed",
  message: "update completed",
  startedAt: "2026-01-01T00:00:00Z",
};

function service(overrides: Partial<ServiceSummary> = {}): ServiceSummary {
  return {
    id: "s1",
    name: "web",
    version: 3,
    image: "r/web:1@sha256:a",
    labels: {},
    mode: "replicated",
    failureAction: "pause",
    update: before,
    previousImage: null,
    spec: { Name: "web" },
    ...overrides,
  };
}

/**
 * A manager that answers each inspect with the next scripted status (the last one repeats), and
 * once asked to roll back, with the statuses of the rollback.
 */
class ScriptedSwarm implements Swarm {
  calls: string[] = [];
  refusals = 0;
  /** the tasks each read of them answers, the last one repeating */
  tasks: TaskSummary[][] = [[]];
  constructor(
    private statuses: (ServiceUpdateStatus | null)[],
    private readonly afterRollback: ServiceUpdateStatus[] = [],
    private readonly base = service(),
  ) {}
  async state() {
    return { active: true, manager: true };
  }
  async listServices() {
    return [this.base];
  }
  async inspectService() {
    const update = this.statuses.length > 1 ? this.statuses.shift()! : (this.statuses[0] ?? null);
    return { ...this.base, version: this.base.version + this.calls.length, update };
  }
  async updateImage(s: ServiceSummary, image: string) {
    this.calls.push(`update v${s.version} ${image}`);
    if (this.refusals-- > 0)
      throw new SvcError("engine", "update service web: rpc error: code = Unknown desc = update out of sequence");
  }
  async rollback(s: ServiceSummary) {
    this.calls.push(`rollback v${s.version}`);
    this.statuses = [...this.afterRollback];
  }
  async runningTasks() {
    return this.tasks.length > 1 ? this.tasks.shift()! : this.tasks[0]!;
  }
}

function context(config: DeepPartial<Config> = {}): ProtocolContext & { audit: MemoryAudit } {
  return {
    engine: new FakeEngine(),
    config: defaultConfig({ service_update_timeout: 2000, ...config }),
    log: silentLogger,
    audit: new MemoryAudit(),
    trigger: "api",
    timing: { pollMs: 1, stableMs: 1 },
  };
}

const at = (state: string, message = state) => ({ state, message, startedAt: "2026-01-02T00:00:00Z" });

describe("Swarm's rollout, as svc reports it", () => {
  test("completed: updated (a status from before the write is not taken for the outcome)", async () => {
    const swarm = new ScriptedSwarm([before, at("updating"), at("completed")]);
    expect(await awaitRollout(context(), swarm, service())).toEqual({ kind: "updated" });
  });

  test("rolled back by Swarm: rolled_back with the cause Swarm gave first, not its closing message", async () => {
    const swarm = new ScriptedSwarm([
      at("updating"),
      at("rollback_started", "update rolled back due to failure or early termination of task x"),
      at("rollback_completed", "rollback completed"),
    ]);
    expect(await awaitRollout(context(), swarm, service({ failureAction: "rollback" }))).toEqual({
      kind: "rolled_back",
      reason: "rolled back by Swarm: update rolled back due to failure or early termination of task x",
    });
    expect(swarm.calls).toEqual([]);
  });

  test("Swarm's own rollback paused, every task on the previous image: rolled_back; tasks elsewhere: failed", async () => {
    const own = service({ failureAction: "rollback", spec: { Name: "web", Mode: { Replicated: { Replicas: 1 } } } });
    const script = () =>
      new ScriptedSwarm(
        [
          at("updating"),
          at("rollback_started", "update rolled back due to failure of task x"),
          at("rollback_paused", "rollback paused due to failure of task y"),
        ],
        [],
        own,
      );
    const back = script();
    back.tasks = [[{ image: own.image, state: "running" }]];
    expect(await awaitRollout(context(), back, own)).toEqual({
      kind: "rolled_back",
      reason:
        "rolled back by Swarm: update rolled back due to failure of task x; Swarm paused its rollback (rollback paused due to failure of task y), but every task runs the previous image again",
    });
    const stuck = script();
    stuck.tasks = [[{ image: "r/web:2@sha256:b", state: "running" }]];
    expect(await awaitRollout(context({ service_update_timeout: 30 }), stuck, own)).toEqual({
      kind: "failed",
      reason: "Swarm paused the rollback: rollback paused due to failure of task y",
      rejectedImage: true,
    });
  });

  test("paused under the service's own failure action: failed, the image not retried, nothing asked of Swarm", async () => {
    const swarm = new ScriptedSwarm([at("paused", "update paused due to failure of task x")]);
    expect(await awaitRollout(context(), swarm, service())).toEqual({
      kind: "failed",
      reason: "Swarm paused the update: update paused due to failure of task x",
      rejectedImage: true,
    });
    expect(swarm.calls).toEqual([]);
  });

  test("paused, no update config of its own: svc's rollback rules ask Swarm to roll back", async () => {
    const swarm = new ScriptedSwarm(
      [at("paused", "task x failed")],
      [at("rollback_started"), at("rollback_completed")],
    );
    const ctx = context();
    const outcome = await awaitRollout(ctx, swarm, service({ failureAction: null }));
    expect(outcome).toEqual({
      kind: "rolled_back",
      reason: "Swarm paused the update: task x failed; svc asked Swarm to roll back (rollback.*)",
    });
    expect(swarm.calls).toEqual(["rollback v3"]);
    expect(ctx.audit.entries.map((e) => [e.action, e.container])).toEqual([["service_rollback", "web"]]);
  });

  describe("a rollback Swarm pauses (it does for any early end of a task it started)", () => {
    const replicated = service({
      failureAction: null,
      image: "r/web:1@sha256:a",
      spec: { Name: "web", Mode: { Replicated: { Replicas: 2 } } },
    });
    const paused = () =>
      new ScriptedSwarm(
        [at("paused", "task x failed")],
        [
          at("rollback_started"),
          at("rollback_paused", "rollback paused due to failure or early termination of task y"),
        ],
        replicated,
      );
    const running = (image: string) => ({ image, state: "running" });

    test("every task back on the previous image, as many as asked: rolled_back, Swarm's pause said", async () => {
      const swarm = paused();
      swarm.tasks = [
        [running("r/web:1@sha256:a"), { image: "r/web:1@sha256:a", state: "starting" }],
        [running("r/web:1@sha256:a"), running("r/web:1@sha256:a")],
      ];
      expect(await awaitRollout(context(), swarm, replicated)).toEqual({
        kind: "rolled_back",
        reason:
          "Swarm paused the update: task x failed; svc asked Swarm to roll back (rollback.*); Swarm paused its rollback (rollback_paused: rollback paused due to failure or early termination of task y), but every task runs the previous image again",
      });
    });

    test("a task left on the new image, or one task short, until service_update_timeout: failed, with Swarm's message", async () => {
      for (const tasks of [[running("r/web:1@sha256:a"), running("r/web:2@sha256:b")], [running("r/web:1@sha256:a")]]) {
        const swarm = paused();
        swarm.tasks = [tasks];
        expect(await awaitRollout(context({ service_update_timeout: 30 }), swarm, replicated)).toEqual({
          kind: "failed",
          reason:
            "Swarm paused the update: task x failed; Swarm's rollback did not complete (rollback_paused: rollback paused due to failure or early termination of task y)",
          rejectedImage: true,
        });
      }
    });
  });

  test("paused, no update config, rollback checks off: failed", async () => {
    const swarm = new ScriptedSwarm([at("paused", "task x failed")]);
    const outcome = await awaitRollout(
      context({ rollback: { on_exit_code: false, on_healthcheck: false } }),
      swarm,
      service({ failureAction: null }),
    );
    expect(outcome.kind).toBe("failed");
    expect(swarm.calls).toEqual([]);
  });

  test("still updating at service_update_timeout: failed (Swarm goes on), or rolled back by svc's rules with on_timeout", async () => {
    const own = await awaitRollout(
      context({ service_update_timeout: 30 }),
      new ScriptedSwarm([at("updating")]),
      service(),
    );
    expect(own).toEqual({
      kind: "failed",
      reason: "Swarm's update did not finish within 30ms (service_update_timeout); Swarm goes on with it",
    });
    const swarm = new ScriptedSwarm(
      [at("updating")],
      [at("rollback_started", "rollback started"), at("rollback_completed")],
    );
    const ours = await awaitRollout(context({ service_update_timeout: 30 }), swarm, service({ failureAction: null }));
    expect(ours.kind).toBe("rolled_back");
    expect(swarm.calls).toEqual(["rollback v3"]);
  });
});

test("a graceful stop of svc ends the wait: failed, not held against the image, Swarm goes on", async () => {
  const outcome = await awaitRollout(
    context(),
    new ScriptedSwarm([at("updating")]),
    service({ failureAction: null }),
    () => true,
  );
  expect(outcome).toEqual({
    kind: "failed",
    reason: "svc stopped (shutting down) before Swarm's update finished; Swarm goes on with it",
  });
});

describe("writing the new image", () => {
  test("a spec changed meanwhile is read again and written once more at its new version", async () => {
    const swarm = new ScriptedSwarm([before]);
    swarm.refusals = 1;
    const ctx = context();
    const written = await writeImage(ctx, swarm, service(), "r/web:1@sha256:b", undefined);
    expect("failed" in written).toBe(false);
    expect(swarm.calls).toEqual(["update v3 r/web:1@sha256:b", "update v4 r/web:1@sha256:b"]);
    expect(ctx.audit.entries.map((e) => e.error === undefined)).toEqual([false, true]);
  });

  test("an image someone set meanwhile is theirs: not written over, the service skipped as changed meanwhile", async () => {
    const swarm = new ScriptedSwarm([before], [], service({ image: "r/web:2@sha256:c" }));
    swarm.refusals = 1;
    const written = await writeImage(context(), swarm, service(), "r/web:1@sha256:b", undefined);
    expect(written).toEqual({
      skipped: expect.stringMatching(/^changed meanwhile: its image is now r\/web:2@sha256:c /),
    });
    expect(swarm.calls).toEqual(["update v3 r/web:1@sha256:b"]);
  });

  test("refused twice: failed with the reason", async () => {
    const swarm = new ScriptedSwarm([before]);
    swarm.refusals = 2;
    const written = await writeImage(context(), swarm, service(), "r/web:1@sha256:b", undefined);
    expect(written).toEqual({ failed: expect.stringContaining("failed twice") });
  });
});
