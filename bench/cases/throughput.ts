/** Requests per second of health and metrics, and the access log's cost, against bare Bun.serve. */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { FIELDS_BIN, LINE_BIN, startBaseline, startSvc, TOKEN, WORK } from "../harness.ts";
import { freePort, median, startProcess, stop, waitForHealth, wrk } from "../lib.ts";
import { record } from "../results.ts";

/**
 * The three servers run side by side and are measured in turns (ROUNDS rounds of SEGMENT seconds
 * each, 10 s per measurement in all): on a shared, noisy machine, one 10 s run after another
 * compared moments of different load, and the access-log ratio swung between 1.2 and 1.8.
 */
export async function benchThroughput(): Promise<void> {
  const ROUNDS = 7;
  const SEGMENT = 2;
  const auth = { authorization: `Bearer ${TOKEN}` };
  const accessLog = join(WORK, "access.log");
  const basePort = freePort();
  const port = freePort();
  const loggedPort = freePort();
  const fieldsPort = freePort();
  const linePort = freePort();
  const base = await startBaseline(basePort);
  const fields = startProcess([FIELDS_BIN, String(fieldsPort)]);
  await waitForHealth(fieldsPort);
  const line = startProcess([LINE_BIN, String(linePort), join(WORK, "access-line.log")]);
  await waitForHealth(linePort);
  const svc = await startSvc({ port });
  const logged = await startSvc({ port: loggedPort, accessLog });
  const series = {
    base: [] as number[],
    fields: [] as number[],
    line: [] as number[],
    health: [] as number[],
    metrics: [] as number[],
    healthLogged: [] as number[],
    metricsLogged: [] as number[],
  };
  try {
    await Bun.sleep(1000); // startup work behind the API (engine, recovery) is over
    for (let round = 0; round < ROUNDS; round++) {
      const measure = (name: string, url: string, headers: Record<string, string> = {}) => {
        const result = wrk(url, SEGMENT, headers);
        if (result.non2xx) throw new Error(`${name}: ${result.non2xx} non-2xx answers`);
        return result.requestsPerSecond;
      };
      series.base.push(measure("baseline health", `http://127.0.0.1:${basePort}/v1/health`));
      series.fields.push(measure("baseline reading the access-log fields", `http://127.0.0.1:${fieldsPort}/v1/health`));
      series.line.push(measure("baseline writing an access log", `http://127.0.0.1:${linePort}/v1/health`));
      series.health.push(measure("health", `http://127.0.0.1:${port}/v1/health`));
      series.healthLogged.push(measure("health+log", `http://127.0.0.1:${loggedPort}/v1/health`));
      series.metrics.push(measure("metrics", `http://127.0.0.1:${port}/v1/metrics`, auth));
      series.metricsLogged.push(measure("metrics+log", `http://127.0.0.1:${loggedPort}/v1/metrics`, auth));
    }
  } finally {
    await stop(logged);
    await stop(svc);
    await stop(line);
    await stop(fields);
    await stop(base);
  }
  const logLines = existsSync(accessLog) ? (await Bun.file(accessLog).text()).split("\n").filter(Boolean).length : 0;
  // Each ratio is the median of the per-round ratios: the two sides of a round are measured back
  // to back, so a slow stretch of this shared 2-core VM weighs on both instead of on one series.
  const paired = (a: number[], b: number[]) => median(a.map((value, i) => value / b[i]!));
  const rounds = `median of ${ROUNDS} interleaved ${SEGMENT} s runs; ratio: median of the per-round ratios`;
  record({
    benchmark: "GET /v1/health throughput (req/s)",
    svc: median(series.health),
    baseline: median(series.base),
    ratio: paired(series.health, series.base),
    unit: "req/s",
    target: ">= 0.7x bare Bun.serve",
    check: (r) => r >= 0.7,
    note: rounds,
  });
  record({
    benchmark: "GET /v1/metrics throughput (req/s)",
    svc: median(series.metrics),
    baseline: median(series.base),
    ratio: paired(series.metrics, series.base),
    unit: "req/s",
    target: "report",
    note: "baseline: bare health",
  });
  record({
    benchmark: "access log cost on health (time per request with/without = req/s without vs with)",
    svc: median(series.health),
    baseline: median(series.healthLogged),
    ratio: paired(series.health, series.healthLogged),
    unit: "req/s",
    target: "<= 1.20x",
    check: (r) => r <= 1.2,
    note: `${logLines} access-log lines written`,
  });
  record({
    benchmark: "access log cost on metrics (time per request with/without = req/s without vs with)",
    svc: median(series.metrics),
    baseline: median(series.metricsLogged),
    ratio: paired(series.metrics, series.metricsLogged),
    unit: "req/s",
    target: "<= 1.20x",
    check: (r) => r <= 1.2,
  });
  record({
    benchmark:
      "floor: bare Bun.serve reading the access-log fields (remote address, 3 headers), writing nothing (req/s without vs with)",
    svc: median(series.base),
    baseline: median(series.fields),
    ratio: paired(series.base, series.fields),
    unit: "req/s",
    target: "report",
  });
  record({
    benchmark:
      "floor: bare Bun.serve writing an access log (the access log's fields as one NDJSON line per request, appended every 10 ms) (req/s without vs with)",
    svc: median(series.base),
    baseline: median(series.line),
    ratio: paired(series.base, series.line),
    unit: "req/s",
    target: "report",
    note: "the least any access log costs here; the 1.20x target is below it",
  });
}
