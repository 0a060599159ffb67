/** The requests release notes cost, against a loopback stand-in of GitHub's API. */
import { ReleaseHosts } from "../../tests/support/release-hosts.ts";
import { buildImage, cycle, registry, removeAllContainers, runContainers, startSvc } from "../harness.ts";
import { freePort, stop } from "../lib.ts";
import { record } from "../results.ts";

/**
 * 20 containers on 5 images, each image labelled with its own GitHub repository, against a
 * loopback stand-in of GitHub's API (tests/support/release-hosts.ts) as a GitHub Enterprise
 * server, its repositories named on its own host (github.com is read through api.github.com only),
 * counting its requests:
 * none while nothing is stale; once each image has a newer version (monitor-only: it stays
 * stale), one request per repository in the first cycle, and a 304 per repository after.
 */
export async function benchReleaseNotes(): Promise<void> {
  const hosts = new ReleaseHosts();
  const images = Array.from({ length: 5 }, (_, i) => `${registry}/bench/notes${i}:latest`);
  const labels = (i: number, version: string) => [
    `org.opencontainers.image.source=http://127.0.0.1/bench/notes${i}`,
    `org.opencontainers.image.version=${version}`,
  ];
  for (let i = 0; i < images.length; i++)
    hosts.set("github", `bench/notes${i}`, [{ tag: "v1.1.0", body: "- faster" }, { tag: "v1.0.0" }]);
  for (const [i, image] of images.entries()) await buildImage(image, `notes-${i}`, labels(i, "1.0.0"));
  await runContainers("notes", 0, 20, images);
  const port = freePort();
  const svc = await startSvc({ port, monitorOnly: true, githubApiUrl: hosts.apiUrls.github_api_url });
  try {
    const fresh = await cycle(port);
    if (fresh.report.counts.fresh !== 20)
      throw new Error(`expected 20 fresh, got ${JSON.stringify(fresh.report.counts)}`);
    const quiet = hosts.count();
    for (const [i, image] of images.entries()) await buildImage(image, `notes-new-${i}`, labels(i, "1.1.0"));
    hosts.requests.length = 0;
    const first = await cycle(port);
    if (first.report.counts.stale !== 20)
      throw new Error(`expected 20 stale, got ${JSON.stringify(first.report.counts)}`);
    const firstStatuses = hosts.requests.map((r) => r.status);
    hosts.requests.length = 0;
    await cycle(port);
    const secondStatuses = hosts.requests.map((r) => r.status);
    const said = first.report.containers.filter((c: any) => c.releases?.count === 1).length;
    record({
      benchmark: "release requests per cycle with nothing stale (20 containers / 5 repositories)",
      svc: quiet,
      baseline: null,
      unit: "requests",
      target: "0",
      check: (_r, v) => v === 0,
    });
    record({
      benchmark: "release requests, first cycle with a new candidate (5 repositories)",
      svc: firstStatuses.length,
      baseline: 5,
      unit: "requests",
      target: "exactly 5 (one per repository)",
      check: (_r, v) => v === 5 && firstStatuses.every((s) => s === 200),
      note: `statuses ${firstStatuses.join(" ")}; ${said} of 20 entries tell their release`,
    });
    record({
      benchmark: "release requests, next cycle (5 repositories)",
      svc: secondStatuses.filter((s) => s === 304).length,
      baseline: 5,
      unit: "304 answers",
      target: "5 of 5 requests",
      check: (_r, v) => v === 5 && secondStatuses.length === 5,
    });
  } finally {
    await stop(svc);
    hosts.stop();
    removeAllContainers();
  }
}
