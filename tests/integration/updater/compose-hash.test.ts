/**
 * Compose's config hash computed by svc itself (src/compose/servicehash.ts, for its scratch image
 * where no compose CLI exists), against compose's own answer, `docker compose config --hash`, over
 * the shapes users write. Each row names the compose fixture or behaviour it follows
 * (docker/compose v2.40.3 pkg/e2e/fixtures, compose-spec/compose-go v2.9.1 testdata). A row svc
 * does not model must say so (a hash svc is not sure of is never used: ComposeFiles checks it
 * against the running container's label first).
 */
import { describe, expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { computeServiceHash } from "../../../src/compose/index.ts";
import { docker, sandbox } from "../../harness.ts";
import { tempDir } from "../../temp.ts";

const composeWorks = docker(["compose", "version"], { allowFailure: true }).code === 0;

interface Row {
  source: string;
  files: Record<string, string>;
  service: string;
  configFiles?: string[];
  /** svc does not model it: the reason starts so */
  unknown?: string;
}

const ROWS: Row[] = [
  {
    source: "docker/compose pkg/e2e/fixtures/simple-composefile (image only)",
    service: "simple",
    files: { "compose.yaml": "services:\n  simple:\n    image: busybox:1.36\n" },
  },
  {
    source: "docker/compose pkg/e2e/fixtures/environment/env-interpolation (environment from .env, a command string)",
    service: "env-interpolation",
    files: {
      "compose.yaml":
        'services:\n  env-interpolation:\n    image: bash\n    environment:\n      IMAGE: ${IMAGE}\n    command: echo "$$IMAGE"\n',
      ".env": "IMAGE=default_env:EnvFile\n",
    },
  },
  {
    source: "docker/compose pkg/e2e/fixtures/restart-test (init, a quoted command)",
    service: "restart",
    files: {
      "compose.yaml":
        'services:\n  restart:\n    image: alpine\n    init: true\n    command: ash -c "if [[ -f /tmp/restart.lock ]] ; then sleep infinity; else touch /tmp/restart.lock; fi"\n',
    },
  },
  {
    source: "docker/compose pkg/e2e/fixtures/network-alias (a network with aliases, links)",
    service: "container2",
    files: {
      "compose.yaml":
        "services:\n  container1:\n    image: nginx\n    links:\n      - container2:container\n  container2:\n    image: nginx\n    networks:\n      default:\n        aliases:\n          - alias-of-container2\n",
    },
  },
  {
    source: "docker/compose pkg/e2e/fixtures/network-alias (links)",
    service: "container1",
    files: {
      "compose.yaml":
        "services:\n  container1:\n    image: nginx\n    links:\n      - container2:container\n  container2:\n    image: nginx\n",
    },
  },
  {
    source: "compose-go cli/testdata/simple/compose-with-variables.yaml (a port from .env)",
    service: "simple",
    files: {
      "compose.yaml": "services:\n  simple:\n    image: nginx\n    ports:\n    - ${PUBLIC_PORT}:80\n",
      ".env": "PUBLIC_PORT=8000\n",
    },
  },
  {
    source: "compose-go loader/testdata/extends/interpolated.yaml (a bind mount with a default, read-only)",
    service: "foo",
    files: {
      "compose.yaml": "services:\n  foo:\n    image: bash\n    volumes:\n      - ${SOURCE:-/dev/null}:/tmp/foo:ro\n",
    },
  },
  {
    source: "compose-go loader/testdata/extends/base.yaml (extends in the same file)",
    service: "another",
    files: { "compose.yaml": "services:\n  base:\n    image: base\n\n  another:\n    extends: base\n" },
  },
  {
    source: "compose-go cli/testdata/simple/compose-with-overrides.yaml (an override file)",
    service: "simple",
    configFiles: ["compose.yaml", "compose-with-overrides.yaml"],
    files: {
      "compose.yaml": "services:\n  simple:\n    image: nginx\n    environment: [A=1]\n",
      "compose-with-overrides.yaml": "services:\n  simple:\n    image: haproxy\n    environment: [B=2]\n",
    },
  },
  {
    source:
      "tests/integration/updater/compose.test.ts (healthcheck, named and bind volumes, networks, restart, stop_grace_period)",
    service: "db",
    files: {
      "compose.yaml":
        'services:\n  db:\n    image: db:1\n    command: ["/bin/sh", "-c", "sleep 1"]\n    labels: {svc.scope: x, a.b: "<&>"}\n    restart: unless-stopped\n    stop_grace_period: 90s\n    healthcheck:\n      test: ["CMD", "test", "-f", "/tmp/ready"]\n      interval: 1m30s\n      timeout: 500ms\n      retries: 5\n      start_period: 1s\n    volumes: ["data:/data", "./bind:/bind", "/anon"]\n    networks: [front, back]\n    ports: ["127.0.0.1:8080:80/udp", "9000"]\nnetworks: {front: {}, back: {}}\nvolumes: {data: {}}\n',
    },
  },
  {
    source: "compose spec: a user, container_name, tty, an entrypoint string, environment as a list with a bare name",
    service: "app",
    files: {
      "compose.yaml":
        "services:\n  app:\n    image: app\n    user: \"1000:1000\"\n    container_name: my-app\n    tty: true\n    entrypoint: /docker-entrypoint.sh --flag 'two words'\n    environment:\n      - TZ=Europe/Paris\n      - EMPTY=\n    cap_add: [NET_ADMIN]\n",
    },
  },
  {
    source: "docker/compose pkg/e2e/fixtures/logging-driver (logging: not modelled)",
    service: "fluentbit",
    unknown: "svc does not compute compose's hash of a service with logging",
    files: {
      "compose.yaml":
        "services:\n  fluentbit:\n    image: fluent/fluent-bit:3.1.7-debug\n    logging:\n      driver: json-file\n",
    },
  },
];

/** The compose CLI with an environment of its own, as svc runs it: nothing of the test's variables. */
function composeCli(args: string[]): string {
  const run = Bun.spawnSync(["docker", ...args], {
    env: { PATH: process.env.PATH!, DOCKER_CONFIG: sandbox().dockerConfig },
  });
  if (run.exitCode !== 0) throw new Error(run.stderr.toString());
  return run.stdout.toString();
}

function write(files: Record<string, string>): string {
  const dir = tempDir("svc-compose-hash-");
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    writeFileSync(join(dir, file), text);
  }
  return dir;
}

