/** The check cycle over services compose builds against the same cycle without them. */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  buildImages,
  CMD,
  cycle,
  dockerHost,
  registry,
  removeAllContainers,
  runContainers,
  SANDBOX_ENV,
  startSvc,
  WORK,
} from "../harness.ts";
import { countingProxy, freePort, runAsync, stop } from "../lib.ts";
import { record } from "../results.ts";

const BASES = 3;
const BUILT = 12;

/**
 * Four pulled containers of the first base; then a compose project of 12 services built FROM the
 * three bases, four on each. The built services' bases are asked with the HEAD the check makes
 * for a running image, shared with the pulled containers of the same reference: the check over
 * them adds one manifest request per base no running container has (two), however many services
 * are built on it.
 */
export async function benchBuiltServices(): Promise<void> {
  const proxy = countingProxy(registry);
  const host = `127.0.0.1:${proxy.port}`;
  const bases = Array.from({ length: BASES }, (_, i) => `${host}/bench/built-base${i}:1`);
  await buildImages(bases, (i) => `built-base-${i}`);
  await runContainers("pulled", 0, 4, [bases[0]!]);
  const dir = join(WORK, "built");
  mkdirSync(dir, { recursive: true });
  const services = Array.from({ length: BUILT }, (_, i) => i);
  for (const i of services) writeFileSync(join(dir, `${i}.Dockerfile`), `FROM ${bases[i % BASES]}\n${CMD}\n`);
  writeFileSync(
    join(dir, "compose.yaml"),
    `services:\n${services
      .map(
        (i) =>
          `  s${i}:\n    build:\n      context: .\n      dockerfile: ${i}.Dockerfile\n      network: none\n    network_mode: none\n`,
      )
      .join("")}`,
  );
  const compose = (...args: string[]) =>
    // async: the build pulls through the counting proxy this very process serves
    runAsync(["docker", "compose", "--project-directory", dir, "-p", "built", ...args], {
      env: { DOCKER_HOST: dockerHost, DOCKER_CONFIG: join(SANDBOX_ENV.SVC_SANDBOX_DIR, "cli-config") },
    });
  const measure = async (expected: number) => {
    const port = freePort();
    const svc = await startSvc({ port });
    try {
      // warm: connections, and each built service's bases recorded at first sight
      await cycle(port);
      proxy.reset();
      const { report } = await cycle(port);
      if (report.counts.fresh !== expected)
        throw new Error(`expected ${expected} fresh, got ${JSON.stringify(report.counts)}`);
      return { all: proxy.allRequests(), manifests: proxy.manifestRequests() };
    } finally {
      await stop(svc);
    }
  };
  try {
    const without = await measure(4);
    await compose("up", "-d", "--build");
    const withBuilt = await measure(4 + BUILT);
    const added = BASES - 1;
    record({
      benchmark: `manifest requests per check cycle, ${BUILT} built services on ${BASES} bases (one run by containers)`,
      svc: withBuilt.manifests,
      baseline: without.manifests,
      unit: "requests",
      target: `<= baseline + ${added} (one per base no container runs)`,
      check: (_r, v) => v <= without.manifests + added,
      note: `all requests ${withBuilt.all} (without the built services: ${without.all})`,
    });
  } finally {
    await compose("down", "--rmi", "local").catch(() => {});
    proxy.stop();
    removeAllContainers();
  }
}
