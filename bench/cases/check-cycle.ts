/** The check cycle against the floor any checker must do, at 10, 50 and 200 containers; the requests it makes. */
import { join } from "node:path";
import {
  buildImages,
  cycle,
  registry,
  removeAllContainers,
  runContainers,
  socketPath,
  startSvc,
  WORK,
} from "../harness.ts";
import { countingEngineProxy, countingProxy, engineGet, freePort, median, stop } from "../lib.ts";
import { record, round } from "../results.ts";

const MANIFEST_ACCEPT = [
  "application/vnd.oci.image.index.v1+json",
  "application/vnd.oci.image.manifest.v1+json",
  "application/vnd.docker.distribution.manifest.list.v2+json",
  "application/vnd.docker.distribution.manifest.v2+json",
].join(", ");

/** The floor: what any checker must do at the least. */
async function floorCycle(registryHost: string, engineSocket: string, images: string[]): Promise<number> {
  const started = performance.now();
  await Promise.all([
    engineGet(engineSocket, "/containers/json?all=1"),
    engineGet(engineSocket, "/images/json"),
    ...images.map((image) => {
      const [, path, tag] = /^[^/]+\/(.+):([^:]+)$/.exec(image)!;
      return fetch(`http://${registryHost}/v2/${path}/manifests/${tag}`, {
        method: "HEAD",
        headers: { accept: MANIFEST_ACCEPT },
      });
    }),
  ]);
  return performance.now() - started;
}

export async function benchCheckCycle(): Promise<void> {
  const proxy = countingProxy(registry);
  const host = `127.0.0.1:${proxy.port}`;
  const images = Array.from({ length: 20 }, (_, i) => `${host}/bench/check${i}:latest`);
  await buildImages(images, (i) => `check-${i}`);
  // svc talks to the engine through a counting proxy too: a check cycle with nothing to update
  // should list containers and images and inspect nothing.
  const engineProxy = countingEngineProxy(socketPath, join(WORK, "engine-proxy.sock"));
  const port = freePort();
  const svc = await startSvc({ port, dockerHost: `unix://${engineProxy.socketPath}` });
  const stages = [10, 50, 200];
  let running = 0;
  const perStage: Record<number, number> = {};
  const floorPerStage: Record<number, number> = {};
  try {
    for (const total of stages) {
      await runContainers("check", running, total - running, images);
      running = total;
      await cycle(port); // warm: connections, token caches
      await floorCycle(host, engineProxy.socketPath, images);
      const svcTimes: number[] = [];
      const floorTimes: number[] = [];
      let manifests = 0;
      let engineRequests: Record<string, number> = {};
      for (let i = 0; i < 7; i++) {
        floorTimes.push(await floorCycle(host, engineProxy.socketPath, images));
        proxy.reset();
        engineProxy.reset();
        const { ms, report } = await cycle(port);
        manifests = proxy.manifestRequests();
        engineRequests = engineProxy.requests();
        if (report.counts.scanned !== total) throw new Error(`expected ${total} scanned, got ${report.counts.scanned}`);
        svcTimes.push(ms);
      }
      perStage[total] = median(svcTimes);
      floorPerStage[total] = median(floorTimes);
      if (total === 200) {
        record({
          benchmark: "check cycle, 200 containers / 20 images (ms)",
          svc: median(svcTimes),
          baseline: median(floorTimes),
          unit: "ms",
          target: "<= 2.0x floor",
          check: (r) => r <= 2,
        });
        record({
          benchmark: "manifest requests per check cycle (200 containers / 20 images)",
          svc: manifests,
          baseline: 20,
          unit: "requests",
          target: "exactly 20",
          check: (_r, v) => v === 20,
        });
        const inspects = engineRequests["GET /containers/{id}/json"] ?? 0;
        const shown = Object.entries(engineRequests)
          .map(([k, v]) => `${k} x${v}`)
          .join(", ");
        record({
          benchmark: "container inspects per check cycle (nothing to update)",
          svc: inspects,
          baseline: null,
          unit: "requests",
          target: "0",
          check: (_r, v) => v === 0,
          note: `engine requests: ${shown}`,
        });
      }
    }
    record({
      benchmark: "check cycle growth 10 -> 200 containers",
      svc: perStage[200]!,
      baseline: perStage[10]!,
      unit: "ms",
      target: "report (near flat)",
      note: `svc 10 / 50 / 200: ${stages.map((n) => round(perStage[n]!)).join(" / ")} ms; floor: ${stages.map((n) => round(floorPerStage[n]!)).join(" / ")} ms`,
    });
  } finally {
    await stop(svc);
    proxy.stop();
    engineProxy.stop();
    removeAllContainers();
  }
}
