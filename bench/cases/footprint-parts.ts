/** Where svc's memory goes: bare Bun.serve with one room of svc added. */
import { join } from "node:path";
import { compile } from "../../build.ts";
import { DIST, dockerHost, memoryParts, ROOT, STACK_ALL, STACK_BIN, startBaseline } from "../harness.ts";
import { freePort, memoryKiB, rssKiB, startProcess, stop, waitForHealth } from "../lib.ts";
import { record } from "../results.ts";

/**
 * Where svc's memory goes: the bare baseline with one room of svc added, each compiled like svc.
 * Most of the difference is pages of Bun's own executable (runtime code, built-in modules) that
 * a library's use touches, not the library's data.
 */
export async function benchFootprintParts(): Promise<void> {
  const parts: [string, string, (port: number) => string[]][] = [
    ["config", "svc's configuration loaded (zod)", (port) => [String(port)]],
    [
      "api",
      "svc's HTTP API (Elysia, with the configuration room it imports) instead of Bun.serve",
      (port) => [String(port)],
    ],
    [
      "engine",
      "svc's engine client (dockerode) negotiated, containers and images listed",
      (port) => [String(port), dockerHost],
    ],
  ];
  // Each probe is measured like svc's idle footprint: a second after its first health answer.
  const settledMemory = async (cmd: (port: number) => string[]) => {
    const port = freePort();
    const proc = startProcess(cmd(port));
    try {
      await waitForHealth(port);
      await Bun.sleep(1000);
      return await memoryKiB(proc.pid);
    } finally {
      await stop(proc);
    }
  };
  const base = await startBaseline(freePort());
  try {
    await Bun.sleep(1000);
    const baseRss = await rssKiB(base.pid);
    const row = (what: string, memory: { rss: number; anon: number; file: number }) =>
      record({
        benchmark: `${what} (MiB)`,
        svc: memory.rss / 1024,
        baseline: baseRss / 1024,
        unit: "MiB",
        target: "report",
        note: memoryParts(memory),
      });
    row(
      `RSS floor: the chosen stack answering, none of svc's code (${STACK_ALL})`,
      await settledMemory((port) => [STACK_BIN, String(port), "all"]),
    );
    for (const [name, what, args] of parts) {
      const binary = join(DIST, `part-${name}`);
      await compile({ outfile: binary, commit: "", entrypoint: join(ROOT, `bench/baseline/parts/${name}.ts`) });
      row(`RSS of bare Bun.serve + ${what}`, await settledMemory((port) => [binary, ...args(port)]));
    }
  } finally {
    await stop(base);
  }
}
