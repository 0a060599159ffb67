/** Swarm services: the check cycle's requests and a service's rollout against docker service update. */
import { join } from "node:path";
import type { Subprocess } from "bun";
import {
  buildImage,
  buildImages,
  cycle,
  dockerHost,
  ROOT,
  registry,
  SANDBOX_ENV,
  startSvc,
  TOKEN,
} from "../harness.ts";
import { countingProxy, freePort, median, run, runAsync, stop } from "../lib.ts";
import { record, round } from "../results.ts";

/**
 * 50 services on 10 images on the sandbox's two-node Swarm, nothing newer: a cycle costs one
 * manifest request per image and changes no service (Shepherd's loop would update all 50).
 * The services run no task (0 replicas): the check looks at specs, never at tasks.
 */
export async function benchSwarmServices(): Promise<void> {
  run(["bash", join(ROOT, "scripts/sandbox.sh"), "swarm-up"], { env: SANDBOX_ENV });
  const proxy = countingProxy(registry);
  const host = `127.0.0.1:${proxy.port}`;
  const images = Array.from({ length: 10 }, (_, i) => `${host}/bench/swarm${i}:latest`);
  await buildImages(images, (i) => `swarm-${i}`);
  const port = freePort();
  let svc: Subprocess | undefined;
  try {
    // async: the manager resolves each image's digest through the counting proxy of this process
    for (let i = 0; i < 50; i++)
      await runAsync([
        "docker",
        "-H",
        dockerHost,
        "service",
        "create",
        "--quiet",
        "--detach",
        "--replicas",
        "0",
        "--name",
        `bench-svc-${i}`,
        images[i % images.length]!,
      ]);
    svc = await startSvc({ port });
    await cycle(port); // warm: connections
    proxy.reset();
    const { ms, report } = await cycle(port);
    const services = report.containers.filter((c: any) => c.kind === "service");
    if (services.length !== 50) throw new Error(`expected 50 services in the report, got ${services.length}`);
    const updates = services.filter((c: any) => c.state !== "fresh").length;
    record({
      benchmark: "manifest requests per check cycle (50 Swarm services / 10 images)",
      svc: proxy.manifestRequests(),
      baseline: 10,
      unit: "requests",
      target: "exactly 10",
      check: (_r, v) => v === 10,
      note: `cycle ${round(ms)} ms`,
    });
    record({
      benchmark: "service updates per check cycle with nothing newer (50 services)",
      svc: updates,
      baseline: null,
      unit: "updates",
      target: "0 (Shepherd: 50)",
      check: (_r, v) => v === 0,
    });
    await benchServiceRollout(port, `${host}/bench/roll:latest`);
  } finally {
    if (svc) await stop(svc);
    proxy.stop();
    run(["bash", join(ROOT, "scripts/sandbox.sh"), "swarm-down"], { env: SANDBOX_ENV, allowFailure: true });
  }
}

/**
 * One service, a task on each node: svc's update (its report entry's time, from the check to
 * Swarm's "completed") against `docker service update --image repo:tag@digest`, which waits for
 * the same convergence. Two rounds each, alternating; the medians compared.
 */
async function benchServiceRollout(port: number, image: string): Promise<void> {
  const name = "bench-roll";
  await buildImage(image, "roll-0");
  await runAsync([
    "docker",
    "-H",
    dockerHost,
    "service",
    "create",
    "--quiet",
    "--name",
    name,
    "--replicas",
    "2",
    "--update-parallelism",
    "0",
    "--update-monitor",
    "1s",
    image,
  ]);
  const svcMs: number[] = [];
  const cliMs: number[] = [];
  for (let round = 0; round < 2; round++) {
    await buildImage(image, `roll-svc-${round}`);
    const response = await fetch(`http://127.0.0.1:${port}/v1/update?container=${name}`, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    const entry = ((await response.json()) as any).containers.find((c: any) => c.name === name);
    if (entry?.state !== "updated") throw new Error(`svc did not update ${name}: ${JSON.stringify(entry)}`);
    svcMs.push(entry.duration_ms);

    await buildImage(image, `roll-cli-${round}`);
    const digest = (
      await runAsync(["docker", "-H", dockerHost, "image", "inspect", "--format", "{{index .RepoDigests 0}}", image])
    ).trim();
    const started = performance.now();
    await runAsync([
      "docker",
      "-H",
      dockerHost,
      "service",
      "update",
      "--quiet",
      "--image",
      digest.replace("@", ":latest@"),
      name,
    ]);
    cliMs.push(performance.now() - started);
  }
  record({
    benchmark: "service rollout, 2 tasks on 2 nodes: svc's update vs docker service update --image (ms)",
    svc: median(svcMs),
    baseline: median(cliMs),
    unit: "ms",
    target: "<= 1.2x docker CLI",
    check: (r) => r <= 1.2,
  });
}
