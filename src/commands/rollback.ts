/**
 * `svc rollback NAME`: the container back on the image it ran before svc's last update of it.
 *
 * While a service runs on the same state file, the running service does the rollback
 * (POST /v1/rollback on its API), so one process acts on the engine and the decision
 * (the image to go back to, the digest left skipped) lands in the memory of the process that
 * runs the next cycle. When no service claims the state file, or it has no update API, the
 * command rolls back itself, between the service's cycles (the state file's lease), and the
 * state file is merged on every write and read again by the service before it uses it
 * (src/state/index.ts). The handover is made only to a service that proves, on the address its
 * owner file names, that it is that owner, and carries no API token: the request proves itself with
 * the owner file's nonce (state/owner.ts, docs/security.md).
 */
import { z } from "zod";
import { type Config, logSettings } from "../config/index.ts";
import { readBoundedJson } from "../core/bounded.ts";
import { type ErrorKind, SvcError } from "../core/errors.ts";
import { urlHost } from "../core/loopback.ts";
import { copyListOf } from "../dataguard/index.ts";
import { createLogging, type Logger, type Logging } from "../log/index.ts";
import { Metrics } from "../metrics/index.ts";
import { notificationSecrets } from "../notify/secrets.ts";
import { recoverOrPostpone } from "../service/recovery.ts";
import { loadRooms, rememberedBy } from "../service/rooms.ts";
import { stateFile } from "../state/index.ts";
import {
  describeProcess,
  liveOwner,
  newOwnerNonce,
  OWNER_CHALLENGE_HEADER,
  OWNER_PROOF_HEADER,
  type Owner,
  onThisHost,
  ownerProof,
  signOwnerRequest,
  waitForLease,
} from "../state/owner.ts";
import type { ProgressListener } from "../updater/index.ts";
import { OUTCOMES, type RollbackOptions, type RollbackResult } from "../updater/types.ts";
import { logRollback, stepLogger } from "../updater/wrappers/summary.ts";

/**
 * `svc rollback NAME`: the container back on the image it ran before svc's last update of it
 * (known from state_dir), through the update protocol. Exit 0 when it runs that image again.
 */
export async function runRollback(config: Config, name: string, options: RollbackOptions = {}): Promise<number> {
  const logging = createLogging(logSettings(config), { secrets: notificationSecrets(config.notifications) });
  const log = logging.log.child("service");
  let release: (() => void) | undefined;
  try {
    if (options.withData) warnDataLoss(config, name, log);
    const file = stateFile(config.state_dir, config.scope);
    const handed = file && (await rollbackThroughOwner(config, file, name, log, options.withData));
    if (handed) return rollbackOutcome(handed, logging);
    if (file) release = await leaseForCommand(file, "svc rollback", rollbackTimeoutMs(config), log);
    const updater = await commandUpdater(config, logging, {
      progress: logging.format === "pretty" ? stepLogger(logging.log.child("updater")) : undefined,
    });
    await recoverOrPostpone(updater, log);
    return rollbackOutcome(await updater.rollback(name, "run_once", options), logging);
  } finally {
    release?.();
    await logging.close();
  }
}

/** `svc rollback --with-data` says, before it acts, what the container wrote since the copy and is to be replaced. */
function warnDataLoss(config: Config, name: string, log: Logger): void {
  const copy = copyListOf(config)
    .list()
    .find((c) => c.container === name);
  if (!copy) return;
  const hours = Math.round(copy.age_seconds / 360) / 10;
  log.warn(
    `${name}: its data goes back to the copy of version ${copy.version ?? "?"} taken ${copy.created_at} (${hours} h ago): what it wrote since is replaced; its present data is copied first, so this rollback too can be undone (GET /v1/data-guard)`,
  );
}

/** Tells what `svc rollback` did; exit 0 when the container runs its earlier image again. */
export function rollbackOutcome(result: RollbackResult | null, logging: Logging): number {
  if (result) logRollback(logging.log.child("updater"), result, logging.format === "pretty");
  return result?.state === "updated" ? 0 : 1;
}

