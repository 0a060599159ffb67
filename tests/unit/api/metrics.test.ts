/** The metrics text format parsed back and compared with the JSON rendering (docs/api.md). */
import { expect, test } from "bun:test";
import { METRIC_NAMES } from "../../../src/metrics/index.ts";
import { bearer, makeApp } from "./fakes.ts";

interface ParsedMetric {
  help?: string;
  type?: string;
  samples: { name: string; value: number }[];
}

/** A small parser of the 0.0.4 text format: HELP / TYPE comments and `name value` samples. */
function parsePrometheus(text: string): Map<string, ParsedMetric> {
  const metrics = new Map<string, ParsedMetric>();
  const entry = (name: string) => {
    if (!metrics.has(name)) metrics.set(name, { samples: [] });
    return metrics.get(name)!;
  };
  expect(text.endsWith("\n")).toBe(true);
  for (const line of text.split("\n").filter(Boolean)) {
    const comment = /^# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) (.+)$/.exec(line);
    if (comment) {
      const [, kind, name, rest] = comment;
      if (kind === "HELP") entry(name!).help = rest;
      else entry(name!).type = rest;
      continue;
    }
    const sample = /^([a-zA-Z_:][a-zA-Z0-9_:]*) (\S+)$/.exec(line);
    if (!sample) throw new Error(`not a metric line: ${line}`);
    entry(sample[1]!).samples.push({ name: sample[1]!, value: Number(sample[2]) });
  }
  return metrics;
}

async function bothRenderings(ctx: ReturnType<typeof makeApp>) {
  const text = await (await ctx.request("/v1/metrics", { headers: bearer() })).text();
  const json = await (
    await ctx.request("/v1/metrics", { headers: { ...bearer(), accept: "application/json" } })
  ).json();
  return { parsed: parsePrometheus(text), json: json as Record<string, number> };
}

const TYPES: Record<string, string> = {
  svc_scans_total: "counter",
  svc_scans_skipped: "counter",
  svc_containers_scanned: "gauge",
  svc_containers_updated: "gauge",
  svc_containers_failed: "gauge",
};

test("the five metrics, each with HELP, TYPE and one sample, equal to the JSON", async () => {
  const ctx = makeApp();
  ctx.metrics.recordCycle({ scanned: 7, updated: 3, failed: 2 });
  ctx.metrics.recordCycle({ scanned: 5, updated: 1, failed: 0 });
  ctx.metrics.recordSkipped();
  const { parsed, json } = await bothRenderings(ctx);

  expect([...parsed.keys()].sort()).toEqual(Object.keys(TYPES).sort());
  expect(Object.keys(json).sort()).toEqual(Object.keys(TYPES).sort());
  for (const name of METRIC_NAMES) {
    const metric = parsed.get(name)!;
    expect(metric.type).toBe(TYPES[name]!);
    expect(metric.help?.length).toBeGreaterThan(0);
    expect(metric.samples).toHaveLength(1);
    expect(metric.samples[0]!.value).toBe(json[name]!);
    expect(Number.isInteger(json[name])).toBe(true);
    expect(json[name]).toBeGreaterThanOrEqual(0);
  }
  expect(json).toEqual({
    svc_scans_total: 2,
    svc_scans_skipped: 1,
    svc_containers_scanned: 5,
    svc_containers_updated: 1,
    svc_containers_failed: 0,
  });
});

test("cycles run through the API show up in the metrics", async () => {
  const ctx = makeApp();
  for (let i = 0; i < 3; i++)
    expect((await ctx.request("/v1/update", { method: "POST", headers: bearer() })).status).toBe(200);
  const { parsed, json } = await bothRenderings(ctx);
  expect(json.svc_scans_total).toBe(3);
  expect(parsed.get("svc_scans_total")!.samples[0]!.value).toBe(3);
});

test("svc_update_available: one labelled sample per container once a cycle has checked some, in the text format (the JSON keeps the five)", async () => {
  const ctx = makeApp();
  ctx.metrics.recordAvailability(
    [
      { name: "web", state: "stale" },
      { name: "db", state: "fresh" },
      { name: 'we"ird', state: "updated" },
    ],
    true,
  );
  const text = await (await ctx.request("/v1/metrics", { headers: bearer() })).text();
  expect(text).toContain("# TYPE svc_update_available gauge\n");
  expect(text).toContain('svc_update_available{container="web"} 1\n');
  expect(text).toContain('svc_update_available{container="db"} 0\n');
  expect(text).toContain('svc_update_available{container="we\\"ird"} 0\n');
  const json = (await (
    await ctx.request("/v1/metrics", { headers: { ...bearer(), accept: "application/json" } })
  ).json()) as Record<string, unknown>;
  expect(Object.keys(json).sort()).toEqual(Object.keys(TYPES).sort());
  // a filtered cycle updates what it checked; a full one replaces the set
  ctx.metrics.recordAvailability([{ name: "db", state: "stale" }], false);
  expect(ctx.metrics.availability()).toEqual({ db: 1, web: 1, 'we"ird': 0 });
  ctx.metrics.recordAvailability([{ name: "web", state: "updated" }], true);
  expect(ctx.metrics.availability()).toEqual({ web: 0 });
});
