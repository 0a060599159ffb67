/**
 * svc and the units a real systemd runs for a rootless Podman's user (`systemd --user` of the
 * sandbox's user, on the `podman-rootless` leg: SVC_TEST_USER_SYSTEMD, and SVC_TEST_QUADLET for
 * quadlet; docs/podman.md): `podman generate systemd` units and quadlet files, their images moved
 * and rolled back through the unit. Beside podman.test.ts in the leg, a process of its own.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { docker, inspect } from "../../harness.ts";
import { svcCommand } from "../../support/svc-command.ts";
import { baseFlags, Fixture, QUICK_STOP_CMD, runSvc, stopAll } from "../e2e/support.ts";
import { entryIn, expectDataBack, guardedApp, onPodman, podman } from "./support.ts";

const fx = new Fixture("podman-units");

afterAll(async () => {
  await stopAll();
  if (onPodman) fx.cleanup();
}, 120_000);

const unitUser = process.env.SVC_TEST_USER_SYSTEMD ?? "";

/**
 * A container a real systemd runs: the sandbox's user manager (`systemd --user`, podman-rootless:
 * scripts/sandbox.sh), its unit made as Podman's docs say (`podman generate systemd --new`, the CLI
 * of the user, on the storage the socket serves). svc runs as that user, as a rootless user runs it.
 * The oracle is `podman auto-update`'s (docs/podman.md): the new image pulled, the unit restarted,
 * the unit's container on the new image; a restart onto an image that does not run puts the old
 * image back under the tag and restarts the unit again.
 */
