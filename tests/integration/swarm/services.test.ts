/**
 * Swarm services on a real two-node Swarm (docs/swarm.md): svc decides (one registry request per
 * image, skip) and Swarm's own rolling update replaces the tasks on both nodes, on every Swarm leg.
 * svc's policies and the dashboard's service row over the same calls: policies.test.ts.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { copyFileSync } from "node:fs";
import { join } from "node:path";
import type { SessionReport } from "../../../src/updater/types.ts";
import { docker, freePort, inspect, portOpen, sandbox, waitUntil } from "../../harness.ts";
import { commandBlock, REPO_ROOT } from "../../support/doc-blocks.ts";
import { recordingLogger } from "../../support/logger.ts";
import { baseFlags, buildSvcImage, compileSvc, parseJsonLines, reportsIn, runSvc } from "../e2e/support.ts";
import { entryOf, expectState, Fixture, makeUpdater, TEST_SCOPE } from "../updater/support.ts";
import {
  createService,
  createServiceWithoutFailureAction,
  expectEveryTaskOn,
  nodeCount,
  onWorker,
  runningTasks,
  serviceInspect,
  useSwarm,
  workerTaskImages,
} from "./support.ts";

const fx = new Fixture();
useSwarm(fx);

describe("a replicated service", () => {
  test("is updated by Swarm with every task on both nodes on the new digest; its tasks are never touched; a second cycle changes nothing; svc rollback puts it back", async () => {
    expect(nodeCount()).toBe(2);
    const first = fx.image("web");
    const name = createService("web", first.ref, ["--replicas", "4"]);
    expectEveryTaskOn(name, `${first.ref}@${first.digest}`, 4);
    const second = fx.image("web");
    const h = await makeUpdater({ containers: [] });

    // the image filter selects the service and its task containers (which carry the scope label)
    const report = await h.updater.run("api", { image: [first.ref] });
    const entry = expectState(report, name, "updated");
    expect(entry).toMatchObject({
      kind: "service",
      image: first.ref,
      old_digest: first.digest,
      new_digest: second.digest,
    });
    const tasks = report!.containers.filter((c) => c.name.startsWith(`${name}.`));
    expect(tasks.length).toBeGreaterThan(0);
    for (const task of tasks) expect(task).toMatchObject({ state: "skipped", reason: `Swarm task of service ${name}` });
    expect(report!.counts.updated).toBe(1);
    // notifications get the same report; the service counts once however many tasks it has
    expect(h.published.map((r) => r.containers.filter((c) => c.name === name).length)).toEqual([1]);
    expectEveryTaskOn(name, `${first.ref}@${second.digest}`, 4);
    expect(h.audit.entries.filter((e) => e.container === name).map((e) => e.action)).toEqual(["service_update"]);

    const version = serviceInspect(name).Version.Index;
    expectState(await h.updater.run("api", { container: [name] }), name, "fresh");
    expect(serviceInspect(name).Version.Index).toBe(version);

    const otherScope = await makeUpdater({ containers: [], scope: "another-scope" });
    expect(await otherScope.updater.rollback(name)).toMatchObject({
      state: "skipped",
      reason: "not selected by svc (scope, labels or options)",
    });
    // `svc rollback NAME`, the one-off command: Swarm keeps the previous spec; state_dir keeps the skip
    const flags = [...baseFlags(), "--scope", TEST_SCOPE, "--state-dir", fx.tempDir("state")];
    const back = await runSvc(["rollback", name, ...flags]);
    expect(back.code).toBe(0);
    const said = parseJsonLines(back.stdout + back.stderr).find((line) =>
      line.message?.startsWith(`${name}: rolled back`),
    );
    expect(said?.fields).toMatchObject({
      container: name,
      from_image_id: second.digest,
      to_image_id: first.digest,
      state: "updated",
    });
    expectEveryTaskOn(name, `${first.ref}@${first.digest}`, 4);
    // the digest it left waits for a newer one
    const after = await runSvc([...flags, "--run-once", name]);
    const entry2 = reportsIn(after.stdout + after.stderr)[0]?.containers.find((c: { name: string }) => c.name === name);
    expect(entry2).toMatchObject({
      kind: "service",
      state: "skipped",
      reason: `${second.digest} was left by a rollback (svc rollback); waiting for a newer image`,
    });
    expectEveryTaskOn(name, `${first.ref}@${first.digest}`, 4);
  });
});

describe("a new image that fails its healthcheck", () => {
  test("is rolled back by Swarm (its own failure action) or at svc's request (none), reported as such, and not retried by the next cycle", async () => {
    const check = 'test -z "$BAD"';
    const health = [
      "--health-cmd",
      check,
      "--health-interval",
      "1s",
      "--health-retries",
      "1",
      "--health-timeout",
      "15s",
      "--health-start-period",
      "0s",
    ];
    const first = fx.image("hc");
    const byUs = await createServiceWithoutFailureAction("hc-svc", `${first.ref}@${first.digest}`, 2, check);
    const bySwarm = createService("hc-own", first.ref, [
      "--replicas",
      "2",
      "--update-failure-action",
      "rollback",
      ...health,
    ]);
    const bad = fx.image("hc", { changes: ['CMD ["/bin/sleep","3600"]', "ENV BAD=1"] });
    const h = await makeUpdater({ containers: [] });

    const report = await h.updater.run("api", { container: [byUs, bySwarm] });
    const ours = expectState(report, byUs, "rolled_back");
    expect(ours.reason).toContain("Swarm paused the update");
    expect(ours.reason).toContain("svc asked Swarm to roll back");
    const theirs = expectState(report, bySwarm, "rolled_back");
    expect(theirs.reason).toContain("rolled back by Swarm");
    expect(report!.counts.rolled_back).toBe(2);
    for (const name of [byUs, bySwarm]) {
      // Docker 20.10's Swarm calls a rollback complete while the tasks it started are still on their
      // first healthcheck; and the manager may call a task running before its worker lists it (seen
      // at the load of the test run's legs)
      await waitUntil(
        () => runningTasks(name).length === 2 && workerTaskImages(name).length > 0,
        30_000,
        `${name}'s tasks back to running, on both nodes`,
      );
      expectEveryTaskOn(name, `${first.ref}@${first.digest}`, 2);
    }

    const next = await h.updater.run("api", { container: [byUs, bySwarm] });
    for (const name of [byUs, bySwarm])
      expect(entryOf(next, name).reason).toBe(`${bad.digest} was rolled back before; waiting for a newer image`);
    expect(h.audit.entries.filter((e) => e.action === "service_update").length).toBe(2);
  });
});

describe("a global service", () => {
  test("gets one task per node, both on the new digest", async () => {
    const first = fx.image("global");
    const name = createService("global", first.ref, ["--mode", "global"]);
    const second = fx.image("global");
    const h = await makeUpdater({ containers: [] });
    expectState(await h.updater.run("api", { container: [name] }), name, "updated");
    expectEveryTaskOn(name, `${first.ref}@${second.digest}`, 2);
  });
});

describe("a private registry's image", () => {
  test("is pulled by the worker with the credentials svc passes with the new spec", async () => {
    const { authRegistry, authUser, authPass } = sandbox();
    const first = fx.image("private", { registry: authRegistry });
    // created without credentials: the manager runs its task from its local image, the worker cannot pull it
    const name = createService("private", first.ref, ["--mode", "global", "--detach"]);
    await waitUntil(() => runningTasks(name).length === 1, 60_000, "the manager's task");
    expect(workerTaskImages(name)).toEqual([]);
    const second = fx.image("private", { registry: authRegistry });
    const h = await makeUpdater({
      containers: [],
      registry_credentials: [{ host: authRegistry, username: authUser, password: authPass }],
    });
    expectState(await h.updater.run("api", { container: [name] }), name, "updated");
    expectEveryTaskOn(name, `${first.ref}@${second.digest}`, 2);
  });
});

describe("on a worker", () => {
  test("svc updates the plain containers, leaves the tasks to Swarm, and says once that services are updated from a manager", async () => {
    const first = fx.image("worker");
    const name = createService("worker", first.ref, ["--mode", "global"]);
    const plain = fx.name("plain");
    onWorker(["run", "-d", "--name", plain, "--network", "none", "-l", `svc.scope=${TEST_SCOPE}`, first.ref]);
    try {
      const second = fx.image("worker");
      const log = recordingLogger();
      const h = await makeUpdater(
        { containers: [], docker: { host: process.env.SVC_TEST_SWARM_WORKER_HOST! } },
        { log },
      );
      const version = serviceInspect(name).Version.Index;

      const report = await h.updater.run("api", { image: [first.ref] });
      expect(expectState(report, plain, "updated").new_digest).toBe(second.digest);
      const tasks = report!.containers.filter((c) => c.name.startsWith(`${name}.`));
      expect(tasks.map((t) => [t.state, t.reason])).toEqual([["skipped", `Swarm task of service ${name}`]]);
      expect(report!.containers.some((c) => c.kind === "service")).toBe(false);
      await h.updater.run("api", { image: [first.ref] });

      expect(log.lines.filter((l) => l.message.includes("services are updated by svc on a manager")).length).toBe(1);
      expect(serviceInspect(name).Version.Index).toBe(version);
      expect(workerTaskImages(name)).toEqual([`${first.ref}@${first.digest}`]);
    } finally {
      onWorker(["rm", "-f", plain]);
    }
  });
});

describe("a spec changed while svc decides", () => {
  test("is read again and written once more, keeping the other change", async () => {
    const first = fx.image("race");
    const name = createService("race", first.ref, ["--replicas", "1"]);
    const second = fx.image("race");
    // someone else changes the service between svc's read (the list) and its write
    const h = await makeUpdater(
      { containers: [] },
      {
        progress: (event) => {
          if (event.container === name && event.step === "check")
            docker(["service", "update", "--quiet", "--detach", "--label-add", "changed=meanwhile", name]);
        },
      },
    );
    expectState(await h.updater.run("api", { container: [name] }), name, "updated");
    const spec = serviceInspect(name).Spec;
    expect(spec.Labels.changed).toBe("meanwhile");
    expect(spec.TaskTemplate.ContainerSpec.Image).toBe(`${first.ref}@${second.digest}`);
    const writes = h.audit.entries.filter((e) => e.action === "service_update");
    expect(writes.length).toBe(2);
    expect(writes[0]!.error).toContain("out of sequence");
    expect(writes[1]!.error).toBeUndefined();
  });
});

describe("an image set while svc decides", () => {
  test("is the operator's: svc does not write over it, and skips the service as changed meanwhile", async () => {
    const first = fx.image("mine");
    const name = createService("mine", first.ref, ["--replicas", "1"]);
    fx.image("mine");
    const theirs = fx.image("theirs", { tag: "chosen" });
    // `docker service update --image` by someone else between svc's read (the list) and its write
    const h = await makeUpdater(
      { containers: [] },
      {
        progress: (event) => {
          if (event.container === name && event.step === "check")
            docker(["service", "update", "--quiet", "--detach", "--image", theirs.ref, name]);
        },
      },
    );
    const entry = expectState(await h.updater.run("api", { container: [name] }), name, "skipped");
    expect(entry.reason).toStartWith(`changed meanwhile: its image is now ${theirs.ref}@${theirs.digest} `);
    expect(serviceInspect(name).Spec.TaskTemplate.ContainerSpec.Image).toBe(`${theirs.ref}@${theirs.digest}`);
    const writes = h.audit.entries.filter((e) => e.action === "service_update");
    expect(writes.length).toBe(1);
    expect(writes[0]!.error).toContain("out of sequence");
  });
});

/** svc's image in the sandbox registry, built once for this file (the binary compiled once too). */
let svcBuild: { work: string; ref: string } | undefined;
function svcImageOnce(): { work: string; ref: string } {
  if (!svcBuild) {
    const work = fx.tempDir("svc-build");
    compileSvc(work);
    const ref = `${sandbox().registry}/${fx.name("svc")}:latest`;
    buildSvcImage(work, ref, "1");
    svcBuild = { work, ref };
  }
  return svcBuild;
}

