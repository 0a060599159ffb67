/**
 * svc's own decisions over Swarm services on a real two-node Swarm (docs/swarm.md): tag policies,
 * monitor-only, dry runs, snoozes and the dashboard's service row, in Chromium. The Swarm API
 * calls under them are services.test.ts's, which every Swarm leg runs; these run on Docker 28.5's
 * containerd store only (docs/testing.md, "Which engine runs what").
 */
import { describe, expect, test } from "bun:test";
import { DRY_RUN_REASON } from "../../../src/updater/types.ts";
import { recordingLogger } from "../../support/logger.ts";
import { confirm, menuAction, noticeSaying, rowOf, startDashboard } from "../ui/support.ts";
import { expectState, Fixture, makeUpdater } from "../updater/support.ts";
import { createService, expectEveryTaskOn, removeServices, serviceInspect, useSwarm } from "./support.ts";

const fx = new Fixture();
useSwarm(fx);

describe("policies", () => {
  test("a tag policy moves a service to the newest allowed tag, pinned (repo:newtag@digest)", async () => {
    const first = fx.image("tags", { tag: "1.0.0" });
    const name = createService("tags", first.ref, ["--replicas", "2"]);
    const minor = fx.image("tags", { tag: "1.1.0" });
    fx.image("tags", { tag: "2.0.0" });
    const moved = first.ref.replace(/:1\.0\.0$/, ":1.1.0");
    // a tag skipped on request (POST /v1/skip?tag=) is not moved to
    const skipping = await makeUpdater({ containers: [], tag_policy: "semver:minor" });
    expect(await skipping.updater.skip(name, { tag: "1.1.0" })).toEqual({ container: name, image: moved });
    expect(expectState(await skipping.updater.run("api", { container: [name] }), name, "skipped").reason).toContain(
      `${moved} was skipped on request`,
    );

    const h = await makeUpdater({ containers: [], tag_policy: "semver:minor" });
    const entry = expectState(await h.updater.run("api", { container: [name] }), name, "updated");
    expect(entry).toMatchObject({ new_image: moved, new_digest: minor.digest });
    expect(serviceInspect(name).Spec.TaskTemplate.ContainerSpec.Image).toBe(`${moved}@${minor.digest}`);
    expectEveryTaskOn(name, `${moved}@${minor.digest}`, 2);
  });

  test("monitor-only, a dry run and a snooze report the newer digest and leave the spec alone; hooks do not apply (said once)", async () => {
    const first = fx.image("watch");
    const name = createService("watch", first.ref, ["--replicas", "1", "--label", "svc.hooks.pre_update=echo never"]);
    const second = fx.image("watch");
    const version = serviceInspect(name).Version.Index;

    const log = recordingLogger();
    const watching = await makeUpdater({ containers: [], monitor_only: true }, { log });
    expect(expectState(await watching.updater.run("api", { container: [name] }), name, "stale")).toMatchObject({
      new_digest: second.digest,
      reason: null,
    });
    await watching.updater.run("api", { container: [name] });
    const told = log.lines.filter((l) => l.message.startsWith("lifecycle hooks do not apply to Swarm services"));
    expect(told.map((l) => l.fields)).toEqual([{ service: name, labels: ["svc.hooks.pre_update"] }]);
    const dry = await makeUpdater({ containers: [] });
    const report = await dry.updater.run("api", { container: [name] }, { dryRun: true });
    expect(expectState(report, name, "stale")).toMatchObject({ new_digest: second.digest, reason: DRY_RUN_REASON });
    // POST /v1/snooze takes a service's name
    const snoozing = await makeUpdater({ containers: [] });
    await snoozing.updater.snooze(name, 3_600_000);
    expect(expectState(await snoozing.updater.run("api", { container: [name] }), name, "stale").reason).toStartWith(
      "updates snoozed until",
    );

    expect(serviceInspect(name).Version.Index).toBe(version);
    expect(watching.audit.entries.length + dry.audit.entries.length + snoozing.audit.entries.length).toBe(0);
  });
});

describe("on the dashboard", () => {
  test("a service is one row with its marker and its spec's labels; updated from the page, docker service inspect shows the new digest; rolled back by Swarm", async () => {
    const ui = await startDashboard("swarm-ui");
    try {
      const first = ui.fx.image("web");
      const name = createService(
        "ui",
        first.ref,
        ["--replicas", "2", "--label", "svc.hooks.pre_update=true"],
        ui.scope,
      );
      const second = ui.fx.image("web");
      const page = await ui.open();
      const row = await rowOf(page, name);
      expect(await row.locator(".marker").textContent()).toBe("service");
      // read from the service spec's labels, which its task containers do not carry
      expect(await row.textContent()).toContain("hooks not applied to a service: pre_update");
      await row.getByRole("button", { name: `Update ${name}` }).click();
      await confirm(page, "Update");
      await noticeSaying(page, `${name}: updated`, 90_000);
      expect(serviceInspect(name).Spec.TaskTemplate.ContainerSpec.Image).toBe(`${first.ref}@${second.digest}`);
      // rolled back by Swarm, to the previous spec it keeps
      await menuAction(page, name, "Roll back");
      await confirm(page, "Roll back");
      await noticeSaying(page, `${name}: back on its earlier image`, 90_000);
      expect(serviceInspect(name).Spec.TaskTemplate.ContainerSpec.Image).toBe(`${first.ref}@${first.digest}`);
    } finally {
      removeServices();
      await ui.close();
    }
  }, 180_000);
});