describe.skipIf(!onPodman || unitUser === "")("a container a real systemd runs (systemd --user)", () => {
  const dir = process.env.SVC_SANDBOX_DIR ?? "";
  const uid = () => Bun.spawnSync(["id", "-u", unitUser]).stdout.toString().trim();
  const userEnv = () => [
    "env",
    "-i",
    "PATH=/usr/sbin:/usr/bin:/sbin:/bin",
    `HOME=${dir}/podman-home`,
    `XDG_RUNTIME_DIR=/run/user/${uid()}`,
    `CONTAINERS_CONF=${dir}/podman/containers.conf`,
    `CONTAINERS_STORAGE_CONF=${dir}/podman/storage.conf`,
    `CONTAINERS_REGISTRIES_CONF=${dir}/podman/registries.conf`,
  ];
  const asUser = () => ["setpriv", "--reuid", uid(), "--regid", uid(), "--init-groups"];
  /** a command as the user, in the user's environment (its own podman, its systemctl --user) */
  function user(args: string[]): string {
    const proc = Bun.spawnSync([...asUser(), ...userEnv(), ...args], { cwd: "/", stdout: "pipe", stderr: "pipe" });
    if (proc.exitCode !== 0) throw new Error(`${args.join(" ")} failed: ${proc.stderr.toString()}`);
    return proc.stdout.toString().trim();
  }
  /** svc run once as the user, its state in a folder of the user's */
  async function svcAsUser(name: string, flags: string[] = []) {
    const state = fx.tempDir("unit-state");
    Bun.spawnSync(["chown", unitUser, state]);
    return runSvc([...baseFlags(), "--run-once", "--state-dir", state, ...flags, name], {
      command: [...asUser(), ...svcCommand()],
      env: {
        PATH: process.env.PATH ?? "/usr/bin:/bin",
        HOME: `${dir}/podman-home`,
        XDG_RUNTIME_DIR: `/run/user/${uid()}`,
      },
    });
  }
  /** `podman generate systemd --new` of a container made by the user's CLI, started by systemd */
  function startUnit(name: string, image: string, createArgs: string[] = []): string {
    user(["podman", "create", "--name", name, "--network", "none", ...createArgs, image]);
    const unitFile = user(["podman", "generate", "systemd", "--new", "--name", name]);
    const unit = `container-${name}.service`;
    const path = unitPath(unit);
    writeFileSync(path, `${unitFile}\n`);
    // the user's own file, as `podman generate systemd --files` as that user writes it
    Bun.spawnSync(["chown", `${unitUser}:`, path]);
    user(["podman", "rm", name]);
    user(["systemctl", "--user", "daemon-reload"]);
    user(["systemctl", "--user", "start", unit]);
    return unit;
  }
  const unitPath = (unit: string) => join(dir, "podman-home/.config/systemd/user", unit);
  // svc as the user of a rootless Podman, its state the user's: the helper, that user's container,
  // reaches the copies' folder (svc as root against it cannot hand it over: docs/data-guard.md)
  test("the data guard, svc as the rootless Podman's user: the volume put back byte for byte when the new version fails", async () => {
    const app = await guardedApp(fx, "guarded-user");
    expectDataBack(await svcAsUser(app.name, ["--data-guard", "volumes"]), app);
  }, 240_000);
  test("the new image pulled, the unit restarted: its container on the new image, with its unit label; one that does not start is rolled back through the unit", async () => {
    const name = fx.name("unit-run");
    const v1 = fx.image("unit-run", { changes: [QUICK_STOP_CMD] });
    const unit = startUnit(name, v1.ref);
    try {
      const before = inspect(name);
      expect(before.Config.Labels.PODMAN_SYSTEMD_UNIT).toBe(unit);
      const v2 = fx.image("unit-run", { changes: [QUICK_STOP_CMD] });

      const run = await svcAsUser(name);
      const entry = entryIn(run.svc.output, name);
      expect(entry?.state, run.svc.describe()).toBe("updated");
      expect(entry?.reason).toContain(`unit ${unit}`);
      const after = inspect(name);
      expect(after.Id).not.toBe(before.Id);
      expect(after.Image).toBe(v2.id);
      expect(after.State.Running).toBe(true);
      expect(after.Config.Labels.PODMAN_SYSTEMD_UNIT).toBe(unit);
      expect(user(["systemctl", "--user", "show", "--property=ActiveState", unit])).toBe("ActiveState=active");

      // an image whose command fails at once: the unit's container does not run it
      const v3 = fx.image("unit-run", { changes: ['CMD ["false"]'] });
      const failing = await svcAsUser(name);
      const back = entryIn(failing.svc.output, name);
      expect(back?.state, failing.svc.describe()).toBe("rolled_back");
      const rolledBack = inspect(name);
      expect(rolledBack.Image).toBe(v2.id);
      expect(rolledBack.Image).not.toBe(v3.id);
      expect(rolledBack.State.Running).toBe(true);
      // the tag the unit runs names the image it ran before again
      expect(inspect(v2.ref).Id).toBe(v2.id);
    } finally {
      Bun.spawnSync([...asUser(), ...userEnv(), "systemctl", "--user", "stop", unit]);
    }
  }, 240_000);

  test("a unit label that is the image's own, or a unit that runs another container: svc neither restarts that unit nor writes its file", async () => {
    // the victim: a real unit of the user's manager, running a container of its own
    const victim = fx.name("unit-victim");
    const unit = startUnit(victim, fx.image("unit-victim", { changes: [QUICK_STOP_CMD] }).ref);
    const victimFile = readFileSync(unitPath(unit), "utf8");
    try {
      const victimId = inspect(victim).Id;
      // a publisher's image that names the victim's unit in its own labels
      const lure = [QUICK_STOP_CMD, `LABEL PODMAN_SYSTEMD_UNIT=${unit}`];
      const l1 = fx.image("unit-lure", { changes: lure });
      const lured = fx.run("unit-lure", l1.ref);
      expect(inspect(lured).Config.Labels.PODMAN_SYSTEMD_UNIT).toBe(unit);
      const l2 = fx.image("unit-lure", { changes: lure });
      const run = await svcAsUser(lured);
      const entry = entryIn(run.svc.output, lured);
      // replaced as any container is: the label counts for nothing
      expect(entry?.state, run.svc.describe()).toBe("updated");
      expect(entry?.reason ?? "").not.toContain(unit);
      expect(inspect(lured).Image).toBe(l2.id);
      expect(inspect(victim).Id).toBe(victimId);

      // a container's own label naming a unit that runs another container: not proven, left alone
      const c1 = fx.image("unit-claim", { changes: [QUICK_STOP_CMD] });
      const claim = fx.run("unit-claim", c1.ref, { labels: { PODMAN_SYSTEMD_UNIT: unit } });
      const claimId = inspect(claim).Id;
      fx.image("unit-claim", { changes: [QUICK_STOP_CMD] });
      const claimed = await svcAsUser(claim);
      const told = entryIn(claimed.svc.output, claim);
      expect(told?.state, claimed.svc.describe()).toBe("skipped");
      expect(told?.reason).toContain(`cannot show that ${unit} runs this container`);
      expect(inspect(claim).Id).toBe(claimId);
      expect(inspect(victim).Id).toBe(victimId);
      expect(readFileSync(unitPath(unit), "utf8")).toBe(victimFile);
    } finally {
      Bun.spawnSync([...asUser(), ...userEnv(), "systemctl", "--user", "stop", unit]);
    }
  }, 300_000);

  /** An image of `what` under `tag`: Podman's compatible import names it :latest whatever tag it is asked for, so tagged, then pushed. */
  const versionedImage = (what: string, tag: string, cmd: string[]) => {
    const built = fx.image(what, { changes: cmd, push: false });
    const ref = built.ref.replace(/:latest$/, `:${tag}`);
    podman(["tag", built.ref, ref]);
    docker(["push", "-q", ref]);
    return { ref, id: built.id };
  };

  /** The unit's container runs `image` under its reference, with the unit's label. */
  const expectUnitOn = (name: string, unit: string, image: { ref: string; id: string }) => {
    const now = inspect(name);
    expect(now.Config.Image).toBe(image.ref);
    expect(now.Image).toBe(image.id);
    expect(now.State.Running).toBe(true);
    expect(now.Config.Labels.PODMAN_SYSTEMD_UNIT).toBe(unit);
  };

  test("a tag move: the image of the unit's podman run line moved (1.0.0 -> 1.1.0), the unit's container on 1.1.0; a 1.2.0 that does not start is rolled back, the file as it was", async () => {
    const name = fx.name("unit-tag");
    const changes = [QUICK_STOP_CMD];
    const versioned = (tag: string, cmd: string[]) => versionedImage("unit-tag", tag, cmd);
    const v10 = versioned("1.0.0", changes);
    const unit = startUnit(name, v10.ref, ["--label", "svc.tag_policy=semver:minor"]);
    const path = unitPath(unit);
    try {
      const written = readFileSync(path, "utf8");
      // the generated unit names the image once, as the last argument of its podman run line
      expect(written.split(v10.ref)).toHaveLength(2);
      const v11 = versioned("1.1.0", changes);

      const dry = await svcAsUser(name, ["--dry-run"]);
      const told = entryIn(dry.svc.output, name);
      expect(told?.state, dry.svc.describe()).toBe("stale");
      expect(told?.reason).toContain(`${path} line `);
      expect(told?.reason).toContain(`${v10.ref} -> ${v11.ref}`);
      expect(told?.reason).toContain("systemctl --user daemon-reload");
      expect(readFileSync(path, "utf8")).toBe(written);

      const run = await svcAsUser(name);
      const entry = entryIn(run.svc.output, name);
      expect(entry?.state, run.svc.describe()).toBe("updated");
      expect(entry?.new_image).toBe(v11.ref);
      // only the reference's characters changed
      const moved = readFileSync(path, "utf8");
      expect(moved).toBe(written.replace(v10.ref, v11.ref));
      expectUnitOn(name, unit, v11);
      expect(user(["systemctl", "--user", "show", "--property=ActiveState", unit])).toBe("ActiveState=active");

      // a newer tag whose command fails at once: the file's bytes back, the unit on 1.1.0 again
      const v12 = versioned("1.2.0", ['CMD ["false"]']);
      const failing = await svcAsUser(name);
      const back = entryIn(failing.svc.output, name);
      expect(back?.state, failing.svc.describe()).toBe("rolled_back");
      expect(back?.reason).toContain(`names ${v11.ref} again`);
      expect(readFileSync(path, "utf8")).toBe(moved);
      expectUnitOn(name, unit, v11);
      expect(inspect(name).Image).not.toBe(v12.id);
    } finally {
      Bun.spawnSync([...asUser(), ...userEnv(), "systemctl", "--user", "stop", unit]);
    }
  }, 300_000);

  /**
   * A quadlet `.container` file, its unit made by quadlet (sid's, from Podman 5.8's root: Podman 4.3
   * has none; scripts/sandbox.sh, start_user_systemd) and run by the machine's Podman 4.3. The file
   * as podman-systemd.unit(5) shows one, with a comment and a quoted Image=; CgroupsMode=no-conmon
   * because quadlet's default `--cgroups=split` needs systemd's cgroup manager, and the sandbox's
   * Podman has cgroupfs.
   */
  test.skipIf(!process.env.SVC_TEST_QUADLET)(
    "a quadlet .container file: its Image= moved (1.0.0 -> 1.1.0), the unit quadlet makes of it runs 1.1.0; a 1.2.0 that does not start is rolled back, the file as it was; under a drop-in's Image=, the file put back and the unit not restarted",
    async () => {
      const name = fx.name("quadlet");
      const unit = `${name}.service`;
      const changes = [QUICK_STOP_CMD];
      const versioned = (tag: string, cmd: string[]) => versionedImage("quadlet", tag, cmd);
      const v10 = versioned("1.0.0", changes);
      const path = join(dir, "podman-home/.config/containers/systemd", `${name}.container`);
      const written = [
        "# web, as its owner wrote it",
        "[Unit]",
        "Description=svc's quadlet test",
        "",
        "[Container]",
        `Image="${v10.ref}"`,
        `ContainerName=${name}`,
        "Network=none",
        "CgroupsMode=no-conmon",
        "Label=svc.tag_policy=semver:minor",
        "",
        "[Service]",
        "Restart=no",
        "",
      ].join("\n");
      writeFileSync(path, written);
      Bun.spawnSync(["chown", `${unitUser}:`, path]);
      user(["systemctl", "--user", "daemon-reload"]);
      expect(user(["systemctl", "--user", "show", "--property=SourcePath", unit])).toBe(`SourcePath=${path}`);
      user(["systemctl", "--user", "start", unit]);
      try {
        expect(inspect(name).Config.Labels.PODMAN_SYSTEMD_UNIT).toBe(unit);
        const v11 = versioned("1.1.0", changes);

        const run = await svcAsUser(name);
        const entry = entryIn(run.svc.output, name);
        expect(entry?.state, run.svc.describe()).toBe("updated");
        expect(entry?.reason).toContain(`${path} line 6: ${v10.ref} -> ${v11.ref}`);
        const moved = readFileSync(path, "utf8");
        expect(moved).toBe(written.replace(`Image="${v10.ref}"`, `Image="${v11.ref}"`));
        expectUnitOn(name, unit, v11);

        const v12 = versioned("1.2.0", ['CMD ["false"]']);
        const failing = await svcAsUser(name);
        const back = entryIn(failing.svc.output, name);
        expect(back?.state, failing.svc.describe()).toBe("rolled_back");
        expect(readFileSync(path, "utf8")).toBe(moved);
        expectUnitOn(name, unit, v11);
        expect(inspect(name).Image).not.toBe(v12.id);

        // a drop-in pins the image (podman-systemd.unit(5), "Drop-in"): quadlet reads it after the
        // file, so moving the file's Image= would change nothing. In a subfolder of the unit folder
        // (quadlet reads those too) svc sees it only in the unit quadlet makes of the moved file:
        // the file goes back, the unit is not restarted for nothing
        const running = inspect(name);
        const elsewhere = join(dirname(path), "more", `${name}.container.d`);
        mkdirSync(elsewhere, { recursive: true });
        writeFileSync(join(elsewhere, "pin.conf"), `[Container]\nImage=${v11.ref}\n`);
        Bun.spawnSync(["chown", "-R", `${unitUser}:`, join(dirname(path), "more")]);
        user(["systemctl", "--user", "daemon-reload"]);
        versioned("1.3.0", changes);
        const pinned = await svcAsUser(name);
        const held = entryIn(pinned.svc.output, name);
        expect(held?.state, pinned.svc.describe()).toBe("skipped");
        expect(held?.reason).toContain(`still runs ${v11.ref}: a drop-in of ${name}.container sets Image= after it`);
        expect(held?.reason).toContain("its file put back, the unit not restarted");
        expect(readFileSync(path, "utf8")).toBe(moved);
        expect(inspect(name)).toMatchObject({ Id: running.Id, State: { StartedAt: running.State.StartedAt } });

        // beside the file, svc reads it before writing anything: the file is not touched at all
        const beside = `${path}.d`;
        renameSync(elsewhere, beside);
        user(["systemctl", "--user", "daemon-reload"]);
        const before = statSync(path).mtimeMs;
        const again = await svcAsUser(name);
        const told = entryIn(again.svc.output, name);
        expect(told?.state, again.svc.describe()).toBe("skipped");
        expect(told?.reason).toContain(`${beside}/pin.conf sets Image=, and quadlet reads it after ${name}.container`);
        expect(statSync(path).mtimeMs).toBe(before);
        expect(inspect(name).Id).toBe(running.Id);
      } finally {
        Bun.spawnSync([...asUser(), ...userEnv(), "systemctl", "--user", "stop", unit]);
      }
    },
    300_000,
  );
});
