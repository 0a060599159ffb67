/**
 * What a copy of a container's guarded mounts is asked and answers (docs/data-guard.md), and the
 * measure before it: the engine's archive of each mount (GET /containers/{id}/archive) of the
 * running container, counted up to the limit and no further, so that a copy that cannot fit holds
 * the update before anything stops. The copy itself is the helper's, in the engine (inengine.ts).
 */
import { SvcError } from "../core/errors.ts";
import { timerDelay } from "../core/timers.ts";
import type { Engine } from "../engine/port.ts";
import type { GuardedMount } from "./mounts.ts";
import type { Copy } from "./store.ts";

export interface CopyRequest {
  container: string;
  containerId: string;
  image: string;
  imageId: string | null;
  version: string | null;
  mounts: GuardedMount[];
  /** the most the copy may take: the cap or the room left, whichever is smaller */
  limit: { bytes: number; why: string };
}

export type CopyOutcome = { kind: "copied"; copy: Copy } | { kind: "over"; bytes: number; reason: string };

/**
 * The longest the engine may send nothing while it streams an archive being measured: an engine
 * that stalls must not hold the update for good.
 */
const ARCHIVE_IDLE_MS = 120_000;

/** The next chunk of an archive, or an engine error after ARCHIVE_IDLE_MS without one. */
async function readChunk(
  reader: { read(): Promise<{ done: boolean; value?: Uint8Array }> },
  destination: string,
): Promise<{ done: true; value?: undefined } | { done: false; value: Uint8Array }> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const stalled = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new SvcError("engine", `the engine sent nothing of ${destination} for ${ARCHIVE_IDLE_MS / 1000} s`)),
      timerDelay(ARCHIVE_IDLE_MS),
    );
  });
  try {
    return (await Promise.race([reader.read(), stalled])) as { done: true } | { done: false; value: Uint8Array };
  } finally {
    clearTimeout(timer);
  }
}

/** The archive's size of the guarded mounts of a running container, counted up to `limit` (+1): to know before the stop whether a copy fits. */
export async function measureMounts(
  engine: Engine,
  containerId: string,
  mounts: GuardedMount[],
  limit: number,
): Promise<number> {
  let total = 0;
  for (const mount of mounts) {
    const reader = (await engine.readArchive(containerId, mount.destination)).getReader();
    try {
      for (;;) {
        const { done, value } = await readChunk(reader, mount.destination);
        if (done) break;
        total += value.byteLength;
        if (total > limit) return total;
      }
    } finally {
      // nothing lost: what was needed was read; cancelling only stops the engine's stream
      await reader.cancel().catch(() => {});
    }
  }
  return total;
}
