/** The update cycle against the docker CLI, and the rollback watch's cost apart. */
import { buildImages, cycle, docker, registry, removeAllContainers, runContainers, startSvc } from "../harness.ts";
import { freePort, stop } from "../lib.ts";
import { record, round } from "../results.ts";

export async function benchUpdateCycle(): Promise<void> {
  const images = Array.from({ length: 5 }, (_, i) => `${registry}/bench/update${i}:latest`);
  await buildImages(images, (i) => `v1-${i}`);
  const names = await runContainers("upd", 0, 20, images);
  const publishNew = (version: string) => buildImages(images, (i) => `${version}-${i}`);

  // svc, rollback watch off: everything but the watch.
  await publishNew("v2");
  const port = freePort();
  let svc = await startSvc({ port, rollback: false });
  const noWatch = await cycle(port);
  await stop(svc);
  if (noWatch.report.counts.updated !== 20)
    throw new Error(
      `svc updated ${noWatch.report.counts.updated} of 20: ${JSON.stringify(noWatch.report.containers.filter((c: any) => c.state !== "updated").slice(0, 3))}`,
    );

  // The docker CLI, serially: pull, stop, rm, create, start.
  await publishNew("v3");
  const cliStarted = performance.now();
  for (const image of images) docker(["pull", "-q", image]);
  for (const [i, name] of names.entries()) {
    docker(["stop", name]);
    docker(["rm", name]);
    docker(["create", "--name", name, "--network", "none", images[i % images.length]!]);
    docker(["start", name]);
  }
  const cliMs = performance.now() - cliStarted;

  // svc with the default rollback checks: the watch's cost is the difference.
  await publishNew("v4");
  const port2 = freePort();
  svc = await startSvc({ port: port2 });
  const withWatch = await cycle(port2);
  await stop(svc);
  removeAllContainers();

  record({
    benchmark: "update cycle, 20 containers / 5 changed images, without rollback watch (ms)",
    svc: noWatch.ms,
    baseline: cliMs,
    unit: "ms",
    target: "<= 1.0x docker CLI",
    check: (r) => r <= 1,
  });
  record({
    benchmark: "rollback watch, 20 containers (ms, reported apart)",
    svc: Math.max(0, withWatch.ms - noWatch.ms),
    baseline: null,
    unit: "ms",
    target: "report",
    note: `whole cycle with watch: ${round(withWatch.ms)} ms`,
  });
}