describe("svc as a Swarm service on the manager", () => {
  test("updates the other services first, then its own without waiting, and the new task takes over", async () => {
    const { work, ref: svcRef } = svcImageOnce();
    const first = fx.image("beside");
    const scope = fx.name("self-scope");
    const port = freePort();
    const beside = createService("beside", first.ref, ["--replicas", "1"], scope);
    const self = createService(
      "self",
      svcRef,
      [
        ...[
          "--network",
          "host",
          "--constraint",
          "node.role==manager",
          "--no-healthcheck",
          "--mount",
          `type=bind,src=${sandbox().socketPath},dst=/var/run/docker.sock`,
        ],
        ...[
          "--env",
          `SVC_SCOPE=${scope}`,
          "--env",
          "SVC_HTTP_API_UPDATE=true",
          "--env",
          "SVC_HTTP_API_TOKEN=swarm-self-token",
          "--env",
          `SVC_HTTP_API_PORT=${port}`,
        ],
      ],
      scope,
    );
    await waitUntil(() => portOpen(port), 30_000, "svc's API in its task");
    const second = fx.image("beside");
    buildSvcImage(work, svcRef, "2");
    const svcDigest = (inspect(svcRef).RepoDigests as string[])
      .find((d) => d.startsWith(svcRef.replace(/:latest$/, "@")))!
      .split("@")[1];

    const response = await fetch(`http://127.0.0.1:${port}/v1/update`, {
      method: "POST",
      headers: { authorization: "Bearer swarm-self-token" },
    });
    const report = (await response.json()) as SessionReport;
    expect(expectState(report, beside, "updated").new_digest).toBe(second.digest);
    expect(expectState(report, self, "updated").reason).toContain("svc's own service");
    // its own service was written after the other one's rollout had completed
    const [besideStatus, selfStatus] = [serviceInspect(beside).UpdateStatus, serviceInspect(self).UpdateStatus];
    expect(Date.parse(besideStatus.CompletedAt)).toBeLessThanOrEqual(Date.parse(selfStatus.StartedAt));

    const pinned = `${svcRef}@${svcDigest}`;
    await waitUntil(
      () => runningTasks(self).length === 1 && runningTasks(self)[0]!.image === pinned,
      90_000,
      "the new svc task",
    );
    await waitUntil(() => portOpen(port), 30_000, "the new svc's API");
    const again = await fetch(`http://127.0.0.1:${port}/v1/update`, {
      method: "POST",
      headers: { authorization: "Bearer swarm-self-token" },
    });
    const next = (await again.json()) as SessionReport;
    for (const name of [beside, self]) expectState(next, name, "fresh");
  }, 240_000);
});

