/**
 * OSV's API (docs/vulnerabilities.md): POST /v1/querybatch answers, for each query, the ids (and
 * `modified`) of the vulnerabilities that affect a package at a version; at most 1,000 queries a
 * request, and a query with more vulnerabilities than one answer holds comes back with a
 * `next_page_token` to ask it again with. GET /v1/vulns/{id} answers one record, kept in memory
 * by id until OSV says it was modified. Every answer is read through a cap and parsed with a
 * schema; a failure throws, and the caller reports it.
 */
import { z } from "zod";
import { parseJsonBytes, readBounded } from "../core/bounded.ts";
import { duration } from "../core/moments.ts";

export const OSV_LIMITS = {
  /** OSV's own limit of queries in one batch request */
  batchQueries: 1000,
  /** one batch answer (ids and moments only) */
  batchBytes: 8 * 1024 * 1024,
  /** one vulnerability's record */
  recordBytes: 2 * 1024 * 1024,
  /** pages asked for one query (page_token followed at most this many times) */
  pages: 5,
  /** records asked for at once */
  parallel: 8,
  /** records kept in memory */
  cachedRecords: 5000,
} as const;

export interface OsvQuery {
  ecosystem: string;
  name: string;
  version: string;
}

export interface OsvHit {
  id: string;
  modified: string;
}

const batchAnswer = z.object({
  results: z
    .array(
      z.object({
        vulns: z.array(z.object({ id: z.string().max(200), modified: z.string().max(64) })).optional(),
        next_page_token: z.string().max(4096).optional(),
      }),
    )
    .max(OSV_LIMITS.batchQueries),
});

const event = z.object({
  introduced: z.string().max(256).optional(),
  fixed: z.string().max(256).optional(),
  last_affected: z.string().max(256).optional(),
});

export const osvRecord = z.object({
  id: z.string().max(200),
  modified: z.string().max(64),
  summary: z.string().optional(),
  details: z.string().optional(),
  aliases: z.array(z.string().max(200)).max(200).optional(),
  severity: z
    .array(z.object({ type: z.string().max(32), score: z.string().max(512) }))
    .max(20)
    .optional(),
  affected: z
    .array(
      z.object({
        package: z
          .object({ ecosystem: z.string().max(200), name: z.string().max(500) })
          .partial()
          .optional(),
        ranges: z
          .array(z.object({ type: z.string().max(32), events: z.array(event).max(1000) }))
          .max(100)
          .optional(),
        ecosystem_specific: z.record(z.string(), z.unknown()).optional(),
        database_specific: z.record(z.string(), z.unknown()).optional(),
      }),
    )
    .max(1000)
    .optional(),
  database_specific: z.record(z.string(), z.unknown()).optional(),
});
export type OsvRecord = z.infer<typeof osvRecord>;

export interface OsvClientOptions {
  url: string;
  timeoutMs: number;
  fetch?: typeof fetch;
}

export interface OsvClient {
  /** For each query, in order, the vulnerabilities OSV names (every page); throws when OSV does not answer as it should. */
  query(queries: readonly OsvQuery[]): Promise<OsvHit[][]>;
  /** The records of `hits`, from memory where OSV's `modified` is the one kept. */
  records(hits: readonly OsvHit[]): Promise<Map<string, OsvRecord>>;
  /** requests sent (the bench and the tests count them) */
  readonly requests: number;
}

