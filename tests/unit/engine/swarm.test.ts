import { describe, expect, test } from "bun:test";
import {
  desiredReplicas,
  isOutOfSequence,
  parseService,
  parseTask,
  taskServiceOf,
  withImage,
} from "../../../src/engine/swarm.ts";
import { unpinned } from "../../../src/updater/swarm/kind.ts";

const digest = `sha256:${"a".repeat(64)}`;
const raw = (spec: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  ID: "s1",
  Version: { Index: 7 },
  Spec: {
    Name: "web",
    TaskTemplate: { ContainerSpec: { Image: `r/web:1@${digest}`, Env: ["A=1"] } },
    Mode: { Replicated: { Replicas: 2 } },
    ...spec,
  },
  ...extra,
});

describe("a service as the engine describes it", () => {
  test("its image, version, labels, mode, update status and previous image", () => {
    const service = parseService(
      raw(
        { Labels: { "svc.enable": "true" }, UpdateConfig: { FailureAction: "rollback" } },
        {
          UpdateStatus: {
            State: "rollback_completed",
            Message: "rollback completed",
            StartedAt: "2026-01-01T00:00:00Z",
          },
          PreviousSpec: { Name: "web", TaskTemplate: { ContainerSpec: { Image: "r/web:0@sha256:0" } } },
        },
      ),
    );
    expect(service).toMatchObject({
      id: "s1",
      name: "web",
      version: 7,
      image: `r/web:1@${digest}`,
      labels: { "svc.enable": "true" },
      mode: "replicated",
      failureAction: "rollback",
      previousImage: "r/web:0@sha256:0",
    });
    expect(service.update).toEqual({
      state: "rollback_completed",
      message: "rollback completed",
      startedAt: "2026-01-01T00:00:00Z",
    });
  });

  test("a spec without UpdateConfig has no failure action of its own; any UpdateConfig has Swarm's default, pause", () => {
    expect(parseService(raw({})).failureAction).toBeNull();
    expect(parseService(raw({ UpdateConfig: { Parallelism: 1 } })).failureAction).toBe("pause");
    expect(parseService(raw({ Mode: { Global: {} } })).mode).toBe("global");
    expect(parseService(raw({ Mode: { ReplicatedJob: {} } })).mode).toBe("replicatedjob");
  });

  test("a description svc cannot read is an engine error, not a crash", () => {
    expect(() => parseService({ ID: "x" })).toThrow(/service svc cannot read/);
  });

  test("only the image changes when it is written back", () => {
    const spec = raw({}).Spec;
    const written = withImage(spec, "r/web:2@sha256:b") as any;
    expect(written.TaskTemplate.ContainerSpec).toEqual({ Image: "r/web:2@sha256:b", Env: ["A=1"] });
    expect(written.Mode).toEqual(spec.Mode);
    expect(spec.TaskTemplate.ContainerSpec.Image).toBe(`r/web:1@${digest}`);
  });

  test("a write refused because the spec moved on is told apart", () => {
    expect(
      isOutOfSequence(new Error("update service web: rpc error: code = Unknown desc = update out of sequence")),
    ).toBe(true);
    expect(isOutOfSequence(new Error("no such service"))).toBe(false);
  });

  test("a task container names its service; a plain container none", () => {
    expect(taskServiceOf({ "com.docker.swarm.task.id": "t", "com.docker.swarm.service.name": "web" })).toBe("web");
    expect(taskServiceOf({ "com.docker.swarm.service.name": "web" })).toBeUndefined();
  });
});

describe("a task as the engine describes it (GET /tasks)", () => {
  test("its spec's image and its state; the replicas its service asks for", () => {
    const task = { ID: "t1", Spec: { ContainerSpec: { Image: "r/web:1@sha256:a" } }, Status: { State: "running" } };
    expect(parseTask(task)).toEqual({ image: "r/web:1@sha256:a", state: "running" });
    expect(parseTask({ ID: "t2" })).toEqual({ image: "", state: "" });
    expect(() => parseTask("not a task")).toThrow("the engine described a task svc cannot read");
    const service = parseService({
      ID: "s",
      Version: { Index: 1 },
      Spec: { Name: "web", Mode: { Replicated: { Replicas: 3 } } },
    });
    expect(desiredReplicas(service)).toBe(3);
    expect(desiredReplicas({ ...service, spec: { Name: "web", Mode: { Global: {} } } })).toBeNull();
  });
});

describe("the reference a service follows", () => {
  test("repo:tag@digest follows repo:tag from that digest; a digest alone follows nothing; unpinned has no digest yet", () => {
    expect(unpinned(`127.0.0.1:5000/app:1.2@${digest}`)).toEqual({ image: "127.0.0.1:5000/app:1.2", digest });
    expect(unpinned(`127.0.0.1:5000/app@${digest}`)).toEqual({ image: `127.0.0.1:5000/app@${digest}`, digest });
    expect(unpinned("nginx:1.27")).toEqual({ image: "nginx:1.27", digest: "" });
  });
});