const ResultSchema = z.object({
  container: z.string(),
  from_image_id: z.string(),
  to_image_id: z.string(),
  state: z.enum(OUTCOMES),
  reason: z.string().nullable(),
  data_guard: z
    .object({
      bytes: z.number(),
      duration_ms: z.number(),
      restored: z.boolean(),
      problem: z.string().max(4000).optional(),
    })
    .optional(),
});

/** An answer of svc's API to a command is a few hundred bytes; anything larger is not svc's. */
const MAX_ANSWER_BYTES = 64 * 1024;

const KIND_BY_STATUS: Record<number, ErrorKind> = {
  400: "bad_request",
  401: "unauthorized",
  404: "not_found",
  409: "busy",
};

/**
 * The result of the rollback done by the service that owns `stateFile`, or undefined when this
 * process must do it itself (no live owner, or one without an update API or out of reach).
 */
function rollbackThroughOwner(
  config: Config,
  stateFile: string,
  name: string,
  log: Logger,
  withData = false,
): Promise<RollbackResult | undefined> {
  return handToOwner(
    stateFile,
    {
      // what to roll back is all in the query string, which the proof covers; no body, no token
      path: `/v1/rollback?container=${encodeURIComponent(name)}${withData ? "&with_data=true" : ""}`,
      instead: "rolling back from here, between its cycles",
      // the service stops, starts and watches the container as an update does
      timeoutMs: rollbackTimeoutMs(config),
      schema: ResultSchema,
      what: "a rollback's result",
    },
    log,
  );
}

/**
 * The updater a one-off command acts through when no service takes its request: the engine (which
 * must answer), the registry and state_dir's memory, as the service's own.
 */
export async function commandUpdater(config: Config, logging: Logging, options: { progress?: ProgressListener } = {}) {
  const rooms = await loadRooms();
  const engine = await rooms.createDockerEngine(config.docker, logging.log, {}, { mustAnswer: true });
  const state = rooms.openState(config.state_dir, logging.log, config.scope);
  return rooms.createUpdater({
    config,
    engine,
    registry: rooms.createRegistry(config, logging.log),
    metrics: new Metrics(),
    log: logging.log,
    audit: logging.audit,
    progress: options.progress,
    ...rememberedBy(state),
  });
}

/** A one-off command's request handed to the service that owns the state file (module comment). */
export interface HandedRequest<T> {
  /** path and query: all the request says, covered by the proof (no body, no token) */
  path: string;
  /** what the command does when the owner cannot take it: "rolling back from here, between its cycles" */
  instead: string;
  timeoutMs: number;
  schema: z.ZodType<T>;
  /** what the answer is, for the error when it is not that */
  what: string;
}

/**
 * The owner's answer to `request`, or undefined when this process must do the work itself (no
 * live owner, or one without an update API or out of reach).
 */
export async function handToOwner<T>(
  stateFile: string,
  request: HandedRequest<T>,
  log: Logger,
): Promise<T | undefined> {
  const owner = liveOwner(stateFile);
  if (!owner) return undefined;
  const who = describeProcess(owner);
  if (owner.api_port === null) {
    log.info(`${who} runs on this state_dir without the update API: ${request.instead}`);
    return undefined;
  }
  if (owner.api_address === undefined || owner.nonce === undefined) {
    log.warn(
      `${who} claims this state_dir with its API on port ${owner.api_port}, but its owner file (an older svc's) names no address or no nonce: nothing is sent to it; ${request.instead}`,
    );
    return undefined;
  }
  const place = `${urlHost(owner.api_address)}:${owner.api_port}`;
  const proof = await provesOwner(owner, place);
  if (proof !== "proven") {
    if (proof === "silent" && onThisHost(owner))
      throw new SvcError("startup", `${who} runs on this state_dir but its API does not answer on ${place}`);
    const what = proof === "silent" ? "nothing answers there" : "what answers there does not prove to be it";
    log.warn(
      `${who} claims this state_dir with its API on ${place}, but ${what}: nothing is handed to it; ${request.instead}`,
    );
    return undefined;
  }
  let response: Response;
  try {
    response = await fetch(`http://${place}${request.path}`, {
      method: "POST",
      headers: signOwnerRequest(owner.nonce, "POST", request.path),
      redirect: "manual",
      signal: AbortSignal.timeout(request.timeoutMs),
    });
  } catch (error) {
    // it proved to be the owner a moment ago: whether it acted is not known, so not again from here
    throw new SvcError(
      "startup",
      `${who} runs on this state_dir but its API stopped answering on ${place}: ${(error as Error).message}`,
    );
  }
  const result = await answerOf(response, who, place, request);
  log.info(`handed to ${who}, which runs on this state_dir (POST ${request.path.split("?")[0]})`);
  return result;
}