export function createOsvClient(options: OsvClientOptions): OsvClient {
  const base = options.url.replace(/\/+$/, "");
  const cache = new Map<string, OsvRecord>();
  let requests = 0;

  const send = async (path: string, cap: number, init: RequestInit = {}): Promise<unknown> => {
    requests++;
    let response: Response;
    const signal = AbortSignal.timeout(options.timeoutMs);
    try {
      response = await (options.fetch ?? fetch)(`${base}${path}`, { ...init, signal, redirect: "error" });
    } catch (error) {
      throw new Error(
        (error as Error).name === "TimeoutError"
          ? `OSV did not answer within ${duration(options.timeoutMs)}`
          : `OSV is unreachable: ${(error as Error).message}`,
      );
    }
    if (!response.ok) {
      await response.body?.cancel().catch(() => {});
      throw new Error(`OSV answered ${response.status} to ${init.method ?? "GET"} ${path.replace(/\?.*$/, "")}`);
    }
    let body: Awaited<ReturnType<typeof readBounded>>;
    try {
      body = await readBounded(response, cap);
    } catch (error) {
      throw new Error(
        (error as Error).name === "TimeoutError"
          ? `OSV's answer did not end within ${duration(options.timeoutMs)}`
          : `OSV's answer broke off: ${(error as Error).message}`,
      );
    }
    if (body.overCap) throw new Error(`OSV's answer is larger than ${cap / 1024 / 1024} MiB: not read`);
    const parsed = parseJsonBytes(body.bytes);
    if ("error" in parsed) throw new Error(`OSV's answer is not JSON (${parsed.error})`);
    return parsed.value;
  };

  const batch = async (queries: readonly (OsvQuery & { page_token?: string })[]) => {
    const body = JSON.stringify({
      queries: queries.map((q) => ({
        package: { ecosystem: q.ecosystem, name: q.name },
        version: q.version,
        ...(q.page_token ? { page_token: q.page_token } : {}),
      })),
    });
    const answer = batchAnswer.safeParse(
      await send("/v1/querybatch", OSV_LIMITS.batchBytes, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body,
      }),
    );
    if (!answer.success)
      throw new Error(`OSV's batch answer is not of OSV's shape: ${answer.error.issues[0]?.message}`);
    if (answer.data.results.length !== queries.length)
      throw new Error(`OSV answered ${answer.data.results.length} results to ${queries.length} queries`);
    return answer.data.results;
  };

  return {
    get requests() {
      return requests;
    },
    async query(queries) {
      const hits: OsvHit[][] = queries.map(() => []);
      let pending = queries.map((query, index) => ({ ...query, index, page_token: undefined as string | undefined }));
      for (let page = 0; pending.length > 0; page++) {
        if (page === OSV_LIMITS.pages) throw new Error(`OSV still had more pages after ${OSV_LIMITS.pages}: not read`);
        const next: typeof pending = [];
        for (let start = 0; start < pending.length; start += OSV_LIMITS.batchQueries) {
          const chunk = pending.slice(start, start + OSV_LIMITS.batchQueries);
          const results = await batch(chunk);
          results.forEach((result, i) => {
            const query = chunk[i]!;
            hits[query.index]!.push(...(result.vulns ?? []));
            if (result.next_page_token) next.push({ ...query, page_token: result.next_page_token });
          });
        }
        pending = next;
      }
      return hits;
    },
    async records(wanted) {
      const out = new Map<string, OsvRecord>();
      const unique = [...new Map(wanted.map((hit) => [hit.id, hit])).values()];
      const missing = unique.filter((hit) => {
        const kept = cache.get(hit.id);
        if (kept && kept.modified === hit.modified) {
          out.set(hit.id, kept);
          return false;
        }
        return true;
      });
      for (let start = 0; start < missing.length; start += OSV_LIMITS.parallel) {
        await Promise.all(
          missing.slice(start, start + OSV_LIMITS.parallel).map(async (hit) => {
            const parsed = osvRecord.safeParse(
              await send(`/v1/vulns/${encodeURIComponent(hit.id)}`, OSV_LIMITS.recordBytes),
            );
            if (!parsed.success) throw new Error(`OSV's record of ${hit.id} is not of OSV's shape`);
            out.set(hit.id, parsed.data);
            cache.delete(hit.id);
            cache.set(hit.id, parsed.data);
            if (cache.size > OSV_LIMITS.cachedRecords) cache.delete(cache.keys().next().value!);
          }),
        );
      }
      return out;
    },
  };
}
