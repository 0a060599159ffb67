/**
 * GET /containers/{id}/archive over the engine's unix socket without fetch (docs/data-guard.md,
 * "How much, and where"). fetch hands a response body over in ~60 KiB chunks, one promise each, and
 * read that way an archive came at half the speed the socket gives: the data guard's measure reads
 * up to data_guard_max_size before each guarded update. Here the
 * request is HTTP/1.0, so the engine answers without chunked framing and closes the connection at
 * the end: the body is every byte after the head. The socket's bytes are gathered into chunks of
 * GATHER_BYTES (few promises), and the socket pauses while the reader has not taken them.
 */
import { EngineStatusError } from "./modem.ts";

/** The size of the chunks handed to the reader. */
const GATHER_BYTES = 512 * 1024;
/** The most of an answer's head (status line and headers), and of an error's body, svc reads. */
const MAX_HEAD_BYTES = 64 * 1024;

/**
 * The archive's bytes as a stream, once the engine answered 200; an EngineStatusError for any
 * other status. `idleMs`: the longest the engine may send nothing (the stream then errors).
 */
export function readArchiveOverUnix(
  socketPath: string,
  requestPath: string,
  idleMs: number,
  signal?: AbortSignal,
): Promise<ReadableStream<Uint8Array>> {
  return new Promise((resolve, reject) => {
    let head: Buffer | null = Buffer.alloc(0);
    let status = 0;
    let errorBody = Buffer.alloc(0);
    let gathered = Buffer.allocUnsafe(GATHER_BYTES);
    let gatheredBytes = 0;
    let controller!: ReadableStreamDefaultController<Uint8Array>;
    let socket: Awaited<ReturnType<typeof Bun.connect>> | undefined;
    let settled = false;
    const stream = new ReadableStream<Uint8Array>(
      {
        start: (c) => void (controller = c),
        pull: () => void socket?.resume(),
        cancel: () => void socket?.terminate(),
      },
      { highWaterMark: 2 },
    );
    const flush = () => {
      if (gatheredBytes === 0) return;
      controller.enqueue(gathered.subarray(0, gatheredBytes));
      gathered = Buffer.allocUnsafe(GATHER_BYTES);
      gatheredBytes = 0;
      if ((controller.desiredSize ?? 1) <= 0) socket?.pause();
    };
    const fail = (error: Error) => {
      if (!settled) {
        settled = true;
        reject(error);
      } else controller.error(error);
    };
    const body = (bytes: Buffer) => {
      if (status !== 200) {
        if (errorBody.length < MAX_HEAD_BYTES) errorBody = Buffer.concat([errorBody, bytes]);
        return;
      }
      // copied once, into the chunk being gathered (the socket's buffer is its own)
      for (let offset = 0; offset < bytes.length; ) {
        const taken = Math.min(bytes.length - offset, GATHER_BYTES - gatheredBytes);
        gathered.set(bytes.subarray(offset, offset + taken), gatheredBytes);
        gatheredBytes += taken;
        offset += taken;
        if (gatheredBytes === GATHER_BYTES) flush();
      }
    };
    const onHead = (bytes: Buffer) => {
      head = Buffer.concat([head!, bytes]);
      const end = head.indexOf("\r\n\r\n");
      if (end < 0) {
        if (head.length > MAX_HEAD_BYTES) fail(new Error("the engine's answer has no end of its head"));
        return;
      }
      status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(head.subarray(0, 16).toString("latin1"))?.[1] ?? 0);
      const rest = head.subarray(end + 4);
      head = null;
      if (status === 200) {
        settled = true;
        resolve(stream);
      }
      if (rest.length) body(rest);
    };
    // the signal bounds the wait for the answer's head; the body then runs on (idle timeout only)
    signal?.addEventListener("abort", () => {
      if (settled) return;
      socket?.terminate();
      fail(signal.reason instanceof Error ? signal.reason : new Error("aborted"));
    });
    Bun.connect({
      unix: socketPath,
      socket: {
        open: (s) => {
          socket = s;
          s.timeout(Math.ceil(idleMs / 1000));
          s.write(`GET ${requestPath} HTTP/1.0\r\nHost: localhost\r\n\r\n`);
        },
        data: (s, bytes) => {
          s.timeout(Math.ceil(idleMs / 1000)); // an idle timeout: each answer from the engine starts it again
          if (head === null) body(bytes);
          else onHead(bytes);
        },
        close: () => {
          if (status === 200) {
            try {
              flush();
              controller.close();
            } catch {
              // the stream already ended: cancelled by its reader, or errored (timeout, abort)
            }
          } else if (!settled)
            fail(
              status
                ? new EngineStatusError(status, parseJson(errorBody.toString("utf8")))
                : new Error("the engine closed the connection without an answer"),
            );
        },
        timeout: (s) => {
          fail(new Error(`the engine sent nothing for ${Math.round(idleMs / 1000)} s`));
          s.terminate();
        },
        error: (_s, error) => fail(error),
        connectError: (_s, error) => fail(error),
      },
    }).catch(fail);
  });
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
