/**
 * The harness's own way to the sandbox engine: its Engine API over the unix socket, answered
 * synchronously, so that helpers like `inspect` keep their plain signatures. A worker thread
 * (engine-api-worker.ts) does the request while the test's thread waits on a shared flag.
 *
 * A request costs about 3 ms; a docker CLI start costs 50-100 ms of CPU, and the harness used to
 * start one for every inspect, removal and poll (docs/testing.md, "The harness talks to the engine through its API"). The
 * docker CLI stays where a test is about what a user types (harness `docker`).
 */
import { MessageChannel, type MessagePort, receiveMessageOnPort, Worker } from "node:worker_threads";
import type { EngineCall, EngineReply } from "./engine-api-worker.ts";

export interface EngineAnswer {
  status: number;
  /** the answer as text */
  body: string;
  bytes: Uint8Array;
}

export interface EngineRequestOptions {
  /** the engine's socket; the sandbox engine's by default */
  socketPath?: string;
  headers?: Record<string, string>;
  body?: string;
  /** a file sent as the body */
  bodyFile?: string;
  timeoutMs?: number;
}

interface Channel {
  worker: Worker;
  port: MessagePort;
  raised: Int32Array;
}

let channel: Channel | undefined;

function open(): Channel {
  const { port1, port2 } = new MessageChannel();
  const raised = new Int32Array(new SharedArrayBuffer(4));
  const worker = new Worker(new URL("./engine-api-worker.ts", import.meta.url), {
    workerData: { port: port2, flag: raised.buffer },
    transferList: [port2],
  });
  // The thread must never keep a finished test run alive.
  worker.unref();
  return { worker, port: port1, raised };
}

function takeReply(ch: Channel, timeoutMs: number): EngineReply {
  // The worker posts its reply before it raises the flag; the message may still be a moment away.
  const deadline = Date.now() + timeoutMs;
  Atomics.wait(ch.raised, 0, 0, timeoutMs);
  for (;;) {
    const received = receiveMessageOnPort(ch.port);
    if (received) return received.message as EngineReply;
    if (Date.now() > deadline) return { error: `no answer from the engine in ${timeoutMs} ms` };
    Atomics.wait(ch.raised, 0, 1, 1);
  }
}

/**
 * One Engine API request, answered synchronously: `path` as the API documents it, without the
 * version prefix (the engine's own version answers, as for the docker CLI of the same release).
 */
export function engineRequest(method: string, path: string, options: EngineRequestOptions = {}): EngineAnswer {
  const socketPath = options.socketPath ?? defaultSocket();
  const timeoutMs = options.timeoutMs ?? 120_000;
  channel ??= open();
  const call: EngineCall = {
    socketPath,
    method,
    path,
    headers: options.headers,
    body: options.body,
    bodyFile: options.bodyFile,
    timeoutMs,
  };
  Atomics.store(channel.raised, 0, 0);
  channel.worker.postMessage(call);
  // A little longer than the worker's own timeout, so its answer (an abort) comes first.
  const reply = takeReply(channel, timeoutMs + 5_000);
  if ("error" in reply) throw new Error(`engine ${method} ${path}: ${reply.error}`);
  return { status: reply.status, bytes: reply.bytes, body: new TextDecoder().decode(reply.bytes) };
}

/** An Engine API request whose failure (4xx, 5xx) throws with the engine's message. */
export function engineJson<T = any>(method: string, path: string, options: EngineRequestOptions = {}): T {
  const answer = engineRequest(method, path, options);
  if (answer.status >= 400)
    throw new Error(`engine ${method} ${path} failed (${answer.status}): ${engineMessage(answer)}`);
  return (answer.body ? JSON.parse(answer.body) : undefined) as T;
}

/** The engine's message in an error answer. */
export function engineMessage(answer: EngineAnswer): string {
  try {
    return (JSON.parse(answer.body) as { message?: string }).message ?? answer.body;
  } catch {
    return answer.body.trim();
  }
}

/**
 * The objects of a streaming answer (import, push, pull: one JSON object a line). Throws with the
 * first error the stream reports: such calls answer 200 and report failure inside the stream.
 */
export function engineStream(answer: EngineAnswer, what: string): Record<string, any>[] {
  if (answer.status >= 400) throw new Error(`${what} failed (${answer.status}): ${engineMessage(answer)}`);
  const lines = answer.body
    .split("\n")
    .filter((line) => line.trim())
    .map((line) => JSON.parse(line) as Record<string, any>);
  const failed = lines.find((line) => line.error || line.errorDetail);
  if (failed) throw new Error(`${what} failed: ${failed.errorDetail?.message ?? failed.error}`);
  return lines;
}

/** A name or reference as one path segment the engine's router takes (it allows `/`, `:`, `@`). */
export function enginePathName(name: string): string {
  return encodeURIComponent(name).replace(/%2F/g, "/").replace(/%3A/g, ":").replace(/%40/g, "@");
}

/** `filters=` of a list call. */
export function engineFilters(filters: Record<string, string[]>): string {
  return `filters=${encodeURIComponent(JSON.stringify(filters))}`;
}

function defaultSocket(): string {
  const host = process.env.SVC_TEST_DOCKER_HOST;
  if (!host?.startsWith("unix://"))
    throw new Error("SVC_TEST_DOCKER_HOST is not a unix socket: start the sandbox (scripts/sandbox.sh up)");
  return host.slice("unix://".length);
}