/**
 * docs/swarm.md, "svc as a Swarm service": docs/svc-stack.yml deployed as written by the docs'
 * commands on the two-node swarm. The sandbox's changes: the image is this file's build (the
 * docs' `bun run image` builds both platforms), in the sandbox's registry; the socket is the
 * sandbox's; the stack, the port and the secret's value are the test's.
 */
describe("docs/svc-stack.yml, deployed as written", () => {
  const stack = fx.name("stack");
  afterAll(() => {
    docker(["stack", "rm", stack], { allowFailure: true });
    docker(["secret", "rm", "svc-token"], { allowFailure: true });
  }, 60_000);

  test("svc runs on a manager as 65532 with its secret, its state volume and its API, and says when it checks", async () => {
    const { ref } = svcImageOnce();
    const dir = fx.tempDir("stack");
    copyFileSync(join(REPO_ROOT, "docs", "svc-stack.yml"), join(dir, "svc-stack.yml"));
    const port = freePort();
    const script = commandBlock("swarm-deploy")
      .text.replace(/^.*bun run image.*$/m, "")
      .replaceAll("registry.example/svc:0.1.0", ref)
      .replaceAll(/\/var\/run\/docker\.sock(?=\))/g, sandbox().socketPath)
      .replace("svc-stack.yml svc", `svc-stack.yml ${stack}`)
      .replace("docker service logs svc_svc", "true");
    const env = {
      ...process.env,
      DOCKER_HOST: sandbox().dockerHost,
      DOCKER_CONFIG: sandbox().dockerConfig,
      DOCKER_SOCKET: sandbox().socketPath,
      HTTP_PORT: String(port),
    };
    const ran = Bun.spawnSync(["bash", "-e", "-c", script], { cwd: dir, env, stdout: "pipe", stderr: "pipe" });
    expect(ran.exitCode, ran.stderr.toString()).toBe(0);
    const service = `${stack}_svc`;
    const logs = () => docker(["service", "logs", "--raw", service], { allowFailure: true }).stdout;
    await waitUntil(() => logs().includes("next check at"), 90_000, "svc's next-check line");
    expect(logs()).not.toContain("cannot be used");
    // the secret was read (an unreadable token file stops svc at start): the API asks for it
    const spec = serviceInspect(service).Spec;
    expect(spec.TaskTemplate.ContainerSpec.User).toStartWith("65532:");
    expect(spec.TaskTemplate.Placement.Constraints).toEqual(["node.role == manager"]);
    expect((await fetch(`http://127.0.0.1:${port}/v1/health`)).status).toBe(200);
    expect((await fetch(`http://127.0.0.1:${port}/v1/containers`)).status).toBe(401);
  }, 180_000);
});
