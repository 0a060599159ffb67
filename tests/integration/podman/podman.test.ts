/**
 * svc on Podman (the sandbox's `podman` and `podman-rootless` engines: Debian 12's Podman 4.3.1,
 * rootful, and as a user of the sandbox's own on its $XDG_RUNTIME_DIR/podman/podman.sock; `podman5`:
 * sid's Podman 5.8 in a root of its own; README, "Engines"; docs/podman.md). Run with
 * SVC_SANDBOX_ENGINE=podman, podman-rootless or podman5; skipped on every other engine. The units a
 * real systemd runs for the rootless user: units.test.ts, beside this file in that leg.
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
import { baseFlags, Fixture, QUICK_STOP_CMD, runSvc, stopAll, userEnv } from "../e2e/support.ts";
import { disallowedDifferences } from "../engine/inspect-diff.ts";
import { entryIn, expectDataBack, guardedApp, how, type Json, onPodman, podman, version } from "./support.ts";

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
    fx.run("data", v1.ref, {
      restart: "on-failure:3",
      stopTimeout: 7,
      labels: { app: "demo" },
      env: { USER_SET: "1" },
      binds: [`${named}:/named`, `${bind}:/bind`],
      volumes: ["/anon"],
      healthcheck: { cmd: "true", intervalMs: 1000 },
    });
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
    // one rule with Docker (engine/fidelity.test.ts, image-defaults): a generated host name is the
    // new container's own short id, never the old one's; Podman's environment entry follows it
    expect(updated.compat.Config.Hostname).toBe(updated.compat.Id.slice(0, 12));
    expect(updated.compat.Config.Hostname).not.toBe(before.compat.Config.Hostname);
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

  // the helper's image Podman files under localhost/ (docs/data-guard.md, "On Podman")
  test.skipIf(how === "rootless")(
    "the data guard: a volume copied by its helper with the update, put back byte for byte when the new version fails",
    async () => {
      const app = await guardedApp(fx, "guarded");
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
    const unit = fx.run("unit", v1.ref, { labels: { PODMAN_SYSTEMD_UNIT: "app.service" } });
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

/** podman-compose runs `podman`; this one talks to the sandbox's service */
/** `podman-compose down` of a project `podmanCompose` started, and its network (a cleanup's: nothing checked). */
function podmanComposeDown(dir: string, project: string, args: string[] = []): void {
  Bun.spawnSync(["podman-compose", "--podman-path", join(dir, "podman-remote"), "-p", project, "down", ...args], {
    cwd: dir,
    stdout: "ignore",
    stderr: "ignore",
  });
  // podman-compose 1.0.3's down leaves the project's network
  Bun.spawnSync(["podman", "--url", sandbox().dockerHost, "network", "rm", `${project}_default`], {
    stdout: "ignore",
    stderr: "ignore",
  });
}

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

/**
 * podman-compose (Debian's 1.0.3) and `podman kube play` make their containers with Podman's CLI,
 * on a network of their own and (kube play) in a pod with an infra container: rootful only here,
 * where the sandbox has bridge networks (rootless they need slirp4netns's tun device).
 */
describe.skipIf(!onPodman)(`podman-compose and podman kube play, ${how}`, () => {
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
      podmanComposeDown(dir, project, ["-v"]);
    }
  }, 240_000);
});

/**
 * An image built here by buildah (`podman build`, podman-compose) carries the annotation
 * org.opencontainers.image.base.name: the image its last stage is FROM. svc follows that base
 * as it follows a Dockerfile's, where it cannot read the build itself (podman-compose names its
 * files by relative paths; `podman build` by hand has no compose file at all): recorded at first
 * sight, then a new digest pushed for it makes the container stale, and nothing is rebuilt.
 */
describe.skipIf(!onPodman)(`images buildah built here, ${how}`, () => {
  test("the base the image's annotation names is followed: a new digest makes the containers stale, nothing is rebuilt", async () => {
    const base = fx.image("abase", { changes: [QUICK_STOP_CMD] });
    const dir = fx.tempDir("built");
    writeFileSync(join(dir, "Dockerfile"), `FROM ${base.ref}\nRUN echo built > /built\n`);
    // by hand, and as podman-compose builds a service (whose files it labels by relative paths)
    const image = `localhost/${fx.name("built")}:1`;
    podman(["build", "--network", "none", "-t", image, dir]);
    const byHand = fx.run("built", image);
    writeFileSync(join(dir, "compose.yaml"), "services:\n  web:\n    build: .\n");
    const project = fx.name("bproj");
    podmanCompose(dir, ["-p", project, "up", "-d"]);
    const composed = `${project}_web_1`;
    const names = [byHand, composed];
    const ran = Object.fromEntries(names.map((n) => [n, inspect(n).Image]));
    try {
      // one svc, as one process's state: what it records of the base at first sight lives on
      const env = userEnv();
      const first = await runSvc([...baseFlags(), "--run-once", ...names], { env });
      for (const n of names) {
        const seen = entryIn(first.svc.output, n);
        expect(seen?.state, first.svc.describe()).toBe("fresh");
        expect(seen?.built?.bases.map((b: Json) => b.reference)).toEqual([base.ref]);
      }

      fx.image("abase", { changes: [QUICK_STOP_CMD] });
      const second = await runSvc([...baseFlags(), "--run-once", ...names], { env });
      for (const n of names) {
        const stale = entryIn(second.svc.output, n);
        expect(stale?.state, second.svc.describe()).toBe("stale");
        expect(stale?.reason).toStartWith(`base ${base.ref} moved`);
        expect(stale?.reason).toContain(
          "not rebuilt: svc reads no compose build of it (its bases are named by its image's annotations)",
        );
        // the registry's digests (the fixture's push writes the manifest anew on Podman)
        const [was] = stale?.built?.bases ?? [];
        expect(was?.built_digest).toBe(entryIn(first.svc.output, n)?.built?.bases[0]?.digest);
        expect(was?.digest).not.toBe(was?.built_digest);
        expect(inspect(n).Image).toBe(ran[n]);
      }
    } finally {
      podmanComposeDown(dir, project);
    }
  }, 240_000);
});

describe.skipIf(!onPodman)("svc's first words on Podman", () => {
  test("the first line about the engine names Podman, its version and the socket svc uses", async () => {
    const run = await runSvc([...baseFlags(), "--run-once", "--dry-run", fx.name("nothing-here")]);
    expect(run.svc.output).toContain(`using Podman ${version}`);
    expect(run.svc.output).toContain(` at ${sandbox().dockerHost}`);
  }, 60_000);
});
