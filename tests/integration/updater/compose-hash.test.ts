/**
 * Compose's config hash computed by svc itself (src/compose/servicehash.ts, for its scratch image
 * where no compose CLI exists), against compose's own answer, `docker compose config --hash`, over
 * the shapes users write. Each row names the compose fixture or behaviour it follows
 * (docker/compose v2.40.3 pkg/e2e/fixtures, compose-spec/compose-go v2.9.1 testdata). A row svc
 * does not model must say so (a hash svc is not sure of is never used: ComposeFiles checks it
 * against the running container's label first).
 */
import { beforeAll, describe, expect, test } from "bun:test";
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
  /**
   * The oracle: `config --hash` (default), or the label of the container `docker compose create`
   * makes (`up`'s own hash: for env_file, which `config --hash` keeps where `up` resolves it; the
   * row's image is then ORACLE_IMAGE, built here)
   */
  oracle?: "create";
}

const ORACLE_IMAGE = "svc-compose-hash-oracle:1";

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
    source: "compose-go loader/loader_test.go TestImageVolume (a volume of type image; ServiceVolumeConfig.Image)",
    service: "test",
    files: {
      "compose.yaml":
        "services:\n  test:\n    image: alpine\n    volumes:\n      - type: image\n        source: app/image\n        target: /mnt/image\n        image:\n          subpath: /foo\n",
    },
  },
  {
    source:
      "compose-go loader/full-example.yml deploy (types.DeployConfig: replicas dropped by docker/compose hash.go ServiceHash, cpus as float32, memory as UnitBytes, durations)",
    service: "foo",
    files: {
      "compose.yaml":
        "services:\n  foo:\n    image: busybox\n    deploy:\n      mode: replicated\n      replicas: 6\n      labels: [FOO=BAR]\n      rollback_config:\n        parallelism: 3\n        delay: 10s\n        failure_action: continue\n        monitor: 60s\n        max_failure_ratio: 0.3\n        order: start-first\n      update_config:\n        parallelism: 3\n        delay: 10s\n        failure_action: continue\n        monitor: 60s\n        max_failure_ratio: 0.3\n        order: start-first\n      resources:\n        limits:\n          cpus: '0.001'\n          memory: 50M\n        reservations:\n          cpus: '0.0001'\n          memory: 20M\n          generic_resources:\n            - discrete_resource_spec:\n                kind: 'gpu'\n                value: 2\n            - discrete_resource_spec:\n                kind: 'ssd'\n                value: 1\n      restart_policy:\n        condition: on-failure\n        delay: 5s\n        max_attempts: 3\n        window: 120s\n      placement:\n        constraints: [node=foo]\n        max_replicas_per_node: 5\n        preferences:\n          - spread: node.labels.az\n      endpoint_mode: dnsrr\n",
    },
  },
  {
    source:
      "compose-go types/types.go DeployConfig (resources and placement are structs: printed empty; a parallelism of 0 is a pointer, printed; cpus 1.5 and 0.1 as float32)",
    service: "foo",
    files: {
      "compose.yaml":
        "services:\n  foo:\n    image: busybox\n    deploy:\n      replicas: 2\n  bar:\n    image: busybox\n    deploy:\n      update_config: {parallelism: 0, delay: 0s}\n      resources: {limits: {cpus: 1.5, pids: 10}, reservations: {cpus: '0.1', memory: 1k}}\n      restart_policy: {delay: 0s, max_attempts: 0}\n",
    },
  },
  {
    source: "compose-go types/types.go DeployConfig (bar: the struct fields, zeros, float32)",
    service: "bar",
    files: {
      "compose.yaml":
        "services:\n  bar:\n    image: busybox\n    deploy:\n      update_config: {parallelism: 0, delay: 0s}\n      resources: {limits: {cpus: 1.5, pids: 10}, reservations: {cpus: '0.1', memory: 1k}}\n      restart_policy: {delay: 0s, max_attempts: 0}\n",
    },
  },
  {
    source:
      "compose-go loader/loader_test.go TestLoadDeviceReservation, TestServiceDeviceRequestWithoutCountAndDeviceIdsType (transform/devices.go deviceRequestDefaults: count all is -1)",
    service: "test",
    files: {
      "compose.yaml":
        "services:\n  test:\n    image: busybox\n    deploy:\n      resources:\n        reservations:\n          devices:\n            - driver: richard_feynman\n              capabilities: [\"quantic\"]\n              count: all\n              options:\n                q_bits: 42\n            - driver: nvidia\n              capabilities: [gpu]\n            - capabilities: [gpu]\n              device_ids: ['0', '3']\n            - capabilities: [gpu]\n              count: 2\n",
    },
  },
  {
    source:
      "compose-go loader/loader_test.go TestLoadDeviceMapping, TestLoadDeviceMappingLongSyntax (transform/device.go transformDeviceMapping: permissions rwm by default)",
    service: "test",
    files: {
      "compose.yaml":
        "services:\n  test:\n    image: busybox\n    devices:\n      - /dev/source:/dev/target:permissions\n      - /dev/single\n      - /dev/zero:/dev/z\n      - source: /dev/long\n        target: /dev/long2\n        x-foo: bar\n      - source: /dev/short\n        target: /dev/short\n",
    },
  },
  {
    source:
      "compose-go loader/extends_test.go TestExtendsUlimits, full-example.yml ulimits (types.UlimitsConfig MarshalJSON: a single value as a number, soft and hard otherwise, zeros left out)",
    service: "test",
    files: {
      "compose.yaml":
        "services:\n  base:\n    image: busybox\n    ulimits:\n      nproc: 65535\n      nofile: {soft: 1, hard: 2}\n  test:\n    extends: base\n    ulimits:\n      nofile: {soft: 20000, hard: 40000}\n      core: 0\n      memlock: {soft: -1, hard: -1}\n",
    },
  },
  {
    source:
      "compose-go loader/loader_test.go TestLoadExtraHostsList, TestLoadExtraHostsRepeated (types/hostList.go: host:ip and host=ip, commas, brackets dropped, printed sorted as host=ip)",
    service: "web",
    files: {
      "compose.yaml":
        'services:\n  web:\n    image: busybox\n    extra_hosts:\n      - "zulu:127.0.0.2"\n      - "alpha:50.31.209.229"\n      - "zulu:ff02::1"\n      - "myhost=0.0.0.1,0.0.0.2"\n      - "v6=[::1]"\n      - "host.docker.internal:host-gateway"\n',
    },
  },
  {
    source: "compose-go loader/loader_test.go TestLoadExtraHostsMap, TestLoadExtraHostsLongSyntax (the mapping form)",
    service: "web",
    files: {
      "compose.yaml":
        'services:\n  web:\n    image: busybox\n    extra_hosts:\n      "zulu": "162.242.195.82"\n      "alpha": "50.31.209.229"\n      myhost:\n        - "0.0.0.1"\n        - "0.0.0.2"\n',
    },
  },
  {
    source:
      "compose-go loader/loader_test.go TestLoadSysctls (a list with empty and bare values; the mapping form, a number)",
    service: "web",
    files: {
      "compose.yaml":
        "services:\n  web:\n    image: busybox\n    sysctls:\n      - net.core.somaxconn=1024\n      - net.ipv4.tcp_syncookies=0\n      - testing.one.one=\n      - testing.one.two\n  other:\n    image: busybox\n    sysctls:\n      net.core.somaxconn: 1024\n      net.ipv4.tcp_syncookies: 0\n      testing.one.one: ''\n      testing.one.two:\n",
    },
  },
  {
    source: "compose-go loader/loader_test.go TestLoadSysctls (other: the mapping form)",
    service: "other",
    files: {
      "compose.yaml":
        "services:\n  other:\n    image: busybox\n    sysctls:\n      net.core.somaxconn: 1024\n      net.ipv4.tcp_syncookies: 0\n      testing.one.one: ''\n      testing.one.two:\n",
    },
  },
  {
    source: "compose-go loader/full-example.yml tmpfs (types.StringList: a string or a list)",
    service: "one",
    files: {
      "compose.yaml":
        "services:\n  one:\n    image: busybox\n    tmpfs: /run\n    volumes: [{type: volume, source: data, target: /data, volume: {labels: {z: 1, a: x}, nocopy: true}}]\n  two:\n    image: busybox\n    tmpfs: [/run, '/tmp:size=64m']\nvolumes: {data: {}}\n",
    },
  },
  {
    source: "compose-go types/types.go ServiceVolumeVolume.Labels (volume labels, a list form; tmpfs as a list)",
    service: "two",
    files: {
      "compose.yaml":
        "services:\n  two:\n    image: busybox\n    tmpfs: [/run, '/tmp:size=64m']\n    volumes: [{type: volume, source: data, target: /data, volume: {labels: [b=2, a], subpath: x}}]\nvolumes: {data: {}}\n",
    },
  },
  {
    source:
      "compose-go loader/loader_test.go TestLoadServiceWithEnvFile, types/project.go WithServicesEnvironmentResolved (docker/compose compose.go WithServices: up hashes the env files' variables, the service's environment over them)",
    service: "web",
    oracle: "create",
    files: {
      "compose.yaml": `services:\n  web:\n    image: ${ORACLE_IMAGE}\n    env_file: [app.env, {path: extra.env, required: false}, {path: missing.env, required: false}]\n    environment:\n      B: own\n      TEST:\n`,
      ".env": "TEST=YES\n",
      "app.env": "HALLO=$TEST\nB=from-file\nC=${B}x\nexport D='single $quoted'\nE=\"double ${TEST}\" # a comment\n",
      "extra.env": "HALLO=again\nF: colon\n",
    },
  },
  {
    source: "compose-go transform/envfile.go transformEnvFile (one path as a string; relative to the project folder)",
    service: "web",
    oracle: "create",
    files: {
      "compose.yaml": `services:\n  web:\n    image: ${ORACLE_IMAGE}\n    env_file: conf/web.env\n`,
      "conf/web.env": "# settings\nMODE=prod\nEMPTY=\n",
    },
  },
  {
    source: "compose-go override/merge.go (env_file in two files, which compose-go appends and dedupes: not modelled)",
    service: "foo",
    configFiles: ["compose.yaml", "compose.override.yaml"],
    unknown: "env_file set in two layers",
    files: {
      "compose.yaml": "services:\n  foo:\n    image: alpine\n    env_file: a.env\n",
      "compose.override.yaml": "services:\n  foo:\n    env_file: b.env\n",
      "a.env": "A=1\n",
      "b.env": "B=1\n",
    },
  },
  {
    source: "compose-go types/envfile.go (format: raw, not modelled)",
    service: "foo",
    unknown: "an env_file of format raw",
    files: {
      "compose.yaml": "services:\n  foo:\n    image: alpine\n    env_file: {path: a.env, format: raw}\n",
      "a.env": "A=1\n",
    },
  },
];

