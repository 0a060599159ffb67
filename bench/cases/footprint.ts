/** Idle memory after start and after cycles, against bare Bun.serve; the leak check. */
import {
  buildImage,
  cycle,
  memoryParts,
  registry,
  removeAllContainers,
  runContainers,
  startBaseline,
  startSvc,
} from "../harness.ts";
import { freePort, memoryKiB, rssKiB, stop } from "../lib.ts";
import { record } from "../results.ts";

export async function benchFootprint(): Promise<void> {
  const images = [`${registry}/bench/idle:latest`];
  await buildImage(images[0]!, "idle");
  await runContainers("idle", 0, 10, images);
  const basePort = freePort();
  const base = await startBaseline(basePort);
  const port = freePort();
  const svc = await startSvc({ port });
  try {
    await Bun.sleep(1000);
    const baseMemory = await memoryKiB(base.pid);
    const startMemory = await memoryKiB(svc.pid);
    const baseRss = baseMemory.rss;
    const startRss = startMemory.rss;
    record({
      benchmark: "idle RSS after start, API on (MiB)",
      svc: startRss / 1024,
      baseline: baseRss / 1024,
      unit: "MiB",
      target: "<= 1.5x bare Bun.serve",
      check: (r) => r <= 1.5,
      note: `svc: ${memoryParts(startMemory)}; baseline: ${memoryParts(baseMemory)}`,
    });
    for (let i = 0; i < 100; i++) await cycle(port);
    await Bun.sleep(500);
    const after100Memory = await memoryKiB(svc.pid);
    const after100 = after100Memory.rss;
    for (let i = 0; i < 100; i++) await cycle(port);
    await Bun.sleep(500);
    const after200 = await rssKiB(svc.pid);
    record({
      benchmark: "RSS after 100 cycles (MiB)",
      svc: after100 / 1024,
      baseline: baseRss / 1024,
      unit: "MiB",
      target: "<= 1.5x bare Bun.serve",
      check: (r) => r <= 1.5,
      note: `svc: ${memoryParts(after100Memory)}`,
    });
    record({
      benchmark: "leak check: RSS after 200 vs 100 cycles",
      svc: after200 / 1024,
      baseline: after100 / 1024,
      unit: "MiB",
      target: "<= 1.10x (no growth beyond noise)",
      check: (r) => r <= 1.1,
    });
  } finally {
    await stop(svc);
    await stop(base);
    removeAllContainers();
  }
}
