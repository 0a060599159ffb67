/**
 * Tag policies against the sandbox engine and registry: a repository with many version tags,
 * pre-releases and a tag whose index lacks our platform; the container is recreated on the tag
 * the policy picks, rolled back to the old reference when the new one fails, and put back on it
 * by `svc rollback`.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { Repository } from "../registry/shapes.ts";
import { containersByPrefix, entryOf, expectState, Fixture, inspect, makeUpdater } from "./support.ts";

const fx = new Fixture();
afterAll(() => fx.cleanup(), 120_000);

/** Version tags of one repository; `1.5.0` is an index for arm64 only (the engine here is not arm64). */
async function versionedRepository(what: string, tags: string[], options: { failing?: string[] } = {}) {
  const images = new Map<string, { ref: string; id: string }>();
  for (const tag of tags) {
    const changes = options.failing?.includes(tag) ? ['CMD ["/bin/sh","-c","echo broken; exit 3"]'] : undefined;
    images.set(tag, fx.image(what, { tag, changes }));
  }
  const repository = new Repository(fx.name(what));
  const arm = await repository.platformImage({ os: "linux", architecture: "arm64" });
  await repository.pushIndex("1.5.0", [arm]);
  repository.removeLocal();
  return { images, reference: (tag: string) => `${repository.reference}:${tag}` };
}

describe("a tag policy", () => {
  test("moves the container to the best tag it allows that exists for our platform, keeping its configuration", async () => {
    const repo = await versionedRepository("semver", ["1.2.0", "1.2.1", "1.3.0", "1.4.0-rc.1", "2.0.0", "latest"]);
    const app = fx.run("app", repo.reference("1.2.0"), {
      restart: "unless-stopped",
      labels: { "svc.tag_policy": "semver:minor" },
      env: { MODE: "prod" },
    });
    const before = inspect(app);

    const h = await makeUpdater({ containers: [app] });
    const dry = await h.updater.run("api", undefined, { dryRun: true });
    expect(entryOf(dry, app)).toMatchObject({ state: "stale", new_image: repo.reference("1.3.0") });
    expect(inspect(app).Id).toBe(before.Id);

    const report = await h.updater.run("api");
    const entry = expectState(report, app, "updated");
    expect(entry).toMatchObject({
      image: repo.reference("1.2.0"),
      new_image: repo.reference("1.3.0"),
      old_image_id: repo.images.get("1.2.0")!.id,
      new_image_id: repo.images.get("1.3.0")!.id,
    });
    const after = inspect(app);
    expect(after.Config.Image).toBe(repo.reference("1.3.0"));
    expect(after.Image).toBe(repo.images.get("1.3.0")!.id);
    expect(after.Config.Env).toContain("MODE=prod");
    expect(after.Config.Labels["svc.tag_policy"]).toBe("semver:minor");
    expect(after.HostConfig.RestartPolicy.Name).toBe("unless-stopped");
    expect(after.State.Running).toBe(true);
    expect(Object.keys(containersByPrefix(app))).toEqual([app]);
    expect(h.audit.entries.filter((e) => e.container === app && e.action === "pull").map((e) => e.image)).toEqual([
      repo.reference("1.3.0"),
    ]);

    // nothing newer within 1.x for our platform: fresh, without a pull
    const again = await h.updater.run("api");
    expectState(again, app, "fresh");
    expect(h.audit.entries.filter((e) => e.container === app && e.action === "pull")).toHaveLength(1);
  }, 120_000);

  test("a new tag that fails its checks is rolled back: the old container runs on its old reference", async () => {
    const repo = await versionedRepository("fails", ["1.0.0", "1.1.0"], { failing: ["1.1.0"] });
    const app = fx.run("app2", repo.reference("1.0.0"), { labels: { "svc.tag_policy": "semver:major" } });
    const before = inspect(app);
    const h = await makeUpdater({ containers: [app] });
    const report = await h.updater.run("api");
    expectState(report, app, "rolled_back");
    const after = inspect(app);
    expect(after.Id).toBe(before.Id);
    expect(after.Config.Image).toBe(repo.reference("1.0.0"));
    expect(after.State.Running).toBe(true);
    expect(Object.keys(containersByPrefix(app))).toEqual([app]);
    // the tag's digest is not tried again
    expect(expectState(await h.updater.run("api"), app, "skipped").reason).toContain("was rolled back before");
  }, 120_000);

  test("svc rollback puts the container back on its old tag and image, and the tag it left waits for a newer image", async () => {
    const repo = await versionedRepository("undo", ["3.1.0", "3.2.0"]);
    const app = fx.run("app3", repo.reference("3.1.0"), { labels: { "svc.tag_policy": "semver:minor" } });
    const h = await makeUpdater({ containers: [app] });
    expectState(await h.updater.run("api"), app, "updated");
    expect(inspect(app).Config.Image).toBe(repo.reference("3.2.0"));

    const back = await h.updater.rollback(app);
    expect(back).toMatchObject({ state: "updated", to_image_id: repo.images.get("3.1.0")!.id });
    const after = inspect(app);
    expect(after.Config.Image).toBe(repo.reference("3.1.0"));
    expect(after.Image).toBe(repo.images.get("3.1.0")!.id);
    expect(after.State.Running).toBe(true);
    expectState(await h.updater.run("api"), app, "skipped");
  }, 120_000);

  // (a compose container whose file svc can write moves with it: tests/integration/updater/compose-write.test.ts)
  test("a compose-managed container whose file svc cannot find is only reported, with the reason; labelled svc.tag_policy.compose=move it follows the tag", async () => {
    const repo = await versionedRepository("compose", ["5.0.0", "5.0.1"]);
    const labels = {
      "com.docker.compose.project": "p",
      "com.docker.compose.service": "web",
      "svc.tag_policy": "semver:patch",
    };
    const reported = fx.run("web", repo.reference("5.0.0"), { labels });
    const moving = fx.run("web2", repo.reference("5.0.0"), {
      labels: { ...labels, "svc.tag_policy.compose": "move" },
    });
    const h = await makeUpdater({ containers: [reported, moving] });
    const report = await h.updater.run("api");
    expect(expectState(report, reported, "stale")).toMatchObject({
      new_image: repo.reference("5.0.1"),
      reason:
        "newer tag 5.0.1 available; the compose file names 5.0.0 (web's container names no compose file (label com.docker.compose.project.config_files))",
    });
    expect(inspect(reported).Config.Image).toBe(repo.reference("5.0.0"));
    expectState(report, moving, "updated");
    expect(inspect(moving).Config.Image).toBe(repo.reference("5.0.1"));
  }, 120_000);
});