/** How long the owner has to answer its challenge: it answers /v1/health at once while it runs. */
const PROOF_TIMEOUT_MS = 10_000;

/**
 * Whether what listens on the owner's port knows the owner file's nonce: asked with a fresh
 * challenge on GET /v1/health, which needs no token. "silent": nothing answers.
 */
async function provesOwner(owner: Owner, place: string): Promise<"proven" | "unproven" | "silent"> {
  const challenge = newOwnerNonce();
  let response: Response;
  try {
    response = await fetch(`http://${place}/v1/health`, {
      headers: { [OWNER_CHALLENGE_HEADER]: challenge },
      redirect: "manual",
      signal: AbortSignal.timeout(PROOF_TIMEOUT_MS),
    });
  } catch {
    return "silent";
  }
  // nothing lost: the status is the answer; cancelling only frees the connection
  await response.body?.cancel().catch(() => {});
  const shown = response.headers.get(OWNER_PROOF_HEADER);
  return owner.nonce !== undefined && response.ok && shown === ownerProof(owner.nonce, challenge)
    ? "proven"
    : "unproven";
}

async function answerOf<T>(response: Response, who: string, place: string, request: HandedRequest<T>): Promise<T> {
  const read = await readBoundedJson(response, MAX_ANSWER_BYTES);
  const body = "value" in read ? read.value : undefined;
  if (response.ok) {
    const result = request.schema.safeParse(body);
    if (!result.success) throw new SvcError("internal", `${who} answered something that is not ${request.what}`);
    return result.data;
  }
  let message = `${who} answered ${response.status}`;
  try {
    message = `${who}: ${z.object({ error: z.string().max(2000) }).parse(body).error}`;
  } catch {
    // not our error body: the status says enough
  }
  if (response.status === 401)
    message += ` (it did not take the state folder's proof on ${place}: restart the service with this version of svc)`;
  if (response.status === 409) message = `${who} is running an update cycle: try again once it is over`;
  throw new SvcError(KIND_BY_STATUS[response.status] ?? "internal", message);
}

/**
 * The state file's lease for a command that acts on the containers itself: waits for a running
 * cycle of another process to end (at most `timeoutMs`), then holds it until released.
 */
export async function leaseForCommand(
  stateFile: string,
  command: string,
  timeoutMs: number,
  log: Logger,
): Promise<() => void> {
  const lease = await waitForLease(stateFile, command, timeoutMs, (holder) =>
    log.info(`waiting for ${describeProcess(holder)} to finish`),
  );
  if ("holder" in lease)
    throw new SvcError(
      "busy",
      `${describeProcess(lease.holder)} is still acting on the containers of this state_dir (${stateFile}.busy); try again later`,
    );
  return lease.release;
}

/** As long as a rollback (or the cycle it waits for) may reasonably take: a stop, a start, the watch. */
function rollbackTimeoutMs(config: Config): number {
  return 2 * config.stop_timeout + config.rollback.startup_timeout + 120_000;
}
