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
    source: "docker/compose pkg/e2e/fixtures/logging-driver (logging with a driver)",
    service: "fluentbit",
    files: {
      "compose.yaml":
        "services:\n  fluentbit:\n    image: fluent/fluent-bit:3.1.7-debug\n    logging:\n      driver: json-file\n",
    },
  },
  {
    source: "compose-go loader/tests/logging_test.go (a driver and options; a number as an option)",
    service: "foo",
    files: {
      "compose.yaml":
        'services:\n  foo:\n    image: alpine\n    logging:\n      driver: syslog\n      options:\n        syslog-address: "tcp://192.168.0.42:123"\n        max-file: 3\n',
    },
  },
  {
    source: "compose-go loader/tests/logging_test.go (options without a driver)",
    service: "foo",
    files: {
      "compose.yaml": 'services:\n  foo:\n    image: alpine\n    logging:\n      options:\n        tag: "{{.Name}}"\n',
    },
  },
  {
    source: "compose-go loader/tests/secrets_test.go (short and long secrets, uid, gid, mode 0440)",
    service: "foo",
    files: {
      "compose.yaml":
        "services:\n  foo:\n    image: alpine\n    secrets:\n      - secret0\n      - source: secret1\n      - source: secret2\n        target: my_secret\n        uid: '103'\n        gid: '103'\n        mode: 0440\nsecrets:\n  secret0:\n    file: ./secret_data\n  secret1:\n    file: ./secret_data\n  secret2:\n    external: true\n",
    },
  },
  {
    source: 'compose-go loader/tests/secrets_test.go (mode as 0o440 and as "0440")',
    service: "foo",
    files: {
      "compose.yaml":
        'services:\n  foo:\n    image: alpine\n    secrets:\n      - source: a\n        target: a.cert\n        mode: 0o440\n      - source: b\n        target: b.cert\n        mode: "0440"\nsecrets:\n  a:\n    file: ./a\n  b:\n    file: ./b\n',
    },
  },
  {
    source: "compose-go loader/tests/configs_test.go (short and long configs)",
    service: "foo",
    files: {
      "compose.yaml":
        "services:\n  foo:\n    image: alpine\n    configs:\n      - config1\n      - source: config2\n        target: /my_config\n        uid: '103'\n        gid: '103'\n        mode: 0440\nconfigs:\n  config1:\n    file: ./config_data\n  config2:\n    external: true\n",
    },
  },
  {
    source:
      "docker/compose pkg/e2e/fixtures/volume-test (nginx2: a config, a secret, read-only and anonymous volumes; image in place of build)",
    service: "nginx2",
    files: {
      "compose.yaml":
        "services:\n  nginx2:\n    image: nginx\n    volumes:\n      - staticVol:/usr/share/nginx/html:ro\n      - /usr/src/app/node_modules\n      - otherVol:/usr/share/nginx/test\n    ports:\n      - 80\n    configs:\n      - myconfig\n    secrets:\n      - mysecret\n\nvolumes:\n  staticVol:\n  otherVol:\n    name: myVolume\n\nconfigs:\n  myconfig:\n    file: ./static/index.html\n\nsecrets:\n  mysecret:\n    file: ./static/index.html\n",
    },
  },
  {
    source:
      "compose-go loader/tests/volume_bind_test.go (long binds: propagation, selinux, bind: {}; a long volume with nocopy)",
    service: "foo",
    files: {
      "compose.yaml":
        "services:\n  foo:\n    image: alpine\n    volumes:\n      - type: bind\n        source: /host\n        target: /container\n        bind:\n          propagation: rslave\n      - type: bind\n        source: /host2\n        target: /container2\n        bind:\n          selinux: z\n      - type: bind\n        source: ./rel\n        target: /c3/\n        bind: {}\n      - type: bind\n        source: /host4\n        target: /c4\n        read_only: true\n      - type: volume\n        source: mydata\n        target: /data\n        volume:\n          nocopy: true\nvolumes:\n  mydata:\n",
    },
  },
  {
    source:
      "compose-go loader/loader_test.go TestLoadTmpfsVolume, TestLoadVolumeSubpath (tmpfs sizes and mode, a subpath, a long anonymous volume)",
    service: "tmpfs",
    files: {
      "compose.yaml":
        "services:\n  tmpfs:\n    image: nginx:latest\n    volumes:\n    - type: tmpfs\n      target: /app\n      tmpfs:\n        size: 1kb\n    - type: tmpfs\n      target: /app2\n      tmpfs:\n        size: 1024\n        mode: 01777\n    - type: volume\n      source: asdf\n      target: /sub\n      volume:\n        subpath: etc/settings\n    - type: volume\n      target: /anon\nvolumes:\n  asdf:\n",
    },
  },
  {
    source: "compose-go format/volume.go ParseVolume (short options: z, rshared, nocopy, rw)",
    service: "foo",
    files: {
      "compose.yaml":
        "services:\n  foo:\n    image: alpine\n    volumes:\n      - ./a:/a:z\n      - /b:/b:ro,rshared\n      - data:/c:nocopy\n      - data:/d:rw\nvolumes:\n  data:\n",
    },
  },
  {
    source: "compose-go loader/loader_test.go TestLoadExpandedPortFormat (port ranges, udp, long ports)",
    service: "web",
    files: {
      "compose.yaml":
        'services:\n  web:\n    image: busybox\n    ports:\n      - "80-82:8080-8082"\n      - "90-92:8090-8092/udp"\n      - "85:8500"\n      - 8600\n      - protocol: udp\n        target: 53\n        published: 10053\n      - mode: host\n        target: 22\n        published: 10022\n',
    },
  },
  {
    source:
      "go-connections nat.ParsePortSpecs through compose-go ParsePortConfig (an unpublished range, ports sorted as text, a host range on one port, a host address)",
    service: "web",
    files: {
      "compose.yaml":
        'services:\n  web:\n    image: busybox\n    ports:\n      - "8-10:8-10"\n      - "7000-7002"\n      - "127.0.0.1:9000-9001:9000-9001/udp"\n      - "6000-6001:6000"\n      - target: 90\n        published: 9090-9091\n',
    },
  },
  {
    source:
      "compose-go loader/testdata/include/compose.yaml (a service from an included file; image in place of build)",
    service: "included",
    files: {
      "compose.yaml": "include:\n  - path: included.yaml\n",
      "included.yaml": "services:\n  included:\n    image: app:1\n    volumes:\n      - ./:/mnt\n",
    },
  },
  {
    source:
      "compose-go loader/include.go ApplyInclude (a subfolder: its .env, its folder for relative binds; the including .env wins)",
    service: "db",
    files: {
      "compose.yaml": "include:\n  - db/compose.yaml\nservices:\n  web:\n    image: web:1\n",
      ".env": "SHARED=from-top\n",
      "db/compose.yaml":
        'services:\n  db:\n    image: postgres:${PG_TAG}\n    environment:\n      SHARED: ${SHARED}\n      OWN: ${OWN}\n    volumes: ["./data:/var/lib/postgresql/data"]\n',
      "db/.env": "PG_TAG=16.4\nSHARED=from-db\nOWN=db\n",
    },
  },
  {
    source: "compose-go loader/include.go ApplyInclude (project_directory, env_file, an override among the paths)",
    service: "db",
    files: {
      "compose.yaml":
        "include:\n  - path: [stacks/db.yaml, stacks/db.override.yaml]\n    project_directory: stacks\n    env_file: stacks/db.env\n",
      "stacks/db.yaml": 'services:\n  db:\n    image: postgres:1\n    volumes: ["./x:/x"]\n',
      "stacks/db.override.yaml": "services:\n  db:\n    image: postgres:${PG_TAG:-16.3}\n",
      "stacks/db.env": "PG_TAG=16.4\n",
    },
  },
  {
    source: "compose-go loader/tests/deploy_test.go (deploy: not modelled)",
    service: "foo",
    unknown: "svc does not compute compose's hash of a service with deploy",
    files: {
      "compose.yaml":
        "services:\n  foo:\n    image: alpine\n    deploy:\n      resources:\n        limits:\n          memory: 50M\n",
    },
  },
  {
    source: "compose-go loader/tests/env_file_test.go (env_file: not modelled)",
    service: "foo",
    unknown: "svc does not compute compose's hash of a service with env_file",
    files: { "compose.yaml": "services:\n  foo:\n    image: alpine\n    env_file: app.env\n", "app.env": "A=1\n" },
  },
  {
    source: "compose-go loader/tests/volumes_test.go (a volume of type image: not modelled)",
    service: "foo",
    unknown: "a volume setting svc does not model (image)",
    files: {
      "compose.yaml":
        "services:\n  foo:\n    image: alpine\n    volumes:\n      - type: image\n        source: app/image\n        target: /mnt/image\n        image:\n          subpath: /foo\n",
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
