/**
 * svc's own compose config hash (src/compose/servicehash.ts), for when no compose CLI is at hand
 * (svc's scratch image): a project moved by svc without a CLI is kept by `docker compose up -d`,
 * for each service key svc models, each row naming the compose-go source it follows.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { ComposeFiles } from "../../../src/compose/index.ts";
import type { ComposeChange as GitChange, GitStep } from "../../../src/git/index.ts";
import { sandbox } from "../../harness.ts";
import { removeComposeProject } from "../../support/fixture.ts";
import { CMD, composeBench, composeWorks, IMAGE_MOUNT_SOURCE, LABELS, type Project } from "./compose-support.ts";
import { expectState, inspect, makeUpdater } from "./support.ts";

const { fx, imageMountsWork, project, compose, ids, names, configImages, repository } = composeBench();

afterAll(() => fx.cleanup(), 120_000);

describe.skipIf(!composeWorks)("svc's own compose hash: compose up -d keeps the container", () => {
  const downs: Project[] = [];
  afterAll(() => {
    for (const p of downs) removeComposeProject(p.name);
  }, 120_000);
  const track = (p: Project) => (downs.push(p), p);

  test("without a compose CLI (svc's scratch image) svc computes compose's hash itself: compose up -d keeps the container", async () => {
    const r = repository();
    const before = `services:\n  web:\n    image: ${r.v1.ref}\n    command: ${CMD}\n    labels: ${LABELS}\n    environment: [MODE=prod]\n    volumes: ["./data:/data:ro", {type: tmpfs, target: /cache, tmpfs: {size: 1m}}]\n    logging: {driver: json-file, options: {max-size: 1m, max-file: 2}}\n    restart: unless-stopped\n`;
    const p = track(project("nocli", { "compose.yaml": before }));
    compose(p, "up", "-d");
    const containers = names(p);
    // the git room's seam (its own tests drive a real repository): asked before the write, told once the change stands
    const checked: GitChange[] = [];
    const recorded: GitChange[] = [];
    const git: GitStep = {
      check: async (change) => (checked.push(change), null),
      record: async (change) => (
        recorded.push(change),
        { mode: "commit", done: "committed", commit: "c0ffee", branch: "main", pull_request: null, problem: null }
      ),
    };
    const files = new ComposeFiles({ write: true, stateDir: null, cli: null });
    const h = await makeUpdater({ containers, compose: { git: "commit" } }, { compose: files, git });
    const entry = expectState(await h.updater.run("api"), containers[0]!, "updated");
    expect(entry.compose).toEqual({
      changes: ["compose.yaml line 3: 1.0.0 -> 1.1.0"],
      written: true,
      recreates: null,
      git: { done: "committed", commit: "c0ffee", pull_request: null, problem: null },
    });
    const change = {
      project: p.dir,
      moves: [{ service: "web", from: r.v1.ref, to: r.v2.ref, notes: null }],
      files: [{ path: join(p.dir, "compose.yaml"), before, after: before.replace("1.0.0", "1.1.0") }],
    };
    expect(checked).toEqual([change]);
    expect(recorded).toEqual([change]);
    const afterSvc = ids(p);
    compose(p, "up", "-d");
    expect(ids(p)).toEqual(afterSvc);
    expect(configImages(p)).toEqual({ web: r.v2.ref });
  }, 120_000);

  test("without a compose CLI, a service svc does not model is written all the same, and its row says compose recreates it", async () => {
    const r = repository();
    const before = `services:\n  web:\n    image: ${r.v1.ref}\n    command: ${CMD}\n    labels: ${LABELS}\n    dns: [127.0.0.1]\n`;
    const p = track(project("nocliunknown", { "compose.yaml": before }));
    compose(p, "up", "-d");
    const containers = names(p);
    const h = await makeUpdater(
      { containers },
      { compose: new ComposeFiles({ write: true, stateDir: null, cli: null }) },
    );
    const entry = expectState(await h.updater.run("api"), containers[0]!, "updated");
    expect(entry.compose?.recreates).toBe(
      "compose's hash of web is unknown (no compose CLI here, and svc does not compute compose's hash of a service with dns): compose recreates it once at its next up",
    );
    const afterSvc = ids(p);
    compose(p, "up", "-d");
    expect(ids(p).web).not.toBe(afterSvc.web);
    expect(inspect(ids(p).web!).Image).toBe(r.v2.id);
  }, 120_000);

  /**
   * Keys svc's own hash follows (src/compose/servicehash.ts): each project moved by svc without a
   * compose CLI (its scratch image), then the user's `up -d` keeps the container, whose label is
   * compose's own hash of the new files (`config --hash`; for env_file the label `up` gave it,
   * since `config --hash` keeps env_file where `up` resolves it). Each row names its source.
   */
  const KEY_ROWS: {
    key: string;
    source: string;
    yaml: string;
    files?: Record<string, string>;
    cli?: boolean;
    engine?: () => boolean;
  }[] = [
    {
      key: "deploy",
      source: "compose-go types/types.go DeployConfig; docker/compose hash.go ServiceHash (replicas dropped)",
      yaml: "    deploy: {replicas: 1, labels: [tier=web], resources: {limits: {memory: 64M}, reservations: {memory: 8M}}, restart_policy: {condition: on-failure, max_attempts: 3, delay: 1s}, update_config: {parallelism: 0}}\n",
    },
    {
      key: "env_file",
      source: "compose-go types/project.go WithServicesEnvironmentResolved (docker/compose compose.go WithServices)",
      yaml: "    env_file: [app.env, {path: local.env, required: false}]\n    environment: {OWN: mine}\n",
      files: { ".env": "SITE=lan\n", "app.env": "MODE=prod\nURL=http://$SITE/x\nOWN=file\n" },
    },
    {
      key: "env_file, with a compose CLI (whose `config --hash` keeps env_file: svc's own hash is asked next)",
      source:
        "docker/compose cmd/compose/config.go runHash (WithoutEnvironmentResolution) against compose.go WithServices",
      yaml: "    env_file: app.env\n",
      files: { "app.env": "MODE=prod\n" },
      cli: true,
    },
    {
      key: "devices",
      source: "compose-go transform/device.go transformDeviceMapping (permissions rwm by default)",
      yaml: "    devices: [/dev/null:/dev/svc-null, {source: /dev/zero, target: /dev/svc-zero, permissions: r}]\n",
    },
    {
      key: "ulimits",
      source: "compose-go types/types.go UlimitsConfig MarshalJSON",
      yaml: "    ulimits: {nofile: {soft: 1024, hard: 2048}, nproc: 512}\n",
    },
    {
      key: "extra_hosts",
      source: "compose-go types/hostList.go HostsList MarshalJSON",
      yaml: '    extra_hosts: ["svc.test:127.0.0.1", "svc.other=127.0.0.2,127.0.0.3"]\n',
    },
    {
      key: "sysctls",
      source: "compose-go loader/loader_test.go TestLoadSysctls (types.Mapping)",
      yaml: "    sysctls: [net.core.somaxconn=1024]\n",
    },
    {
      key: "tmpfs",
      source: "compose-go types/types.go ServiceConfig.Tmpfs (types.StringList)",
      yaml: "    tmpfs: /run/svc\n",
    },
    {
      key: "volume labels",
      source: "compose-go types/types.go ServiceVolumeVolume.Labels",
      yaml: "    volumes: [{type: volume, source: data, target: /data, volume: {labels: {backup: daily}}}]\n",
    },
    {
      key: "a volume of type image",
      source: "compose-go loader/loader_test.go TestImageVolume (ServiceVolumeConfig.Image)",
      yaml: `    volumes: [{type: image, source: "${IMAGE_MOUNT_SOURCE}", target: /mnt/image, image: {subpath: bin}}]\n`,
      engine: imageMountsWork,
    },
  ];
  for (const [i, row] of KEY_ROWS.entries()) {
    test.skipIf(row.engine !== undefined && !row.engine())(
      `${row.key}: svc's hash is compose's, and compose up -d keeps the container (${row.source})`,
      async () => {
        const r = repository();
        const before = `services:\n  web:\n    image: ${r.v1.ref}\n    command: ${CMD}\n    labels: ${LABELS}\n${row.yaml}${row.key === "volume labels" ? "volumes: {data: {}}\n" : ""}`;
        const p = track(project(`key${i}`, { ...row.files, "compose.yaml": before }));
        compose(p, "up", "-d");
        const containers = names(p);
        const files = row.cli
          ? new ComposeFiles({ write: true, stateDir: null, dockerConfig: sandbox().dockerConfig })
          : new ComposeFiles({ write: true, stateDir: null, cli: null });
        expect(await files.cli()).toEqual(row.cli ? expect.anything() : null);
        const h = await makeUpdater({ containers }, { compose: files });
        const entry = expectState(await h.updater.run("api"), containers[0]!, "updated");
        expect(entry.compose).toMatchObject({ written: true, recreates: null });
        const afterSvc = ids(p);
        compose(p, "up", "-d");
        expect(ids(p)).toEqual(afterSvc);
        const label = inspect(afterSvc.web!).Config.Labels["com.docker.compose.config-hash"];
        if (!row.key.startsWith("env_file")) expect(compose(p, "config", "--hash", "web").trim()).toBe(`web ${label}`);
        expect(inspect(afterSvc.web!).Image).toBe(r.v2.id);
        expect(configImages(p)).toEqual({ web: r.v2.ref });
      },
      120_000,
    );
  }
});
