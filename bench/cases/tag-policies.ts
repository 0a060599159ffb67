/** The check cycle with tag policies against the same cycle without. */
import { buildImages, cycle, dockerHost, registry, removeAllContainers, runContainers, startSvc } from "../harness.ts";
import { countingProxy, freePort, median, runAsync, stop } from "../lib.ts";
import { record } from "../results.ts";

/**
 * 20 repositories, each with version tags around the one its two containers run (older, a
 * pre-release, a major the policy does not allow, latest): nothing to move. The same cycle
 * without a policy is the baseline; a policy may cost one tags request per repository more.
 */
export async function benchTagPolicies(): Promise<void> {
  const proxy = countingProxy(registry);
  const host = `127.0.0.1:${proxy.port}`;
  const repositories = Array.from({ length: 20 }, (_, i) => `${host}/bench/tags${i}`);
  await buildImages(
    repositories.map((r) => `${r}:1.0.0`),
    (i) => `tags-${i}`,
  );
  for (const repository of repositories) {
    for (const tag of ["0.9.0", "1.0.0-rc.1", "2.0.0", "latest"]) {
      // async: the counting proxy serves the push from this very process
      await runAsync(["docker", "-H", dockerHost, "tag", `${repository}:1.0.0`, `${repository}:${tag}`]);
      await runAsync(["docker", "-H", dockerHost, "push", "-q", `${repository}:${tag}`]);
    }
  }
  await runContainers(
    "tags",
    0,
    40,
    repositories.map((r) => `${r}:1.0.0`),
  );
  const measure = async (tagPolicy?: string) => {
    const port = freePort();
    const svc = await startSvc({ port, tagPolicy });
    try {
      await cycle(port); // warm: connections
      const times: number[] = [];
      let requests = { all: 0, tags: 0, manifests: 0 };
      for (let i = 0; i < 7; i++) {
        proxy.reset();
        const { ms, report } = await cycle(port);
        if (report.counts.fresh !== 40) throw new Error(`expected 40 fresh, got ${JSON.stringify(report.counts)}`);
        requests = { all: proxy.allRequests(), tags: proxy.tagsRequests(), manifests: proxy.manifestRequests() };
        times.push(ms);
      }
      return { ms: median(times), requests };
    } finally {
      await stop(svc);
    }
  };
  try {
    const without = await measure();
    const withPolicy = await measure("semver:minor");
    record({
      benchmark: "registry requests per check cycle, semver:minor on 20 repositories",
      svc: withPolicy.requests.all,
      baseline: without.requests.all,
      unit: "requests",
      target: "<= baseline + 20",
      check: (_r, v) => v <= without.requests.all + 20,
      note: `tags requests ${withPolicy.requests.tags}, manifest requests ${withPolicy.requests.manifests} (without a policy: ${without.requests.manifests})`,
    });
    record({
      benchmark: "check cycle with tag policies, 40 containers / 20 repositories (ms)",
      svc: withPolicy.ms,
      baseline: without.ms,
      unit: "ms",
      target: "<= 2.0x no policy",
      check: (r) => r <= 2,
    });
  } finally {
    proxy.stop();
    removeAllContainers();
  }
}
