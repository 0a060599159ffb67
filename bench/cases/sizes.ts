/** The binaries' and the container image's sizes. */
import { existsSync, statSync } from "node:fs";
import { join } from "node:path";
import { DIST, docker, dockerHost, ROOT, SVC_BIN, WORK } from "../harness.ts";
import { run } from "../lib.ts";
import { record } from "../results.ts";

export function benchSizes(): void {
  run(["bun", join(ROOT, "build.ts"), "--all", "--outdir", DIST]);
  for (const target of ["svc-linux-x64", "svc-linux-arm64", "svc-linux-x64-musl", "svc-linux-arm64-musl"]) {
    const file = join(DIST, target);
    if (existsSync(file))
      record({
        benchmark: `binary size ${target} (MiB)`,
        svc: statSync(file).size / 2 ** 20,
        baseline: null,
        unit: "MiB",
        target: "report",
      });
  }
  const tag = `svc-bench:${process.pid}`;
  try {
    // A context of its own holding only the image's root file system (the checkout would send .sandbox).
    const context = join(WORK, "context");
    run(["bash", join(ROOT, "scripts/image-context.sh"), SVC_BIN, join(context, "rootfs")]);
    run(
      [
        "docker",
        "-H",
        dockerHost,
        "build",
        "-q",
        "-t",
        tag,
        "--build-arg",
        "ROOTFS=rootfs",
        "-f",
        join(ROOT, "Dockerfile"),
        context,
      ],
      { env: { DOCKER_BUILDKIT: "0" } },
    );
    const size = Number(docker(["image", "inspect", "--format", "{{.Size}}", tag]));
    record({
      benchmark: "container image size (MiB)",
      svc: size / 2 ** 20,
      baseline: null,
      unit: "MiB",
      target: "report",
    });
    docker(["rmi", tag]);
  } catch (error) {
    console.log(`bench: image size not measured: ${(error as Error).message.split("\n")[0]}`);
  }
}