describe.skipIf(!composeWorks)("compose's config hash computed by svc, against `docker compose config --hash`", () => {
  for (const row of ROWS) {
    test(row.source, async () => {
      const dir = write(row.files);
      const configFiles = (row.configFiles ?? ["compose.yaml"]).map((f) => join(dir, f));
      const ours = await computeServiceHash({
        name: "hashproj",
        service: row.service,
        workingDir: dir,
        configFiles,
        envFiles: [],
      });
      if (row.unknown) {
        expect("unknown" in ours && ours.unknown).toStartWith(row.unknown);
        return;
      }
      const args = [
        "compose",
        "--project-name",
        "hashproj",
        "--project-directory",
        dir,
        ...configFiles.flatMap((f) => ["--file", f]),
        "config",
        "--hash",
        row.service,
      ];
      const theirs = composeCli(args).trim().split(" ")[1];
      if ("unknown" in ours) throw new Error(ours.unknown);
      if (ours.hash !== theirs) {
        const json = JSON.parse(
          composeCli([
            "compose",
            "--project-name",
            "hashproj",
            "--project-directory",
            dir,
            ...configFiles.flatMap((f) => ["--file", f]),
            "config",
            "--format",
            "json",
          ]),
        ).services[row.service];
        for (const key of ["build", "pull_policy", "scale", "depends_on", "profiles"]) delete json[key];
        expect(ours.json).toBe(JSON.stringify(json));
      }
      expect(ours.hash).toBe(theirs!);
    });
  }
});
