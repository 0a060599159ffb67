/**
 * The data guard's cost (docs/data-guard.md): copy and restore throughput against `tar` of the
 * same volume on the same machine (the volume read through its host path: the bench's engine is
 * local; tar's restore extracts in place over what the volume holds, as svc's replaces it), and the downtime an update gains with a 100 MiB and a 1 GiB volume (the report's
 * data_guard.duration_ms: the copy, between the old container's stop and the new one's start).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { join } from "node:path";
import { defaultConfig } from "../../src/config/index.ts";
import {
  CopyStore,
  copyInEngine,
  guardedMounts,
  prepareCopier,
  prepareRestorer,
  restoreInEngine,
} from "../../src/dataguard/index.ts";
import { createDockerEngine } from "../../src/engine/index.ts";
import { silentAudit, silentLogger } from "../../src/log/index.ts";
import { Metrics } from "../../src/metrics/index.ts";
import { createRegistry } from "../../src/registry/index.ts";
import { createUpdater } from "../../src/updater/index.ts";
import { dockerHost, registry, SANDBOX_ENV, WORK } from "../harness.ts";
import { median, run } from "../lib.ts";
import { record } from "../results.ts";

export interface DataGuardBenchEnv {
  dockerHost: string;
  registry: string;
  /** the sandbox's busybox root filesystem */
  rootfs: string;
  work: string;
  record(row: {
    benchmark: string;
    svc: number;
    baseline: number | null;
    unit: string;
    target: string;
    ratio?: number;
    check?: (ratio: number) => boolean;
    note?: string;
  }): void;
}

const MiB = 1024 * 1024;
const SIZES = [100 * MiB, 1024 * MiB];
const RUNS = 3;

/** The case as `bun run bench` runs it, on the bench's sandbox. */
export function benchDataGuardCase(): Promise<void> {
  return benchDataGuard({
    dockerHost,
    registry,
    rootfs: join(SANDBOX_ENV.SVC_SANDBOX_DIR, "rootfs.tar"),
    work: WORK,
    record,
  });
}

