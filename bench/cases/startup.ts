/** Startup, exec to the first health answer, against bare Bun.serve and the chosen stack. */
import type { Subprocess } from "bun";
import { BASE_BIN, STACK_BEFORE_LISTEN, STACK_BIN, SVC_BIN, svcConfig } from "../harness.ts";
import { freePort, median, startProcess, stop, waitForHealth } from "../lib.ts";
import { record } from "../results.ts";

async function startupMs(start: (port: number) => () => Subprocess): Promise<number> {
  const port = freePort();
  const exec = start(port); // prepares (writes the config) before the clock starts
  const started = performance.now();
  const proc = exec();
  await waitForHealth(port, 20_000, 1);
  const ms = performance.now() - started;
  await stop(proc);
  return ms;
}

export async function benchStartup(): Promise<void> {
  const svcTimes: number[] = [];
  const baseTimes: number[] = [];
  const stackTimes: number[] = [];
  for (let i = 0; i < 20; i++) {
    baseTimes.push(await startupMs((port) => () => startProcess([BASE_BIN, String(port)])));
    stackTimes.push(await startupMs((port) => () => startProcess([STACK_BIN, String(port)])));
    svcTimes.push(
      await startupMs((port) => {
        const config = svcConfig({ port });
        return () => startProcess([SVC_BIN, "--config", config]);
      }),
    );
  }
  record({
    benchmark: "startup: exec to 200 on /v1/health, median of 20 (ms)",
    svc: median(svcTimes),
    baseline: median(baseTimes),
    unit: "ms",
    target: "<= 2.0x bare Bun.serve",
    check: (r) => r <= 2,
  });
  record({
    benchmark: `startup floor: the chosen stack answering, none of svc's code (${STACK_BEFORE_LISTEN}) (ms)`,
    svc: median(stackTimes),
    baseline: median(baseTimes),
    unit: "ms",
    target: "report",
  });
}
