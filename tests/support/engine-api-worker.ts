/**
 * The thread behind tests/support/engine-api.ts: it does each request the test's thread hands it
 * (fetch over the engine's unix socket), posts the answer back on the port and raises the shared
 * flag the test's thread waits on.
 */
import { type MessagePort, parentPort, workerData } from "node:worker_threads";

export interface EngineCall {
  socketPath: string;
  method: string;
  path: string;
  headers?: Record<string, string>;
  /** a request body, or the path of a file sent as the body (an image's rootfs tar) */
  body?: string;
  bodyFile?: string;
  timeoutMs: number;
}

export type EngineReply = { status: number; bytes: Uint8Array } | { error: string };

const { port, flag } = workerData as { port: MessagePort; flag: SharedArrayBuffer };
const raised = new Int32Array(flag);

async function answer(call: EngineCall): Promise<EngineReply> {
  try {
    const response = await fetch(`http://engine${call.path}`, {
      method: call.method,
      headers: call.headers,
      body: call.bodyFile ? Bun.file(call.bodyFile) : call.body,
      unix: call.socketPath,
      signal: AbortSignal.timeout(call.timeoutMs),
    } as RequestInit);
    // The whole answer, also of a streaming call (push, import): its end is the operation's end.
    return { status: response.status, bytes: new Uint8Array(await response.arrayBuffer()) };
  } catch (error) {
    return { error: error instanceof Error ? error.message : String(error) };
  }
}

parentPort?.on("message", async (call: EngineCall) => {
  port.postMessage(await answer(call));
  Atomics.store(raised, 0, 1);
  Atomics.notify(raised, 0);
});
