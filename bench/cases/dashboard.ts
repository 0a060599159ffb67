/** The dashboard's costs: first load, data of a refresh, memory, requests to peers. */
import { join } from "node:path";
import { FIRST_LOAD_BUDGET_KIB } from "../../src/ui/budget.ts";
import {
  buildImages,
  memoryParts,
  registry,
  removeAllContainers,
  runContainers,
  socketPath,
  startSvc,
  TOKEN,
  WORK,
} from "../harness.ts";
import { countingEngineProxy, freePort, median, memoryKiB, stop } from "../lib.ts";
import { record } from "../results.ts";

/** The page as a browser first loads it: the HTML and every file it names, gzipped. */
async function pageBytes(port: number): Promise<number> {
  // as sent: Bun's fetch would otherwise hand back the bytes unzipped
  const get = async (path: string) =>
    new Uint8Array(
      await (
        await fetch(`http://127.0.0.1:${port}${path}`, { headers: { "accept-encoding": "gzip" }, decompress: false })
      ).arrayBuffer(),
    );
  const page = await get("/");
  let total = page.byteLength;
  const html = Bun.gunzipSync(page);
  for (const [, path] of new TextDecoder().decode(html).matchAll(/(?:src|href)="\.?(\/[^"]+)"/g))
    total += (await get(path!)).byteLength;
  return total;
}

/**
 * The dashboard's costs, each against what it adds to: the first load's bytes; its data for 200
 * containers (one refresh: containers, history, progress) against the dry run alone, and the
 * engine requests it makes (no second walk); idle memory with the page on and off; and one
 * request per peer per refresh.
 */
export async function benchDashboard(): Promise<void> {
  const images = Array.from({ length: 20 }, (_, i) => `${registry}/bench/ui${i}:latest`);
  await buildImages(images, (i) => `ui-${i}`);
  await runContainers("ui", 0, 200, images);
  const engineProxy = countingEngineProxy(socketPath, join(WORK, "engine-proxy-ui.sock"));
  // three stand-ins for other svc instances, each counting what it is asked
  const asked = [0, 0, 0];
  const peers = asked.map((_, i) =>
    Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch: () => (
        (asked[i]! += 1),
        Response.json({ checked_at: new Date().toISOString(), host: `peer${i}`, update: true, containers: [] })
      ),
    }),
  );
  const portOn = freePort();
  const portOff = freePort();
  const on = await startSvc({
    port: portOn,
    ui: true,
    dockerHost: `unix://${engineProxy.socketPath}`,
    peers: peers.map((peer, i) => ({ name: `peer${i}`, url: `http://127.0.0.1:${peer.port}`, token: `peer-${i}` })),
  });
  const off = await startSvc({ port: portOff });
  const auth = { authorization: `Bearer ${TOKEN}` };
  try {
    await Bun.sleep(1000);
    const offMemory = await memoryKiB(off.pid);
    const bytes = await pageBytes(portOn);
    await Bun.sleep(500);
    const onMemory = await memoryKiB(on.pid);
    record({
      benchmark: "dashboard first load: page, script and style, gzipped (KiB)",
      svc: bytes / 1024,
      baseline: null,
      unit: "KiB",
      target: `<= ${FIRST_LOAD_BUDGET_KIB} KiB`,
      check: (_r, v) => v <= FIRST_LOAD_BUDGET_KIB,
    });
    record({
      benchmark: "idle RSS, dashboard on and its page served once, vs off (MiB over)",
      svc: (onMemory.rss - offMemory.rss) / 1024,
      baseline: null,
      unit: "MiB",
      target: "<= 5 MiB over",
      check: (_r, v) => v <= 5,
      note: `on: ${memoryParts(onMemory)}; off: ${memoryParts(offMemory)}`,
    });

    const refresh = async () => {
      const started = performance.now();
      const answers = await Promise.all(
        ["/v1/containers", "/v1/history", "/v1/progress"].map((path) =>
          fetch(`http://127.0.0.1:${portOn}${path}`, { headers: auth }),
        ),
      );
      for (const answer of answers) if (answer.status !== 200) throw new Error(`dashboard refresh: ${answer.status}`);
      await Promise.all(answers.map((answer) => answer.arrayBuffer()));
      return performance.now() - started;
    };
    const dryRun = async () => {
      const started = performance.now();
      const answer = await fetch(`http://127.0.0.1:${portOn}/v1/check`, { method: "POST", headers: auth });
      await answer.arrayBuffer();
      return performance.now() - started;
    };
    await refresh();
    await dryRun();
    const refreshTimes: number[] = [];
    const dryRunTimes: number[] = [];
    let engineRequests: Record<string, number> = {};
    for (let i = 0; i < 7; i++) {
      dryRunTimes.push(await dryRun());
      engineProxy.reset();
      refreshTimes.push(await refresh());
      engineRequests = engineProxy.requests();
    }
    const shown = Object.entries(engineRequests)
      .map(([k, v]) => `${k} x${v}`)
      .join(", ");
    record({
      benchmark: "dashboard data, 200 containers (containers + history + progress) vs the dry run alone (ms)",
      svc: median(refreshTimes),
      baseline: median(dryRunTimes),
      unit: "ms",
      target: "<= 1.5x",
      check: (r) => r <= 1.5,
      note: `engine requests of a refresh: ${shown}`,
    });

    asked.fill(0);
    const answer = await fetch(`http://127.0.0.1:${portOn}/v1/peers`, { headers: auth });
    await answer.arrayBuffer();
    record({
      benchmark: "requests to peers per dashboard refresh, 3 peers",
      svc: asked.reduce((a, b) => a + b, 0),
      baseline: 3,
      unit: "requests",
      target: "one per peer",
      check: (_r, v) => v === 3 && asked.every((n) => n === 1),
    });
  } finally {
    await stop(on);
    await stop(off);
    for (const peer of peers) peer.stop(true);
    engineProxy.stop();
    removeAllContainers();
  }
}