/** The compose CLI with an environment of its own, as svc runs it: nothing of the test's variables. */
function composeCli(args: string[]): string {
  const run = Bun.spawnSync(["docker", ...args], {
    // the engine only for `create`; `config --hash` asks none
    env: { PATH: process.env.PATH!, DOCKER_CONFIG: sandbox().dockerConfig, DOCKER_HOST: sandbox().dockerHost },
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

/** The hash compose's `create` (as `up`) puts on the container it makes: the label. */
function createdHash(args: string[], service: string): string {
  composeCli([...args, "create", "--pull", "never", service]);
  try {
    const id = composeCli([...args, "ps", "-a", "-q", service]).trim();
    return JSON.parse(composeCli(["inspect", id]))[0].Config.Labels["com.docker.compose.config-hash"];
  } finally {
    composeCli([...args, "down"]);
  }
}

describe.skipIf(!composeWorks)("compose's config hash computed by svc, against `docker compose config --hash`", () => {
  beforeAll(() => {
    docker(["import", "-c", 'CMD ["/bin/sh"]', sandbox().rootfs, ORACLE_IMAGE]);
  });
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
      const project = [
        "compose",
        "--project-name",
        "hashproj",
        "--project-directory",
        dir,
        ...configFiles.flatMap((f) => ["--file", f]),
      ];
      const theirs =
        row.oracle === "create"
          ? createdHash(project, row.service)
          : composeCli([...project, "config", "--hash", row.service])
              .trim()
              .split(" ")[1];
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
