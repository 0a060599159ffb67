/**
 * svc on Podman (the sandbox's `podman` and `podman-rootless` engines: Debian 12's Podman 4.3.1,
 * rootful, and as a user of the sandbox's own on its $XDG_RUNTIME_DIR/podman/podman.sock; `podman5`:
 * sid's Podman 5.8 in a root of its own; README, "Engines"; docs/podman.md). Run with
 * SVC_SANDBOX_ENGINE=podman, podman-rootless or podman5; skipped on every other engine.
 *
 * The oracle is the Docker corpus's (tests/integration/engine/inspect-diff.ts): the replacement's
 * inspect, in the compatible API and in Podman's own (`podman inspect`, libpod), differs from the
 * old container's only where an update may make it differ. Podman's own meaning of each libpod
 * field: containers/podman, libpod/define/container_inspect.go (4.3.1).
 */
import { afterAll, describe, expect, test } from "bun:test";
import { chmodSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { docker, engineJson, inspect, sandbox } from "../../harness.ts";
import { baseFlags, Fixture, MAIN, QUICK_STOP_CMD, reportsIn, runSvc, stopAll } from "../e2e/support.ts";
import { disallowedDifferences } from "../engine/inspect-diff.ts";
import { decorate, MIGRATE_V2, manifestOf, WRITE_V1, waitForVersion } from "../updater/data-guard-support.ts";

type Json = Record<string, any>;

const engine = process.env.SVC_TEST_ENGINE ?? "";
const onPodman = engine.startsWith("podman");
const how = engine.endsWith("-rootless") ? "rootless" : "rootful";
/** the Podman of the leg: Debian 12's, or sid's in its own root (scripts/sandbox.sh, podman5) */
const version = engine.startsWith("podman5") ? "5.8" : "4.3.1";
const fx = new Fixture("podman");

/**
 * What libpod's inspect shows that an update changes besides the compatible one's (libpod/define/
 * container_inspect.go): the image's name and digest, and the runtime files of the new container.
 */
const LIBPOD_ALLOWED = [
  /^(ImageDigest|StaticDir|OCIConfigPath|ConmonPidFile|PidFile)$/,
  /^HostConfig\.LogConfig\.Path$/,
  // the container's lock, Podman's own (4.6 and newer)
  /^lockNumber$/,
  // the create time, which Podman also writes as an annotation
  /^Config\.Annotations\.io\.kubernetes\.cri-o\.Created$/,
];

/** `podman` itself (the remote client of Debian 12's package) against the sandbox's socket. */
function podman(args: string[]): string {
  const proc = Bun.spawnSync(["podman", "--url", sandbox().dockerHost, ...args], { stdout: "pipe", stderr: "pipe" });
  if (proc.exitCode !== 0) throw new Error(`podman ${args.join(" ")} failed: ${proc.stderr.toString()}`);
  return proc.stdout.toString().trim();
}

/** `podman inspect`; its binds in no fixed order, sorted as the compatible API sorts them (pkg/api/handlers/compat/containers.go). */
function libpodInspect(name: string): Json {
  const inspected = engineJson("GET", `/v4.0.0/libpod/containers/${encodeURIComponent(name)}/json`);
  inspected.HostConfig.Binds?.sort();
  // Passwd not shown (`podman kube play`) means true (libpod/container_internal_common.go, 4.3)
  inspected.Config.Passwd ??= true;
  return inspected;
}

/**
 * Podman runs a container's healthcheck from a systemd timer (`podman healthcheck run`); the
 * sandbox has no systemd, so the test is that timer, once a second.
 */
function healthTimer(name: string): ReturnType<typeof setInterval> {
  return setInterval(
    () =>
      Bun.spawn(["podman", "--url", sandbox().dockerHost, "healthcheck", "run", name], {
        stdout: "ignore",
        stderr: "ignore",
      }),
    1000,
  );
}

function entryIn(output: string, name: string): Json | undefined {
  return reportsIn(output)
    .at(-1)
    ?.containers.find((c: Json) => c.name === name);
}

/** Both inspects of the replacement against the old container's, with the Docker corpus's oracle. */
function expectSameExceptImage(
  old: { compat: Json; libpod: Json },
  fresh: { compat: Json; libpod: Json },
  images: { old: string; new: string },
): void {
  const oldImage = inspect(images.old);
  const newImage = inspect(images.new);
  const compat = disallowedDifferences({ old: old.compat, new: fresh.compat, oldImage, newImage });
  expect(compat).toEqual([]);
  // libpod shows the image id without "sha256:", and the image's name as ImageName (the same tag)
  const libpod = disallowedDifferences({
    old: old.libpod,
    new: fresh.libpod,
    oldImage,
    newImage,
    allowed: LIBPOD_ALLOWED,
  });
  expect(libpod).toEqual([]);
}

/**
 * A container whose v1 wrote its data on a volume (decorated with extended attributes); its v2,
 * pushed, migrates the data, then fails (Podman's import takes no HEALTHCHECK change).
 */
async function guardedApp(what: string) {
  const name = fx.name(what);
  const v1 = fx.image(what, { changes: [`CMD ${JSON.stringify(["/bin/sh", "-c", `${WRITE_V1}; exec sleep 3600`])}`] });
  fx.run(what, v1.ref, ["-v", `${fx.volume(what)}:/data`]);
  await waitForVersion(name, "v1");
  const before = decorate(name);
  fx.image(what, { changes: [`CMD ${JSON.stringify(["/bin/sh", "-c", `${MIGRATE_V2}; exit 3`])}`] });
  return { name, v1, before };
}

/** The update rolled back with the data guard: v1 runs on its own data again, byte for byte. */
function expectDataBack(run: Awaited<ReturnType<typeof runSvc>>, app: Awaited<ReturnType<typeof guardedApp>>) {
  const entry = entryIn(run.svc.output, app.name);
  expect(entry?.state, run.svc.describe()).toBe("rolled_back");
  expect(entry?.data_guard).toMatchObject({ restored: true });
  expect(inspect(app.name).Image).toBe(app.v1.id);
  expect(docker(["exec", app.name, "cat", "/data/version"]).stdout.trim()).toBe("v1");
  expect(manifestOf(app.name)).toEqual(app.before);
}

afterAll(async () => {
  await stopAll();
  if (!onPodman) return;
  for (const pod of [fx.name("pod")])
    Bun.spawnSync(["podman", "--url", sandbox().dockerHost, "pod", "rm", "-f", pod], {
      stdout: "ignore",
      stderr: "ignore",
    });
  fx.cleanup();
}, 120_000);

describe.skipIf(!onPodman)(`svc on Podman ${version}, ${how}`, () => {
  test("an anonymous volume, a named volume, an image VOLUME and a bind mount: updated, then rolled back, the data intact and `podman inspect` equal to the old but for the image", async () => {
    const name = fx.name("data");
    const changes = [QUICK_STOP_CMD, "VOLUME /data"];
    const v1 = fx.image("data", { changes });
    const named = fx.volume("named");
    const bind = fx.tempDir("bind");
    writeFileSync(join(bind, "f"), "bind\n");
    // readable by a rootless Podman's user, as a bind-mounted folder of a user's is
    chmodSync(bind, 0o755);
    chmodSync(join(bind, "f"), 0o644);
    // made through the compatible API, as docker and docker-compose make them on Podman
    fx.run("data", v1.ref, [
      "-v",
      `${named}:/named`,
      "-v",
      `${bind}:/bind`,
      "-v",
      "/anon",
      "--restart",
      "on-failure:3",
      "--health-cmd",
      "true",
      "--health-interval",
      "1s",
      "-e",
      "USER_SET=1",
      "--label",
      "app=demo",
      "--stop-timeout",
      "7",
    ]);
    docker(["exec", name, "sh", "-c", "echo named > /named/f; echo anon > /anon/f; echo image > /data/f"]);
    const before = { compat: inspect(name), libpod: libpodInspect(name) };
    const v2 = fx.image("data", { changes });

    const stateDir = fx.tempDir("state");
    const probes = healthTimer(name);
    const update = await runSvc([
      ...baseFlags(),
      "--run-once",
      "--cleanup",
      "--cleanup-delay",
      "1h",
      "--state-dir",
      stateDir,
      name,
    ]);
    expect(entryIn(update.svc.output, name)?.state, update.svc.describe()).toBe("updated");
    const updated = { compat: inspect(name), libpod: libpodInspect(name) };
    expect(updated.compat.Image).toBe(v2.id);
    expect(updated.compat.State.Running).toBe(true);
    expect(docker(["exec", name, "cat", "/named/f", "/anon/f", "/data/f", "/bind/f"]).stdout).toBe(
      "named\nanon\nimage\nbind",
    );
    // Podman's own environment entry follows the new host name (podman.ts: podmanCreateBody)
    expect(docker(["exec", name, "sh", "-c", "echo $HOSTNAME"]).stdout).toBe(updated.compat.Config.Hostname);
    expectSameExceptImage(before, updated, { old: v1.id, new: v2.id });

    const back = await runSvc(["rollback", name, ...baseFlags(), "--state-dir", stateDir]);
    expect(back.code, back.svc.describe()).toBe(0);
    const rolledBack = { compat: inspect(name), libpod: libpodInspect(name) };
    expect(rolledBack.compat.Image).toBe(v1.id);
    expect(docker(["exec", name, "cat", "/named/f", "/anon/f", "/data/f", "/bind/f"]).stdout).toBe(
      "named\nanon\nimage\nbind",
    );
    clearInterval(probes);
    expectSameExceptImage(before, rolledBack, { old: v1.id, new: v1.id });
    expect(readFileSync(join(bind, "f"), "utf8")).toBe("bind\n");
  }, 240_000);

  // Podman's archive endpoint does not answer as Docker's (docs/data-guard.md): the copy and the
  // restore go through the helper alone, whose image Podman files under localhost/
  test.skipIf(how === "rootless")(
    "the data guard: a volume copied by its helper with the update, put back byte for byte when the new version fails",
    async () => {
      const app = await guardedApp("guarded");
      const stateDir = fx.tempDir("guard-state");
      const run = await runSvc([
        ...baseFlags(),
        "--run-once",
        "--data-guard",
        "volumes",
        "--state-dir",
        stateDir,
        app.name,
      ]);
      expectDataBack(run, app);
      const copies = join(stateDir, "data-guard", app.name);
      const manifests = readdirSync(copies).map((id) =>
        JSON.parse(readFileSync(join(copies, id, "manifest.json"), "utf8")),
      );
      expect(manifests.map((m) => m.through)).toEqual(["helper"]);
    },
    240_000,
  );

  test("made with Podman's CLI (its umask), in a pod, with uid maps: replaced through Podman's own create, `podman inspect` equal to the old but for the image", async () => {
    const v1 = fx.image("own", { changes: [QUICK_STOP_CMD] });
    const pod = podman(["pod", "create", "--infra=false", "--name", fx.name("pod")]);
    const inPod = fx.name("in-pod");
    podman([
      "run",
      "-d",
      "--name",
      inPod,
      "--pod",
      fx.name("pod"),
      "--network",
      "none",
      "--label",
      "app=in-pod",
      v1.ref,
    ]);
    const mapped = fx.name("mapped");
    podman([
      "run",
      "-d",
      "--name",
      mapped,
      "--network",
      "none",
      "--uidmap",
      "0:1:1000",
      "--gidmap",
      "0:1:1000",
      "-e",
      "MAPPED=1",
      v1.ref,
    ]);
    // Podman's CLI sets a umask (containers.conf's, 0022) that its compatible create does not
    const cli = fx.name("cli");
    podman([
      "run",
      "-d",
      "--name",
      cli,
      "--network",
      "none",
      "--restart",
      "always",
      "--annotation",
      "team=blue",
      v1.ref,
    ]);
    const names = [inPod, mapped, cli];
    const before = Object.fromEntries(names.map((n) => [n, { compat: inspect(n), libpod: libpodInspect(n) }]));
    const v2 = fx.image("own", { changes: [QUICK_STOP_CMD] });

    const run = await runSvc([...baseFlags(), "--run-once", ...names]);
    for (const n of names) {
      expect(entryIn(run.svc.output, n)?.state, `${n}\n${run.svc.describe()}`).toBe("updated");
      const after = { compat: inspect(n), libpod: libpodInspect(n) };
      expect(after.compat.Image).toBe(v2.id);
      expect(after.compat.State.Running).toBe(true);
      expectSameExceptImage(before[n]!, after, { old: v1.id, new: v2.id });
    }
    expect(libpodInspect(inPod).Pod).toBe(pod);
    expect(libpodInspect(cli).Config.Umask).toBe(before[cli]!.libpod.Config.Umask);
    expect(libpodInspect(mapped).HostConfig.IDMappings).toEqual({ UidMap: ["0:1:1000"], GidMap: ["0:1:1000"] });
  }, 240_000);

  test("a container systemd runs (label PODMAN_SYSTEMD_UNIT) is left to systemd, reported with the command", async () => {
    const v1 = fx.image("unit", { changes: [QUICK_STOP_CMD] });
    // as `podman generate systemd` and quadlet label a container systemd runs
    const unit = fx.run("unit", v1.ref, ["--label", "PODMAN_SYSTEMD_UNIT=app.service"]);
    const before = inspect(unit).Id;
    fx.image("unit", { changes: [QUICK_STOP_CMD] });
    const run = await runSvc([...baseFlags(), "--run-once", unit]);
    const entry = entryIn(run.svc.output, unit);
    expect(entry?.state, run.svc.describe()).toBe("skipped");
    expect(entry?.reason).toContain("systemctl restart app.service");
    expect(inspect(unit).Id).toBe(before);
    expect(inspect(unit).State.Running).toBe(true);
  }, 120_000);
});

/**
 * podman-compose (Debian's 1.0.3) and `podman kube play` make their containers with Podman's CLI,
 * on a network of their own and (kube play) in a pod with an infra container: rootful only here,
 * where the sandbox has bridge networks (rootless they need slirp4netns's tun device).
 */
describe.skipIf(!onPodman)(`podman-compose and podman kube play, ${how}`, () => {
  /** podman-compose runs `podman`; this one talks to the sandbox's service */
  function podmanCompose(dir: string, args: string[]): void {
    const wrapper = join(dir, "podman-remote");
    writeFileSync(wrapper, `#!/bin/sh\nexec podman --url "${sandbox().dockerHost}" "$@"\n`);
    chmodSync(wrapper, 0o755);
    const proc = Bun.spawnSync(["podman-compose", "--podman-path", wrapper, ...args], {
      cwd: dir,
      stdout: "pipe",
      stderr: "pipe",
    });
    if (proc.exitCode !== 0) throw new Error(`podman-compose ${args.join(" ")} failed: ${proc.stderr.toString()}`);
  }

  test("a podman-compose service and a kube play pod's container are updated, keeping their labels, project, pod and volume", async () => {
    const v1 = fx.image("stack", { changes: [QUICK_STOP_CMD] });
    const dir = fx.tempDir("compose");
    const project = fx.name("proj");
    writeFileSync(
      join(dir, "compose.yaml"),
      `services:\n  web:\n    image: ${v1.ref}\n    volumes: [data:/data]\n    labels: [app=demo]\nvolumes:\n  data: {}\n`,
    );
    podmanCompose(dir, ["-p", project, "up", "-d"]);
    const web = `${project}_web_1`;
    docker(["exec", web, "sh", "-c", "echo kept > /data/f"]);
    const kube = join(dir, "kube.yaml");
    const podName = fx.name("kpod");
    writeFileSync(
      kube,
      `apiVersion: v1\nkind: Pod\nmetadata:\n  name: ${podName}\n  labels: {app: kube}\nspec:\n  containers:\n  - name: app\n    image: ${v1.ref}\n`,
    );
    podman(["kube", "play", kube]);
    const kubeApp = `${podName}-app`;
    const names = [web, kubeApp];
    const before = Object.fromEntries(names.map((n) => [n, { compat: inspect(n), libpod: libpodInspect(n) }]));
    const v2 = fx.image("stack", { changes: [QUICK_STOP_CMD] });
    try {
      const run = await runSvc([...baseFlags(), "--run-once", ...names]);
      for (const n of names) {
        expect(entryIn(run.svc.output, n)?.state, `${n}\n${run.svc.describe()}`).toBe("updated");
        const after = { compat: inspect(n), libpod: libpodInspect(n) };
        expect(after.compat.Image).toBe(v2.id);
        expectSameExceptImage(before[n]!, after, { old: v1.id, new: v2.id });
      }
      expect(inspect(web).Config.Labels).toMatchObject({
        "io.podman.compose.project": project,
        "com.docker.compose.project": project,
        "com.docker.compose.service": "web",
        app: "demo",
      });
      expect(docker(["exec", web, "cat", "/data/f"]).stdout).toBe("kept");
      expect(libpodInspect(kubeApp).Pod).toBe(before[kubeApp]!.libpod.Pod);
    } finally {
      Bun.spawnSync(["podman", "--url", sandbox().dockerHost, "kube", "down", kube], {
        stdout: "ignore",
        stderr: "ignore",
      });
      Bun.spawnSync(["podman-compose", "--podman-path", join(dir, "podman-remote"), "-p", project, "down", "-v"], {
        cwd: dir,
        stdout: "ignore",
        stderr: "ignore",
      });
    }
  }, 240_000);
});

/**
 * A container a real systemd runs: the sandbox's user manager (`systemd --user`, podman-rootless:
 * scripts/sandbox.sh), its unit made as Podman's docs say (`podman generate systemd --new`, the CLI
 * of the user, on the storage the socket serves). svc runs as that user, as a rootless user runs it.
 * The oracle is `podman auto-update`'s (docs/podman.md): the new image pulled, the unit restarted,
 * the unit's container on the new image; a restart onto an image that does not run puts the old
 * image back under the tag and restarts the unit again.
 */
const unitUser = process.env.SVC_TEST_USER_SYSTEMD ?? "";
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
      command: [...asUser(), "bun", MAIN],
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
    const app = await guardedApp("guarded-user");
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
    "a quadlet .container file: its Image= moved (1.0.0 -> 1.1.0), the unit quadlet makes of it runs 1.1.0; a 1.2.0 that does not start is rolled back, the file as it was",
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
      } finally {
        Bun.spawnSync([...asUser(), ...userEnv(), "systemctl", "--user", "stop", unit]);
      }
    },
    300_000,
  );
});

describe.skipIf(!onPodman)("svc's first words on Podman", () => {
  test("the first line about the engine names Podman, its version and the socket svc uses", async () => {
    const run = await runSvc([...baseFlags(), "--run-once", "--dry-run", fx.name("nothing-here")]);
    expect(run.svc.output).toContain(`using Podman ${version}`);
    expect(run.svc.output).toContain(` at ${sandbox().dockerHost}`);
  }, 60_000);
});
