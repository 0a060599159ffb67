/** Pulls ahead of an update window against pulling in it. */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { buildImage, cycle, docker, registry, SANDBOX_ENV, startSvc, WORK } from "../harness.ts";
import { freePort, run, runAsync, stop } from "../lib.ts";
import { record } from "../results.ts";

/**
 * One container with a healthcheck whose newer image carries a 64 MiB layer, updated in its
 * window: with pre_pull (pulled by a cycle outside the window; then the window's cycle, by an svc
 * that finds the window open and the image pulled ahead, as state_dir remembers it) against the
 * same update without it (pre_pull off: the window's cycle pulls first). Measured from the engine's
 * events: the time the window's cycle takes until the container is healthy again, and the
 * container's downtime (the old one stopped to the new one healthy).
 */
export async function benchWindowPrePull(): Promise<void> {
  const blob = join(WORK, "big-rootfs");
  mkdirSync(blob, { recursive: true });
  run(["tar", "-xf", join(SANDBOX_ENV.SVC_SANDBOX_DIR, "rootfs.tar"), "-C", blob]);
  const bigImage = async (reference: string, variant: string) => {
    run(["sh", "-c", `head -c 67108864 /dev/urandom > ${blob}/blob && tar -C ${blob} -cf ${WORK}/big.tar .`]);
    await buildImage(reference, variant, [], join(WORK, "big.tar"));
    docker(["rmi", reference]);
  };
  const measure = async (what: string, prePull: boolean): Promise<{ windowMs: number; downMs: number }> => {
    const image = `${registry}/bench/window-${what}:latest`;
    await buildImage(image, "v1");
    const name = `win-${what}`;
    docker([
      "run",
      "-d",
      "--name",
      name,
      "--network",
      "none",
      "-l",
      `bench.window=${what}`,
      "--health-cmd",
      "true",
      "--health-interval",
      "1s",
      image,
    ]);
    await bigImage(image, "v2");
    const stateDir = join(WORK, `state-${what}`);
    mkdirSync(stateDir, { recursive: true });
    // outside the window (an hour ahead): pending, and with pre_pull the image pulled ahead
    const hourAhead = new Date(Date.now() + 3_600_000);
    const hh = (d: Date) => `${String(d.getHours()).padStart(2, "0")}:${String(d.getMinutes()).padStart(2, "0")}`;
    const closed = `${hh(hourAhead)}-${hh(new Date(hourAhead.getTime() + 3_600_000))}`;
    let port = freePort();
    let svc = await startSvc({ port, updateWindow: closed, prePull, stateDir });
    const waiting = await cycle(port);
    await stop(svc);
    if (waiting.report.counts.pending !== 1)
      throw new Error(`${name}: not pending: ${JSON.stringify(waiting.report.containers)}`);
    // the window opens
    port = freePort();
    svc = await startSvc({ port, updateWindow: "00:00-24:00", prePull, stateDir });
    const since = Date.now();
    const applied = await cycle(port);
    await runAsync(["sleep", "3"]);
    await stop(svc);
    if (applied.report.counts.updated !== 1)
      throw new Error(`${name}: not updated: ${JSON.stringify(applied.report.containers)}`);
    const events = docker([
      "events",
      "--since",
      String(Math.floor(since / 1000) - 1),
      "--until",
      String(Math.ceil(Date.now() / 1000)),
      "--filter",
      `label=bench.window=${what}`,
      "--format",
      "{{.Action}} {{.TimeNano}}",
    ])
      .split("\n")
      .filter(Boolean)
      .map((line) => ({
        action: line.slice(0, line.lastIndexOf(" ")),
        at: Number(line.slice(line.lastIndexOf(" ") + 1)) / 1e6,
      }));
    // the old container's stop (svc renames it first: the label follows it), then the new one healthy
    const stopped = events.find((e) => e.action === "kill" || e.action === "stop" || e.action === "die");
    const healthy = stopped && events.find((e) => e.action === "health_status: healthy" && e.at > stopped.at);
    if (!stopped || !healthy) throw new Error(`${name}: no stop or healthy event: ${JSON.stringify(events)}`);
    docker(["rm", "-f", name]);
    return { windowMs: healthy.at - since, downMs: healthy.at - stopped.at };
  };
  const ahead = await measure("ahead", true);
  const first = await measure("first", false);
  record({
    benchmark: "update in its window, 64 MiB layer: cycle start to healthy, pulled ahead (ms)",
    svc: ahead.windowMs,
    baseline: first.windowMs,
    unit: "ms",
    target: "< 1.0x pulling in the window",
    check: (r) => r < 1,
  });
  record({
    benchmark: "downtime in its window (stop to healthy), pulled ahead (ms)",
    svc: ahead.downMs,
    baseline: first.downMs,
    unit: "ms",
    target: "report",
    note: "svc pulls before it stops in both cases: the pull ahead empties the window, not the downtime",
  });
}
