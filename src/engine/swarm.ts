/**
 * The Swarm side of the engine port: what svc needs of a Swarm manager to update services the way
 * `docker service update --image ... --with-registry-auth` does. The manager owns the tasks: svc
 * writes a service's spec (at the version it read) and reads how Swarm's own rolling update went;
 * it never touches a task container itself (docs/swarm.md).
 */
import { z } from "zod";
import { SvcError } from "../core/errors.ts";
import type { RegistryAuth } from "./auth.ts";

/** Where this engine stands in a Swarm. */
export interface SwarmState {
  /** the engine is part of an active swarm */
  active: boolean;
  /** ... and is a manager of it (it can list and update services) */
  manager: boolean;
}

/** Swarm's UpdateStatus.State of a service (absent before the first update). */
export type ServiceUpdateState =
  | "updating"
  | "paused"
  | "completed"
  | "rollback_started"
  | "rollback_paused"
  | "rollback_completed";

export interface ServiceUpdateStatus {
  state: ServiceUpdateState | (string & {});
  message: string;
  startedAt: string | null;
}

/** One service, as the manager holds it. */
export interface ServiceSummary {
  id: string;
  name: string;
  /** the spec's version: a write names it, and the manager refuses it when the spec moved on */
  version: number;
  /** TaskTemplate.ContainerSpec.Image: `repo:tag@sha256:...` once the manager pinned it */
  image: string;
  /** the service spec's labels (not the task containers') */
  labels: Record<string, string>;
  /** "replicated", "global", or another mode Swarm knows */
  mode: string;
  /** UpdateConfig.FailureAction (pause, continue, rollback); null: the spec has no UpdateConfig at all */
  failureAction: string | null;
  update: ServiceUpdateStatus | null;
  /** the image of the spec a rollback would go back to; null: no previous spec */
  previousImage: string | null;
  /** the spec as read, written back with only the image changed */
  spec: Record<string, unknown>;
}

/** One task a service's manager wants running: the image it was given and where it stands. */
export interface TaskSummary {
  /** Spec.ContainerSpec.Image: the image of the spec the task was made from */
  image: string;
  /** Status.State: new ... starting, running, or a state past running (failed, shutdown) */
  state: string;
}

export interface Swarm {
  state(): Promise<SwarmState>;
  listServices(): Promise<ServiceSummary[]>;
  /** null when there is no such service */
  inspectService(idOrName: string): Promise<ServiceSummary | null>;
  /**
   * Writes `service.spec` with its image set to `image`, at `service.version`, passing `auth` for
   * the nodes' pulls (as `--with-registry-auth`). Throws SvcError kind "engine"; `isOutOfSequence`
   * tells a spec changed meanwhile.
   */
  updateImage(service: ServiceSummary, image: string, auth?: RegistryAuth): Promise<void>;
  /** Asks Swarm to roll the service back to its previous spec (`docker service rollback`). */
  rollback(service: ServiceSummary): Promise<void>;
  /** The tasks of a service whose desired state is running (`docker service ps --filter desired-state=running`). */
  runningTasks(serviceId: string): Promise<TaskSummary[]>;
}

/** The manager refused a write because the spec's version moved on (someone else changed it). */
export function isOutOfSequence(error: unknown): boolean {
  return error instanceof Error && /out of sequence/i.test(error.message);
}

/** The swarm labels of a task container. */
export const TASK_LABELS = {
  service: "com.docker.swarm.service.name",
  serviceId: "com.docker.swarm.service.id",
  task: "com.docker.swarm.task.id",
} as const;

/** The service a task container belongs to, if it is one. */
export function taskServiceOf(labels: Readonly<Record<string, string>>): string | undefined {
  return labels[TASK_LABELS.task] !== undefined ? (labels[TASK_LABELS.service] ?? "") : undefined;
}

const labels = z.record(z.string(), z.string()).nullish();
const specSchema = z.looseObject({
  Name: z.string(),
  Labels: labels,
  Mode: z.record(z.string(), z.unknown()).nullish(),
  TaskTemplate: z.looseObject({ ContainerSpec: z.looseObject({ Image: z.string() }).nullish() }).nullish(),
  UpdateConfig: z.looseObject({ FailureAction: z.string().nullish() }).nullish(),
});
const serviceSchema = z.looseObject({
  ID: z.string(),
  Version: z.object({ Index: z.number() }),
  Spec: specSchema,
  PreviousSpec: specSchema.partial().nullish(),
  UpdateStatus: z
    .looseObject({ State: z.string().nullish(), Message: z.string().nullish(), StartedAt: z.string().nullish() })
    .nullish(),
});

const taskSchema = z.looseObject({
  Spec: z.looseObject({ ContainerSpec: z.looseObject({ Image: z.string().nullish() }).nullish() }).nullish(),
  Status: z.looseObject({ State: z.string().nullish() }).nullish(),
});

/** One task from the engine's JSON; a task svc cannot read is refused as an engine error. */
export function parseTask(raw: unknown): TaskSummary {
  const { Spec, Status } = readAs(taskSchema, raw, "a task");
  return { image: Spec?.ContainerSpec?.Image ?? "", state: Status?.State ?? "" };
}

