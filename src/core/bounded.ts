/**
 * Bodies from outside (an API request, a registry's or a notification service's answer) are read
 * through a cap: a peer that sends more than svc needs must not take its memory (docs/security.md).
 */

export interface BoundedBody {
  bytes: Uint8Array<ArrayBuffer>;
  /** more than `cap` bytes were sent or announced (the rest is not read, and `bytes` is empty) */
  overCap: boolean;
}

/** Reads at most cap + 1 bytes of a request's or a response's body: enough to tell "empty", "fits" and "too large" apart. */
export async function readBounded(source: Pick<Request, "headers" | "body">, cap: number): Promise<BoundedBody> {
  const declared = Number(source.headers.get("content-length") ?? Number.NaN);
  if (source.body === null || declared === 0) return { bytes: new Uint8Array(0), overCap: false };
  if (declared > cap) {
    await source.body.cancel().catch(() => {});
    return { bytes: new Uint8Array(0), overCap: true };
  }
  const reader = source.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      size += value.byteLength;
      if (size > cap) {
        await reader.cancel().catch(() => {});
        return { bytes: new Uint8Array(0), overCap: true };
      }
    }
  } finally {
    reader.releaseLock();
  }
  return { bytes: Buffer.concat(chunks), overCap: false };
}