export async function benchDataGuard(env: DataGuardBenchEnv): Promise<void> {
  const docker = (args: string[]) => run(["docker", "-H", env.dockerHost, ...args]);
  const image = `${env.registry}/bench/dataguard:latest`;
  const build = (variant: string) => {
    docker([
      "import",
      "-c",
      `CMD ["/bin/sh","-c","trap 'exit 0' TERM; sleep 3600 & wait"]`,
      "-c",
      `LABEL bench.variant=${variant}`,
      env.rootfs,
      image,
    ]);
    docker(["push", "-q", image]);
  };
  build("v1");
  const engine = await createDockerEngine({ host: env.dockerHost } as never, silentLogger);
  for (const size of SIZES) {
    const label = `${size / MiB} MiB`;
    const name = `dg-bench-${size / MiB}`;
    docker(["volume", "create", `${name}-vol`]);
    docker([
      "run",
      "-d",
      "--name",
      name,
      "--network",
      "none",
      "-l",
      "svc.scope=bench-dg",
      "-v",
      `${name}-vol:/data`,
      image,
    ]);
    docker(["exec", name, "busybox", "dd", "if=/dev/urandom", "of=/data/blob", "bs=1M", `count=${size / MiB}`]);
    docker(["exec", name, "sh", "-c", "for i in $(busybox seq 1 500); do echo $i > /data/small-$i; done"]);
    docker(["stop", name]);
    const inspect = await engine.inspectContainer(name);
    const host = String(
      (inspect.Mounts as { Destination: string; Source: string }[]).find((m) => m.Destination === "/data")!.Source,
    );
    const mounts = (guardedMounts(inspect, "volumes") as { mounts: never[] }).mounts;
    const dir = mkdtempSync(join(env.work, "dg-"));
    const store = new CopyStore(join(dir, "copies"));
    const copyMs: number[] = [];
    const restoreMs: number[] = [];
    const copySyncedMs: number[] = [];
    const tarSyncMs: number[] = [];
    const tarMs: number[] = [];
    const untarMs: number[] = [];
    const untarEmptyMs: number[] = [];
    const endpointMs: number[] = [];
    const socket = env.dockerHost.replace("unix://", "");
    // Each timed step starts on the same footing: nothing left to write back (no step pays for the
    // one before it), and as much page cache just freed as the step writes. The second matters on
    // a virtual machine whose host takes back the memory its guest frees: a step that writes into
    // memory the host took back ran twice as long here, whichever step it was, tar's or svc's.
    const scratch = join(env.work, "dg-room");
    const settled = () => {
      run(["dd", "if=/dev/zero", `of=${scratch}`, "bs=1M", `count=${Math.ceil((size * 1.1) / MiB)}`, "status=none"]);
      rmSync(scratch, { force: true });
      run(["sync"]);
    };
    const request = {
      container: name,
      containerId: inspect.Id,
      image,
      imageId: null,
      version: null,
      mounts,
      limit: { bytes: 4 * size, why: "bench" },
    };
    const timed = async (into: number[], step: () => unknown) => {
      settled();
      const started = performance.now();
      await step();
      into.push(performance.now() - started);
    };
    for (let i = 0; i < RUNS; i++) {
      const baseline = join(dir, "baseline.tar");
      rmSync(baseline, { force: true });
      await timed(tarMs, () => run(["tar", "-C", host, "-cf", baseline, "."]));
      // the engine's archive endpoint alone, read to nowhere: the most any client of it reaches
      await timed(endpointMs, () =>
        run([
          "curl",
          "-sf",
          "--unix-socket",
          socket,
          "-o",
          "/dev/null",
          `http://localhost/containers/${inspect.Id}/archive?path=/data`,
        ]),
      );
      rmSync(baseline, { force: true });
      // tar with the sync that makes its archive as durable as svc's copy once written back
      await timed(tarSyncMs, () => {
        run(["tar", "-C", host, "-cf", baseline, "."]);
        run(["sync", baseline]);
      });

      // as in an update, the copier is made and started before the stop, and waits for its go
      const copier = await prepareCopier(engine, store, request, new Date());
      if (!("id" in copier)) throw new Error(`no copier: ${copier.problem}`);
      let copied: Awaited<ReturnType<typeof copyInEngine>> | undefined;
      let copiedAt = 0;
      await timed(copyMs, async () => {
        copied = await copyInEngine(engine, store, copier, request, () => new Date());
        copiedAt = performance.now();
      });
      if (!copied || copied === "again" || copied.kind !== "copied")
        throw new Error(`the copy in the engine: ${JSON.stringify(copied)}`);
      // svc writes the copy back to the disk while the new version starts: measured apart, against tar + sync
      const { copy } = copied;
      run(["sync", ...copy.manifest.mounts.map((m) => join(copy.dir, m.file))]);
      copySyncedMs.push(copyMs.at(-1)! + performance.now() - copiedAt);

      // tar's restore of the volume: extracted in place over what the volume holds (tar removes
      // each file it finds before writing it), as svc's restore replaces it; and, for the record,
      // into an empty folder
      const target = join(dir, "untar");
      rmSync(target, { recursive: true, force: true });
      run(["mkdir", target]);
      await timed(untarEmptyMs, () => run(["tar", "-C", target, "-xf", baseline]));
      await timed(untarMs, () => run(["tar", "-C", target, "-xf", baseline]));
      rmSync(target, { recursive: true, force: true });
      // as in an update, the restorer is made while the new version is watched
      const restorer = prepareRestorer(engine, store, copy, true);
      await restorer;
      await timed(restoreMs, () => restoreInEngine(engine, store, copy, restorer));
      store.remove(name, copy.id);
      rmSync(baseline, { force: true });
    }
    const reported = (what: string, svc: number[], base: number[], note: string, goal = false) =>
      env.record({
        benchmark: `data guard ${what}, ${label} volume (ms)`,
        svc: median(svc),
        baseline: median(base),
        unit: "ms",
        ratio: median(base) / median(svc),
        target: goal ? ">= 0.8x tar's throughput" : "report",
        ...(goal ? { check: (r: number) => r >= 0.8 } : {}),
        note,
      });
    const pair = (what: string, svc: number[], tar: number[]) =>
      reported(what, svc, tar, "throughput ratio: tar's time / svc's", true);
    pair("copy (in the engine: written and checksummed)", copyMs, tarMs);
    reported(
      "copy in the engine and its write-back, against tar and its sync",
      copySyncedMs,
      tarSyncMs,
      "tar + sync of its archive's time / svc's copy + sync of its archives",
    );
    pair("restore (in the engine), against tar extracting in place", restoreMs, untarMs);
    reported(
      "restore in the engine, against tar extracting into an empty folder",
      restoreMs,
      untarEmptyMs,
      "tar's time / svc's: tar has nothing to remove there",
    );
    reported(
      "the engine's archive endpoint alone (curl to /dev/null)",
      endpointMs,
      tarMs,
      "tar's time / the endpoint's: the most a copy through it could reach (the measure before the stop reads it)",
    );

    // the downtime an update gains: the copy between the stop and the start
    docker(["start", name]);
    build(`v2-${size}`);
    const config = defaultConfig({
      scope: "bench-dg",
      containers: [name],
      data_guard: "volumes",
      data_guard_dir: join(dir, "update"),
      data_guard_max_size: "4GiB",
      docker: { host: env.dockerHost },
      rollback: { startup_timeout: 30_000 },
    });
    const updater = createUpdater({
      config,
      engine,
      registry: createRegistry(config, silentLogger),
      metrics: new Metrics(),
      log: silentLogger,
      audit: silentAudit,
      timing: { pollMs: 200, stableMs: 1000 },
    });
    const report = await updater.run("api");
    const entry = report?.containers.find((c) => c.name === name);
    if (entry?.state !== "updated" || !entry.data_guard)
      throw new Error(`the update with the data guard: ${JSON.stringify(entry)}`);
    env.record({
      benchmark: `data guard downtime an update gains, ${label} volume (ms)`,
      svc: entry.data_guard.duration_ms,
      baseline: null,
      unit: "ms",
      target: "report",
      note: `the whole update: ${Math.round(entry.duration_ms)} ms`,
    });
    docker(["rm", "-f", name]);
    docker(["volume", "rm", `${name}-vol`]);
    rmSync(dir, { recursive: true, force: true });
  }
  docker(["rmi", "-f", image]);
}
