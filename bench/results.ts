/** The benchmark's rows, each a measurement against its baseline and target, and the report they make. */
import { mkdirSync, readdirSync } from "node:fs";
import { cpus, hostname, totalmem } from "node:os";
import { join } from "node:path";
import { ROOT } from "./harness.ts";

export interface Row {
  benchmark: string;
  svc: number;
  baseline: number | null;
  unit: string;
  ratio: number | null;
  target: string;
  pass: boolean | null;
  note?: string;
  /** the step of `bun run bench` that measured it (run.ts) */
  step?: string;
}
export const rows: Row[] = [];

/** The step measuring now: its rows carry its name, so that recording it again replaces them all. */
let measuring: string | undefined;
export function measuringStep(name: string): void {
  measuring = name;
}

/** `ratio` defaults to svc / baseline; a paired measurement gives its own (see cases/throughput.ts). */
export function record(
  row: Omit<Row, "ratio" | "pass"> & { ratio?: number; check?: (ratio: number, svc: number) => boolean },
): void {
  const ratio = row.ratio ?? (row.baseline ? row.svc / row.baseline : null);
  const pass = row.check ? row.check(ratio ?? Number.NaN, row.svc) : null;
  const { check: _check, ratio: _ratio, ...rest } = row;
  rows.push({ ...rest, ratio, pass, ...(measuring ? { step: measuring } : {}) });
  const shown = ratio === null ? "" : ` ratio ${ratio.toFixed(2)}`;
  console.log(
    `bench: ${row.benchmark}: ${round(row.svc)} ${row.unit}${row.baseline === null ? "" : ` vs ${round(row.baseline)}`}${shown} (target ${row.target})${pass === false ? "  MISSED" : ""}`,
  );
}

export function round(value: number): string {
  return value >= 100 ? value.toFixed(0) : value.toFixed(2);
}

/**
 * A full run writes bench/results/; a run of some steps only prints its table (it must not replace a
 * full one), unless `recorded` names those steps: their rows then replace the rows of the same
 * name in the latest results (the others kept, with the date they were measured on), written as
 * today's results.
 */
export async function writeResults(partial: boolean, recorded: string[] = []): Promise<void> {
  const date = new Date().toISOString();
  const machine = `${hostname()}, ${cpus().length} cores (${cpus()[0]?.model ?? "?"}), ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Bun ${Bun.version}`;
  if (partial && recorded.length === 0) {
    console.log(`\n${markdownOf(`${date} on ${machine}`, rows)}\n(some steps only: bench/results/ left as it was)`);
    return;
  }
  let all = rows;
  let when = `${date} on ${machine}`;
  if (partial) {
    const latest = await latestResults();
    // a recorded step's rows replace all of its earlier ones, those it no longer measures too
    // (rows recorded before rows carried their step are matched by name, or by the step's name
    // they begin with)
    const fresh = new Set(rows.map((r) => r.benchmark));
    const replaced = (r: Row) =>
      fresh.has(r.benchmark) ||
      (r.step
        ? recorded.includes(r.step)
        : recorded.some((step) => r.benchmark.startsWith(step) && !/\w/.test(r.benchmark.charAt(step.length))));
    all = [...(latest?.rows ?? []).filter((r) => !replaced(r)), ...rows];
    if (latest)
      when = `${latest.date} on ${latest.machine}; re-measured ${date} on ${machine}: ${recorded.join(", ")} (\`bun run bench --record\`)`;
  }
  const markdown = markdownOf(when, all);
  mkdirSync(join(ROOT, "bench/results"), { recursive: true });
  const stamp = date.slice(0, 10);
  await Bun.write(join(ROOT, `bench/results/${stamp}.md`), markdown);
  await Bun.write(
    join(ROOT, `bench/results/${stamp}.json`),
    `${JSON.stringify({ date, machine, ...(partial ? { recorded } : {}), rows: all }, null, 2)}\n`,
  );
  await Bun.write(join(ROOT, "bench/results/latest.md"), markdown);
  console.log(`\n${markdown}`);
}

function markdownOf(when: string, table: Row[]): string {
  const header = "| benchmark | svc | baseline | ratio | target | result |\n|---|---|---|---|---|---|\n";
  const body = table
    .map(
      (r) =>
        `| ${r.benchmark}${r.note ? ` (${r.note})` : ""} | ${round(r.svc)} ${r.unit} | ${r.baseline === null ? "-" : round(r.baseline)} | ${r.ratio === null ? "-" : r.ratio.toFixed(2)} | ${r.target} | ${r.pass === null ? "reported" : r.pass ? "met" : "**missed**"} |`,
    )
    .join("\n");
  return `# svc benchmark\n\n${when}\n\n${header}${body}\n`;
}

/** The newest bench/results/<date>.json, or null. */
async function latestResults(): Promise<{ date: string; machine: string; rows: Row[] } | null> {
  const dir = join(ROOT, "bench/results");
  const newest = readdirSync(dir)
    .filter((f) => /^\d{4}-\d{2}-\d{2}\.json$/.test(f))
    .sort()
    .at(-1);
  return newest ? ((await Bun.file(join(dir, newest)).json()) as { date: string; machine: string; rows: Row[] }) : null;
}