/** `raw` read with `schema`, or an engine error naming `what` the engine described. */
function readAs<T>(schema: z.ZodType<T>, raw: unknown, what: string): T {
  const parsed = schema.safeParse(raw);
  if (!parsed.success)
    throw new SvcError(
      "engine",
      `the engine described ${what} svc cannot read: ${parsed.error.issues[0]?.message ?? "bad shape"}`,
    );
  return parsed.data;
}

/** One service from the engine's JSON; an entry svc cannot read is refused as an engine error. */
export function parseService(raw: unknown): ServiceSummary {
  const { ID, Version, Spec, PreviousSpec, UpdateStatus } = readAs(serviceSchema, raw, "a service");
  const status = UpdateStatus?.State
    ? { state: UpdateStatus.State, message: UpdateStatus.Message ?? "", startedAt: UpdateStatus.StartedAt ?? null }
    : null;
  return {
    id: ID,
    name: Spec.Name,
    version: Version.Index,
    image: Spec.TaskTemplate?.ContainerSpec?.Image ?? "",
    labels: Spec.Labels ?? {},
    mode: Object.keys(Spec.Mode ?? {})[0]?.toLowerCase() ?? "replicated",
    // the engine reports Swarm's default (pause) for any UpdateConfig: only a spec without one has no action of its own
    failureAction: Spec.UpdateConfig ? Spec.UpdateConfig.FailureAction || "pause" : null,
    update: status,
    previousImage: PreviousSpec?.TaskTemplate?.ContainerSpec?.Image ?? null,
    spec: Spec as Record<string, unknown>,
  };
}

/** How many tasks a replicated service's spec asks for; null for another mode (global: one per node). */
export function desiredReplicas(service: ServiceSummary): number | null {
  const mode = service.spec.Mode as { Replicated?: { Replicas?: unknown } } | undefined;
  const replicas = mode?.Replicated?.Replicas;
  return typeof replicas === "number" ? replicas : null;
}

/** `spec` with its container image replaced, everything else as read. */
export function withImage(spec: Record<string, unknown>, image: string): Record<string, unknown> {
  const template = (spec.TaskTemplate ?? {}) as Record<string, unknown>;
  const container = (template.ContainerSpec ?? {}) as Record<string, unknown>;
  return { ...spec, TaskTemplate: { ...template, ContainerSpec: { ...container, Image: image } } };
}

/** What the Docker implementation needs of the engine: one bounded call (docker.ts's `call`). */
export type EngineCall = <T>(
  what: string,
  action: (docker: DockerodeLike, signal: AbortSignal) => Promise<T>,
  options?: { ok?: number[] },
) => Promise<T | undefined>;

/** The part of dockerode the Swarm calls use. */
export interface DockerodeLike {
  info(options: { abortSignal: AbortSignal }): Promise<unknown>;
  listServices(options: { abortSignal: AbortSignal }): Promise<unknown[]>;
  listTasks(options: { filters: string; abortSignal: AbortSignal }): Promise<unknown[]>;
  getService(id: string): {
    inspect(options: { abortSignal: AbortSignal }): Promise<unknown>;
    update(auth: unknown, options: Record<string, unknown>): Promise<unknown>;
  };
}

/** The Swarm port on the Docker Engine API. */
export function dockerSwarm(call: EngineCall): Swarm {
  const inspectService = async (idOrName: string): Promise<ServiceSummary | null> => {
    const raw = await call(
      `inspect service ${idOrName}`,
      (docker, abortSignal) => docker.getService(idOrName).inspect({ abortSignal }),
      { ok: [404] },
    );
    return raw === undefined ? null : parseService(raw);
  };
  const write = (
    service: ServiceSummary,
    what: string,
    spec: Record<string, unknown>,
    query: Record<string, unknown>,
    auth?: RegistryAuth,
  ) =>
    call(what, (docker, abortSignal) =>
      docker
        .getService(service.id)
        .update(auth, { _query: { version: service.version, ...query }, _body: spec, abortSignal }),
    );
  return {
    async state() {
      const info = (await call("read the engine's swarm state", (docker, abortSignal) =>
        docker.info({ abortSignal }),
      )) as { Swarm?: { LocalNodeState?: string; ControlAvailable?: boolean } } | undefined;
      const active = info?.Swarm?.LocalNodeState === "active";
      return { active, manager: active && info?.Swarm?.ControlAvailable === true };
    },
    async listServices() {
      const rows = (await call("list services", (docker, abortSignal) => docker.listServices({ abortSignal }))) ?? [];
      return rows.map(parseService);
    },
    inspectService,
    async updateImage(service, image, auth) {
      await write(service, `update service ${service.name}`, withImage(service.spec, image), {}, auth);
    },
    async rollback(service) {
      await write(service, `roll back service ${service.name}`, service.spec, { rollback: "previous" });
    },
    async runningTasks(serviceId) {
      const filters = JSON.stringify({ service: [serviceId], "desired-state": ["running"] });
      const rows =
        (await call(`list the tasks of service ${serviceId}`, (docker, abortSignal) =>
          docker.listTasks({ filters, abortSignal }),
        )) ?? [];
      return rows.map(parseTask);
    },
  };
}
